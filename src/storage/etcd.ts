/**
 * Storage on etcd v3: objects, the token signing keys' document (getValue, guaranteedUpdateValue), the compactor's
 * shared counter and compaction, and the leader's lease (leaseLock). Its parts, by job, are in etcd/: the client
 * every call goes through and its one transaction helper (client.ts), how values are stored (values.ts), objects'
 * claims (claims.ts) and watches (watch.ts). Every write is one transaction comparing the key's mod revision with
 * the one read (kube's pkg/storage/etcd3/store.go), so concurrent writers never lose each other's updates; an
 * object's claims are written and deleted in the transaction that creates or deletes it.
 */
import { decode, encodeWithCopy, servedJson, withRevision } from './codec.js';
import type { Transformer } from './encryption/transformer.js';
import type { EtcdHealth } from './etcdhealth.js';
import { Claims, claimValue, uidOf, type HeldClaim } from './etcd/claims.js';
import { EtcdClient, type EtcdClientOptions, type RawKv, type SwapResult } from './etcd/client.js';
import { StoredValues, validJson, type Read } from './etcd/values.js';
import { watchPrefix } from './etcd/watch.js';
import { EtcdLeaseLock, type LeaseLock } from './leaselock.js';
import { checkPreconditions } from './preconditions.js';
import {
  StorageError,
  type AttributesOf,
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
  type WatchHandle,
  type WatchHandlers,
} from './interface.js';

export interface EtcdStorageOptions extends EtcdClientOptions {
  /** Keys read per range request when listing, to stay under gRPC's message size limit. */
  listPageSize?: number;
  /** How each key's value is stored (encryption at rest, --encryption-provider-config); default: plain. */
  transformers?: { forKey(key: string): Transformer };
  /** Told of a watched value that cannot be read (its key and why; never its data). */
  onUnreadable?: (key: string, reason: string) => void;
}

export class EtcdStorage implements Storage {
  private readonly client: EtcdClient;
  private readonly values: StoredValues;
  private readonly claims: Claims;
  private readonly pageSize: number;
  private readonly onUnreadable?: EtcdStorageOptions['onUnreadable'];

  constructor(opts: EtcdStorageOptions) {
    this.client = new EtcdClient(opts);
    this.values = new StoredValues(opts.transformers);
    this.claims = new Claims(this.client, this.values);
    this.pageSize = opts.listPageSize ?? 1000;
    this.onUnreadable = opts.onUnreadable;
  }

  /** Whether etcd answers; while it does not, calls fail at once. */
  get health(): EtcdHealth {
    return this.client.health;
  }

  async create<T extends StoredObject>(key: string, obj: T, opts: CreateOptions = {}): Promise<T> {
    const { bytes, copy } = encodeWithCopy(obj);
    const claims = opts.claims ?? [];
    if (opts.dryRun) {
      if (await this.client.readRaw(key)) throw keyExists(key);
      for (const claim of claims) {
        const kv = await this.client.readRaw(claim);
        if (kv) await this.claims.checkHolderExists(claim, kv.value);
      }
      return copy;
    }
    const stored = await this.values.toStorage(key, bytes);
    const holder = claimValue({ key, uid: uidOf(obj) });
    // Each claim is expected absent (mod revision 0) or, once found stale, still as it was read.
    const expected = new Map(claims.map((claim) => [claim, '0']));
    for (;;) {
      const txn = await this.client.swap(
        'create',
        key,
        [{ key, mod: 0 }, ...[...expected].map(([claim, mod]) => ({ key: claim, mod }))],
        [{ put: key, value: stored }, ...claims.map((claim) => ({ put: claim, value: holder }))],
        [key, ...claims],
      );
      if (txn.succeeded) return withRevision(copy, txn.revision);
      if (txn.current[0]) throw keyExists(key);
      for (const [i, claim] of claims.entries()) {
        const kv = txn.current[i + 1];
        if (kv) await this.claims.checkHolderExists(claim, kv.value);
        expected.set(claim, kv?.modRevision ?? '0');
      }
    }
  }

