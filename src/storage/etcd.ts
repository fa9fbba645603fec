/**
 * Storage on etcd v3, and the server's only door to etcd: objects, the token signing keys' document (getValue,
 * guaranteedUpdateValue), the compactor's shared counter and compaction, and the leader's lease (leaseLock). Every
 * call goes through call(): the health guard, the onCall metrics, and failures as StorageError. Every write is one
 * transaction comparing the key's mod revision with the one read (kube's pkg/storage/etcd3/store.go), so concurrent
 * writers never lose each other's updates; an object's claims (interface.ts ClaimHolder) are written and deleted in
 * the transaction that creates or deletes it.
 */
import { ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleWhen, retry, type IBackoff } from 'cockatiel';
import { Etcd3, GRPCUnavailableError, Range, type IOptions } from 'etcd3';
import { decode, encode, encodeWithCopy, servedJson, withRevision } from './codec.js';
import { identityTransformer, type Transformer } from './encryption/transformer.js';
import { EtcdHealth } from './etcdhealth.js';
import './etcd3watchfix.js';
import { EtcdLeaseLock, type LeaseLock } from './leaselock.js';
import {
  ClaimTakenError,
  StorageError,
  type AttributesOf,
  type ClaimHolder,
  type CreateOptions,
  type DeleteOptions,
  type ListResult,
  type Page,
  type PageOptions,
  type Storage,
  type StoredObject,
  type StoredText,
  type StoredValue,
  type UpdateOptions,
  type UpdateResult,
  type WatchEvent,
  type WatchHandle,
  type WatchHandlers,
} from './interface.js';
import { inSpan, tracer } from '../tracing.js';

export interface EtcdStorageOptions {
  endpoints: string[];
  /** TLS to etcd (https:// endpoints): the CA that verifies etcd, and a client certificate for --client-cert-auth. */
  tls?: { caPem?: Buffer; certPem?: Buffer; keyPem?: Buffer };
  /** Deadline of one etcd call; a call that takes longer fails as Unreachable. */
  callTimeoutMs?: number;
  /** Told when etcd stops answering (and why) or answers again. */
  onHealthChange?: (healthy: boolean, reason?: string) => void;
  /** Keys read per range request when listing, to stay under gRPC's message size limit. */
  listPageSize?: number;
  /** Told of every etcd call when it ends (for metrics): what it was, the key or prefix, how long, and whether it failed. */
  onCall?: (operation: string, key: string, seconds: number, failed: boolean) => void;
  /** How each key's value is stored (encryption at rest, --encryption-provider-config); default: plain. */
  transformers?: { forKey(key: string): Transformer };
  /** Told of a watched value that cannot be read (its key and why; never its data). */
  onUnreadable?: (key: string, reason: string) => void;
}

interface RawKv {
  value: Buffer;
  modRevision: string;
}

/** A stored value read back: the object, its plain bytes, and whether it should be rewritten (an old key wrote it). */
interface Read<T> {
  object: T;
  plaintext: string;
  stale: boolean;
}

export class EtcdStorage implements Storage {
  /** Private: every etcd call goes through call() (health guard, metrics, StorageError). */
  private readonly client: Etcd3;
  /** Whether etcd answers; while it does not, calls fail at once. */
  readonly health: EtcdHealth;
  private readonly pageSize: number;
  private readonly onCall?: EtcdStorageOptions['onCall'];
  private readonly transformers: NonNullable<EtcdStorageOptions['transformers']>;
  private readonly onUnreadable?: EtcdStorageOptions['onUnreadable'];

