/**
 * Keeps each ProjectSecret as a native `v1` Secret of the same name in its project namespace in the host cluster, for
 * workloads to mount (registry/kinds/projectsecret.ts is the kind; projectsecretsync.ts fills a synced one's data):
 *
 * - the Secret (type Opaque) holds the ProjectSecret's `spec.data`, labelled as made by this server for that very
 *   ProjectSecret (managed-by, source-uid) and annotated with its source and the SharedSecret it is synced from. It has
 *   no ownerReferences: nothing in the host that a tenant could point elsewhere decides its life; this controller does;
 * - **the server writes and deletes only the Secret it made**: the uid of the Secret it created is recorded in the
 *   ProjectSecret's `status.secretUID` (written by the server only, kept as stored by every other write), and only a
 *   Secret with that uid, at the ProjectSecret's own namespace and name, is replaced (at the resourceVersion read; one
 *   made immutable by hand is deleted, by uid, and created again) or deleted. Labels are never believed: any other
 *   Secret of that name (made by hand, for another object, or labelled to look like this server's) is never touched,
 *   and the condition `SecretDelivered` says so (`NameTaken`);
 * - while delivery runs every ProjectSecret carries the finalizer `management.platform.sh/host-secret`, put on before
 *   any Secret is made: deleting a ProjectSecret deletes its Secret (by the recorded uid) first, then the finalizer,
 *   whenever the server and the host can, a deletion while either was away included;
 * - changes of the host's Secrets with this server's label are watched as metadata only and kept nowhere
 *   (host/changes.ts): one at a ProjectSecret's name sends it to be reconciled, so a Secret edited or deleted by hand
 *   is put back at once; others cost nothing. What the server last wrote is remembered per ProjectSecret (its uid and
 *   resourceVersion), so a reconcile asks the host nothing while the watch shows no change. Every `resyncIntervalMs`
 *   everything is reconciled again; host failures are retried per object with a backoff;
 * - the condition and the log name namespaces, names and how many keys, never values; the host's own words go to
 *   the log only.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { KubeObject } from '../apimachinery/types.js';
import { MANAGED_BY, MANAGED_BY_LABEL, SOURCE_ANNOTATION, SOURCE_UID_LABEL } from '../access/rbac.js';
import { watchHostChanges, type ObjectMetadata } from '../host/changes.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';
import { HostResource, type HostResourceObject } from '../host/resource.js';
import {
  deliveredSecretUid,
  HOST_SECRET_FINALIZER,
  SECRET_DELIVERED,
  sharedSecretRef,
} from '../registry/kinds/projectsecret.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { getIfExists, setCondition, writeIfSame, writeStatus, type Outcome } from './conditions.js';
import { every } from './sleep.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';

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
  secretUid: string;
  resourceVersion: string;
  /** The Secret as wanted then (desiredSecret, as JSON). */
  wanted: string;
  /** The watch showed a change of it since (or may have missed one). */
  stale: boolean;
}

const placeKey = ({ namespace, name }: { namespace?: string; name: string }) => `${namespace}/${name}`;

export class ProjectSecretDelivery {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly projectSecrets: Store;
  private readonly secrets: HostResource<HostSecret>;
  /** Queued by ProjectSecret uid. */
  private readonly queue: WorkQueue;
  /** The ProjectSecrets the watch shows, by uid; `at` finds them by place. */
  private readonly known = new Map<string, Place>();
  private readonly at = new Map<string, string>();
  private readonly written = new Map<string, Written>();
  /** ProjectSecrets gone without the finalizer's turn (it was removed by a client): their Secret, to delete. */
  private readonly gone = new Map<string, Place & { secretUid: string }>();

