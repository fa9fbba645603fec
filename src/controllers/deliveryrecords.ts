/**
 * What the ProjectSecret delivery made in the host: for each ProjectSecret (by uid), the namespace, name and uid of
 * the Secret the server created for it, kept in the server's own storage (etcd, beside the objects, under
 * `<prefix>/delivered/projectsecrets/`). No client reads or writes it, and it outlives the ProjectSecret, so the
 * Secret is deleted, by uid, however its ProjectSecret went (deleted while the server or the host was away, or after
 * its owner removed a finalizer), and nothing else, whatever labels it carries, is ever taken for the server's.
 * The elected replica alone writes it; it is read whole when the delivery starts, and kept in memory meanwhile.
 */
import type { Storage, StoredObject } from '../storage/interface.js';
import { StorageError } from '../storage/interface.js';

/** A Secret the server made in the host. */
export interface MadeSecret {
  namespace: string;
  name: string;
  uid: string;
}

/** A record as stored: named by the ProjectSecret's uid, as objects are named by metadata.name. */
type Stored = StoredObject & { metadata: { name: string }; secret: MadeSecret };

export class DeliveryRecords {
  private readonly prefix: string;
  private made = new Map<string, MadeSecret>();
  /** Recorded in memory, not yet in storage. */
  private readonly unsaved = new Set<string>();

  constructor(
    private readonly storage: Storage,
    etcdPrefix: string,
  ) {
    this.prefix = `${etcdPrefix}/delivered/projectsecrets/`;
  }

  /** Reads every record (at the delivery's start). */
  async load(): Promise<void> {
    const { items } = await this.storage.list<Stored>(this.prefix);
    this.made = new Map(items.map((r) => [r.metadata.name, r.secret]));
  }

  /** The Secret made for the ProjectSecret `uid`, if any. */
  get(uid: string): MadeSecret | undefined {
    return this.made.get(uid);
  }

  /** The ProjectSecrets (uids) something was made for. */
  uids(): string[] {
    return [...this.made.keys()];
  }

  /**
   * Records the Secret made for `uid` (replacing what was recorded): at once in memory, then in storage; one storage
   * did not take stays to be written by `save` (the Secret exists: forgetting it would leave it nobody's).
   */
  async set(uid: string, secret: MadeSecret): Promise<void> {
    this.made.set(uid, secret);
    this.unsaved.add(uid);
    await this.save(uid);
  }

  /** Writes the record of `uid` to storage if `set` could not. */
  async save(uid: string): Promise<void> {
    const secret = this.made.get(uid);
    if (!secret || !this.unsaved.has(uid)) return;
    const key = this.prefix + uid;
    try {
      const record: Stored = { metadata: { name: uid }, secret };
      await this.storage.create(key, record);
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'KeyExists')) throw err;
      await this.storage.guaranteedUpdate<Stored>(key, (current) => ({ ...current, secret }));
    }
    this.unsaved.delete(uid);
  }

  /** Forgets what was made for `uid` (it is deleted, or was never there). */
  async delete(uid: string): Promise<void> {
    if (!this.made.has(uid)) return;
    try {
      await this.storage.delete(this.prefix + uid);
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'KeyNotFound')) throw err;
    }
    this.made.delete(uid);
    this.unsaved.delete(uid);
  }
}