  constructor(opts: EtcdStorageOptions) {
    const timeout = opts.callTimeoutMs ?? 10_000;
    const options: IOptions = {
      hosts: opts.endpoints,
      dialTimeout: timeout,
      // Streams (watches) live long; only unary calls get a deadline.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
      // Watches reconnect quickly after etcd comes back (the library's default waits up to 30 s).
      // (etcd3 types the option as a backoff but uses it as the factory its own default is.)
      faultHandling: {
        watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 2000 }) as unknown as IBackoff<unknown>,
        ...memberFaultHandling(opts.endpoints.length),
      },
      // A page of objects (each up to etcd's 1.5 MiB) easily passes gRPC's default 4 MiB answer limit; kube-apiserver
      // lifts it too (MaxCallRecvMsgSize = MaxInt32). Requests stay within etcd's own --max-request-bytes.
      grpcOptions: { 'grpc.max_receive_message_length': -1 },
    };
    if (opts.tls) {
      options.credentials = {
        rootCertificate: opts.tls.caPem ?? (null as unknown as Buffer),
        privateKey: opts.tls.keyPem,
        certChain: opts.tls.certPem,
      };
    }
    this.client = new Etcd3(options);
    this.health = new EtcdHealth({ probe: () => this.client.get('health').exec(), onChange: opts.onHealthChange });
    this.health.start();
    this.pageSize = opts.listPageSize ?? 1000;
    this.onCall = opts.onCall;
    this.transformers = opts.transformers ?? { forKey: () => identityTransformer };
    this.onUnreadable = opts.onUnreadable;
  }

  async create<T extends StoredObject>(key: string, obj: T, opts: CreateOptions = {}): Promise<T> {
    const { bytes, copy } = encodeWithCopy(obj);
    const claims = opts.claims ?? [];
    if (opts.dryRun) {
      if (await this.readRaw(key)) throw keyExists(key);
      for (const claim of claims) {
        const kv = await this.readRaw(claim);
        if (kv) await this.checkHolderExists(claim, kv.value);
      }
      return copy;
    }
    const stored = await this.toStorage(key, bytes);
    const holder = claimValue({ key, uid: uidOf(obj) });
    // Each claim is expected absent (mod revision 0) or, once found stale, still as it was read.
    const expected = new Map(claims.map((claim) => [claim, '0']));
    for (;;) {
      const txn = await this.call('create', key, () => {
        const compare = this.client.if(key, 'Mod', '==', 0);
        for (const [claim, revision] of expected) compare.and(claim, 'Mod', '==', revision);
        return compare
          .then(this.client.put(key).value(stored), ...claims.map((claim) => this.client.put(claim).value(holder)))
          .else(this.client.get(key), ...claims.map((claim) => this.client.get(claim)))
          .commit();
      });
      if (txn.succeeded) return withRevision(copy, txn.header.revision);
      if (rawFromElse(txn.responses)) throw keyExists(key);
      for (const [i, claim] of claims.entries()) {
        const kv = rawFromElse(txn.responses, i + 1);
        if (kv) await this.checkHolderExists(claim, kv.value);
        expected.set(claim, kv?.modRevision ?? '0');
      }
    }
  }

  async get<T extends StoredObject>(key: string): Promise<T | undefined> {
    const kv = await this.readRaw(key);
    return kv ? (await this.fromStorage<T>(key, kv.value, kv.modRevision)).object : undefined;
  }

  async list<T extends StoredObject>(prefix: string): Promise<ListResult<T>> {
    const items: T[] = [];
    const keys: string[] = [];
    let start: string | undefined;
    let revision: string | undefined;
    for (;;) {
      // Later pages are read at the first page's revision, so the list is one consistent snapshot.
      const page = await this.listPage<T>(prefix, { start, limit: this.pageSize, revision });
      revision = page.resourceVersion;
      items.push(...page.items);
      keys.push(...page.keys);
      if (!page.more || page.items.length === 0) return { items, keys, resourceVersion: revision };
      start = keyAfter(page.keys[page.keys.length - 1]);
    }
  }

  async listPage<T extends StoredObject>(prefix: string, opts: PageOptions): Promise<Page<T>> {
    const res = await this.range(prefix, opts, false).catch((err) => this.withCurrentRevision(err, opts));
    const items = await Promise.all(
      res.kvs.map(async (kv) => (await this.fromStorage<T>(kv.key.toString(), kv.value, kv.mod_revision)).object),
    );
    const keys = res.kvs.map((kv) => kv.key.toString());
    return { items, keys, resourceVersion: res.header.revision, more: res.more, count: Number(res.count) };
  }

  async listPageText(prefix: string, opts: PageOptions, attributesOf: AttributesOf): Promise<Page<StoredText>> {
    const res = await this.range(prefix, opts, false).catch((err) => this.withCurrentRevision(err, opts));
    const items = await Promise.all(
      res.kvs.map(async (kv) => {
        const key = kv.key.toString();
        const { value: plaintext } = await this.untransform(key, kv.value, this.transformers.forKey(key));
        const value = validJson(key, plaintext);
        return {
          json: servedJson(plaintext, kv.mod_revision),
          resourceVersion: kv.mod_revision,
          attributes: attributesOf(value),
        };
      }),
    );
    const keys = res.kvs.map((kv) => kv.key.toString());
    return { items, keys, resourceVersion: res.header.revision, more: res.more, count: Number(res.count) };
  }

  async keyRevisions(prefix: string, revision: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    let start: string | undefined;
    for (;;) {
      const res = await this.range(prefix, { start, limit: this.pageSize * 10, revision }, true);
      for (const kv of res.kvs) out.set(kv.key.toString(), kv.mod_revision);
      if (!res.more || res.kvs.length === 0) return out;
      start = keyAfter(res.kvs[res.kvs.length - 1].key.toString());
    }
  }

  async createRevision(key: string): Promise<string | undefined> {
    const res = await this.call('get', key, () => this.client.kv.range({ key: Buffer.from(key), keys_only: true }));
    return res.kvs[0]?.create_revision;
  }

  async currentRevision(): Promise<string> {
    const res = await this.call('currentRevision', '', () =>
      this.client.kv.range({ key: Buffer.from([0]), limit: 1, keys_only: true }),
    );
    return res.header.revision;
  }

  async watch<T extends StoredObject>(
    prefix: string,
    afterRevision: string,
    handlers: WatchHandlers<T>,
    opts: { revisionsUnder?: string } = {},
  ): Promise<WatchHandle> {
    const watched = opts.revisionsUnder && prefix.startsWith(opts.revisionsUnder) ? opts.revisionsUnder : prefix;
    const watcher = await this.call('watch', prefix, () =>
      this.client
        .watch()
        .prefix(watched)
        .startRevision(String(BigInt(afterRevision) + 1n))
        .withPreviousKV()
        .create(),
    );
    // Values are decrypted asynchronously; one queue keeps events and progress in etcd's order.
    let delivered = Promise.resolve();
    let unreadable = false;
    watcher.on('data', (res) => {
      delivered = delivered.then(async () => {
        if (unreadable) return;
        if (res.events.length === 0) {
          handlers.progress(res.header.revision);
          return;
        }
        const mine = res.events.filter((e) => e.kv.key.toString().startsWith(prefix));
        const events = await Promise.all(mine.map((e) => this.toWatchEvent<T>(e)));
        if (!events.every((e) => e !== undefined)) {
          // Skipping the event would leave the watcher behind without knowing it: it starts over (lists again),
          // as kube's reflector does after a watch error, and lists fail, naming the key, until the value reads.
          unreadable = true;
          handlers.lost();
          return;
        }
        if (events.length) handlers.events(events);
        // Events arrive in revision order: everything up to the last one, in `prefix` or not, has been delivered.
        if (mine.length < res.events.length) handlers.progress(res.events[res.events.length - 1].kv.mod_revision);
      });
      // A handler that throws must not stop the queue (and with it every later event).
      delivered = delivered.catch(() => undefined);
    });
    // Errors reach here only when etcd canceled the watch (its start revision was compacted, or worse);
    // network failures the client retries by itself, resuming after the last revision it delivered.
    let canceled = false;
    watcher.on('error', () => {
      canceled = true;
      handlers.lost();
    });
    // Canceling a watch etcd already dropped would wait forever for an end that never comes; so would canceling one
    // twice (etcd's answer to the second cancel names a watch the client no longer knows, and it throws).
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= canceled ? Promise.resolve() : watcher.cancel()) };
  }

  /**
   * Writes again every value under `prefix` that an encryption key or provider other than the one writing now
   * wrote (kube's documented rotation step "rewrite every object", done by the server): page by page, each with a
   * compare-and-swap, so a concurrent update wins and needs nothing more. Values that cannot be read are counted
   * by key and left as they are.
   */
  async rewriteStale(prefix: string): Promise<{ rewritten: number; unreadable: string[] }> {
    let rewritten = 0;
    const unreadable: string[] = [];
    let start: string | undefined;
    for (;;) {
      const res = await this.range(prefix, { start, limit: this.pageSize }, false);
      for (const kv of res.kvs) {
        const key = kv.key.toString();
        try {
          if (!(await this.fromStorage(key, kv.value, kv.mod_revision)).stale) continue;
          if ((await this.guaranteedUpdate(key, (current) => current)).written) rewritten++;
        } catch (err) {
          if (err instanceof StorageError && err.code === 'KeyNotFound') continue;
          if (err instanceof StorageError && err.code === 'Internal') unreadable.push(key);
          else throw err;
        }
      }
      if (!res.more || res.kvs.length === 0) return { rewritten, unreadable };
      start = keyAfter(res.kvs[res.kvs.length - 1].key.toString());
    }
  }

  /** The value under `key` (not an object: see StoredValue), read through `transformer`. */
  async getValue(key: string, transformer: Transformer): Promise<StoredValue | undefined> {
    const kv = await this.readRaw(key);
    return kv ? { ...(await this.untransform(key, kv.value, transformer)), revision: kv.modRevision } : undefined;
  }

  /**
   * guaranteedUpdate for a value that is not an object, creating the key when it is absent (kube's GuaranteedUpdate
   * with ignoreNotFound): `tryUpdate` gets the stored value (undefined when there is none) and returns the value to
   * store, and runs again on the winner's value after a lost race. Returning the value unchanged writes nothing,
   * unless an old encryption key or provider wrote it.
   */
  async guaranteedUpdateValue(
    key: string,
    transformer: Transformer,
    tryUpdate: (current: StoredValue | undefined) => Promise<string> | string,
  ): Promise<StoredValue & { written: boolean }> {
    let current = await this.readRaw(key);
    for (;;) {
      const read = current;
      const existing = read
        ? { ...(await this.untransform(key, read.value, transformer)), revision: read.modRevision }
        : undefined;
      const value = await tryUpdate(existing);
      if (existing && value === existing.value && !existing.stale) return { ...existing, written: false };
      const stored = await this.transform(key, value, transformer);
      const txn = await this.call(read ? 'update' : 'create', key, () =>
        this.client
          .if(key, 'Mod', '==', read ? read.modRevision : 0)
          .then(this.client.put(key).value(stored))
          .else(this.client.get(key))
          .commit(),
      );
      if (txn.succeeded) return { value, revision: txn.header.revision, stale: false, written: true };
      current = rawFromElse(txn.responses);
    }
  }

  /**
   * Writes `value` under `key` if the key's version (its number of writes since it was created; 0 when absent) is
   * `version`, else reports the version it has: the compactor's shared counter (kube's compact.go keeps it so). The
   * value is bookkeeping, stored plain.
   */
  async putIfVersion(
    key: string,
    version: number,
    value: string,
  ): Promise<{ written: boolean; version: number; revision: string }> {
    const txn = await this.call('update', key, () =>
      this.client
        .if(key, 'Version', '==', version)
        .then(this.client.put(key).value(value))
        .else(this.client.get(key))
        .commit(),
    );
    if (txn.succeeded) return { written: true, version: version + 1, revision: txn.header.revision };
    return {
      written: false,
      version: Number(txn.responses[0]?.response_range?.kvs[0]?.version ?? 0),
      revision: txn.header.revision,
    };
  }

  /** The key a leader holds, on an etcd lease (leader election's door to etcd). */
  leaseLock(key: string): LeaseLock {
    return new EtcdLeaseLock(this.client, key, (operation, fn) => this.call(operation, key, fn));
  }

  async compact(revision: string): Promise<void> {
    await this.call('compact', '', () => this.client.kv.compact({ revision }));
  }

  async guaranteedUpdate<T extends StoredObject>(
    key: string,
    tryUpdate: (current: T) => Promise<T> | T,
    opts: UpdateOptions<T> = {},
  ): Promise<UpdateResult<T>> {
    // A dry run answers from what etcd holds now; so does anything not in the cache.
    const cached = opts.dryRun ? undefined : opts.cached;
    let fresh = !cached;
    let current: RawKv | undefined;
    if (!cached) current = await this.readRaw(key);
    for (;;) {
      let read: RawKv;
      let existing: Read<T>;
      if (!fresh) {
        // The cached object decodes to what etcd's bytes would: a private copy for tryUpdate to change.
        const { bytes: plaintext, copy } = encodeWithCopy(cached!);
        const revision = cached!.metadata.resourceVersion!;
        read = { value: Buffer.alloc(0), modRevision: revision };
        existing = { object: withRevision(copy, revision), plaintext, stale: false };
      } else {
        if (!current) throw new StorageError('KeyNotFound', key, `key not found: ${key}`);
        read = current;
        existing = await this.fromStorage<T>(key, read.value, read.modRevision);
      }
      let updated: T;
      try {
        updated = await tryUpdate(existing.object);
      } catch (err) {
        if (fresh) throw err;
        // Perhaps only because the cache is behind (e.g. a resourceVersion it has not seen yet): ask etcd.
        current = await this.readRaw(key);
        fresh = true;
        continue;
      }
      if (opts.dryRun) return { object: updated, written: false, deleted: !!opts.deleteInstead?.(updated) };
      if (opts.deleteInstead?.(updated)) {
        const held = await this.heldClaims(opts.claims?.(existing.object) ?? [], key, existing.object);
        const txn = await this.call('delete', key, () => this.deleteTxn(key, read.modRevision, held));
        if (txn.succeeded)
          return {
            object: withRevision(encodeWithCopy(updated).copy, txn.header.revision),
            written: true,
            deleted: true,
          };
        current = rawFromElse(txn.responses);
        fresh = true;
        continue;
      }
      const { bytes, copy } = encodeWithCopy(updated);
      // A value an old key or provider wrote is written again even when nothing changed (kube's GuaranteedUpdate):
      // this is how a no-op update moves objects to the new key. Only etcd can say whether it was one.
      if (bytes === existing.plaintext && !existing.stale) {
        if (!fresh) {
          current = await this.readRaw(key);
          fresh = true;
          continue;
        }
        return { object: withRevision(copy, read.modRevision), written: false, deleted: false };
      }
      const stored = await this.toStorage(key, bytes);
      const txn = await this.call('update', key, () =>
        this.client
          .if(key, 'Mod', '==', read.modRevision)
          .then(this.client.put(key).value(stored))
          .else(this.client.get(key))
          .commit(),
      );
      if (txn.succeeded) return { object: withRevision(copy, txn.header.revision), written: true, deleted: false };
      current = rawFromElse(txn.responses);
      fresh = true;
    }
  }

  async delete<T extends StoredObject>(
    key: string,
    precondition?: (current: T) => void | Promise<void>,
    opts: DeleteOptions<T> = {},
  ): Promise<T> {
    let current = await this.readRaw(key);
    for (;;) {
      if (!current) throw new StorageError('KeyNotFound', key, `key not found: ${key}`);
      const read = current;
      const { plaintext, object } = await this.fromStorage<T>(key, read.value, read.modRevision);
      await precondition?.(object);
      const held = await this.heldClaims(opts.claims?.(object) ?? [], key, object);
      const txn = await this.call('delete', key, () => this.deleteTxn(key, read.modRevision, held));
      if (txn.succeeded) return decode<T>(plaintext, txn.header.revision);
      current = rawFromElse(txn.responses);
    }
  }

  /**
   * Deletes `key` if it still has `revision`, and with it the claims it holds if they are still as read; else
   * answers the key's current value (rawFromElse).
   */
  private deleteTxn(key: string, revision: string, held: HeldClaim[]) {
    const compare = this.client.if(key, 'Mod', '==', revision);
    for (const claim of held) compare.and(claim.key, 'Mod', '==', claim.modRevision);
    return compare
      .then(this.client.delete().key(key), ...held.map((claim) => this.client.delete().key(claim.key)))
      .else(this.client.get(key))
      .commit();
  }

  /** Those of `claims` that name the object stored at `key` (its uid too), as read: the ones to delete with it. */
  private async heldClaims(claims: string[], key: string, object: StoredObject): Promise<HeldClaim[]> {
    const uid = uidOf(object);
    const read = await Promise.all(claims.map(async (claim) => ({ claim, kv: await this.readRaw(claim) })));
    return read.flatMap(({ claim, kv }) => {
      const holder = kv && parseClaimValue(kv.value);
      return holder?.key === key && holder.uid === uid ? [{ key: claim, modRevision: kv!.modRevision }] : [];
    });
  }

  /**
   * ClaimTakenError when the claim's value names an object that exists (the same key and uid); otherwise the claim is
   * stale (its holder is gone, or it names nothing) and may be taken over.
   */
  private async checkHolderExists(claim: string, value: Buffer): Promise<void> {
    const holder = parseClaimValue(value);
    if (!holder) return;
    const kv = await this.readRaw(holder.key);
    if (!kv) return;
    const { object } = await this.fromStorage<StoredObject>(holder.key, kv.value, kv.modRevision);
    if (uidOf(object) === holder.uid) throw new ClaimTakenError(claim, holder);
  }

  async check(): Promise<void> {
    await this.call('health', 'health', () => this.client.get('health').exec());
  }

  async close(): Promise<void> {
    this.health.stop();
    this.client.close();
  }

  /** The bytes stored for `plaintext` under `key` (encrypted when the configuration says so; the key is authenticated). */
  private toStorage(key: string, plaintext: string): Promise<Buffer> {
    return this.transform(key, plaintext, this.transformers.forKey(key));
  }

  /** The object stored under `key`; StorageError Internal (naming the key, never the data) when it cannot be read. */
  private async fromStorage<T extends StoredObject>(key: string, value: Buffer, revision: string): Promise<Read<T>> {
    const { value: plaintext, stale } = await this.untransform(key, value, this.transformers.forKey(key));
    try {
      return { object: decode<T>(plaintext, revision), plaintext, stale };
    } catch {
      throw undecodable(key);
    }
  }

  private async transform(key: string, plaintext: string, transformer: Transformer): Promise<Buffer> {
    try {
      return Buffer.from(await transformer.transformToStorage(Buffer.from(plaintext), key));
    } catch (err) {
      throw new StorageError(
        'Internal',
        key,
        `unable to transform key ${JSON.stringify(key)}: ${transformReason(err)}`,
      );
    }
  }

  /** The plain value stored under `key`; StorageError Internal (naming the key, never the data) when it cannot be read. */
  private async untransform(
    key: string,
    value: Buffer,
    transformer: Transformer,
  ): Promise<{ value: string; stale: boolean }> {
    let plain: { data: Uint8Array; stale: boolean };
    try {
      plain = await transformer.transformFromStorage(value, key);
    } catch (err) {
      throw new StorageError(
        'Internal',
        key,
        `unable to transform key ${JSON.stringify(key)}: ${transformReason(err)}`,
      );
    }
    return {
      value: Buffer.from(plain.data.buffer, plain.data.byteOffset, plain.data.byteLength).toString(),
      stale: plain.stale,
    };
  }

  private async toWatchEvent<T extends StoredObject>(e: WatchedEvent): Promise<WatchEvent<T> | undefined> {
    const revision = e.kv.mod_revision;
    const key = e.kv.key.toString();
    try {
      const previous = e.prev_kv
        ? (await this.fromStorage<T>(key, e.prev_kv.value, e.prev_kv.mod_revision ?? revision)).object
        : undefined;
      if (e.type === 'Delete')
        return { type: 'delete', key, revision, object: previous && decode<T>(encode(previous), revision), previous };
      return {
        type: 'put',
        key,
        revision,
        object: (await this.fromStorage<T>(key, e.kv.value, revision)).object,
        previous,
      };
    } catch (err) {
      // A value that is not JSON, or one this server has no key for.
      this.onUnreadable?.(key, (err as Error).message);
      return undefined;
    }
  }

  /** A FutureRevision failure with the revision asked for and the current one, for the client's answer. */
  private async withCurrentRevision(err: unknown, opts: PageOptions): Promise<never> {
    if (!(err instanceof StorageError && err.code === 'FutureRevision')) throw err;
    const current = Number(await this.currentRevision().catch(() => '0'));
    throw new StorageError(err.code, err.key, err.message, { requested: Number(opts.revision ?? 0), current });
  }

  /** One range request under `prefix`, from `start`, at `revision`. */
  private range(prefix: string, opts: PageOptions, keysOnly: boolean) {
    if (!prefix.endsWith('/')) throw new Error(`prefix must end with '/': ${prefix}`);
    return this.call(keysOnly ? 'listKeys' : 'list', prefix, () =>
      this.client.kv.range({
        key: Buffer.from(opts.start ?? prefix),
        range_end: Range.prefix(prefix).end,
        limit: opts.limit ?? 0,
        revision: opts.revision ?? 0,
        keys_only: keysOnly,
      }),
    );
  }

  private async readRaw(key: string): Promise<RawKv | undefined> {
    const res = await this.call('get', key, () => this.client.get(key).exec());
    const kv = res.kvs[0];
    return kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined;
  }

  /** Runs one etcd call (`operation` names it for onCall); failures to reach etcd become StorageError Unreachable. */
  private call<R>(operation: string, key: string, fn: () => Promise<R>): Promise<R> {
    // kube's etcd3 store spans ("Create etcd3", ...): the key, never the value.
    if (WRITES.has(operation)) tracer().noteWrite(key);
    return inSpan(ETCD_SPANS[operation] ?? `${operation} etcd3`, { key }, () => this.callOnce(operation, key, fn));
  }

  private async callOnce<R>(operation: string, key: string, fn: () => Promise<R>): Promise<R> {
    const start = performance.now();
    try {
      const result = await this.health.guard(fn);
      this.onCall?.(operation, key, (performance.now() - start) / 1000, false);
      return result;
    } catch (err) {
      this.onCall?.(operation, key, (performance.now() - start) / 1000, true);
      if (err instanceof StorageError) throw err;
      const message = (err as Error).message;
      if (/required revision has been compacted/.test(message)) throw new StorageError('Compacted', key, message);
      if (/required revision is a future revision/.test(message))
        throw new StorageError('FutureRevision', key, message);
      // etcd's own limit (--max-request-bytes), or its gRPC server's a little above it.
      if (/request is too large|received message larger than max/i.test(message))
        throw new StorageError('TooLarge', key, message);
      throw new StorageError('Unreachable', key, `etcd: ${message}`);
    }
  }
}

