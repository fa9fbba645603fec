/**
 * Keeps each ProjectSecret as a native `v1` Secret of the same name in its project namespace in the host cluster, for
 * workloads to mount (registry/kinds/projectsecret.ts is the kind; projectsecretsync.ts fills a synced one's data):
 *
 * - the Secret (type Opaque) holds the ProjectSecret's `spec.data`, labelled as made by this server for that very
 *   ProjectSecret (managed-by, source-uid) and annotated with its source and the SharedSecret it is synced from. It has
 *   no ownerReferences: nothing in the host that a tenant could point elsewhere decides its life; this controller does;
 * - a reconcile reads the host's Secret of that name first: none is created; one labelled for this ProjectSecret (its
 *   uid) is replaced, at the resourceVersion read, when its data, type, labels or annotations differ (one made
 *   immutable by hand is deleted and created again); any other Secret of that name (made by hand, or for another
 *   object) is never touched, and the condition `SecretDelivered` says so (`NameTaken`);
 * - the host's Secrets with this server's label are watched (an informer), so one edited or deleted by hand is put
 *   back at once, and one whose ProjectSecret is gone or being deleted is deleted (by uid) once the store's watch
 *   has listed every ProjectSecret: a restart, or a deletion missed while the host was away, is swept too. Every
 *   `resyncIntervalMs` everything is reconciled again; host failures are retried per object with a backoff;
 * - the condition and the log name namespaces, names and how many keys, never values; the host's own words go to
 *   the log only.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { KubeObject } from '../apimachinery/types.js';
import { MANAGED_BY, MANAGED_BY_LABEL, SOURCE_ANNOTATION, SOURCE_UID_LABEL } from '../access/rbac.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';
import { HostInformer } from '../host/informer.js';
import { HostResource, type HostResourceObject } from '../host/resource.js';
import { SECRET_DELIVERED, sharedSecretRef } from '../registry/kinds/projectsecret.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { getIfExists, setCondition, writeStatus, type Outcome } from './conditions.js';
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

const keyOf = (namespace: string | undefined, name: string) => `${namespace}/${name}`;
const sourceUid = (s: HostSecret) => s.metadata.labels?.[SOURCE_UID_LABEL];

export class ProjectSecretDelivery {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly projectSecrets: Store;
  private readonly secrets: HostResource<HostSecret>;
  private readonly informer: HostInformer<HostSecret>;
  /** Queued by ProjectSecret uid. */
  private readonly queue: WorkQueue;
  /** The ProjectSecrets the watch shows, by uid. */
  private readonly known = new Map<string, { namespace: string; name: string }>();

  constructor(registry: Registry, host: HostCluster, opts: ProjectSecretDeliveryOptions = {}) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.projectSecrets = registry.lookup(GROUP_NAME, 'v1', 'projectsecrets')!;
    this.secrets = new HostResource<HostSecret>(host, { apiVersion: 'v1', kind: 'Secret', plural: 'secrets' });
    this.informer = new HostInformer<HostSecret>(host, {
      what: 'secrets',
      path: '/api/v1/secrets',
      labelSelector: SELECTOR,
      onChange: (secret) => {
        const uid = secret && sourceUid(secret);
        if (uid) this.queue.add(uid);
      },
      log: (msg, fields) => this.log(`projectsecret delivery: ${msg}`, fields),
    });
    this.queue = new WorkQueue({
      baseDelayMs: 1000,
      maxDelayMs: 60_000,
      name: 'projectsecret-delivery',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const hostWatch = this.informer.run(signal);
    const watch = watchStore(this.projectSecrets, signal, {
      upsert: (obj) => {
        this.known.set(obj.metadata.uid!, { namespace: obj.metadata.namespace!, name: obj.metadata.name! });
        this.queue.add(obj.metadata.uid!);
      },
      remove: (obj) => this.forget(obj.metadata.uid!),
      resynced: (seen) => {
        for (const uid of this.known.keys()) if (!seen.has(uid)) this.forget(uid);
      },
      log: (msg, fields) => this.log(`projectsecret delivery: ${msg}`, fields),
    });
    // Nothing is swept before every ProjectSecret is known: an unknown one would look deleted.
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
            ...this.known.get(uid),
            error: String((err as Error).message ?? err),
            delayMs,
          }),
      );
    } finally {
      await Promise.all([watch.done, hostWatch]);
    }
  }

  private forget(uid: string): void {
    this.known.delete(uid);
    this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const uid of this.known.keys()) this.queue.add(uid);
    // Secrets whose ProjectSecret is not known: swept by their reconcile.
    for (const secret of this.informer.list()) {
      const uid = sourceUid(secret);
      if (uid) this.queue.add(uid);
    }
  }

  // ---- one ProjectSecret ----

  private async reconcile(uid: string): Promise<void> {
    const at = this.known.get(uid);
    const read = at ? await getIfExists(this.projectSecrets, at.namespace, at.name) : undefined;
    const live = read && read.metadata.uid === uid && !read.metadata.deletionTimestamp ? read : undefined;
    await this.sweep(uid, live);
    if (!live) return;
    let outcome: Outcome;
    try {
      outcome = await this.deliver(uid, live);
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      await this.report(live, failure(err));
      throw withoutData(err, live);
    }
    await this.report(live, outcome);
  }

  /** Deletes the Secrets made for this ProjectSecret but the one it has now (all of them when it is gone). */
  private async sweep(uid: string, live: KubeObject | undefined): Promise<void> {
    for (const secret of this.informer.list()) {
      if (sourceUid(secret) !== uid) continue;
      const { namespace, name } = secret.metadata;
      if (live && namespace === live.metadata.namespace && name === live.metadata.name) continue;
      await this.secrets.delete(namespace, name, secret.metadata.uid);
      this.log('projectsecret delivery: deleted the Secret of a ProjectSecret that is gone', { namespace, name });
    }
  }

  /** Makes the host's Secret what the ProjectSecret says, when the name is this server's to use. */
  private async deliver(uid: string, obj: KubeObject): Promise<Outcome> {
    const want = desiredSecret(obj);
    const { namespace, name } = want.metadata;
    const where = `Secret ${namespace}/${name} in the host cluster`;
    const delivered: Outcome = {
      status: 'True',
      reason: 'Delivered',
      message: `kept as ${where} (${Object.keys(want.data ?? {}).length} key(s)), for workloads to mount`,
    };
    // What the informer shows: nothing to ask of the host when it is as wanted.
    const cached = this.informer.get(keyOf(namespace, name));
    if (cached && sourceUid(cached) === uid && sameContent(cached, want)) return delivered;

    const have = await this.secrets.get(namespace, name);
    if (!have) {
      await this.secrets.create(want);
      this.log('projectsecret delivery: created a Secret', {
        namespace,
        name,
        keys: Object.keys(want.data ?? {}).length,
      });
      return delivered;
    }
    if (have.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY || sourceUid(have) !== uid)
      return {
        status: 'False',
        reason: 'NameTaken',
        message: `the host cluster has a ${where} that this server did not make for this ProjectSecret; it is left alone, and this ProjectSecret is not delivered until it is deleted or the ProjectSecret renamed`,
      };
    if (sameContent(have, want)) return delivered;
    if (have.immutable || (have.type ?? 'Opaque') !== want.type) {
      // Neither can change in place (kube refuses it): this server's own Secret is made again.
      await this.secrets.delete(namespace, name, have.metadata.uid);
      await this.secrets.create(want);
    } else {
      await this.secrets.replace({
        ...want,
        metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion },
      });
    }
    this.log('projectsecret delivery: put a Secret back as its ProjectSecret says', {
      namespace,
      name,
      keys: Object.keys(want.data ?? {}).length,
    });
    return delivered;
  }

  private report(obj: KubeObject, outcome: Outcome): Promise<void> {
    return writeStatus(this.projectSecrets, obj, (o) => setCondition(o, SECRET_DELIVERED, outcome, obj), FIELD_MANAGER);
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