  constructor(
    registry: Registry,
    private readonly host: HostCluster,
    opts: ProjectSecretDeliveryOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.projectSecrets = registry.lookup(GROUP_NAME, 'v1', 'projectsecrets')!;
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
      remove: (obj) => this.forget(obj.metadata.uid!, deliveredSecretUid(obj)),
      resynced: (seen) => {
        for (const uid of this.known.keys()) if (!seen.has(uid)) this.forget(uid, this.written.get(uid)?.secretUid);
      },
      log,
    });
    await watch.synced;
    if (signal.aborted) return;
    every(this.resyncMs, () => this.enqueueAll(), signal);
    signal.addEventListener('abort', () => this.queue.shutdown(), { once: true });
    this.log('projectsecret delivery: started', { projectSecrets: this.known.size });
    try {
      await this.queue.work(
        this.workers,
        (uid) => this.reconcile(uid),
        (uid, err, delayMs) =>
          this.log('projectsecret delivery: will retry', {
            ...(this.known.get(uid) ?? this.gone.get(uid)),
            error: String((err as Error).message ?? err),
            delayMs,
          }),
      );
    } finally {
      await Promise.all([watch.done, hostWatch]);
    }
  }

  /** A labelled Secret changed: only one at a ProjectSecret's place matters, and not the echo of the server's write. */
  private hostChanged(meta: ObjectMetadata): void {
    const uid = this.at.get(placeKey(meta));
    if (!uid) return;
    const w = this.written.get(uid);
    if (w && w.secretUid === meta.uid && w.resourceVersion === meta.resourceVersion) return;
    if (w) w.stale = true;
    this.queue.add(uid);
  }

  /** A ProjectSecret no longer stored; what the server made for it (`secretUid`) is deleted by its reconcile. */
  private forget(uid: string, secretUid: string | undefined): void {
    const place = this.known.get(uid);
    this.known.delete(uid);
    if (place && this.at.get(placeKey(place)) === uid) this.at.delete(placeKey(place));
    this.written.delete(uid);
    if (place && secretUid) this.gone.set(uid, { ...place, secretUid });
    this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const uid of this.known.keys()) this.queue.add(uid);
    for (const uid of this.gone.keys()) this.queue.add(uid);
  }

  // ---- one ProjectSecret ----

  private async reconcile(uid: string): Promise<void> {
    const place = this.known.get(uid);
    const read = place ? await getIfExists(this.projectSecrets, place.namespace, place.name) : undefined;
    if (!read || read.metadata.uid !== uid) return this.deleteLeftover(uid);
    if (read.metadata.deletionTimestamp) return this.finish(read);
    const obj = await this.withFinalizer(read);
    if (!obj) return;
    let outcome: Outcome;
    let secretUid: string | undefined;
    try {
      ({ outcome, secretUid } = await this.deliver(uid, obj));
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      await this.report(obj, failure(err), this.recordedUid(uid, obj));
      throw withoutData(err, obj);
    }
    await this.report(obj, outcome, secretUid);
  }

  /** The Secret the server made for `uid`: as recorded in its status, or as just written (a report not stored yet). */
  private recordedUid(uid: string, obj: KubeObject): string | undefined {
    return deliveredSecretUid(obj) ?? this.written.get(uid)?.secretUid;
  }

  /** The ProjectSecret carries the finalizer before the server makes anything for it; undefined if it went meanwhile. */
  private async withFinalizer(obj: KubeObject): Promise<KubeObject | undefined> {
    if (obj.metadata.finalizers?.includes(HOST_SECRET_FINALIZER)) return obj;
    return this.updateFinalizers(obj, (finalizers) => [...finalizers, HOST_SECRET_FINALIZER]);
  }

  /** A ProjectSecret being deleted: its Secret goes (only the one the server made), then the finalizer. */
  private async finish(obj: KubeObject): Promise<void> {
    if (!obj.metadata.finalizers?.includes(HOST_SECRET_FINALIZER)) return;
    const { namespace, name, uid } = obj.metadata;
    const secretUid = this.recordedUid(uid!, obj);
    if (secretUid) await this.deleteSecret({ namespace: namespace!, name: name! }, secretUid);
    this.written.delete(uid!);
    await this.updateFinalizers(obj, (finalizers) => finalizers.filter((f) => f !== HOST_SECRET_FINALIZER));
  }

  /** A ProjectSecret deleted without the finalizer's turn: the Secret recorded as made for it, if any, goes. */
  private async deleteLeftover(uid: string): Promise<void> {
    const left = this.gone.get(uid);
    if (left) await this.deleteSecret(left, left.secretUid);
    this.gone.delete(uid);
  }

  /** Deletes the Secret at `place` if it is still the one with `secretUid` (a precondition of the delete). */
  private async deleteSecret(place: Place, secretUid: string): Promise<void> {
    try {
      await this.secrets.delete(place.namespace, place.name, secretUid);
    } catch (err) {
      // 409: another Secret has the name now, not the server's to delete.
      if (err instanceof HostClusterError && err.code === 409) return;
      throw err;
    }
    this.log('projectsecret delivery: deleted the Secret of a ProjectSecret that is gone', { ...place });
  }

  /** Changes the finalizers as the server (a write of the object it read, only). */
  private updateFinalizers(
    read: KubeObject,
    change: (finalizers: string[]) => string[],
  ): Promise<KubeObject | undefined> {
    return writeIfSame(
      this.projectSecrets,
      read,
      (obj) => {
        const finalizers = change(obj.metadata.finalizers ?? []);
        if (finalizers.length) obj.metadata.finalizers = finalizers;
        else delete obj.metadata.finalizers;
      },
      FIELD_MANAGER,
    );
  }

  /**
   * Makes the host's Secret what the ProjectSecret says, when the name is this server's to use: there is none, or
   * the one there is the one recorded as made by the server. Answers the outcome and the uid of the Secret made.
   */
  private async deliver(uid: string, obj: KubeObject): Promise<{ outcome: Outcome; secretUid?: string }> {
    const want = desiredSecret(obj);
    const wanted = JSON.stringify(want);
    const { namespace, name } = want.metadata;
    const where = `Secret ${namespace}/${name} in the host cluster`;
    const delivered: Outcome = {
      status: 'True',
      reason: 'Delivered',
      message: `kept as ${where} (${Object.keys(want.data ?? {}).length} key(s)), for workloads to mount`,
    };
    const recorded = this.recordedUid(uid, obj);
    // As the server last wrote it, and the watch has shown no change since: nothing to ask of the host.
    const last = this.written.get(uid);
    if (last && !last.stale && last.wanted === wanted && last.secretUid === recorded)
      return { outcome: delivered, secretUid: recorded };

    const have = await this.secrets.get(namespace, name);
    if (!have) {
      const created = await this.secrets.create(want);
      this.remember(uid, created, wanted);
      this.log('projectsecret delivery: created a Secret', {
        namespace,
        name,
        keys: Object.keys(want.data ?? {}).length,
      });
      return { outcome: delivered, secretUid: created.metadata.uid };
    }
    if (!recorded || have.metadata.uid !== recorded) {
      this.written.delete(uid);
      return {
        outcome: {
          status: 'False',
          reason: 'NameTaken',
          message: `the host cluster has a ${where} that this server did not make for this ProjectSecret (not the Secret recorded in status.secretUID); it is left alone, and this ProjectSecret is not delivered until it is deleted or the ProjectSecret renamed`,
        },
      };
    }
    if (sameContent(have, want)) {
      this.remember(uid, have, wanted);
      return { outcome: delivered, secretUid: recorded };
    }
    let put: HostSecret;
    if (have.immutable || (have.type ?? 'Opaque') !== want.type) {
      // Neither can change in place (kube refuses it): this server's own Secret is made again.
      await this.secrets.delete(namespace, name, have.metadata.uid);
      this.written.delete(uid);
      put = await this.secrets.create(want);
    } else {
      put = await this.secrets.replace({
        ...want,
        metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion },
      });
    }
    this.remember(uid, put, wanted);
    this.log('projectsecret delivery: put a Secret back as its ProjectSecret says', {
      namespace,
      name,
      keys: Object.keys(want.data ?? {}).length,
    });
    return { outcome: delivered, secretUid: put.metadata.uid };
  }

  private remember(uid: string, secret: HostSecret, wanted: string): void {
    const { uid: secretUid, resourceVersion } = secret.metadata;
    if (secretUid && resourceVersion) this.written.set(uid, { secretUid, resourceVersion, wanted, stale: false });
  }

  /** The condition, and the uid of the Secret the server made (none: not recorded any more). */
  private report(obj: KubeObject, outcome: Outcome, secretUid: string | undefined): Promise<void> {
    return writeStatus(
      this.projectSecrets,
      obj,
      (o) => {
        setCondition(o, SECRET_DELIVERED, outcome, obj);
        if (secretUid) o.status = { ...o.status, secretUID: secretUid };
        else if (o.status) delete o.status.secretUID;
      },
      FIELD_MANAGER,
    );
  }
}

/** The Secret a ProjectSecret stands for in the host. */
export function desiredSecret(obj: KubeObject): HostSecret & { type: string } {
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
    data: { ...((obj.spec?.data ?? {}) as Record<string, string>) },
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
function withoutData(err: HostClusterError, obj: KubeObject): HostClusterError {
  const values = Object.values((obj.spec?.data ?? {}) as Record<string, string>).flatMap((b64) => {
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
