/**
 * Which Cluster holds each kube-system uid (which physical cluster), kept in the server's own storage (etcd, beside
 * the objects, under `<prefix>/clusteruids/`) as the ProjectSecret delivery keeps what it made (deliveryrecords.ts):
 * no client reads or writes it, and it outlives the Cluster. A Cluster's status.clusterUID says which cluster it is
 * while it exists; an entry here says, also once that Cluster is gone, that the uid was held, and from when on it is
 * free: only for a Cluster created after the holder's deletion, as an administrator who connects that cluster again
 * creates one. A Cluster that existed beside the holder never takes it over, whatever its own status writes did
 * (src/controllers/clusterhealth.ts).
 *
 * An entry is written before the status records its uid, so a recorded uid always has one (records stored before
 * entries were get theirs when the health controller starts, or when their Cluster goes). `goneAt` is written when
 * the health controller sees its holder go, which is when its deletion is asked for (finalizers may keep it a while,
 * unchecked): the revision of that write, from its watch; or, for a holder it finds gone or being deleted when it
 * lists the Clusters (deleted while no server watched), a revision that list reached, which is after the deletion,
 * never before it: a Cluster created in between is refused too (created again, it records), and none that existed
 * beside the holder passes for a newer one. Entries are never deleted: one per physical cluster ever connected.
 * The elected replica alone writes them, each compare-and-swap: one another replica wrote meanwhile is read back.
 * They are read whole when the health controller starts, and kept in memory meanwhile.
 */
import type { Storage, StoredObject } from '../storage/interface.js';
import { StorageError } from '../storage/interface.js';

/** The Cluster that holds a uid. */
export interface UidHolder {
  name: string;
  uid: string;
  /** Once it is gone: an etcd revision at or after its deletion. */
  goneAt?: string;
}

/** An entry as stored: named by the kube-system uid, as objects are named by metadata.name. */
type Stored = StoredObject & { metadata: { name: string }; holder: UidHolder };

/** The stored entry is not the one the decision was made on (another replica wrote it): it is in memory now. */
export class HolderChanged extends Error {
  constructor() {
    super('another replica changed who holds the uid');
  }
}

export class ClusterUidHolders {
  private readonly prefix: string;
  /** By kube-system uid. */
  private held = new Map<string, UidHolder>();
  /** Entries whose `goneAt` is in memory and maybe not in storage yet. */
  private readonly unsaved = new Set<string>();

  constructor(
    private readonly storage: Storage,
    etcdPrefix: string,
  ) {
    this.prefix = `${etcdPrefix}/clusteruids/`;
  }

  /** Reads every entry (at the health controller's start). */
  async load(): Promise<void> {
    const { items } = await this.storage.list<Stored>(this.prefix);
    this.held = new Map(items.map((e) => [e.metadata.name, e.holder]));
    this.unsaved.clear();
  }

  get(kubeSystemUid: string): UidHolder | undefined {
    return this.held.get(kubeSystemUid);
  }

  /**
   * Whether the Cluster `clusterUid`, created at the revision `created`, may hold `kubeSystemUid`: nobody holds it,
   * that Cluster does, or its holder went before that Cluster was created.
   */
  mayHold(kubeSystemUid: string, clusterUid: string, created: string | undefined): boolean {
    const holder = this.held.get(kubeSystemUid);
    if (!holder || holder.uid === clusterUid) return true;
    return holder.goneAt !== undefined && created !== undefined && Number(created) > Number(holder.goneAt);
  }

  /** The revision that created the Cluster now at `key` (etcd's create_revision), for mayHold. */
  created(key: string): Promise<string | undefined> {
    return this.storage.createRevision(key);
  }

