/**
 * The end of a request: one event, once, however it comes (kube's request context, done when its handler returns or
 * its client goes away). A request ends when its answer has all been handed to the connection ('finish'), when its
 * response closes or fails, or when its connection closes or fails under it, whichever comes first. Node emits the
 * response's 'close' when its connection closes, but not always: on Node 24.20.0 a client resetting its TLS
 * connection during a large answer sometimes left the response without 'close' for good (docs/node-reset-close.md),
 * and the APF seat given back on 'close' alone was lost. So everything a request holds (its seats, the in-flight
 * counts, its span, its audit event and metrics) is given back here; and a response cut for outliving its bound
 * (cutUnlessEnded) ends its request at once, whatever Node emits after.
 *
 * What a request holds for the work done for it (its seats of API Priority and Fairness, its in-flight count) is
 * given back later, once its handler is done and it has ended or its answer is all written (whenRequestDone): kube's
 * filters give these back when the handler returns, whether or not the client is still there, and a client that
 * leaves right after sending its request must not take back seats the server is still working in.
 *
 * Kept in the lowest layer, beside the request's context, so that the observers (observability/) and the filters
 * and handlers (http/) all end on the same event.
 */
import type { ServerResponse } from 'node:http';

interface End {
  ended: boolean;
  listeners: Array<() => void>;
  /** Its handler is done (requestHandled), and what waits for that. */
  handled: boolean;
  handledListeners: Array<() => void>;
  /** Takes the listeners off the connection, which outlives the request (keep-alive). */
  stopListening?: () => void;
}

const ends = new WeakMap<ServerResponse, End>();

/**
 * Calls `listener` once the request of `res` ends, or at once if it has; the function returned forgets the
 * listener (one that waits for something else besides).
 */
export function whenRequestEnds(res: ServerResponse, listener: () => void): () => void {
  const end = endOf(res);
  if (end.ended) {
    listener();
    return () => {};
  }
  end.listeners.push(listener);
  return () => {
    const i = end.listeners.indexOf(listener);
    if (i >= 0) end.listeners.splice(i, 1);
  };
}

/** Whether the request of `res` has ended: nothing more it writes reaches its client. */
export function requestEnded(res: ServerResponse): boolean {
  return endOf(res).ended;
}

/**
 * Cuts the response, and its connection, unless its request has ended within `ms`: a client that does not take its
 * answer holds nothing past that. The request has ended then, whether or not Node emits anything more.
 */
export function cutUnlessEnded(res: ServerResponse, ms: number): void {
  if (requestEnded(res)) return;
  const timer = setTimeout(() => {
    res.destroy();
    res.req.socket.destroy();
    ended(res);
  }, ms);
  timer.unref();
  whenRequestEnds(res, () => clearTimeout(timer));
}

/** The handler of the request of `res` is done with it: it returned, or its failure was answered. */
export function requestHandled(res: ServerResponse): void {
  const end = endOf(res);
  if (end.handled) return;
  end.handled = true;
  const listeners = end.handledListeners;
  end.handledListeners = [];
  for (const listener of listeners) listener();
}

/**
 * Calls `listener` once, when the request of `res` has ended and its handler is done with it, or its handler is done
 * with its answer all written; or `graceMs` after the request ended if its handler is still at work then. A handler
 * waits on nothing without a bound of its own (etcd's, the host's, the request's deadline), but one that did must
 * not hold what the request took for good. An answer all written is in Node's hands: what is left of it is for its
 * client to take, which is no work of the server's, and a client that does not read must not keep what the request
 * took until its deadline.
 */
export function whenRequestDone(res: ServerResponse, listener: () => void, graceMs: number): void {
  let called = false;
  const call = () => {
    if (called) return;
    called = true;
    listener();
  };
  const end = endOf(res);
  if (end.handled && res.writableEnded) return call();
  end.handledListeners.push(() => res.writableEnded && call());
  whenRequestEnds(res, () => {
    if (end.handled) return call();
    end.handledListeners.push(call);
    const timer = setTimeout(call, graceMs);
    timer.unref();
    end.handledListeners.push(() => clearTimeout(timer));
  });
}

function endOf(res: ServerResponse): End {
  let end = ends.get(res);
  if (end) return end;
  const socket = res.req.socket;
  end = {
    ended: res.writableFinished || res.closed || socket.destroyed,
    listeners: [],
    handled: false,
    handledListeners: [],
  };
  ends.set(res, end);
  if (end.ended) return end;
  const done = () => ended(res);
  res.once('finish', done);
  res.once('close', done);
  // A response or connection that failed takes nothing more (and the error has no one else to hear it here).
  res.on('error', done);
  socket.once('close', done);
  socket.on('error', done);
  end.stopListening = () => {
    socket.off('close', done);
    socket.off('error', done);
  };
  return end;
}

function ended(res: ServerResponse): void {
  const end = endOf(res);
  if (end.ended) return;
  end.ended = true;
  end.stopListening?.();
  const listeners = end.listeners;
  end.listeners = [];
  for (const listener of listeners) listener();
}
