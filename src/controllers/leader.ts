/**
 * Leader election on an etcd lease (after client-go's leaderelection, on etcd's primitives, reached through storage's
 * LeaseLock as client-go's elector reaches them through a resourcelock): the leader holds the lock's key (e.g.
 * `<prefix>/leases/controllers`), written with a create-only compare-and-swap and attached to a lease of
 * `leaseTtlSeconds`. Other electors watch the key and campaign again as soon as it is deleted (the
 * leader stopped and revoked its lease) or expires (the leader died or lost etcd).
 *
 * The leader keeps the lease alive every TTL/3. It steps down on its own once the last confirmed keepalive is
 * about to run out (etcd unreachable), when etcd says the lease is gone, or when the key no longer holds its
 * identity, so it stops before etcd can hand the key to another replica.
 */
import { Backoff } from '../apimachinery/backoff.js';
import { withDeadline } from '../apimachinery/deadline.js';
import type { GrantedLease, LeaseLock } from '../storage/leaselock.js';
import { sleep } from '../apimachinery/sleep.js';

export interface LeaderElectorOptions {
  /** The key the leader holds (EtcdStorage.leaseLock). */
  lock: LeaseLock;
  /** Unique per process (e.g. hostname + random suffix). */
  identity: string;
  leaseTtlSeconds?: number;
  /** Called when this elector becomes leader; `signal` aborts when it stops leading. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called when this elector stops leading (lost the lease, or stop()). */
  onStoppedLeading(): void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** How long a stepping-down leader waits for its work to stop before giving up the lease. */
const STOP_WORK_TIMEOUT_MS = 5000;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return withDeadline(p, ms, `${what} timed out after ${ms}ms`);
}

export class LeaderElector {
  private readonly lock: LeaseLock;
  private readonly key: string;
  readonly identity: string;
  private readonly ttl: number;
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;

  private running = false;
  /** Aborts when stop() is called: ends waits and the campaign loop. */
  private stopController = new AbortController();
  private loop?: Promise<void>;
  private lease?: GrantedLease;
  private leading?: { controller: AbortController; lost: Promise<void>; loseNow: (why: string) => void };

  constructor(private readonly opts: LeaderElectorOptions) {
    this.lock = opts.lock;
    this.key = opts.lock.key;
    this.identity = opts.identity;
    this.ttl = Math.max(1, Math.round(opts.leaseTtlSeconds ?? 10));
    this.log = opts.log ?? (() => {});
  }

  isLeader(): boolean {
    return !!this.leading && !this.leading.controller.signal.aborted;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopController = new AbortController();
    this.loop = this.campaignLoop();
  }

  /** Stops campaigning; a leader stops leading and revokes its lease, so another elector takes over at once. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopController.abort();
    this.leading?.loseNow('stopped');
    await this.loop;
  }

  private async campaignLoop(): Promise<void> {
    const stopSignal = this.stopController.signal;
    const backoff = new Backoff({ initialMs: 200, maxMs: Math.max(2000, (this.ttl * 1000) / 3) });
    while (this.running) {
      try {
        const acquired = await this.tryAcquire();
        if (acquired) {
          backoff.reset();
          await this.lead();
        }
      } catch (err) {
        this.log('leader election: etcd call failed', { key: this.key, error: String(err) });
        await this.releaseLease();
        await sleep(backoff.next(), stopSignal);
      }
    }
    await this.releaseLease();
  }

  /** One attempt: grants a lease and creates the key with it; on failure waits until the key may be free. */
  private async tryAcquire(): Promise<boolean> {
    const stopSignal = this.stopController.signal;
    const timeout = Math.max(1000, (this.ttl * 1000) / 2);
    const grantedFrom = Date.now();
    const granting = this.lock.grant(this.ttl);
    let lease: GrantedLease;
    try {
      lease = await withTimeout(granting, timeout, 'lease grant');
    } catch (err) {
      // A grant that lands late holds no key: revoke it then rather than leave it to run out.
      void granting.then(
        (late) => late.revoke().catch(() => late.release()),
        () => {},
      );
      throw err;
    }
    this.lease = lease;
    const attempt = await withTimeout(this.lock.acquire(this.identity, lease), timeout, 'lease acquire');
    if (attempt.acquired && this.running) {
      this.deadline = grantedFrom + this.ttl * 1000;
      this.acquiredRevision = attempt.revision;
      return true;
    }
    await this.releaseLease();
    if (!this.running) return false;
    this.log('leader election: waiting for the current leader', { key: this.key, holder: attempt.holder });
    // Wait for the key to go (deleted or expired) after the revision we read; poll as a fallback.
    const gone = new AbortController();
    const onStop = () => gone.abort();
    stopSignal.addEventListener('abort', onStop, { once: true });
    let watcher: { close(): Promise<void> } | undefined;
    try {
      watcher = await withTimeout(
        this.lock.watch(attempt.revision, { held: () => {}, released: () => gone.abort(), error: () => gone.abort() }),
        timeout,
        'watch',
      );
    } catch {
      // No watch: the poll below still notices.
    }
    await sleep(this.ttl * 1000, gone.signal);
    stopSignal.removeEventListener('abort', onStop);
    await watcher?.close().catch(() => {});
    return false;
  }