  /**
   * Stores that `cluster` holds `kubeSystemUid` (before its status records it), if storage still has the entry
   * memory has: else HolderChanged, and memory has the stored one.
   */
  async hold(kubeSystemUid: string, cluster: { name: string; uid: string }): Promise<void> {
    const before = this.held.get(kubeSystemUid);
    if (before?.uid === cluster.uid) return;
    const holder: UidHolder = { name: cluster.name, uid: cluster.uid };
    const key = this.key(kubeSystemUid);
    try {
      if (!before) await this.storage.create<Stored>(key, { metadata: { name: kubeSystemUid }, holder });
      else
        await this.storage.guaranteedUpdate<Stored>(key, (current) => {
          if (current.holder?.uid !== before.uid) throw new HolderChanged();
          return { ...current, holder };
        });
    } catch (err) {
      const changed = err instanceof StorageError && (err.code === 'KeyExists' || err.code === 'KeyNotFound');
      if (!changed && !(err instanceof HolderChanged)) throw err;
      const stored = await this.storage.get<Stored>(key);
      if (stored) this.held.set(kubeSystemUid, stored.holder);
      else this.held.delete(kubeSystemUid);
      throw new HolderChanged();
    }
    this.held.set(kubeSystemUid, holder);
    this.unsaved.delete(kubeSystemUid);
  }

  /**
   * `cluster` is gone, at `revision` or before: what it held is free for Clusters created after. A uid it `recorded`
   * without an entry (recorded before holders were stored) gets one, let go at once.
   */
  gone(cluster: { name: string; uid: string }, revision: string, recorded?: string): void {
    if (recorded && !this.held.has(recorded)) this.held.set(recorded, { name: cluster.name, uid: cluster.uid });
    for (const [kubeSystemUid, holder] of this.held) {
      if (holder.uid !== cluster.uid || holder.goneAt !== undefined) continue;
      this.held.set(kubeSystemUid, { ...holder, goneAt: revision });
      this.unsaved.add(kubeSystemUid);
    }
  }

  /** `gone` for a holder found gone now, whose deletion's revision is not known: the current one is after it. */
  async goneNow(cluster: { name: string; uid: string }): Promise<void> {
    this.gone(cluster, await this.storage.currentRevision());
  }

  /** After a list at `revision` that saw the Clusters `seen` (uids): the holders it did not see are gone. */
  goneUnless(seen: Set<string>, revision: string): void {
    for (const holder of [...this.held.values()]) if (!seen.has(holder.uid)) this.gone(holder, revision);
  }

  /** Writes what `gone` put in memory to storage; what storage did not take stays for the next call. */
  async save(): Promise<void> {
    for (const kubeSystemUid of [...this.unsaved]) {
      const holder = this.held.get(kubeSystemUid)!;
      const key = this.key(kubeSystemUid);
      let stored: UidHolder;
      try {
        // Only the holder memory has goes: another replica may have given the uid to a newer Cluster meanwhile.
        const { object } = await this.storage.guaranteedUpdate<Stored>(key, (current) =>
          current.holder?.uid === holder.uid && current.holder.goneAt === undefined ? { ...current, holder } : current,
        );
        stored = object.holder;
      } catch (err) {
        if (!(err instanceof StorageError && err.code === 'KeyNotFound')) throw err;
        // None stored (a record from before entries were): stored now, unless a hold just did (then, the next call).
        const created = await this.storage
          .create<Stored>(key, { metadata: { name: kubeSystemUid }, holder })
          .catch((e: unknown) => {
            if (e instanceof StorageError && e.code === 'KeyExists') return undefined;
            throw e;
          });
        if (!created) continue;
        stored = holder;
      }
      // Unless a hold changed it meanwhile, memory is what storage has.
      if (this.held.get(kubeSystemUid) !== holder) continue;
      this.held.set(kubeSystemUid, stored);
      this.unsaved.delete(kubeSystemUid);
    }
  }

  /** Any string a cluster answers is one key below the prefix. */
  private key(kubeSystemUid: string): string {
    return this.prefix + encodeURIComponent(kubeSystemUid);
  }
}
