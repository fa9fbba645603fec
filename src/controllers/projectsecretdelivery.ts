/**
 * Keeps each ProjectSecret as a native `v1` Secret of the same name in its project namespace in the host cluster, for
 * workloads to mount (kinds/projectsecret/strategy.ts is the kind; projectsecretsync.ts fills a synced one's data):
 *
 * - the Secret (type Opaque) holds the ProjectSecret's `spec.data`, labelled as made by this server for that very
 *   ProjectSecret (managed-by, source-uid) and annotated with its source and the SharedSecret it is synced from. It has
 *   no ownerReferences: nothing in the host that a tenant could point elsewhere decides its life; this controller does;
 * - **the server writes and deletes only the Secret it made**: the uid of every Secret it creates is recorded in its
 *   own storage (deliveryrecords.ts, which no client reads or writes), and only the Secret with that uid, at the
 *   ProjectSecret's own namespace and name, is replaced (at the resourceVersion read; one made immutable by hand is
 *   deleted, by uid, and created again) or deleted. Labels are believed only at the ProjectSecret's own place, and
 *   only while its create is on its way (an answer lost) or, once, for what earlier versions delivered (see
 *   deliveryrecords.ts): any other Secret of that name (made by hand, for another object, or labelled to look like
 *   this server's) is never touched, and the condition `SecretDelivered` says so (`NameTaken`);
 * - the record outlives the ProjectSecret: once it is gone (deleted, whenever and however, while the server or the
 *   host was away included) its Secret is deleted by the recorded uid, when the store's watch has listed every
 *   ProjectSecret (an unknown one would look deleted) and at every resync;
 * - changes of the host's Secrets with this server's label are watched as metadata only and kept nowhere
 *   (host/changes.ts): one at a ProjectSecret's name sends it to be reconciled, so a Secret edited or deleted by hand
 *   is put back at once; others cost nothing. What the server last wrote is remembered per ProjectSecret (its uid and
 *   resourceVersion), so a reconcile asks the host nothing while the watch shows no change. Every `resyncIntervalMs`
 *   everything is reconciled again; host failures are retried per object with a backoff;
 * - the condition and the log name namespaces, names and how many keys, never values; the host's own words go to
 *   the log only.
 */
import { createHash } from 'node:crypto';
import { GROUP_NAME } from '../apimachinery/group.js';
import { jsonEqual } from '../apimachinery/equality.js';
import { MANAGED_BY, MANAGED_BY_LABEL, SOURCE_ANNOTATION, SOURCE_UID_LABEL } from '../access/rbac.js';
import { watchHostChanges, type ObjectMetadata } from '../host/changes.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';
import { HostResource, type HostResourceObject } from '../host/resource.js';
import { SECRET_DELIVERED } from '../kinds/projectsecret/conditions.js';
import { sharedSecretRef } from '../kinds/projectsecret/reference.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { setCondition, writeStatus, type Outcome } from './conditions.js';
import type { DeliveryRecords, MadeSecret } from './deliveryrecords.js';
import { runQueueController } from './runner.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { ProjectSecret } from '../kinds/projectsecret/types.js';

/** On a delivered Secret of a synced ProjectSecret: the SharedSecret its data comes from, as namespace/name. */
export const SHARED_SECRET_ANNOTATION = `${GROUP_NAME}/shared-secret`;
const FIELD_MANAGER = 'projectsecret-delivery';
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;

export type HostSecret = HostResourceObject<'Secret'> & {
  type?: string;
  immutable?: boolean;
  data?: Record<string, string>;
};

export interface ProjectSecretDeliveryOptions {
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How often every ProjectSecret is compared with its Secret again (ms). */
  resyncIntervalMs?: number;
  /** How many ProjectSecrets are reconciled at once. */
  workers?: number;
  workQueueMetrics?: WorkQueueMetrics;
}

/** Where a ProjectSecret is, and so where its Secret is. */
interface Place {
  namespace: string;
  name: string;
}

/** What the server last wrote (or found as it wrote it) for one ProjectSecret. */
interface Written {
  resourceVersion: string;
  /** The Secret as wanted then: a digest of desiredSecret (its data is the ProjectSecret's, not to be kept twice). */
  wanted: string;
  /** The watch showed a change of it since (or may have missed one). */
  stale: boolean;
}

const sourceUid = (s: HostSecret) => s.metadata.labels?.[SOURCE_UID_LABEL];
const placeKey = ({ namespace, name }: { namespace?: string; name: string }) => `${namespace}/${name}`;

