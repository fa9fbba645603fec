/**
 * API Priority and Fairness (kube's WithPriorityAndFairness), in place of the max-in-flight filter unless
 * --enable-priority-and-fairness=false: each request is classified (its FlowSchema, priority level and flow), takes
 * the seats estimated for it in its level, and runs when its level's fair queuing dispatches it. One that finds its
 * queue full, or waits longer than its wait limit, is refused with 429, Retry-After and a Status that says so.
 *
 * - The wait limit is kube's: a quarter of the request's deadline (--request-timeout or a shorter ?timeout=), at
 *   most a minute; a watch, which has no deadline, may wait a quarter of --request-timeout (15 s by default).
 * - A watch holds its seats only until its stream starts (kube: until its initialization); then it is long-running
 *   and no longer holds seats, but counts among the watches that make writes of its resource heavier (seats.ts).
 * - A request's seats are given back once it has ended, however it ends (answered, its client or connection gone, or
 *   its response cut a grace after its deadline: apimachinery/requestend.ts, deadline.ts; never on the response's
 *   'close' alone, which Node does not always emit), and its handler is done, as kube gives them back when the
 *   handler returns: a client that leaves right after sending its request does not free seats the server still
 *   works in, which would let one flow have any number of requests worked on at once. A handler still at work a
 *   grace after its request ended gives them back then; one done with its answer all written gives them back at
 *   once, though its client has not taken it (Node holds it: no work of the thread's is left).
 * - A request that leaves while waiting is taken out of its queue (cancelled).
 * - A request whose body has not all come first waits, holding no seat, for one of its flow's turns (as many as
 *   --max-seats-per-flow; flowcontrol/bodyturns.ts): seats are taken before the body is read, and a client alone
 *   could otherwise hold every seat of its level with bodies that never come. One that waits past its wait limit is
 *   refused with 429 as one waiting in a queue is.
 * - While a request waits on another server (the host, a connected or virtual cluster, an admission webhook), its
 *   seats do not count against its flow's bound (--max-seats-per-flow; apimachinery/away.ts). While a list written
 *   in pieces waits for its client to take the last one, it holds no seats at all, and takes them again (waiting in
 *   its queue) before its next piece: a client alone that did not read its answers held every seat of its level
 *   until their deadlines; one that cannot have them again in time is cut.
 * - The response headers name the uids (not the names) of the schema and level, as kube's do, also on a 429.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Http2ServerRequest } from 'node:http2';
import { requestContext, requestUser, type RequestContext } from '../apimachinery/request.js';
import { UNAUTHENTICATED_GROUP } from '../apimachinery/user.js';
import { requestEnded, whenRequestDone, whenRequestEnds } from '../apimachinery/requestend.js';
import * as errors from '../apimachinery/status.js';
import { withFlowHold } from '../apimachinery/away.js';
import type { BodyTurns } from '../flowcontrol/bodyturns.js';
import type { FlowControl, PriorityLevel } from '../flowcontrol/controller.js';
import type { QueueSet, RejectReason, SeatRequest, Ticket } from '../flowcontrol/queueset.js';
import { estimateWork, type ObjectCount, type WorkEstimate } from '../flowcontrol/seats.js';
import type { FlowControlMetrics, FlowLabels } from '../observability/flowcontrol.js';
import { isHttp2 } from './http2.js';
import type { InFlightCounts } from '../observability/metrics.js';
import { requestTimeoutMs } from './deadline.js';
import { HeldSeats } from './heldseats.js';

export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-PF-PriorityLevel-UID';

/** kube's cap on any request's wait in a queue. */
const MAX_WAIT_MS = 60_000;
/** The wait limit of requests without a deadline when --request-timeout is 0 (a quarter of kube's default). */
const DEFAULT_WAIT_MS = 15_000;
const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);
/** Health probes (flowcontrol/queueset.ts, SeatRequest.bystander). */
const PROBE_PATH = /^\/(healthz|livez|readyz)(\/|$)/;

