/**
 * A deadline on any promise, for the etcd health probe, the health checks and leader election: kept in the lowest
 * layer so that storage and the controllers reach it without importing upward.
 */

/** What withDeadline rejects with when the time is up. */
export class DeadlineExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * A promise that rejects with `message` (a DeadlineExceeded) when `p` has not settled within `ms` (the timer never outlives it). An
 * answer already waiting to be read when the time is up is not late: a long synchronous task (a large list being
 * serialized) can keep this process from reading it, and timers run before the I/O that came in meanwhile is read.
 * So the deadline gives that I/O one turn of the event loop (setImmediate runs after it) before it rejects; without
 * that, a busy server took its own stall for etcd not answering, and failed every request that needed etcd.
 */
export function withDeadline<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      immediate = setImmediate(() => reject(new DeadlineExceeded(message)));
    }, ms);
  });
  return Promise.race([p, late]).finally(() => {
    clearTimeout(timer);
    clearImmediate(immediate);
  });
}
