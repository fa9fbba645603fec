/**
 * The loop of a controller that works a queue (client-go's controller: informers, a work queue, a resync period),
 * written once: its watches fill what it knows, nothing is worked on before every one of them has delivered the
 * current objects (an object not seen yet would look deleted), then everything is queued again every `resyncMs`
 * and `workers` work the queue until the signal aborts. The watches, and the loops it names, are waited for at the
 * end, so that a stopping controller has stopped when its run ends. Which replica runs it is the manager's
 * (manager.ts: leader election).
 */
import { every } from '../apimachinery/sleep.js';
import type { WorkQueue } from './workqueue.js';

export interface QueueController {
  /** What the log lines begin with (e.g. "access sync"). */
  what: string;
  log: (msg: string, fields?: Record<string, unknown>) => void;
  /** Watches already started (storewatch.ts). */
  watches: ReadonlyArray<{ synced: Promise<void>; done: Promise<void> }>;
  /** Other loops already started, waited for at the end too. */
  loops?: ReadonlyArray<Promise<unknown>>;
  /** Once the watches have listed, before any work: what must come first; it may start more loops. */
  synced?(): Promise<ReadonlyArray<Promise<unknown>> | void>;
  queue: WorkQueue;
  workers: number;
  resyncMs: number;
  /** Queues everything again (every resyncMs). */
  resync(): void;
  /** The fields of the "started" line (what it knows). */
  started(): Record<string, unknown>;
  /** That line's last word, "started" unless given (the garbage collector's line has always said "synced"). */
  startedWord?: string;
  handle(key: string): Promise<void>;
  /** A key failed and comes back after `delayMs` (WorkQueue.work): to log it. */
  failed(key: string, err: unknown, delayMs: number): void;
}

/** Runs `c` until `signal` aborts. */
export async function runQueueController(c: QueueController, signal: AbortSignal): Promise<void> {
  const loops = [...(c.loops ?? [])];
  try {
    await Promise.all(c.watches.map((w) => w.synced));
    if (signal.aborted) return;
    loops.push(...((await c.synced?.()) ?? []));
    // An abort meanwhile would never reach the queue's shutdown below: its listener would come too late.
    if (signal.aborted) return;
    every(c.resyncMs, () => c.resync(), signal);
    signal.addEventListener('abort', () => c.queue.shutdown(), { once: true });
    c.log(`${c.what}: ${c.startedWord ?? 'started'}`, c.started());
    await c.queue.work(
      c.workers,
      (key) => c.handle(key),
      (key, err, delayMs) => c.failed(key, err, delayMs),
    );
  } finally {
    await Promise.all([...c.watches.map((w) => w.done), ...loops]);
  }
}
