/**
 * Puts a Secret where a ProjectSecret is delivered, in any cluster (the host, a connected cluster, a virtual cluster),
 * writing and deleting only the Secret this server made there: the uid of each one it creates is recorded
 * (deliveryrecords.ts) under a record id (the ProjectSecret's uid, and the target's key outside the host), and only
 * the Secret with that uid, at that place, is replaced (at the resourceVersion read; one whose type changed or that was
 * made immutable by hand is deleted, by uid, and made again) or deleted. A Secret at the place labelled as made for
 * the ProjectSecret is taken for the server's only while its create is on its way (an answer lost), or where the
 * records say labels may still be believed (the host's, before they took over what earlier versions made). Any
 * other Secret of that name is left alone: `NameTaken`.
 *
 * What the server last wrote is remembered per record id (its resourceVersion and a digest of what was wanted), so
 * that a delivery asks the cluster nothing while a watch of that cluster shows no change (`stale` says it may have).
 */
import { createHash } from 'node:crypto';
import { MANAGED_BY, MANAGED_BY_LABEL, SOURCE_UID_LABEL } from '../../access/rbac.js';
import { jsonEqual } from '../../apimachinery/equality.js';
import { HostClusterError } from '../../host/cluster.js';
import type { HostResource, HostResourceObject } from '../../host/resource.js';
import type { DeliveryRecords, MadeSecret, MadeVia } from '../deliveryrecords.js';

export type HostSecret = HostResourceObject<'Secret'> & {
  type?: string;
  immutable?: boolean;
  data?: Record<string, string>;
};

/** What the server last wrote (or found as it wanted it) at one record's place. */
interface Written {
  resourceVersion: string;
  /** A digest of the Secret wanted then (its data is the ProjectSecret's, not to be kept twice). */
  wanted: string;
  /** A watch showed a change since (or may have missed one). */
  stale: boolean;
}

/** How a put went: the Secret is as wanted (`wrote`: by a request just now), or the name is not the server's. */
export type Placed = { kind: 'delivered'; wrote: boolean } | { kind: 'nameTaken' };

const digest = (want: HostSecret) => createHash('sha256').update(JSON.stringify(want)).digest('base64');

export class SecretPlacer {
  private readonly written = new Map<string, Written>();
  /**
   * The resourceVersions a watch showed at an id's place while a write there was on its way: the write's own echo
   * may come before its answer, and is told from another change only once the answer says its resourceVersion.
   */
  private readonly seenWhileWriting = new Map<string, string[]>();

  /** `changedWhileWriting`: a change that came during a write and was not its echo (the caller reconciles again). */
  constructor(
    private readonly records: DeliveryRecords,
    private readonly changedWhileWriting: (id: string) => void = () => {},
  ) {}