  async get<T extends StoredObject>(key: string): Promise<T | undefined> {
    const kv = await this.client.readRaw(key);
    return kv ? (await this.values.fromStorage<T>(key, kv.value, kv.modRevision)).object : undefined;
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
    const res = await this.range(prefix, opts);
    const items = await Promise.all(
      res.kvs.map(
        async (kv) => (await this.values.fromStorage<T>(kv.key.toString(), kv.value, kv.mod_revision)).object,
      ),
    );
    const keys = res.kvs.map((kv) => kv.key.toString());
    return { items, keys, resourceVersion: res.header.revision, more: res.more, count: Number(res.count) };
  }

  async listPageText(prefix: string, opts: PageOptions, attributesOf: AttributesOf): Promise<Page<StoredText>> {
    const res = await this.range(prefix, opts);
    const items = await Promise.all(
      res.kvs.map(async (kv) => {
        const key = kv.key.toString();
        const { value: plaintext } = await this.values.plain(key, kv.value);
        return {
          json: servedJson(plaintext, kv.mod_revision),
          resourceVersion: kv.mod_revision,
          attributes: attributesOf(validJson(key, plaintext)),
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
      const res = await this.client.range(prefix, { start, limit: this.pageSize * 10, revision }, true);
      for (const kv of res.kvs) out.set(kv.key.toString(), kv.mod_revision);
      if (!res.more || res.kvs.length === 0) return out;
      start = keyAfter(res.kvs[res.kvs.length - 1].key.toString());
    }
  }

  createRevision(key: string): Promise<string | undefined> {
    return this.client.createRevision(key);
  }

  currentRevision(): Promise<string> {
    return this.client.currentRevision();
  }

  watch<T extends StoredObject>(
    prefix: string,
    afterRevision: string,
    handlers: WatchHandlers<T>,
    opts: { revisionsUnder?: string } = {},
  ): Promise<WatchHandle> {
    return watchPrefix(this.client, this.values, prefix, afterRevision, handlers, {
      ...opts,
      onUnreadable: this.onUnreadable,
    });
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
      const res = await this.client.range(prefix, { start, limit: this.pageSize }, false);
      for (const kv of res.kvs) {
        const key = kv.key.toString();
        try {
          if (!(await this.values.fromStorage(key, kv.value, kv.mod_revision)).stale) continue;
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
    const kv = await this.client.readRaw(key);
    return kv
      ? { ...(await this.values.untransform(key, kv.value, transformer)), revision: kv.modRevision }
      : undefined;
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
    let current = await this.client.readRaw(key);
    for (;;) {
      const read = current;
      const existing = read
        ? { ...(await this.values.untransform(key, read.value, transformer)), revision: read.modRevision }
        : undefined;
      const value = await tryUpdate(existing);
      if (existing && value === existing.value && !existing.stale) return { ...existing, written: false };
      const stored = await this.values.transform(key, value, transformer);
      const txn = await this.client.swap(
        read ? 'update' : 'create',
        key,
        [{ key, mod: read ? read.modRevision : 0 }],
        [{ put: key, value: stored }],
      );
      if (txn.succeeded) return { value, revision: txn.revision, stale: false, written: true };
      current = txn.current[0];
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
    const txn = await this.client.swap('update', key, [{ key, version }], [{ put: key, value }]);
    if (txn.succeeded) return { written: true, version: version + 1, revision: txn.revision };
    return { written: false, version: txn.versions[0], revision: txn.revision };
  }

  /** The key a leader holds, on an etcd lease (leader election's door to etcd). */
  leaseLock(key: string): LeaseLock {
    return new EtcdLeaseLock(this.client.leaseClient, key, (operation, fn) => this.client.call(operation, key, fn));
  }

  compact(revision: string): Promise<void> {
    return this.client.compact(revision);
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
    if (!cached) current = await this.client.readRaw(key);
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
        existing = await this.values.fromStorage<T>(key, read.value, read.modRevision);
      }
      let updated: T;
      try {
        checkPreconditions(key, opts.preconditions, existing.object);
        updated = await tryUpdate(existing.object);
      } catch (err) {
        if (fresh) throw err;
        // Perhaps only because the cache is behind (e.g. a uid or resourceVersion it has not seen yet): ask etcd.
        current = await this.client.readRaw(key);
        fresh = true;
        continue;
      }
      if (opts.dryRun) return { object: updated, written: false, deleted: !!opts.deleteInstead?.(updated) };
      if (opts.deleteInstead?.(updated)) {
        const held = await this.claims.held(opts.claims?.(existing.object) ?? [], key, existing.object);
        const txn = await this.deleteSwap(key, read.modRevision, held);
        if (txn.succeeded)
          return { object: withRevision(encodeWithCopy(updated).copy, txn.revision), written: true, deleted: true };
        current = txn.current[0];
        fresh = true;
        continue;
      }
      const { bytes, copy } = encodeWithCopy(updated);
      // A value an old key or provider wrote is written again even when nothing changed (kube's GuaranteedUpdate):
      // this is how a no-op update moves objects to the new key. Only etcd can say whether it was one.
      if (bytes === existing.plaintext && !existing.stale) {
        if (!fresh) {
          current = await this.client.readRaw(key);
          fresh = true;
          continue;
        }
        return { object: withRevision(copy, read.modRevision), written: false, deleted: false };
      }
      const stored = await this.values.toStorage(key, bytes);
      const txn = await this.client.swap(
        'update',
        key,
        [{ key, mod: read.modRevision }],
        [{ put: key, value: stored }],
      );
      if (txn.succeeded) return { object: withRevision(copy, txn.revision), written: true, deleted: false };
      current = txn.current[0];
      fresh = true;
    }
  }

  async delete<T extends StoredObject>(key: string, opts: DeleteOptions<T> = {}): Promise<T> {
    let current = await this.client.readRaw(key);
    for (;;) {
      if (!current) throw new StorageError('KeyNotFound', key, `key not found: ${key}`);
      const read = current;
      const { plaintext, object } = await this.values.fromStorage<T>(key, read.value, read.modRevision);
      checkPreconditions(key, opts.preconditions, object);
      const held = await this.claims.held(opts.claims?.(object) ?? [], key, object);
      const txn = await this.deleteSwap(key, read.modRevision, held);
      if (txn.succeeded) return decode<T>(plaintext, txn.revision);
      current = txn.current[0];
    }
  }

  check(): Promise<void> {
    return this.client.check();
  }

  async close(): Promise<void> {
    this.client.close();
  }

  /**
   * Deletes `key` if it still has `revision`, and with it the claims it holds if they are still as read; else
   * answers the key's current value.
   */
  private deleteSwap(key: string, revision: string, held: HeldClaim[]): Promise<SwapResult> {
    return this.client.swap(
      'delete',
      key,
      [{ key, mod: revision }, ...held.map((claim) => ({ key: claim.key, mod: claim.modRevision }))],
      [{ delete: key }, ...held.map((claim) => ({ delete: claim.key }))],
    );
  }

  /** One range of objects; a revision in the future fails with the current one, for the client's answer. */
  private async range(prefix: string, opts: PageOptions) {
    try {
      return await this.client.range(prefix, opts, false);
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'FutureRevision')) throw err;
      const current = Number(await this.client.currentRevision().catch(() => '0'));
      throw new StorageError(err.code, err.key, err.message, { requested: Number(opts.revision ?? 0), current });
    }
  }
}

/** The smallest key after `key`: where the next page starts. */
export function keyAfter(key: string): string {
  return `${key}\u0000`;
}

function keyExists(key: string): StorageError {
  return new StorageError('KeyExists', key, `key exists: ${key}`);
}
