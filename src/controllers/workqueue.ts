/**
 * A work queue after client-go's rate-limited workqueue: a key is queued at most once, handed to one worker at a
 * time (a key added while it is being worked on is handed out again once that worker is done), and a failed key
 * comes back after an exponential delay, so a failing key never spins.
 *
 * Keys may belong to flows (`flowOf`: whose work it is), each worked on by at most `maxPerFlow` workers at once: a
 * flow whose keys are slow (a tenant's virtual clusters that never answer) holds that many workers, and the others
 * serve everyone else's keys, in the order they came. A flow alone still gets that many, not every worker: the
 * checks are waits on others' servers, not work of ours, so more workers cost little.
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
  /** Whose work a key is (see the top); every key is its own flow when unset. */
  flowOf?: (key: string) => string;
  /** The most workers on the keys of one flow at once (with flowOf). */
  maxPerFlow?: number;
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
  /** The last spreadOver: when its period started, and how long it is. */
  private period?: { start: number; ms: number };
  /** Keys added later (addAfter), each with when it is due: the earliest asked for wins. */
  private readonly later = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private shutDown = false;
  private readonly backoff: IBackoffFactory<unknown>;
  private readonly name: string;
  private readonly metrics?: WorkQueueMetrics;
  private readonly untrack?: () => void;
  private readonly flowOf?: (key: string) => string;
  private readonly maxPerFlow: number;
  /** How many keys of each flow are being worked on (with flowOf). */
  private readonly busy = new Map<string, number>();
  /** The flow each key being worked on was counted in (its flow may change meanwhile). */
  private readonly countedIn = new Map<string, string>();

  constructor(opts: WorkQueueOptions = {}) {
    this.backoff = exponentialBackoff({ initialMs: opts.baseDelayMs ?? 500, maxMs: opts.maxDelayMs ?? 30_000 });
    this.name = opts.name ?? '';
    this.metrics = opts.metrics;
    this.untrack = this.metrics?.track(this.name, this);
    this.flowOf = opts.flowOf;
    this.maxPerFlow = opts.maxPerFlow ?? Infinity;
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
    this.queue.add(key);
    this.dispatch();
  }

  /** Hands waiting workers the first keys whose flows may take one more. */
  private dispatch(): void {
    while (this.waiters.length) {
      const key = this.next();
      if (key === undefined) return;
      this.waiters.shift()!(key);
    }
  }

  /** Takes the first queued key whose flow may take one more worker; undefined when there is none. */
  private next(): string | undefined {
    for (const key of this.queue) {
      const flow = this.flowOf?.(key);
      if (flow !== undefined && (this.busy.get(flow) ?? 0) >= this.maxPerFlow) continue;
      this.queue.delete(key);
      this.processing.add(key);
      if (flow !== undefined) {
        this.busy.set(flow, (this.busy.get(flow) ?? 0) + 1);
        this.countedIn.set(key, flow);
      }
      return key;
    }
    return undefined;
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
    this.period = { start: Date.now(), ms: periodMs };
    for (const key of keys) this.addAfter(key, Math.floor(phaseOf(key) * periodMs));
  }

  /**
   * A key first seen during a spread period also gets its point of this period, if still ahead: else its first
   * periodic turn would come at its point of the next period, up to two periods after it was first seen.
   */
  joinSpread(key: string): void {
    if (!this.period) return;
    const delay = this.period.start + Math.floor(phaseOf(key) * this.period.ms) - Date.now();
    if (delay > 0) this.addAfter(key, delay);
  }

  /** The next key to work on; undefined once shut down. Call done(key) after. */
  get(): Promise<string | undefined> {
    if (this.shutDown) return Promise.resolve(undefined);
    const key = this.next();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const flow = this.countedIn.get(key);
    if (flow !== undefined) {
      this.countedIn.delete(key);
      const left = (this.busy.get(flow) ?? 1) - 1;
      if (left > 0) this.busy.set(flow, left);
      else this.busy.delete(flow);
    }
    if (this.dirty.delete(key)) this.add(key);
    // A key of this flow left waiting may go now.
    this.dispatch();
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
