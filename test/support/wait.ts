/** Polling for something that happens in the background (a garbage collection, a leader change), and plain pauses. */

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls `fn` until it returns something truthy and returns that; fails naming `what` and the last value seen. */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs}ms waiting for ${what} (last: ${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Sends a request again until its answer satisfies `done` (a change on the host reaching the server's informers,
 * say) and returns that answer; fails naming `what` and the last answer's status.
 */
export async function answerWhen<R extends { status: number }>(
  what: string,
  send: () => Promise<R>,
  done: (answer: R) => boolean,
  timeoutMs = 10_000,
): Promise<R> {
  let last: R | undefined;
  try {
    return await waitFor(
      what,
      async () => {
        last = await send();
        return done(last) && last;
      },
      timeoutMs,
      25,
    );
  } catch {
    throw new Error(`timed out after ${timeoutMs}ms waiting for ${what} (last answer: ${last?.status})`);
  }
}