export interface PriorityAndFairnessOptions {
  /** --request-timeout (ms; 0: none). */
  requestTimeoutMs: number;
  /** The objects stored of a resource (the watch cache's count), for the seats of lists. */
  objectCount: ObjectCount;
  metrics?: FlowControlMetrics;
  /** Kept current for apiserver_current_inflight_requests (requests executing, by kind). */
  inFlight?: InFlightCounts;
  /** How long after its request ended a handler still at work keeps the request's seats (the response grace). */
  handlerGraceMs: number;
}

export function priorityAndFairness(flowControl: FlowControl, opts: PriorityAndFairnessOptions) {
  return (req: Request, res: Response, next: NextFunction) => {
    const admission = classified(flowControl, opts, req, res);
    // A request whose body is still coming first waits for a turn of its flow, holding no seat (bodyturns.ts). A
    // body sent right behind its headers is often parsed a turn of the event loop later (its TLS record read on its
    // own), so it is looked at again then: a turn held while the request waits for authorization made one tenant's
    // concurrent writes go one at a time.
    if (admission.level.exempt || !bodyStillComing(req)) return enter(admission, res, next);
    const enterOrFail = () => {
      try {
        enter(admission, res, next);
      } catch (err) {
        next(err);
      }
    };
    setImmediate(() => {
      if (requestEnded(res)) return;
      if (!bodyStillComing(req)) return enterOrFail();
      const { level, labels, distinguisher, waitLimitMs } = admission;
      const flow = `${level.name}\0${labels.flow_schema}\0${distinguisher}`;
      const wait = { turns: flowControl.bodyTurns, flow, waitLimitMs, metrics: opts.metrics, labels };
      afterBodyTurn(req, res, wait, enterOrFail, next);
    });
  };
}

/** What flow control made of one request, which the steps after classifying it share. */
interface Admission {
  flowControl: FlowControl;
  opts: PriorityAndFairnessOptions;
  context: RequestContext;
  level: PriorityLevel;
  labels: FlowLabels;
  distinguisher: string;
  work: WorkEstimate;
  watch: boolean;
  waitLimitMs: number;
  /** What it asks of its level's queue set; `onDispatch` once its seats are its. */
  seatRequest(onDispatch: () => void): SeatRequest;
}

/** The request's schema, level and flow (the response headers name them), its seats and its wait limit. */
function classified(
  flowControl: FlowControl,
  opts: PriorityAndFairnessOptions,
  req: Request,
  res: Response,
): Admission {
  const context = requestContext(req);
  const { info, query } = context;
  const user = requestUser(req);
  const { flowSchema, level, distinguisher } = flowControl.classify({ user, info });
  const unauthenticated = user.groups.includes(UNAUTHENTICATED_GROUP);
  res.setHeader(FLOW_SCHEMA_UID_HEADER, flowSchema.metadata.uid ?? '');
  res.setHeader(PRIORITY_LEVEL_UID_HEADER, level.uid);
  const labels = { priority_level: level.name, flow_schema: flowSchema.metadata.name ?? '' };
  const watch = info.verb === 'watch';
  const work = level.exempt
    ? { seats: 1, additionalLatencyMs: 0 }
    : estimateWork(
        info,
        query,
        { objects: opts.objectCount, watches: (i) => flowControl.watches.interested(i) },
        level.maxSeats,
      );
  opts.metrics?.estimated(labels, work.seats);
  const waitLimitMs = waitLimit(watch ? 0 : requestTimeoutMs(query, opts.requestTimeoutMs), opts.requestTimeoutMs);
  const seatRequest = (onDispatch: () => void): SeatRequest => ({
    flowSchema: labels.flow_schema,
    distinguisher,
    seats: work.seats,
    bystander: (!info.isResourceRequest && PROBE_PATH.test(info.path)) || unauthenticated,
    onDispatch,
  });
  return { flowControl, opts, context, level, labels, distinguisher, work, watch, waitLimitMs, seatRequest };
}

/**
 * Takes the request's seats, at once or after waiting in its queue (given up at its wait limit, or when it ends),
 * then runs it; a refusal is thrown (a 429).
 */
