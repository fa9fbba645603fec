/**
 * The key a leader holds, on etcd's own primitives: a lease, a create-only compare-and-swap that attaches the key to
 * it, a read and a watch of the key (client-go's resourcelock, kept in storage as the elector's only door to etcd).
 * Every call is a storage call: under the etcd health guard, measured, failing as StorageError. The election itself
 * (when to campaign, renew or step down) is controllers/leader.ts's.
 */
import { EtcdLeaseInvalidError, type Etcd3, type Lease } from 'etcd3';

/** Runs one etcd call as storage does (EtcdStorage's call, bound to the lock's key). */
export type StorageCall = <R>(operation: string, fn: () => Promise<R>) => Promise<R>;

export interface GrantedLease {
  /** Renews the lease once; resolves to the seconds it has left, 0 when etcd no longer has it (expired or revoked). */
  keepAlive(): Promise<number>;
  /** Ends the lease in etcd, deleting the key attached to it. */
  revoke(): Promise<void>;
  /** Forgets the lease here without telling etcd (it expires by itself). */
  release(): void;
}

export interface LockWatchHandlers {
  /** The key was written: `holder` holds it now. */
  held(holder: string): void;
  /** The key is gone (deleted, or its lease expired or was revoked). */
  released(): void;
  /** etcd ended the watch. */
  error(): void;
}

export interface LeaseLock {
  readonly key: string;
  /** A new lease of `ttlSeconds`, kept alive only by keepAlive(). */
  grant(ttlSeconds: number): Promise<GrantedLease>;
  /** Writes `identity` under the key, attached to `lease`, unless the key exists; otherwise says who holds it. */
  acquire(identity: string, lease: GrantedLease): Promise<{ acquired: boolean; holder?: string; revision: string }>;
  /** Who holds the key now (undefined: nobody). */
  holder(): Promise<string | undefined>;
  /** Tells of every change to the key after `afterRevision`, until closed. */
  watch(afterRevision: string, handlers: LockWatchHandlers): Promise<{ close(): Promise<void> }>;
}

/** A granted etcd lease with the calls the lock makes on it. */
class EtcdLease implements GrantedLease {
  constructor(
    readonly lease: Lease,
    readonly id: string,
    private readonly call: StorageCall,
  ) {}

  keepAlive(): Promise<number> {
    return this.call('leaseKeepAlive', () =>
      this.lease.keepaliveOnce().then(
        (res) => Number(res.TTL ?? 0),
        (err: unknown) => {
          // etcd answers a renewal of a lease it no longer has with a TTL of 0, which the client throws.
          if (err instanceof EtcdLeaseInvalidError) return 0;
          throw err;
        },
      ),
    );
  }

  revoke(): Promise<void> {
    return this.call('leaseRevoke', () => this.lease.revoke());
  }

  release(): void {
    this.lease.release();
  }
}

export class EtcdLeaseLock implements LeaseLock {
  constructor(
    private readonly client: Etcd3,
    readonly key: string,
    private readonly call: StorageCall,
  ) {}

  async grant(ttlSeconds: number): Promise<GrantedLease> {
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    // Losses are reported through keepAlive's result; no unhandled 'lost'.
    lease.on('lost', () => {});
    try {
      return new EtcdLease(lease, await this.call('leaseGrant', () => lease.grant()), this.call);
    } catch (err) {
      lease.release();
      throw err;
    }
  }

  async acquire(
    identity: string,
    lease: GrantedLease,
  ): Promise<{ acquired: boolean; holder?: string; revision: string }> {
    if (!(lease instanceof EtcdLease)) throw new Error('lease lock: the lease was not granted by this lock');
    const txn = await this.call('create', () =>
      this.client
        .if(this.key, 'Create', '==', 0)
        .then(this.client.put(this.key).value(identity).lease(lease.id))
        .else(this.client.get(this.key))
        .commit(),
    );
    const holder = txn.succeeded ? identity : txn.responses[0]?.response_range?.kvs?.[0]?.value?.toString();
    return { acquired: txn.succeeded, holder, revision: txn.header.revision };
  }

  async holder(): Promise<string | undefined> {
    return (await this.call('get', () => this.client.get(this.key).string())) ?? undefined;
  }

  async watch(afterRevision: string, handlers: LockWatchHandlers): Promise<{ close(): Promise<void> }> {
    const watcher = await this.call('watch', () =>
      this.client
        .watch()
        .key(this.key)
        .startRevision(String(BigInt(afterRevision) + 1n))
        .create(),
    );
    watcher.on('put', (kv) => handlers.held(kv.value.toString()));
    watcher.on('delete', () => handlers.released());
    watcher.on('error', () => handlers.error());
    return { close: () => watcher.cancel() };
  }
}