export class ProjectSecretDelivery {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly projectSecrets: Store<ProjectSecret>;
  private readonly secrets: HostResource<HostSecret>;
  /** Queued by ProjectSecret uid. */
  private readonly queue: WorkQueue;
  /** The ProjectSecrets the watch shows, by uid; `at` finds them by place. */
  private readonly known = new Map<string, Place>();
  private readonly at = new Map<string, string>();
  private readonly written = new Map<string, Written>();
  /** Whether the store's watch has listed every ProjectSecret: before, one not known may just not be seen yet. */
  private listed = false;
  /** Until the records have taken over what earlier versions delivered: the ProjectSecrets not looked at yet. */
  private migrating?: Set<string>;

  constructor(
    registry: Registry,
    private readonly host: HostCluster,
    private readonly records: DeliveryRecords,
    opts: ProjectSecretDeliveryOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.projectSecrets = registry.store(ProjectSecret);
    this.secrets = new HostResource<HostSecret>(host, { apiVersion: 'v1', kind: 'Secret', plural: 'secrets' });
    this.queue = new WorkQueue({
      baseDelayMs: 1000,
      maxDelayMs: 60_000,
      name: 'projectsecret-delivery',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const log = (msg: string, fields?: Record<string, unknown>) => this.log(`projectsecret delivery: ${msg}`, fields);
    await this.records.load();
    const hostWatch = watchHostChanges(
      this.host,
      {
        what: 'secrets',
        path: '/api/v1/secrets',
        labelSelector: SELECTOR,
        changed: (_type, meta) => this.hostChanged(meta),
        restarted: () => {
          for (const w of this.written.values()) w.stale = true;
          this.enqueueAll();
        },
        log,
      },
      signal,
    );
    const watch = watchStore(this.projectSecrets, signal, {
      upsert: (obj) => {
        const uid = obj.metadata.uid!;
        const place = { namespace: obj.metadata.namespace!, name: obj.metadata.name! };
        this.known.set(uid, place);
        this.at.set(placeKey(place), uid);
        this.queue.add(uid);
      },
      remove: (obj) => this.forget(obj.metadata.uid!),
      resynced: (seen) => {
        for (const uid of this.known.keys()) if (!seen.has(uid)) this.forget(uid);
      },
      log,
    });
    await runQueueController(
      {
        what: 'projectsecret delivery',
        log: this.log,
        watches: [watch],
        loops: [hostWatch],
        synced: async () => {
          this.listed = true;
          if (!this.records.migrated) this.migrating = new Set(this.known.keys());
          await this.migrated();
          this.enqueueAll();
        },
        queue: this.queue,
        workers: this.workers,
        resyncMs: this.resyncMs,
        resync: () => this.enqueueAll(),
        started: () => ({ projectSecrets: this.known.size }),
        handle: (uid) => this.reconcile(uid),
        failed: (uid, err, delayMs) =>
          this.log('projectsecret delivery: will retry', {
            ...(this.known.get(uid) ?? this.records.get(uid)),
            error: String((err as Error).message ?? err),
            delayMs,
          }),
      },
      signal,
    );
  }

  /** A labelled Secret changed: only one at a ProjectSecret's place matters, and not the echo of the server's write. */
  private hostChanged(meta: ObjectMetadata): void {
    const uid = this.at.get(placeKey(meta));
    if (!uid) return;
    const w = this.written.get(uid);
    if (w && this.records.get(uid)?.uid === meta.uid && w.resourceVersion === meta.resourceVersion) return;
    if (w) w.stale = true;
    this.queue.add(uid);
  }

  /** A ProjectSecret no longer stored: its reconcile deletes what was made for it. */
  private forget(uid: string): void {
    const place = this.known.get(uid);
    this.known.delete(uid);
    if (place && this.at.get(placeKey(place)) === uid) this.at.delete(placeKey(place));
    this.written.delete(uid);
    this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const uid of this.known.keys()) this.queue.add(uid);
    // What was made for ProjectSecrets not known (any more): deleted by their reconcile.
    for (const uid of this.records.uids()) if (!this.known.has(uid)) this.queue.add(uid);
  }

  // ---- one ProjectSecret ----

  private async reconcile(uid: string): Promise<void> {
    await this.records.save(uid);
    const place = this.known.get(uid);
    const read = place ? await this.projectSecrets.find(place.namespace, place.name) : undefined;
    const live = read && read.metadata.uid === uid && !read.metadata.deletionTimestamp ? read : undefined;
    if (!live) {
      await this.deleteMade(uid);
      return this.migrated(uid);
    }
    let outcome: Outcome;
    try {
      outcome = await this.deliver(uid, live);
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      await this.report(live, failure(err));
      throw withoutData(err, live);
    }
    await this.report(live, outcome);
    await this.migrated(uid);
  }

  /** `uid` has been looked at: once every ProjectSecret known at the start has been, the records have taken over. */
  private async migrated(uid?: string): Promise<void> {
    if (!this.migrating) return;
    if (uid) this.migrating.delete(uid);
    if (this.migrating.size) return;
    await this.records.markMigrated();
    this.migrating = undefined;
    this.log("projectsecret delivery: the Secrets of earlier versions are recorded as the server's");
  }

  /**
   * Whether `have`, at the ProjectSecret's own place and labelled as made for it, is taken for the server's though no
   * uid is recorded: while its create is on its way (`made` is its intent), or before the records took over.
   */
  private adoptable(uid: string, have: HostSecret): boolean {
    const made = this.records.get(uid);
    const labelled = have.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && sourceUid(have) === uid;
    return labelled && (made?.uid === '' || !this.records.migrated);
  }

  /**
   * The ProjectSecret is gone or going: the Secret recorded as made for it is deleted, if it is still that one. Only
   * once every ProjectSecret has been listed, and when it is still not known: it may be back under a new event.
   */
  private async deleteMade(uid: string): Promise<void> {
    const made = this.records.get(uid);
    if (!made || !this.listed || this.known.get(uid)) return;
    // A create whose answer was lost: the Secret at its place, if it is the one it made.
    const have = made.uid ? undefined : await this.secrets.get(made.namespace, made.name);
    if (made.uid) await this.deleteSecret(made);
    else if (have && this.adoptable(uid, have)) await this.deleteSecret({ ...made, uid: have.metadata.uid! });
    await this.records.delete(uid);
    this.log('projectsecret delivery: deleted the Secret of a ProjectSecret that is gone', {
      namespace: made.namespace,
      name: made.name,
    });
  }

  /** Deletes the Secret `made` names if it is still the one with its uid (a precondition of the delete). */
  private async deleteSecret(made: MadeSecret): Promise<void> {
    try {
      await this.secrets.delete(made.namespace, made.name, made.uid);
    } catch (err) {
      // 409: another Secret has the name now, not the server's to delete.
      if (!(err instanceof HostClusterError && err.code === 409)) throw err;
    }
  }

  /**
   * Makes the host's Secret what the ProjectSecret says, when the name is this server's to use: there is none, or
   * the one there is the one recorded as made by the server.
   */
  private async deliver(uid: string, obj: ProjectSecret): Promise<Outcome> {
    const want = desiredSecret(obj);
    const wanted = createHash('sha256').update(JSON.stringify(want)).digest('base64');
    const { namespace, name } = want.metadata;
    const where = `Secret ${namespace}/${name} in the host cluster`;
    const delivered: Outcome = {
      status: 'True',
      reason: 'Delivered',
      message: `kept as ${where} (${Object.keys(want.data ?? {}).length} key(s)), for workloads to mount`,
    };
    let made = this.records.get(uid);
    // As the server last wrote it, and the watch has shown no change since: nothing to ask of the host.
    const last = this.written.get(uid);
    if (made?.uid && last && !last.stale && last.wanted === wanted) return delivered;

    const have = await this.secrets.get(namespace, name);
    if (!have) {
      await this.create(uid, want, wanted);
      this.log('projectsecret delivery: created a Secret', {
        namespace,
        name,
        keys: Object.keys(want.data ?? {}).length,
      });
      return delivered;
    }
    if ((!made?.uid || have.metadata.uid !== made.uid) && this.adoptable(uid, have)) {
      made = { namespace: namespace!, name, uid: have.metadata.uid! };
      await this.records.set(uid, made);
      this.log("projectsecret delivery: took a Secret made for the ProjectSecret as the server's", { namespace, name });
    }
    if (!made?.uid || have.metadata.uid !== made.uid) {
      // What was made is gone, and another Secret has the name now: nothing of the server's is there.
      if (made) await this.records.delete(uid);
      this.written.delete(uid);
      return {
        status: 'False',
        reason: 'NameTaken',
        message: `the host cluster has a ${where} that this server did not make for this ProjectSecret; it is left alone, and this ProjectSecret is not delivered until it is deleted or the ProjectSecret renamed`,
      };
    }
    if (sameContent(have, want)) {
      this.remember(uid, have, wanted);
      return delivered;
    }
    if (have.immutable || (have.type ?? 'Opaque') !== want.type) {
      // Neither can change in place (kube refuses it): this server's own Secret is made again.
      await this.secrets.delete(namespace, name, have.metadata.uid);
      await this.create(uid, want, wanted);
    } else {
      const put = await this.secrets.replace({
        ...want,
        metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion },
      });
      this.remember(uid, put, wanted);
    }
    this.log('projectsecret delivery: put a Secret back as its ProjectSecret says', {
      namespace,
      name,
      keys: Object.keys(want.data ?? {}).length,
    });
    return delivered;
  }

