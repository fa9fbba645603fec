/**
 * Checks every Cluster's connection (src/clusters/connector.ts) when it is created or its spec changes and every
 * `intervalMs` (which also reads its config Secret again, so a rotated one counts at the next check), and writes
 * what it found to the status:
 *
 * - `phase`: "" before the first check and while nothing can be checked (a network peer), `Initialized` when the
 *   cluster answered and accepted the credential, `Failed` otherwise;
 * - `reason` and `message` (cleared when Initialized), `online` (the cluster answered), `kubernetesVersion` (at the
 *   last check that reached it);
 * - the condition `Ready` (True, False, Unknown), whose lastTransitionTime moves only when its status does.
 *
 * One physical cluster is one kube-system uid: when two Clusters reach the same one, the newer (by creation, then
 * name) is Failed with reason ClusterUID, naming the older; when the older goes, the newer is checked again.
 * Nothing is written when nothing changed. A check never throws out of the controller: every failure is a status.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import { isStatusError } from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { KubeObject } from '../apimachinery/types.js';
import { ClusterConnectionError, type ClusterConnector, type ClusterPhase } from '../clusters/connector.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { every } from './sleep.js';

export const READY = 'Ready';
const FIELD_MANAGER = 'cluster-health';

export interface ClusterHealthOptions {
  /** How often every Cluster is checked (ms). */
  intervalMs: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Clusters checked at once. */
  workers?: number;
  workQueueMetrics?: WorkQueueMetrics;
}

/** What a check found, as the status says it. */
interface Observed {
  phase: ClusterPhase;
  reason: string;
  message: string;
  online: boolean;
  version?: string;
}

interface Known {
  uid: string;
  creationTimestamp: string;
  generation: number;
  /** The kube-system uid of its last good check. */
  kubeSystemUid?: string;
}

export class ClusterHealth {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly store: Store;
  private readonly queue: WorkQueue;
  private readonly workers: number;
  /** By Cluster name. */
  private readonly known = new Map<string, Known>();

