/**
 * What the ProjectSecret delivery made in the host: for each ProjectSecret (by uid), the namespace, name and uid of
 * the Secret the server created for it, kept in the server's own storage (etcd, beside the objects, under
 * `<prefix>/delivered/projectsecrets/`). No client reads or writes it, and it outlives the ProjectSecret, so the
 * Secret is deleted, by uid, however its ProjectSecret went (deleted while the server or the host was away, or after
 * its owner removed a finalizer), and nothing else, whatever labels it carries, is ever taken for the server's.
 *
 * Two moments when a Secret the server made has no uid recorded yet, and a Secret at the ProjectSecret's own place,
 * labelled as made for it, is taken for the server's (adopted): while a create is on its way (an intent, recorded
 * before it, and kept if its answer is lost), and once, on the first start of a server that keeps records, for the
 * Secrets earlier versions delivered, which knew them by their labels alone (until `migrated`, after every
 * ProjectSecret known at that start has been looked at once). Nowhere else is a label believed.
 *
 * The elected replica alone writes it; it is read when the delivery starts, kept in memory meanwhile (across restarts
 * of the delivery, so that what storage did not take is written when it can), and what is in memory wins.
 */
import type { Storage, StoredObject } from '../storage/interface.js';
import { StorageError } from '../storage/interface.js';

/** How a Secret outside the host is reached again, to delete it once its target is gone: the Cluster, and the virtual cluster there. */
export interface MadeVia {
  cluster: string;
  /** For a virtual cluster: its namespace in that cluster, and its name. */
  namespace?: string;
  virtualCluster?: string;
}

/** A Secret the server made (or is making: `uid` empty) in the host, or outside it (`via`). */
export interface MadeSecret {
  namespace: string;
  name: string;
  /** Empty while its create is on its way. */
  uid: string;
  via?: MadeVia;
}

/** A record as stored: named by the ProjectSecret's uid, as objects are named by metadata.name. */
type Stored = StoredObject & { metadata: { name: string }; secret: MadeSecret };

export class DeliveryRecords {
  private readonly prefix: string;
  private readonly marker: string;
  private readonly made = new Map<string, MadeSecret>();
  /** Recorded in memory, not yet in storage (a deletion: undefined). */
  private readonly unsaved = new Map<string, MadeSecret | undefined>();
  private migratedAt = false;

  constructor(
    private readonly storage: Storage,
    etcdPrefix: string,
    /** Which records: `projectsecrets` (the host's, by ProjectSecret uid), `projectsecrettargets` (the others'). */
    what = 'projectsecrets',
  ) {
    this.prefix = `${etcdPrefix}/delivered/${what}/`;
    this.marker = `${etcdPrefix}/delivered/migrated/${what}`;
  }

  /** Reads the records (at each start of the delivery); what memory holds that storage has not taken stays. */
  async load(): Promise<void> {
    const { items } = await this.storage.list<Stored>(this.prefix);
    for (const r of items) if (!this.unsaved.has(r.metadata.name)) this.made.set(r.metadata.name, r.secret);
    this.migratedAt ||= !!(await this.storage.get(this.marker));
  }

  /** Whether the Secrets of earlier versions have been taken over already (see the top). */
  get migrated(): boolean {
    return this.migratedAt;
  }

  /** Notes that they have: from now on only intents allow a Secret to be adopted. */
  async markMigrated(): Promise<void> {
    if (this.migratedAt) return;
    try {
      const marker: StoredObject & { metadata: { name: string } } = {
        metadata: { name: this.marker.split('/').pop()! },
      };
      await this.storage.create(this.marker, marker);
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'KeyExists')) throw err;
    }
    this.migratedAt = true;
  }

  /** The Secret made (or being made) for the ProjectSecret `uid`, if any. */
  get(uid: string): MadeSecret | undefined {
    return this.made.get(uid);
  }

  /** The ids (ProjectSecret uids, or uid/target) something was made for. */
  uids(): string[] {
    return [...this.made.keys()];
  }

  /** The ids of what was made for the ProjectSecret `uid` outside the host (`uid/target`). */
  idsOf(uid: string): string[] {
    return [...this.made.keys()].filter((id) => id.startsWith(`${uid}/`));
  }

  /** Records the Secret made for `uid` (an empty uid: one about to be made), replacing what was recorded. */
  async set(uid: string, secret: MadeSecret): Promise<void> {
    this.made.set(uid, secret);
    this.unsaved.set(uid, secret);
    await this.save(uid);
  }

  /** Forgets what was made for `uid` (it is deleted, or was never there). */
  async delete(uid: string): Promise<void> {
    if (!this.made.has(uid)) return;
    this.made.delete(uid);
    this.unsaved.set(uid, undefined);
    await this.save(uid);
  }

  /** Writes to storage what memory holds of `uid` that storage did not take. */
  async save(uid: string): Promise<void> {
    if (!this.unsaved.has(uid)) return;
    const secret = this.unsaved.get(uid);
    const key = this.prefix + uid;
    if (secret) await this.put(key, { metadata: { name: uid }, secret });
    else
      await this.storage.delete(key).catch((err) => {
        if (!(err instanceof StorageError && err.code === 'KeyNotFound')) throw err;
      });
    // Unless it changed again meanwhile.
    if (this.unsaved.get(uid) === secret) this.unsaved.delete(uid);
  }

  private async put(key: string, record: Stored): Promise<void> {
    try {
      await this.storage.create(key, record);
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'KeyExists')) throw err;
      await this.storage.guaranteedUpdate<Stored>(key, (current) => ({ ...current, secret: record.secret }));
    }
  }
}