  /** When the lease may have expired at the earliest, as far as this process knows. */
  private deadline = 0;
  /** The etcd revision at which this elector wrote the leader key. */
  private acquiredRevision = '0';

  /** Leads until the lease is lost or stop() is called. */
  private async lead(): Promise<void> {
    // stop() may have come between winning the key and getting here: never start leading then.
    if (!this.running) return;
    const controller = new AbortController();
    let loseNow!: (why: string) => void;
    const lost = new Promise<void>((resolve) => {
      loseNow = (why: string) => {
        if (controller.signal.aborted) return;
        this.log('leader election: stopped leading', { key: this.key, identity: this.identity, reason: why });
        controller.abort();
        resolve();
      };
    });
    this.leading = { controller, lost, loseNow };
    this.log('leader election: started leading', { key: this.key, identity: this.identity });
    const working = this.startWork(controller.signal);

    // Step down a little before the lease could have expired on etcd's side.
    const margin = Math.min(1000, (this.ttl * 1000) / 5);
    let expiry: NodeJS.Timeout | undefined;
    const armExpiry = () => {
      clearTimeout(expiry);
      expiry = setTimeout(() => loseNow('lease not renewed in time'), Math.max(0, this.deadline - margin - Date.now()));
    };
    armExpiry();
    const interval = Math.max(250, (this.ttl * 1000) / 3);
    void this.renewLease(controller.signal, interval, loseNow, armExpiry);
    const watcher = await this.watchLeaderKey(interval, loseNow);
    await lost;
    void watcher?.close().catch(() => {});
    clearTimeout(expiry);
    this.leading = undefined;
    await this.stopWork(working);
    // Revoking deletes the key, so others take over at once (fails harmlessly when etcd is gone).
    await this.releaseLease();
    if (this.running) await sleep(100, this.stopController.signal);
  }

  /** Calls onStartedLeading: what it started, failures logged, to be waited for when leading ends. */
  private startWork(signal: AbortSignal): Promise<unknown> {
    try {
      return Promise.resolve(this.opts.onStartedLeading(signal)).catch((err) =>
        this.log('leader election: onStartedLeading failed', { error: String(err) }),
      );
    } catch (err) {
      this.log('leader election: onStartedLeading failed', { error: String(err) });
      return Promise.resolve();
    }
  }

  /** Renews the lease every `interval` while leading; each renewal moves the deadline on, then calls `renewed`. */
  private async renewLease(
    signal: AbortSignal,
    interval: number,
    loseNow: (why: string) => void,
    renewed: () => void,
  ): Promise<void> {
    while (!signal.aborted) {
      await sleep(interval, signal);
      if (signal.aborted) return;
      const sentAt = Date.now();
      try {
        const ttl = await withTimeout(this.lease!.keepAlive(), interval, 'keepalive');
        if (signal.aborted) return;
        if (ttl <= 0) return loseNow('lease expired or revoked');
        const holder = await withTimeout(this.lock.holder(), interval, 'read leader key');
        if (holder !== this.identity) return loseNow('leader key changed');
        this.deadline = sentAt + ttl * 1000;
        renewed();
      } catch (err) {
        this.log('leader election: renewal failed', { key: this.key, error: String(err) });
      }
    }
  }

  /** Someone else deleting or overwriting the key (e.g. revoking the lease) ends leadership at once. */
  private async watchLeaderKey(
    interval: number,
    loseNow: (why: string) => void,
  ): Promise<{ close(): Promise<void> } | undefined> {
    try {
      return await withTimeout(
        this.lock.watch(this.acquiredRevision, {
          held: (holder) => {
            if (holder !== this.identity) loseNow('leader key taken over');
          },
          released: () => loseNow('leader key deleted'),
          error: () => {},
        }),
        interval,
        'watch leader key',
      );
    } catch {
      // The renewal loop still checks the key.
      return undefined;
    }
  }

  /** Lets the work begun as leader wind down (bounded) before another replica can take the lease. */
  private async stopWork(working: Promise<unknown>): Promise<void> {
    await withTimeout(working, STOP_WORK_TIMEOUT_MS, 'stopping leader work').catch((err) =>
      this.log('leader election: work did not stop in time', { error: String(err) }),
    );
    try {
      this.opts.onStoppedLeading();
    } catch (err) {
      this.log('leader election: onStoppedLeading failed', { error: String(err) });
    }
  }

  private async releaseLease(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    if (!lease) return;
    try {
      await withTimeout(lease.revoke(), 2000, 'lease revoke');
    } catch {
      lease.release();
    }
  }
}
