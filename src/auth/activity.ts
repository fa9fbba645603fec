/**
 * Records when access keys are used, in `status.lastActivity`, without slowing requests down:
 * - `record(name)` runs on the request path and only notes the time in memory (no I/O, no promise).
 * - A background tick writes what was noted, at most once per `minIntervalMs` per key (about once a minute by
 *   default), one key after another.
 * - `flush()` writes everything still pending at once, whatever the interval (at shutdown, so no record is lost).
 * - `lastSeen(name)` is the latest use noted here, written or not: expiry after the last activity counts it, so a
 *   key in use never expires because its status lags behind.
 * A write that fails is kept pending and tried again on a later tick; a key that no longer exists (404) is
 * forgotten.
 */
import * as errors from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import { lastActivityOf } from '../kinds/ownedaccesskey/expiry.js';
import type { Store } from '../registry/store.js';

export type ActivityWrite = (name: string, isoTime: string) => Promise<void>;

export interface ActivityRecorderOptions {
  /** Writes `status.lastActivity` of the named key (see lastActivityWriter). */
  write: ActivityWrite;
  /** At most one write per key per this many milliseconds (default 60 s). */
  minIntervalMs?: number;
  /** How often pending records are looked at (default 5 s). */
  tickMs?: number;
  /** The clock (tests). */
  now?: () => number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

interface Entry {
  /** Latest use noted (ms since the epoch). */
  seen: number;
  /** The use time last written (0: none yet). */
  written: number;
  /** When that write happened, by `now()` (for the interval). */
  writtenAt: number;
}

export class ActivityRecorder {
  private readonly entries = new Map<string, Entry>();
  private readonly write: ActivityWrite;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  private readonly log: NonNullable<ActivityRecorderOptions['log']>;
  private timer?: NodeJS.Timeout;
  /** The tick or flush in progress: writes never overlap. */
  private running: Promise<void> = Promise.resolve();

  constructor(opts: ActivityRecorderOptions) {
    this.write = opts.write;
    this.minIntervalMs = opts.minIntervalMs ?? 60_000;
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
    const tickMs = opts.tickMs ?? 5_000;
    if (tickMs > 0) {
      this.timer = setInterval(() => void this.tick(), tickMs);
      this.timer.unref();
    }
  }

  /** Notes a use of the key; cheap and synchronous. */
  record(name: string, now: number = this.now()): void {
    const entry = this.entries.get(name);
    if (!entry) this.entries.set(name, { seen: now, written: 0, writtenAt: 0 });
    else if (now > entry.seen) entry.seen = now;
  }

  /** The latest use noted here (ms since the epoch), if any. */
  lastSeen(name: string): number | undefined {
    return this.entries.get(name)?.seen;
  }

  /** Drops what is known about a key (it was deleted). */
  forget(name: string): void {
    this.entries.delete(name);
  }

  /** Writes the uses whose key was not written within the interval. */
  tick(): Promise<void> {
    return this.serially(() => this.writePending(false));
  }

  /** Writes every pending use now. */
  flush(): Promise<void> {
    return this.serially(() => this.writePending(true));
  }

  /** Stops the background tick (pending uses stay; flush() writes them). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** stop() then flush(): for shutdown. */
  async close(): Promise<void> {
    this.stop();
    await this.flush();
  }

  private serially(fn: () => Promise<void>): Promise<void> {
    const next = this.running.then(fn, fn);
    this.running = next.catch(() => undefined);
    return next;
  }

  private async writePending(all: boolean): Promise<void> {
    const now = this.now();
    for (const [name, entry] of [...this.entries]) {
      if (entry.seen <= entry.written) continue;
      if (!all && entry.writtenAt && now - entry.writtenAt < this.minIntervalMs) continue;
      const seen = entry.seen;
      try {
        await this.write(name, new Date(seen).toISOString().replace(/\.\d{3}Z$/, 'Z'));
        entry.written = Math.max(entry.written, seen);
        entry.writtenAt = this.now();
      } catch (err) {
        if (errors.isStatusError(err, 'NotFound')) {
          this.entries.delete(name);
          continue;
        }
        // Refused for good (e.g. the stored key no longer validates): not tried again until the next use.
        if (errors.isStatusError(err) && err.code >= 400 && err.code < 500 && err.code !== 409 && err.code !== 429) {
          entry.written = Math.max(entry.written, seen);
          entry.writtenAt = this.now();
        }
        this.log('could not record the last activity of an access key', {
          name,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}

/**
 * The write an ActivityRecorder needs, through the ownedaccesskeys store: an update of the status subresource that
 * only ever moves `status.lastActivity` forward (another replica may have written a later time), except from a
 * time in the future, which no use of the key wrote and which is replaced.
 */
export function lastActivityWriter(store: Store, fieldManager = 'platform-apiserver'): ActivityWrite {
  return async (name, isoTime) => {
    await store.update(
      undefined,
      name,
      {
        patch: (current: KubeObject) => {
          const before = lastActivityOf(current, Date.now());
          if (before !== undefined && before >= Date.parse(isoTime)) return current;
          return { ...current, status: { ...(current.status ?? {}), lastActivity: isoTime } };
        },
      },
      'status',
      { fieldManager },
    );
  };
}
