/**
 * A deadline on any promise, for the etcd health probe, the health checks and leader election: kept in the lowest
 * layer so that storage and the controllers reach it without importing upward.
 */

/** A promise that rejects with `message` when `p` has not settled within `ms` (the timer never outlives it). */
export function withDeadline<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