  /** Creates the Secret and records it as the server's, its intent first (an answer lost leaves it adoptable). */
  private async create(uid: string, want: HostSecret, wanted: string): Promise<void> {
    this.written.delete(uid);
    await this.records.set(uid, { namespace: want.metadata.namespace!, name: want.metadata.name, uid: '' });
    const created = await this.secrets.create(want);
    const { namespace = want.metadata.namespace!, name, uid: secretUid } = created.metadata;
    if (secretUid) await this.records.set(uid, { namespace, name, uid: secretUid });
    this.remember(uid, created, wanted);
  }

  private remember(uid: string, secret: HostSecret, wanted: string): void {
    const { resourceVersion } = secret.metadata;
    if (resourceVersion) this.written.set(uid, { resourceVersion, wanted, stale: false });
  }

  private report(obj: ProjectSecret, outcome: Outcome): Promise<void> {
    return writeStatus(this.projectSecrets, obj, (o) => setCondition(o, SECRET_DELIVERED, outcome, obj), FIELD_MANAGER);
  }
}

/** The Secret a ProjectSecret stands for in the host. */
export function desiredSecret(obj: ProjectSecret): HostSecret & { type: string } {
  const { namespace, name, uid } = obj.metadata;
  const ref = sharedSecretRef(obj);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: name!,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [SOURCE_UID_LABEL]: uid! },
      annotations: {
        [SOURCE_ANNOTATION]: `ProjectSecret ${namespace}/${name}`,
        ...(ref ? { [SHARED_SECRET_ANNOTATION]: `${ref.namespace}/${ref.name}` } : {}),
      },
    },
    type: 'Opaque',
    data: { ...obj.spec?.data },
  };
}

