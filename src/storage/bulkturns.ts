/**
 * Turns of the one JavaScript thread for bulk work (a large list's filtering, a watch's initial events), handed out
 * one at a time: each turn of the event loop runs at most one slice of bulk work, and then the I/O that came in
 * meanwhile. However many large lists run at once, a small request waits behind one slice, not one per list
 * (Node.js does not preempt, so 50 lists each given a turn per loop would hold a GET for 50 slices at each of its
 * steps).
 *
 * The turn goes to the bulk job that began first: jobs finish one after another, each in about the time it takes
 * alone, rather than all together at the end (sharing the thread evenly would make 64 lists end at once, seconds
 * later, and hold their seats of API Priority and Fairness until then). The bulk work as a whole goes as fast.
 */

/** How long one slice may run (ms). */
export const SLICE_MS = 4;

/** Jobs waiting for a turn, by the order they began. */
const waiting: Array<{ job: number; wake: () => void }> = [];
let scheduled = false;
let jobs = 0;

/** A bulk job: `turn()` resolves when it is this job's turn; run one slice (see `sliceClock`) and ask again. */
export interface BulkJob {
  turn(): Promise<void>;
}

export function bulkJob(): BulkJob {
  const job = ++jobs;
  return {
    turn: () =>
      new Promise((wake) => {
        // Jobs ask again in the order they began, or nearly: insert by job number from the end.
        let at = waiting.length;
        while (at > 0 && waiting[at - 1].job > job) at--;
        waiting.splice(at, 0, { job, wake });
        if (!scheduled) schedule();
      }),
  };
}

function schedule(): void {
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    waiting.shift()?.wake();
    if (waiting.length) schedule();
  });
}

/** Collections this small are gone through at once; larger ones a slice per turn. */
const AT_ONCE = 256;
/** How many items a slice goes through between two looks at its clock. */
const CHECK_EVERY = 64;

/**
 * Calls `each` on the items in order: at once for a small collection, else a slice per turn of `job`, until `stop()`
 * says so (checked before each item).
 */
export async function eachInTurns<T>(
  items: readonly T[],
  each: (item: T) => void,
  opts: { job?: BulkJob; stop?: () => boolean } = {},
): Promise<void> {
  const stop = opts.stop ?? (() => false);
  const job = items.length > AT_ONCE ? (opts.job ?? bulkJob()) : undefined;
  let i = 0;
  while (i < items.length && !stop()) {
    if (job) await job.turn();
    const slice = sliceClock();
    do each(items[i++]);
    while (i < items.length && !stop() && (!job || i % CHECK_EVERY !== 0 || !slice.over()));
  }
}

/** A clock for one slice: `over()` once SLICE_MS have passed. */
export function sliceClock(): { over(): boolean } {
  const end = performance.now() + SLICE_MS;
  return { over: () => performance.now() >= end };
}
