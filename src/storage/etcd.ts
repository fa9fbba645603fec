/**
 * Storage on etcd v3: every write is one transaction comparing the key's mod revision with the one read
 * (kube's pkg/storage/etcd3/store.go), so concurrent writers never lose each other's updates.
 */
import { Etcd3, Range, type IOptions } from 'etcd3';
import { decode, encode } from './codec.js';
import { StorageError, type ListResult, type Storage, type StoredObject, type UpdateOptions, type UpdateResult } from './interface.js';

export interface EtcdStorageOptions {
  endpoints: string[];
  /** Deadline of one etcd call; a call that takes longer fails as Unreachable. */
  callTimeoutMs?: number;
  /** Keys read per range request when listing, to stay under gRPC's message size limit. */
  listPageSize?: number;
}

interface RawKv {
  value: Buffer;
  modRevision: string;
}

export class EtcdStorage implements Storage {
  readonly client: Etcd3;
  private readonly pageSize: number;

  constructor(opts: EtcdStorageOptions) {
    const timeout = opts.callTimeoutMs ?? 10_000;
    const options: IOptions = {
      hosts: opts.endpoints,
      dialTimeout: timeout,
      // Streams (watches) live long; only unary calls get a deadline.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
    };
    this.client = new Etcd3(options);
    this.pageSize = opts.listPageSize ?? 1000;
  }

  async create<T extends StoredObject>(key: string, obj: T): Promise<T> {
    const bytes = encode(obj);
    const txn = await this.call(key, () =>
      this.client.if(key, 'Mod', '==', 0).then(this.client.put(key).value(bytes)).commit(),
    );
    if (!txn.succeeded) throw new StorageError('KeyExists', key, `key exists: ${key}`);
    return decode<T>(bytes, txn.header.revision);
  }

  async get<T extends StoredObject>(key: string): Promise<T | undefined> {
    const kv = await this.readRaw(key);
    return kv ? decode<T>(kv.value, kv.modRevision) : undefined;
  }

  async list<T extends StoredObject>(prefix: string): Promise<ListResult<T>> {
    if (!prefix.endsWith('/')) throw new Error(`list prefix must end with '/': ${prefix}`);
    const end = Range.prefix(prefix).end;
    const items: T[] = [];
    let start: Buffer = Buffer.from(prefix);
    let revision: string | undefined;
    for (;;) {
      const builder = this.client.getAll().inRange({ start, end }).limit(this.pageSize);
      // Later pages are read at the first page's revision, so the list is one consistent snapshot.
      if (revision) builder.revision(revision);
      const res = await this.call(prefix, () => builder.exec());
      revision ??= res.header.revision;
      for (const kv of res.kvs) items.push(decode<T>(kv.value, kv.mod_revision));
      if (!res.more || res.kvs.length === 0) break;
      start = Buffer.concat([res.kvs[res.kvs.length - 1].key, Buffer.from([0])]);
    }
    return { items, resourceVersion: revision };
  }

  async guaranteedUpdate<T extends StoredObject>(
    key: string,
    tryUpdate: (current: T) => Promise<T> | T,
    opts: UpdateOptions<T> = {},
  ): Promise<UpdateResult<T>> {
    let current = await this.readRaw(key);
    for (;;) {
      if (!current) throw new StorageError('KeyNotFound', key, `key not found: ${key}`);
      const updated = await tryUpdate(decode<T>(current.value, current.modRevision));
      const read = current;
      if (opts.deleteInstead?.(updated)) {
        const txn = await this.call(key, () =>
          this.client.if(key, 'Mod', '==', read.modRevision).then(this.client.delete().key(key)).else(this.client.get(key)).commit(),
        );
        if (txn.succeeded) return { object: decode<T>(encode(updated), txn.header.revision), written: true, deleted: true };
        current = rawFromElse(txn.responses);
        continue;
      }
      const bytes = encode(updated);
      if (bytes === read.value.toString()) return { object: decode<T>(bytes, read.modRevision), written: false, deleted: false };
      const txn = await this.call(key, () =>
        this.client.if(key, 'Mod', '==', read.modRevision).then(this.client.put(key).value(bytes)).else(this.client.get(key)).commit(),
      );
      if (txn.succeeded) return { object: decode<T>(bytes, txn.header.revision), written: true, deleted: false };
      current = rawFromElse(txn.responses);
    }
  }

  async delete<T extends StoredObject>(key: string, precondition?: (current: T) => void | Promise<void>): Promise<T> {
    let current = await this.readRaw(key);
    for (;;) {
      if (!current) throw new StorageError('KeyNotFound', key, `key not found: ${key}`);
      const read = current;
      await precondition?.(decode<T>(read.value, read.modRevision));
      const txn = await this.call(key, () =>
        this.client.if(key, 'Mod', '==', read.modRevision).then(this.client.delete().key(key)).else(this.client.get(key)).commit(),
      );
      if (txn.succeeded) return decode<T>(read.value, txn.header.revision);
      current = rawFromElse(txn.responses);
    }
  }

  async check(): Promise<void> {
    await this.call('health', () => this.client.get('health').exec());
  }

  async close(): Promise<void> {
    this.client.close();
  }

  private async readRaw(key: string): Promise<RawKv | undefined> {
    const res = await this.call(key, () => this.client.get(key).exec());
    const kv = res.kvs[0];
    return kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined;
  }

  /** Runs one etcd call; failures to reach etcd become StorageError Unreachable. */
  private async call<R>(key: string, fn: () => Promise<R>): Promise<R> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('Unreachable', key, `etcd: ${(err as Error).message}`);
    }
  }
}

function rawFromElse(responses: { response_range?: { kvs: { value: Buffer; mod_revision: string }[] } }[]): RawKv | undefined {
  const kv = responses[0]?.response_range?.kvs[0];
  return kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined;
}
