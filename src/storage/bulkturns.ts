/**
 * Turns of the one JavaScript thread for bulk work (a large list's filtering, a watch's initial events), handed out
 * one at a time: each turn of the event loop runs at most one slice of bulk work, whichever request waited longest,
 * and then the I/O that came in meanwhile. However many large lists run at once, a small request waits behind one
 * slice, not one per list (Node.js does not preempt, so 50 lists each given a turn per loop would hold a GET for
 * 50 slices at each of its steps); the bulk work as a whole goes as fast as before.
 */

/** How long one slice may run (ms). */
export const SLICE_MS = 4;

const waiting: Array<() => void> = [];
let scheduled = false;

/** Resolves when it is this caller's turn; run one slice (see `sliceDone`) and ask again. */
export function nextBulkTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) schedule();
  });
}

function schedule(): void {
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    waiting.shift()?.();
    if (waiting.length) schedule();
  });
}

/** A clock for one slice: `over()` once SLICE_MS have passed since `start()`. */
export function sliceClock(): { over(): boolean } {
  const end = performance.now() + SLICE_MS;
  return { over: () => performance.now() >= end };
}
