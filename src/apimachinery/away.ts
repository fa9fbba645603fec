/**
 * A request's time away: while it waits on another server (the host, a connected or a virtual cluster, an admission
 * webhook), it keeps its seats in its level, as in kube, but they stop counting against its flow's bound
 * (--max-seats-per-flow, and the headroom a flow leaves). That bound is there because one thread runs every
 * request, and a request waiting on another server does not use the thread. Without this, a tenant with a request
 * held up by its own slow cluster could run nothing else until it ended.
 *
 * The request's filter runs the rest of the request in `withFlowHold`; code that waits on another server wraps the
 * wait in `awayFromThread`. Outside a request (controllers, informers) it does nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** What the request's filter does when its request leaves and comes back (calls may nest and overlap). */
export interface FlowHold {
  away(): void;
  back(): void;
  /**
   * The request waits for its client to take what it wrote: its seats go back to its level meanwhile, and are taken
   * again (waiting in its queue) before it goes on; rejects when they cannot be (the request is to be cut).
   */
  whileClientTakes?(wait: () => Promise<void>): Promise<void>;
}

const current = new AsyncLocalStorage<FlowHold>();

/** Runs `fn` (the rest of a request) with `hold` as its request's hold on its flow's seats. */
export function withFlowHold<T>(hold: FlowHold, fn: () => T): T {
  return current.run(hold, fn);
}

/** Waits on another server: meanwhile the calling request's seats do not count against its flow's bound. */
export async function awayFromThread<T>(wait: () => Promise<T>): Promise<T> {
  const hold = current.getStore();
  if (!hold) return wait();
  hold.away();
  try {
    return await wait();
  } finally {
    hold.back();
  }
}

/**
 * Waits for the client to take what the calling request wrote: meanwhile the request holds no seats (it does not
 * use the thread, and a client that never reads would hold them to its deadline: one client alone could take every
 * seat of its level so). Rejects when the seats cannot be taken again.
 */
export async function whileClientTakes(wait: () => Promise<void>): Promise<void> {
  const hold = current.getStore();
  if (!hold?.whileClientTakes) return wait();
  return hold.whileClientTakes(wait);
}

/** A FlowHold whose overlapping waits count as one: `leave` when the first begins, `comeBack` when the last ends. */
export function countedHold(leave: () => void, comeBack: () => void): FlowHold {
  let waits = 0;
  return {
    away: () => {
      if (waits++ === 0) leave();
    },
    back: () => {
      if (--waits === 0) comeBack();
    },
  };
}
