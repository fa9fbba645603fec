/** Waits `ms`, or less if `signal` aborts first; never rejects (controllers check the signal themselves). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Calls `fn` every `ms` until `signal` aborts. The timer stops at the abort itself, not when the controller's work
 * has wound down (a step waiting on a store or a cluster may outlast it), and never keeps the process alive alone.
 */
export function every(ms: number, fn: () => void, signal: AbortSignal): void {
  if (signal.aborted) return;
  const timer = setInterval(fn, ms);
  timer.unref();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
