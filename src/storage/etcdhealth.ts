/**
 * Whether etcd answers, probed in the background (a linearizable read, which needs a leader and a quorum), so that
 * while it does not, calls fail at once instead of each waiting out its deadline: once probes have failed twice in a
 * row, new calls are refused, and calls already waiting are given up (a write among them may still land, as after
 * any timeout). The first probe that succeeds again lets calls through: recovery needs no restart.
 */
import { withDeadline } from '../apimachinery/deadline.js';

export interface EtcdHealthOptions {
  /** One probe; rejects (or outlasts `timeoutMs`) when etcd does not answer. */
  probe: () => Promise<unknown>;
  /** Time between the end of one probe and the start of the next. */
  intervalMs?: number;
  /** A probe taking longer than this counts as failed (kube's --etcd-readycheck-timeout is 2 s). */
  timeoutMs?: number;
  /**
   * Failed probes in a row before etcd counts as not answering (default 2): one slow answer, as during a leader
   * election, does not fail calls that are about to succeed.
   */
  failuresToTrip?: number;
  /** Told when etcd stops or starts answering. */
  onChange?: (healthy: boolean, reason?: string) => void;
}

export class EtcdUnhealthyError extends Error {}

export class EtcdHealth {
  private healthy = true;
  private failures = 0;
  private reason = '';
  private timer?: NodeJS.Timeout;
  private stopped = false;
  /** How to give up each call in flight, until it settles. */
  private readonly waiting = new Set<(err: Error) => void>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly opts: EtcdHealthOptions) {
    this.intervalMs = opts.intervalMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 2000;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  get isHealthy(): boolean {
    return this.healthy;
  }

  /**
   * Runs `call` unless etcd is known not to answer, and gives it up as soon as that becomes known.
   * Throws EtcdUnhealthyError in both cases.
   */
  guard<R>(call: () => Promise<R>): Promise<R> {
    if (!this.healthy) return Promise.reject(this.error());
    // Not Promise.race with one promise that lives until etcd is lost: each race would leave its handlers (and
    // through them the call's result) on that promise for good, a leak of every call ever made.
    return new Promise<R>((resolve, reject) => {
      let result: Promise<R>;
      try {
        result = call();
      } catch (err) {
        reject(err);
        return;
      }
      this.waiting.add(reject);
      result.then(resolve, reject).finally(() => this.waiting.delete(reject));
    });
  }

  private error(): EtcdUnhealthyError {
    return new EtcdUnhealthyError(`etcd does not answer (${this.reason}); calls fail at once until it does`);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.probeOnce(), delayMs);
    this.timer.unref();
  }

  private async probeOnce(): Promise<void> {
    try {
      await withDeadline(this.opts.probe(), this.timeoutMs, `no answer within ${this.timeoutMs} ms`);
      this.failures = 0;
      this.set(true);
    } catch (err) {
      if (++this.failures >= (this.opts.failuresToTrip ?? 2))
        this.set(false, err instanceof Error ? err.message : String(err));
    }
    this.schedule(this.intervalMs);
  }

  private set(healthy: boolean, reason = ''): void {
    if (this.stopped) return;
    this.reason = reason;
    if (healthy === this.healthy) return;
    this.healthy = healthy;
    if (!healthy) {
      const err = this.error();
      for (const giveUp of this.waiting) giveUp(err);
      this.waiting.clear();
    }
    this.opts.onChange?.(healthy, reason || undefined);
  }
}