  /**
   * Makes the Secret at `want`'s place in `secrets` what `want` says, when the name is this server's to use there;
   * `trusted`: no watch of that cluster may have missed a change since the last write (else it is read).
   */
  async put(
    id: string,
    secrets: HostResource<HostSecret>,
    want: HostSecret,
    { trusted = true, via }: { trusted?: boolean; via?: MadeVia } = {},
  ): Promise<Placed> {
    const wanted = digest(want);
    const { namespace, name } = want.metadata;
    let made = this.records.get(id);
    const last = this.written.get(id);
    if (trusted && made?.uid && last && !last.stale && last.wanted === wanted)
      return { kind: 'delivered', wrote: false };

    const have = await secrets.get(namespace, name);
    if (!have) {
      await this.create(id, secrets, want, wanted, via);
      return { kind: 'delivered', wrote: true };
    }
    if ((!made?.uid || have.metadata.uid !== made.uid) && this.adoptable(id, have)) {
      made = { ...made, namespace: namespace!, name, uid: have.metadata.uid!, ...(via ? { via } : {}) };
      await this.records.set(id, made);
    }
    if (!made?.uid || have.metadata.uid !== made.uid) {
      // What was made is gone, and another Secret has the name now: nothing of the server's is there.
      if (made) await this.records.delete(id);
      this.written.delete(id);
      return { kind: 'nameTaken' };
    }
    if (sameContent(have, want)) {
      this.remember(id, have, wanted);
      return { kind: 'delivered', wrote: false };
    }
    if (have.immutable || (have.type ?? 'Opaque') !== (want.type ?? 'Opaque')) {
      // Neither can change in place (kube refuses it): this server's own Secret is made again.
      await secrets.delete(namespace, name, have.metadata.uid);
      await this.create(id, secrets, want, wanted, via);
    } else {
      await this.writing(id, wanted, () =>
        secrets.replace({ ...want, metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion } }),
      );
    }
    return { kind: 'delivered', wrote: true };
  }

  /**
   * Runs a write at `id`'s place and remembers what it wrote, the watch's changes meanwhile held until its answer:
   * one with the answer's resourceVersion is its echo; any other is a change, told to changedWhileWriting.
   */
  private async writing(id: string, wanted: string, write: () => Promise<HostSecret>): Promise<void> {
    const seen: string[] = [];
    this.seenWhileWriting.set(id, seen);
    let echo: string | undefined;
    try {
      const written = await write();
      echo = written.metadata.resourceVersion;
      this.remember(id, written, wanted);
    } finally {
      if (this.seenWhileWriting.get(id) === seen) this.seenWhileWriting.delete(id);
      if (seen.some((rv) => rv !== echo)) {
        const w = this.written.get(id);
        if (w) w.stale = true;
        this.changedWhileWriting(id);
      }
    }
  }

  /**
   * Deletes the Secret recorded as made under `id`, if it is still the one with its uid, and forgets it. A create
   * whose answer was lost: the Secret at its place, if it is the one it made.
   */
  async remove(id: string, secrets: HostResource<HostSecret>): Promise<MadeSecret | undefined> {
    const made = this.records.get(id);
    this.written.delete(id);
    if (!made) return undefined;
    const have = made.uid ? undefined : await secrets.get(made.namespace, made.name);
    if (made.uid) await deleteByUid(secrets, made.namespace, made.name, made.uid);
    else if (have && this.adoptable(id, have))
      await deleteByUid(secrets, made.namespace, made.name, have.metadata.uid!);
    await this.records.delete(id);
    return made;
  }

  /** Whether a watched change of the Secret at `id`'s place is not the echo of the server's own write. */
  changed(id: string, meta: { uid?: string; resourceVersion?: string }): boolean {
    const seen = this.seenWhileWriting.get(id);
    if (seen) {
      seen.push(meta.resourceVersion ?? '');
      return false;
    }
    const w = this.written.get(id);
    if (w && this.records.get(id)?.uid === meta.uid && w.resourceVersion === meta.resourceVersion) return false;
    if (w) w.stale = true;
    return true;
  }

  /** Every write remembered under these ids may have been changed since (a watch restarted). */
  markStale(ids: Iterable<string>): void {
    for (const id of ids) {
      const w = this.written.get(id);
      if (w) w.stale = true;
    }
  }

  /** Forgets what was written under `id` (its ProjectSecret is gone). */
  forget(id: string): void {
    this.written.delete(id);
  }

  /** The ProjectSecret uid a Secret is labelled as made for. */
  static sourceUid(s: HostSecret): string | undefined {
    return s.metadata.labels?.[SOURCE_UID_LABEL];
  }

  /**
   * Whether `have`, at the place of `id` and labelled as made for its ProjectSecret, is taken for the server's though
   * no uid is recorded: while its create is on its way (its intent recorded), or before the records took over.
   */
  private adoptable(id: string, have: HostSecret): boolean {
    const made = this.records.get(id);
    const uid = id.split('/')[0];
    const labelled = have.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && SecretPlacer.sourceUid(have) === uid;
    return labelled && (made?.uid === '' || !this.records.migrated);
  }

  /** Creates the Secret and records it as the server's, its intent first (an answer lost leaves it adoptable). */
  private async create(
    id: string,
    secrets: HostResource<HostSecret>,
    want: HostSecret,
    wanted: string,
    via?: MadeVia,
  ): Promise<void> {
    this.written.delete(id);
    const place = { namespace: want.metadata.namespace!, name: want.metadata.name, ...(via ? { via } : {}) };
    await this.records.set(id, { ...place, uid: '' });
    await this.writing(id, wanted, async () => {
      const created = await secrets.create(want);
      const { namespace = want.metadata.namespace!, name, uid: secretUid } = created.metadata;
      if (secretUid) await this.records.set(id, { ...place, namespace, name, uid: secretUid });
      return created;
    });
  }

  private remember(id: string, secret: HostSecret, wanted: string): void {
    const { resourceVersion } = secret.metadata;
    if (resourceVersion) this.written.set(id, { resourceVersion, wanted, stale: false });
  }
}

/** Deletes the Secret if it is still the one with `uid` (a precondition of the delete). */
async function deleteByUid(
  secrets: HostResource<HostSecret>,
  namespace: string,
  name: string,
  uid: string,
): Promise<void> {
  try {
    await secrets.delete(namespace, name, uid);
  } catch (err) {
    // 409: another Secret has the name now, not the server's to delete.
    if (!(err instanceof HostClusterError && err.code === 409)) throw err;
  }
}

function sameContent(have: HostSecret, want: HostSecret): boolean {
  return (
    (have.type ?? 'Opaque') === (want.type ?? 'Opaque') &&
    !have.immutable &&
    jsonEqual(have.data ?? {}, want.data ?? {}) &&
    jsonEqual(have.metadata.labels ?? {}, want.metadata.labels ?? {}) &&
    jsonEqual(have.metadata.annotations ?? {}, want.metadata.annotations ?? {})
  );
}
