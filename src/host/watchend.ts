/**
 * One watch of a cluster, as a promise: it resolves when the watch ends (the host closed it, or `signal` aborted,
 * which stops it) and rejects when it fails, so that a loop watching again after each end reads as a loop.
 */
export function untilWatchEnds(
  signal: AbortSignal,
  start: (done: (err?: unknown) => void) => Promise<{ stop(): void }>,
): Promise<void> {
  let onAbort = () => {};
  return new Promise<void>((resolve, reject) => {
    let handle: { stop(): void } | undefined;
    onAbort = () => {
      handle?.stop();
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    start((err) => (err ? reject(err) : resolve())).then((h) => {
      handle = h;
      if (signal.aborted) h.stop();
    }, reject);
  }).finally(() => signal.removeEventListener('abort', onAbort));
}