  constructor(
    registry: Registry,
    private readonly connector: ClusterConnector,
    private readonly opts: ClusterHealthOptions,
  ) {
    this.log = opts.log ?? (() => {});
    this.store = registry.lookup(GROUP_NAME, 'v1', 'clusters')!;
    this.workers = opts.workers ?? 4;
    this.queue = new WorkQueue({
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      name: 'cluster-health',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const watch = watchStore(this.store, signal, {
      upsert: (obj) => this.upsert(obj),
      remove: (obj) => this.remove(obj.metadata.name!),
      resynced: (seen) => {
        for (const [name, k] of this.known) if (!seen.has(k.uid)) this.remove(name);
      },
      log: (msg, fields) => this.log(`cluster health: ${msg}`, fields),
    });
    await watch.synced;
    if (signal.aborted) return;
    every(
      this.opts.intervalMs,
      () => {
        for (const name of this.known.keys()) this.queue.add(name);
      },
      signal,
    );
    signal.addEventListener('abort', () => this.queue.shutdown(), { once: true });
    this.log('cluster health: started', { clusters: this.known.size, intervalMs: this.opts.intervalMs });
    try {
      await this.queue.work(
        this.workers,
        (name) => this.check(name),
        // Only writing the status can fail here (a check's failures are its result): etcd, most likely.
        (name, err, delayMs) =>
          this.log('cluster health: could not write the status, will retry', { name, error: String(err), delayMs }),
      );
    } finally {
      await watch.done;
    }
  }

  /** A new Cluster, or one whose spec changed (a generation), is checked at once; a status write is not a change. */
  private upsert(obj: KubeObject): void {
    const name = obj.metadata.name!;
    const before = this.known.get(name);
    const generation = obj.metadata.generation ?? 0;
    this.known.set(name, {
      uid: obj.metadata.uid!,
      creationTimestamp: obj.metadata.creationTimestamp ?? '',
      generation,
      kubeSystemUid: before?.uid === obj.metadata.uid ? before?.kubeSystemUid : undefined,
    });
    if (!before || before.uid !== obj.metadata.uid || before.generation !== generation) this.queue.add(name);
  }

  private remove(name: string): void {
    const gone = this.known.get(name);
    this.known.delete(name);
    if (!gone) return;
    this.connector.forget(gone.uid);
    if (gone.kubeSystemUid) this.recheckSharing(gone.kubeSystemUid, name);
  }

  /** The other Clusters that reached `kubeSystemUid`: who is the duplicate may have changed. */
  private recheckSharing(kubeSystemUid: string, except: string): void {
    for (const [name, k] of this.known) if (name !== except && k.kubeSystemUid === kubeSystemUid) this.queue.add(name);
  }

  private async check(name: string): Promise<void> {
    let cluster: KubeObject;
    try {
      cluster = await this.store.get(undefined, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return;
      throw err;
    }
    if (cluster.metadata.deletionTimestamp) return;
    const observed = await this.observe(name, cluster);
    await this.write(cluster, observed);
  }

  private async observe(name: string, cluster: KubeObject): Promise<Observed> {
    const known = this.known.get(name);
    const previousUid = known?.kubeSystemUid;
    let observed: Observed;
    try {
      const conn = await this.connector.connect(cluster);
      if (known) known.kubeSystemUid = conn.kubeSystemUid;
      const older = this.olderWithSameCluster(name, conn.kubeSystemUid);
      observed = older
        ? {
            phase: 'Failed',
            reason: 'ClusterUID',
            message: `Cluster ${JSON.stringify(older)} already connects to this cluster (the uid of its kube-system Namespace is the same): a cluster is connected once; delete one of the two`,
            online: true,
            version: conn.version,
          }
        : { phase: 'Initialized', reason: '', message: '', online: true, version: conn.version };
    } catch (err) {
      if (known) delete known.kubeSystemUid;
      if (!(err instanceof ClusterConnectionError)) {
        this.log('cluster health: the check failed unexpectedly', { name, error: String(err) });
        observed = {
          phase: 'Failed',
          reason: 'HealthCheckFailed',
          message: "the check failed unexpectedly; the server's log has the details",
          online: false,
        };
      } else {
        if (err.detail) this.log('cluster health: not connected', { name, reason: err.reason, error: err.detail });
        observed = { phase: err.phase, reason: err.reason, message: err.message, online: err.online };
      }
    }
    const now = known?.kubeSystemUid;
    if (now !== previousUid) {
      if (previousUid) this.recheckSharing(previousUid, name);
      if (now) this.recheckSharing(now, name);
    }
    return observed;
  }

  /** The oldest other Cluster whose last good check reached the same cluster, if it is older than `name`. */
  private olderWithSameCluster(name: string, kubeSystemUid: string): string | undefined {
    const me = this.known.get(name);
    if (!me) return undefined;
    const key = (n: string, k: Known) => [k.creationTimestamp, n] as const;
    const mine = key(name, me);
    let oldest: string | undefined;
    let oldestKey: readonly [string, string] | undefined;
    for (const [other, k] of this.known) {
      if (other === name || k.kubeSystemUid !== kubeSystemUid) continue;
      const theirs = key(other, k);
      if (!before(theirs, mine)) continue;
      if (!oldestKey || before(theirs, oldestKey)) {
        oldest = other;
        oldestKey = theirs;
      }
    }
    return oldest;
  }

  private async write(cluster: KubeObject, observed: Observed): Promise<void> {
    const uid = cluster.metadata.uid;
    try {
      await this.store.update(
        undefined,
        cluster.metadata.name!,
        {
          patch: (current) => {
            if (current.metadata.uid !== uid) throw new NotTheSameCluster();
            current.status = nextStatus(current, observed);
            return current;
          },
        },
        'status',
        { fieldManager: FIELD_MANAGER },
      );
    } catch (err) {
      if (err instanceof NotTheSameCluster || isStatusError(err, 'NotFound')) return;
      throw err;
    }
    const before = cluster.status ?? {};
    if ((before.phase ?? '') !== observed.phase || (before.reason ?? '') !== observed.reason)
      this.log('cluster health: phase', {
        name: cluster.metadata.name,
        phase: observed.phase,
        reason: observed.reason,
        online: observed.online,
      });
  }
}

/** The status after `observed`; the same object's content when nothing changed (then the store writes nothing). */
function nextStatus(cluster: KubeObject, observed: Observed): Record<string, unknown> {
  const status: Record<string, unknown> = { ...(cluster.status ?? {}) };
  status.phase = observed.phase;
  if (observed.reason) status.reason = observed.reason;
  else delete status.reason;
  if (observed.message) status.message = observed.message;
  else delete status.message;
  status.online = observed.online;
  if (observed.version) status.kubernetesVersion = observed.version;
  const conditions: Array<Record<string, unknown>> = Array.isArray(status.conditions) ? status.conditions : [];
  const old = conditions.find((c) => c?.type === READY);
  const conditionStatus = observed.phase === 'Initialized' ? 'True' : observed.phase === 'Failed' ? 'False' : 'Unknown';
  const ready = {
    type: READY,
    status: conditionStatus,
    reason: observed.reason || 'Connected',
    message:
      observed.message ||
      `the cluster answers${observed.version ? ` (Kubernetes ${observed.version})` : ''} and accepts the server's credential`,
    observedGeneration: cluster.metadata.generation,
    lastTransitionTime:
      old?.status === conditionStatus && old.lastTransitionTime ? old.lastTransitionTime : nowRFC3339(),
  };
  const same = old && jsonEqual(old, ready);
  status.conditions = same ? conditions : [...conditions.filter((c) => c?.type !== READY), ready];
  return status;
}

const before = (a: readonly [string, string], b: readonly [string, string]) =>
  a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

class NotTheSameCluster extends Error {}