function enter(admission: Admission, res: Response, next: NextFunction): void {
  const { opts, level, labels, waitLimitMs } = admission;
  const seats = admission.work.seats;
  const arrived = performance.now();
  // While queued: the timer of its wait limit.
  const queue: { waiting: boolean; timer?: NodeJS.Timeout } = { waiting: false };
  const run = () => {
    clearTimeout(queue.timer);
    if (queue.waiting) opts.metrics?.dequeued(labels, seats, (performance.now() - arrived) / 1000, true);
    queue.waiting = false;
    execute(admission, ticket, res, next);
  };
  const result = level.queueSet.enqueue(
    admission.seatRequest(() => {
      // Dispatched from the queue: run on a turn of its own, not inside the request that freed the seats.
      if (queue.waiting) setImmediate(run);
    }),
  );
  if ('rejected' in result) {
    opts.metrics?.rejected(labels, result.rejected);
    throw rejection(result.rejected, waitLimitMs);
  }
  const ticket = result.ticket;
  if ('dispatched' in result) return run();

  queue.waiting = true;
  opts.metrics?.queued(labels, seats);
  const giveUp = (reason: 'time-out' | 'cancelled') => {
    if (!queue.waiting || !level.queueSet.cancel(ticket, reason)) return;
    queue.waiting = false;
    clearTimeout(queue.timer);
    opts.metrics?.dequeued(labels, seats, (performance.now() - arrived) / 1000, false);
    opts.metrics?.rejected(labels, reason, 0);
    if (reason === 'time-out') next(rejection(reason, waitLimitMs));
  };
  queue.timer = setTimeout(() => giveUp('time-out'), waitLimitMs);
  whenRequestEnds(res, () => giveUp('cancelled'));
}

/** Runs the request on the seats of `ticket`, which it holds until it is done (HeldSeats). */
function execute(admission: Admission, ticket: Ticket, res: Response, next: NextFunction): void {
  const { flowControl, opts, context, level, labels, watch, waitLimitMs } = admission;
  const { info, query } = context;
  const { seats, additionalLatencyMs } = admission.work;
  const kind: keyof InFlightCounts =
    !info.isResourceRequest || READ_ONLY_VERBS.has(info.verb) ? 'readOnly' : 'mutating';
  const held = new HeldSeats(
    {
      queueSet: level.queueSet,
      labels,
      seats,
      watch,
      kind,
      additionalLatencyMs,
      metrics: opts.metrics,
      inFlight: opts.inFlight,
    },
    ticket,
  );
  const release = () => held.release();
  // The client left between its dispatch and now (or it was answered meanwhile): its seats go back at once.
  if (requestEnded(res) || res.writableEnded) return release();
  whenRequestDone(res, release, opts.handlerGraceMs);
  if (watch) {
    // Counted among the watches a write's seats are estimated from, until it ends.
    whenRequestEnds(res, flowControl.watches.register(info, query));
    const streamStarted = context.streamStarted;
    context.streamStarted = () => {
      release();
      streamStarted?.();
    };
  }
  const hold = held.hold(res, () =>
    seatsAgain(level.queueSet, admission.seatRequest, waitLimitMs, res, { metrics: opts.metrics, labels, seats }),
  );
  withFlowHold(hold, next);
}

interface BodyTurnWait {
  turns: BodyTurns;
  flow: string;
  waitLimitMs: number;
  metrics?: FlowControlMetrics;
  labels: FlowLabels;
}

/**
 * Calls `go` once the request holds a body turn of its flow (at once if one is free), which it keeps until its body
 * has been read or it ends; `fail` with a 429 if it waits past its wait limit.
 */