/**
 * How calls find a live etcd member. The library's default breaker counts every "recoverable" gRPC error (a refused
 * oversized request, etcd's own "request timed out" during a leader change) and then shuts the member out for 5 s,
 * so one bad request or an election failed every call for seconds; and it retried calls that etcd may already have
 * carried out. Here, as etcd's own Go client does for writes, only a call that never left (no connection to the
 * member) moves on to another member, and only such failures shut a member out, for a second at a time. Whether
 * etcd as a whole answers is EtcdHealth's to judge.
 */
function memberFaultHandling(members: number): Pick<NonNullable<IOptions['faultHandling']>, 'host' | 'global'> {
  const notSent = handleWhen(
    (err) =>
      err instanceof GRPCUnavailableError &&
      !/etcdserver:/.test(err.message) &&
      /No connection established|ECONNREFUSED|failed to connect/i.test(err.message),
  );
  return {
    host: () => circuitBreaker(notSent, { halfOpenAfter: 1000, breaker: new ConsecutiveBreaker(3) }),
    global: retry(notSent, { maxAttempts: members }),
  };
}

/** The smallest key after `key`: where the next page starts. */
export function keyAfter(key: string): string {
  return `${key}\u0000`;
}

interface WatchedEvent {
  type: string;
  kv: { key: Buffer; value: Buffer; mod_revision: string };
  prev_kv?: { value: Buffer; mod_revision?: string } | null;
}