function sameContent(have: HostSecret, want: HostSecret): boolean {
  return (
    (have.type ?? 'Opaque') === want.type &&
    !have.immutable &&
    jsonEqual(have.data ?? {}, want.data ?? {}) &&
    jsonEqual(have.metadata.labels ?? {}, want.metadata.labels ?? {}) &&
    jsonEqual(have.metadata.annotations ?? {}, want.metadata.annotations ?? {})
  );
}

/**
 * The host's error, for the log, unless its message quotes the data (a webhook in the host may echo what it refused):
 * then without the message. Decoded values shorter than 4 characters are too common in any text to look for.
 */
function withoutData(err: HostClusterError, obj: ProjectSecret): HostClusterError {
  const values = Object.values(obj.spec?.data ?? {}).flatMap((b64) => {
    const plain = Buffer.from(b64, 'base64').toString('utf8');
    return plain.length >= 4 ? [b64, plain] : [b64];
  });
  if (!values.some((v) => v && err.message.includes(v))) return err;
  return new HostClusterError(
    `the host cluster answered HTTP ${err.code}; its message is left out, as it quotes the Secret's data`,
    err.code,
  );
}

/**
 * The condition for a host that failed: what a tenant can act on, without the host's own words. (A project namespace
 * missing in the host is a 404 here; while it is missing, the ProjectSecret's namespace refuses writes, this status
 * among them, as kube's NamespaceLifecycle does, so the log says it and the Secret follows once the namespace exists.)
 */
function failure(err: HostClusterError): Outcome {
  if (err.code === undefined || err.code >= 500 || err.code === 429)
    return {
      status: 'False',
      reason: 'HostUnavailable',
      message: 'the host cluster did not answer; the Secret is written once it does',
    };
  return {
    status: 'False',
    reason: 'HostRejected',
    message: `the host cluster refused to write the Secret (HTTP ${err.code}); the server's log says why, and it is tried again`,
  };
}