function afterBodyTurn(req: Request, res: Response, wait: BodyTurnWait, go: () => void, fail: (err: unknown) => void) {
  const waiting: { timer?: NodeJS.Timeout; stop?: () => void } = {};
  const stopWaiting = () => {
    clearTimeout(waiting.timer);
    waiting.stop?.();
  };
  const turn = wait.turns.take(wait.flow, () => {
    if (!waiting.stop) return; // granted at once: `go` is called below
    stopWaiting();
    // Granted when another request gave its turn back: go on in a turn of the event loop of its own.
    setImmediate(() => requestEnded(res) || go());
  });
  req.once('end', turn.done);
  whenRequestEnds(res, () => {
    stopWaiting();
    turn.done();
  });
  if (turn.now) return go();
  waiting.stop = wait.metrics?.waitingForBodyTurn(wait.labels) ?? (() => {});
  waiting.timer = setTimeout(() => {
    stopWaiting();
    turn.done();
    wait.metrics?.rejected(wait.labels, 'time-out', 0);
    fail(bodyTurnRejection(wait.turns.perFlow));
  }, wait.waitLimitMs);
}

/** Whether the request has a body not all of which has come yet (a body sent with the headers has, by now). */
function bodyStillComing(req: Request): boolean {
  if (req.complete) return false;
  // An HTTP/2 request without a body ends with its headers; one with a body need not say its length.
  if (isHttp2(req)) return !(req as unknown as Http2ServerRequest).stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The seats of a request that gave them back while its client took its answer, taken again: at once if they fit,
 * else waiting in its queue as a new request would (counted among those waiting), up to the same wait limit; a full
 * queue does not refuse it.
 */
function seatsAgain(
  queueSet: QueueSet,
  seatRequest: (onDispatch: () => void) => SeatRequest,
  waitLimitMs: number,
  res: Response,
  queued?: { metrics?: FlowControlMetrics; labels: FlowLabels; seats: number },
): Promise<Ticket> {
  return new Promise((resolve, reject) => {
    const wait: { on: boolean; since: number; timer?: NodeJS.Timeout; forget?: () => void } = { on: false, since: 0 };
    const stop = (dispatched: boolean) => {
      wait.on = false;
      clearTimeout(wait.timer);
      wait.forget?.();
      const waited = (performance.now() - wait.since) / 1000;
      queued?.metrics?.dequeued(queued.labels, queued.seats, waited, dispatched);
    };
    const result = queueSet.enqueue({
      ...seatRequest(() => {
        if (!wait.on) return;
        stop(true);
        resolve(ticket);
      }),
      admitted: true,
    });
    if ('rejected' in result) return reject(rejection(result.rejected, waitLimitMs));
    const ticket = result.ticket;
    if ('dispatched' in result) return resolve(ticket);
    wait.on = true;
    wait.since = performance.now();
    queued?.metrics?.queued(queued.labels, queued.seats);
    const giveUp = (reason: 'time-out' | 'cancelled') => {
      if (!wait.on || !queueSet.cancel(ticket, reason)) return;
      stop(false);
      queued?.metrics?.rejected(queued.labels, reason, 0);
      reject(rejection(reason, waitLimitMs));
    };
    wait.timer = setTimeout(() => giveUp('time-out'), waitLimitMs);
    wait.forget = whenRequestEnds(res, () => giveUp('cancelled'));
  });
}

/** kube's limit on a request's wait: a quarter of its deadline, at most a minute. */
export function waitLimit(deadlineMs: number, requestTimeoutMs: number): number {
  const quarter = (deadlineMs || requestTimeoutMs) / 4;
  return Math.min(MAX_WAIT_MS, quarter > 0 ? quarter : DEFAULT_WAIT_MS);
}

function bodyTurnRejection(perFlow: number): errors.StatusError {
  return errors.tooManyRequests(
    `Too many requests, please try again later. The request was rejected by API Priority and Fairness: its body had not come, and its flow already had ${perFlow} such request${perFlow === 1 ? '' : 's'} (--max-seats-per-flow) for the longest a request may wait.`,
  );
}

function rejection(reason: RejectReason, waitLimitMs: number): errors.StatusError {
  const why = {
    'queue-full': "its priority level's queue is full",
    'concurrency-limit': 'its priority level has no free seat and does not queue',
    'time-out': `it waited in its priority level's queue for the longest a request may (${waitLimitMs / 1000}s)`,
    cancelled: 'it was cancelled while waiting',
  }[reason];
  return errors.tooManyRequests(
    `Too many requests, please try again later. The request was rejected by API Priority and Fairness: ${why}.`,
  );
}