/** Why a value could not be transformed (transformers never put data or key material in their errors). */
function transformReason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The key read by the else branch's `index`th get. */
function rawFromElse(
  responses: { response_range?: { kvs: { value: Buffer; mod_revision: string }[] } }[],
  index = 0,
): RawKv | undefined {
  const kv = responses[index]?.response_range?.kvs[0];
  return kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined;
}

/** A claim read back to be deleted with its holder: its key and mod revision. */
interface HeldClaim {
  key: string;
  modRevision: string;
}

function keyExists(key: string): StorageError {
  return new StorageError('KeyExists', key, `key exists: ${key}`);
}

/** An object's metadata.uid (StoredObject does not declare it: not every stored value has one). */
function uidOf(obj: StoredObject): string {
  const uid = (obj.metadata as { uid?: unknown }).uid;
  return typeof uid === 'string' ? uid : '';
}

function claimValue(holder: ClaimHolder): string {
  return JSON.stringify({ key: holder.key, uid: holder.uid });
}

/** The holder a claim's value names; undefined when it names none (not the JSON a claim is): stale. */
function parseClaimValue(value: Buffer): ClaimHolder | undefined {
  try {
    const holder = JSON.parse(value.toString()) as Partial<ClaimHolder>;
    if (typeof holder?.key === 'string' && typeof holder.uid === 'string' && holder.uid)
      return { key: holder.key, uid: holder.uid };
  } catch {
    // Not JSON: names nothing.
  }
  return undefined;
}

/** JSON.parse's message quotes the value: say only where. */
function undecodable(key: string): StorageError {
  return new StorageError('Internal', key, `unable to decode key ${JSON.stringify(key)}: not a JSON object`);
}

/** Text served as it is must be an object's JSON, as decode would have found. */
/** The stored text decoded, when it is a JSON object. */
function validJson(key: string, text: string): object {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw undecodable(key);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw undecodable(key);
  return value;
}

/** The operations a controller's work may follow from (tracer().writeLinks). */
const WRITES = new Set(['create', 'update', 'delete']);

/** The names of kube's etcd3 store spans, by this store's operation names. */
const ETCD_SPANS: Record<string, string> = {
  create: 'Create etcd3',
  get: 'Get etcd3',
  update: 'GuaranteedUpdate etcd3',
  delete: 'Delete etcd3',
  list: 'List(recursive=true) etcd3',
  listKeys: 'List(recursive=true) etcd3',
};
