/**
 * A work queue after client-go's rate-limited workqueue: a key is queued at most once, handed to one worker at a
 * time (a key added while it is being worked on is handed out again once that worker is done), and a failed key
 * comes back after an exponential delay, so a failing key never spins.
 */
import type { IBackoff, IBackoffFactory } from 'cockatiel';
import { exponentialBackoff } from '../apimachinery/backoff.js';

export interface WorkQueueOptions {
  /** The first retry delay (ms); doubled on each failure up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** The queue's name in metrics (client-go's workqueue `name` label), and where its metrics go. */
  name?: string;
  metrics?: WorkQueueMetrics;
}

/** client-go's workqueue metrics provider, in the few parts used here (src/observability/metrics.ts implements it). */
export interface WorkQueueMetrics {
  /** A queue came into use: its depth (`length`) is read at each scrape until the returned function is called. */
  track(name: string, queue: { readonly length: number }): () => void;
  /** A key was queued that was not queued already. */
  added(name: string): void;
  /** A key failed and was queued again after its backoff. */
  retried(name: string): void;
}

export class WorkQueue {
  private readonly queue = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  /** Each failing key's last wait: the next is the step after it. */
  private readonly failures = new Map<string, IBackoff<unknown>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Keys added later (addAfter), each with when it is due: the earliest asked for wins. */
  private readonly later = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private shutDown = false;
  private readonly backoff: IBackoffFactory<unknown>;
  private readonly name: string;
  private readonly metrics?: WorkQueueMetrics;
  private readonly untrack?: () => void;

  constructor(opts: WorkQueueOptions = {}) {
    this.backoff = exponentialBackoff({ initialMs: opts.baseDelayMs ?? 500, maxMs: opts.maxDelayMs ?? 30_000 });
    this.name = opts.name ?? '';
    this.metrics = opts.metrics;
    this.untrack = this.metrics?.track(this.name, this);
  }

  get length(): number {
    return this.queue.size;
  }

  add(key: string): void {
    if (this.shutDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queue.has(key)) return;
    this.metrics?.added(this.name);
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queue.add(key);
  }

  /**
   * Adds `key` once `delayMs` has passed (client-go's AddAfter): a key already due sooner keeps its time, one due
   * later is due at this one's.
   */
  addAfter(key: string, delayMs: number): void {
    if (this.shutDown) return;
    if (delayMs <= 0) return this.add(key);
    const due = Date.now() + delayMs;
    const waiting = this.later.get(key);
    if (waiting && waiting.due <= due) return;
    if (waiting) clearTimeout(waiting.timer);
    const timer = setTimeout(() => {
      this.later.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref?.();
    this.later.set(key, { due, timer });
  }

  /**
   * Adds each of `keys` within the next `periodMs`, each at its own point of the period, the same for a key in every
   * period (a hash of it), so that a resync is no burst and each key is checked a period apart.
   */
  spreadOver(keys: Iterable<string>, periodMs: number): void {
    for (const key of keys) this.addAfter(key, Math.floor(phaseOf(key) * periodMs));
  }

  /** The next key to work on; undefined once shut down. Call done(key) after. */
  get(): Promise<string | undefined> {
    if (this.shutDown) return Promise.resolve(undefined);
    const next = this.queue.values().next();
    if (!next.done) {
      this.queue.delete(next.value);
      this.processing.add(next.value);
      return Promise.resolve(next.value);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Queues the key again after its backoff delay (doubling with each failure). */
  retry(key: string): number {
    const step = (this.failures.get(key) ?? this.backoff).next(undefined);
    this.failures.set(key, step);
    this.metrics?.retried(this.name);
    const delay = step.duration;
    if (!this.timers.has(key)) {
      const timer = setTimeout(() => {
        this.timers.delete(key);
        this.add(key);
      }, delay);
      timer.unref?.();
      this.timers.set(key, timer);
    }
    return delay;
  }

  /** The key succeeded: its next failure starts from the first delay again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Every waiting key now, and no backoff remembered (e.g. when what they waited for is back). */
  retryAllNow(): void {
    for (const [key, timer] of this.timers) {
      clearTimeout(timer);
      this.add(key);
    }
    this.timers.clear();
    this.failures.clear();
  }

  /**
   * Runs `workers` loops until shutdown, each taking a key and handing it to `handle`: a key that succeeds is
   * forgotten, one that throws comes back after its delay (`failed` is told, to log it).
   */
  async work(
    workers: number,
    handle: (key: string) => Promise<void>,
    failed: (key: string, err: unknown, delayMs: number) => void,
  ): Promise<void> {
    const loop = async () => {
      for (;;) {
        const key = await this.get();
        if (key === undefined) return;
        try {
          await handle(key);
          this.forget(key);
        } catch (err) {
          failed(key, err, this.retry(key));
        } finally {
          this.done(key);
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, loop));
  }

  shutdown(): void {
    this.shutDown = true;
    this.untrack?.();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const { timer } of this.later.values()) clearTimeout(timer);
    this.later.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}

/**
 * Where in a period `key` falls, in [0, 1): FNV-1a of its characters, mixed (murmur3's finalizer) so that names
 * differing in one digit land far apart; the same key always lands at the same point.
 */
export function phaseOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return ((hash ^ (hash >>> 16)) >>> 0) / 2 ** 32;
}
