/**
 * Checks every Cluster's connection (src/clusters/connector.ts) when it is created or its spec changes and every
 * `intervalMs` (which also reads its config Secret again, so a rotated one counts at the next check), and writes
 * what it found to the status:
 *
 * - `phase`: "" before the first check and while nothing can be checked (a network peer), `Initialized` when the
 *   cluster answered and accepted the credential, `Failed` otherwise;
 * - `reason` and `message` (cleared when Initialized), `online` (the cluster answered), `kubernetesVersion` (at the
 *   last check that reached it);
 * - the condition `Ready` (True, False, Unknown), whose lastTransitionTime moves only when its status does;
 * - `clusterUID`: which physical cluster it is, and `refusedClusterUIDs`: which it is never
 *   (registry/kinds/clusteridentity.ts).
 *
 * One physical cluster is one kube-system uid, and one Cluster: the one that recorded it first. A Cluster records
 * the uid its cluster answers at its first good check, unless another Cluster has recorded it: then it is Failed,
 * reason ClusterUID, and refused that uid for good (status.refusedClusterUIDs), also once the other Cluster goes. A
 * cluster connected twice by mistake and one that copies another's uid answer alike, and the copy must not take the
 * cluster of whoever deletes their Cluster to create it again; so only a new Cluster, an administrator's act,
 * connects a refused cluster. A cluster's answer is the cluster's to say, and a connected cluster may be a tenant's,
 * so no answer moves a record: a Cluster whose cluster answers another uid than its record is Failed/ClusterUID
 * until it answers its own again (its imports and kube configs stop with it: clusters/connections.ts), and the
 * Cluster holding the uid it now answers is not concerned. Two records of one uid (two replicas deciding at once)
 * go to the earlier record. Among Clusters without a record (new ones, and those stored before the record existed)
 * that reach one cluster, the older (by creation, then name) records it, as the older won before records, unless
 * it was refused that uid: so a newer one waits for the first check (in this process) of each older one without a
 * record before it records; it is refused for good once the older one has recorded. When a Cluster goes, the
 * others that reached or recorded its cluster are checked again.
 *
 * The other Cluster of a ClusterUID refusal is named in the log only: the status is read by whoever may read this
 * Cluster, who may not be allowed to know of that one. Nothing is written when nothing changed. A check never
 * throws out of the controller: every failure is a status.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import { isStatusError } from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { KubeObject } from '../apimachinery/types.js';
import { ClusterConnectionError, type ClusterConnector, type ClusterPhase } from '../clusters/connector.js';
import { CLUSTER_CHANGED, CLUSTER_TAKEN } from '../clusters/connections.js';
import {
  recordTime,
  recordedIdentity,
  refusedUids,
  withIdentity,
  withRefused,
  type ClusterIdentity,
} from '../registry/kinds/clusteridentity.js';
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
  /** The Cluster's record, written when the stored status has none yet. */
  identity?: ClusterIdentity;
  /** The uids it is refused, added to the stored ones. */
  refused: string[];
  /** For the log only: the Cluster that holds the uid this one answered (see the top). */
  holder?: string;
}

interface Known {
  uid: string;
  creationTimestamp: string;
  generation: number;
  /** Its record: as stored, or as a check decided it until the store has it (so that no other Cluster takes it). */
  identity?: ClusterIdentity;
  /** The uids it is refused (see the top): as stored, and as checks decided them until the store has them. */
  refused: Set<string>;
  /** The kube-system uid its cluster answered at its last good check. */
  answered?: string;
  /** Whether a check of it ended since this controller learned of it. */
  checked: boolean;
  /** The older Clusters without a record, not checked yet, that it waits for before it records (see the top). */
  waitingFor?: Set<string>;
}

/** Who is the Cluster of a physical cluster, as a check of one Cluster finds it (see the top). */
type Holding =
  | { holds: true }
  /** Its cluster answers another uid than its record. */
  | { changed: true }
  /** It has no record, and was refused that uid before. */
  | { refused: true }
  /** `by` recorded the uid first, or is older and has no record either. */
  | { takenBy: string }
  /** Older Clusters without a record that have not been checked yet. */
  | { waitFor: Set<string> };

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

  /**
   * A new Cluster, or one whose spec changed (a generation), is checked at once; a status write is not a change.
   * The same Cluster is updated in place: a check under way keeps what it learns.
   */
  private upsert(obj: KubeObject): void {
    const name = obj.metadata.name!;
    const before = this.known.get(name);
    const generation = obj.metadata.generation ?? 0;
    const stored = recordedIdentity(obj);
    if (before && before.uid === obj.metadata.uid) {
      before.creationTimestamp = obj.metadata.creationTimestamp ?? '';
      // A record the store has is the record; one this controller is writing stays until the store has it.
      if (stored) before.identity = stored;
      for (const uid of refusedUids(obj)) before.refused.add(uid);
      if (before.generation !== generation) this.queue.add(name);
      before.generation = generation;
      return;
    }
    if (before) this.remove(name);
    this.known.set(name, {
      uid: obj.metadata.uid!,
      creationTimestamp: obj.metadata.creationTimestamp ?? '',
      generation,
      identity: stored,
      refused: new Set(refusedUids(obj)),
      checked: false,
    });
    this.queue.add(name);
  }

  private remove(name: string): void {
    const gone = this.known.get(name);
    this.known.delete(name);
    if (!gone) return;
    this.connector.forget(gone.uid);
    for (const uid of new Set([gone.identity?.uid, gone.answered])) if (uid) this.recheckSharing(uid, name);
    this.stopWaitingFor(name);
  }

  /** The other Clusters that reached or recorded `kubeSystemUid`: who holds it may have changed. */
  private recheckSharing(kubeSystemUid: string, except: string): void {
    for (const [name, k] of this.known)
      if (name !== except && (k.answered === kubeSystemUid || k.identity?.uid === kubeSystemUid)) this.queue.add(name);
  }

  /** `name` was checked, or is gone: the Clusters that waited for it alone are checked again. */
  private stopWaitingFor(name: string): void {
    for (const [other, k] of this.known) {
      if (!k.waitingFor?.delete(name)) continue;
      if (k.waitingFor.size) continue;
      delete k.waitingFor;
      this.queue.add(other);
    }
  }

  private async check(name: string): Promise<void> {
    try {
      let cluster: KubeObject;
      try {
        cluster = await this.store.get(undefined, name);
      } catch (err) {
        if (isStatusError(err, 'NotFound')) return;
        throw err;
      }
      if (cluster.metadata.deletionTimestamp) return;
      const observed = await this.observe(name, cluster);
      if (observed) await this.write(cluster, observed);
    } finally {
      const known = this.known.get(name);
      if (known && !known.checked) {
        known.checked = true;
        this.stopWaitingFor(name);
      }
    }
  }

  /** What a check finds; undefined when nothing is to be written (see Holding's waitFor, or the Cluster is gone). */
  private async observe(name: string, cluster: KubeObject): Promise<Observed | undefined> {
    const mine = () => {
      const k = this.known.get(name);
      return k?.uid === cluster.metadata.uid ? k : undefined;
    };
    const before = mine();
    if (!before) return undefined; // a Cluster the watch has not brought yet: its upsert queues it
    const previous = [before.answered, before.identity?.uid];
    let observed: Observed | undefined;
    try {
      const conn = await this.connector.connect(cluster);
      const known = mine();
      if (!known) return undefined;
      known.answered = conn.kubeSystemUid;
      observed = this.judge(name, known, conn.kubeSystemUid, conn.version);
    } catch (err) {
      const known = mine();
      if (!known) return undefined;
      delete known.answered;
      observed = { ...failure(err, name, this.log), identity: known.identity, refused: [...known.refused] };
    }
    const known = mine();
    const now = [known?.answered, known?.identity?.uid];
    for (let i = 0; i < now.length; i++) {
      if (now[i] === previous[i]) continue;
      if (previous[i]) this.recheckSharing(previous[i]!, name);
      if (now[i]) this.recheckSharing(now[i]!, name);
    }
    return observed;
  }

  /** The status of `name`, whose cluster answered `uid` (see the top); undefined while it waits for older Clusters. */
  private judge(name: string, known: Known, uid: string, version: string): Observed | undefined {
    const holding = this.holding(name, known, uid);
    if ('waitFor' in holding) {
      known.waitingFor = holding.waitFor;
      return undefined;
    }
    delete known.waitingFor;
    if ('takenBy' in holding) {
      const holder = this.known.get(holding.takenBy);
      // Refused for good (see the top), before any await so that a check running meanwhile sees it.
      if (holder?.identity && !known.identity) known.refused.add(uid);
      // An older Cluster without a record that answered the same: it records it at its next check, now.
      if (holder && !holder.identity) this.queue.add(holding.takenBy);
    }
    const answered = { online: true, version, identity: known.identity, refused: [...known.refused] };
    if ('changed' in holding) return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_CHANGED, ...answered };
    if ('refused' in holding) return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_TAKEN, ...answered };
    if ('takenBy' in holding)
      return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_TAKEN, holder: holding.takenBy, ...answered };
    // Recorded before any await, so that a check of another Cluster running meanwhile sees it.
    known.identity ??= { uid, recordedTime: recordTime() };
    return { phase: 'Initialized', reason: '', message: '', ...answered, identity: known.identity };
  }

  private holding(name: string, me: Known, uid: string): Holding {
    if (me.identity && me.identity.uid !== uid) return { changed: true };
    if (!me.identity && me.refused.has(uid)) return { refused: true };
    for (const [other, k] of this.known) {
      if (other === name || k.identity?.uid !== uid) continue;
      if (!me.identity || recordedFirst([other, k], [name, me])) return { takenBy: other };
    }
    if (me.identity) return { holds: true };
    // Nobody has recorded it: the oldest of the Clusters without a record that reach it, and were not refused it,
    // records it.
    const waitFor = new Set<string>();
    for (const [other, k] of this.known) {
      if (other === name || k.identity || k.refused.has(uid) || !older([other, k], [name, me])) continue;
      if (k.answered === uid) return { takenBy: other };
      if (!k.checked) waitFor.add(other);
    }
    return waitFor.size ? { waitFor } : { holds: true };
  }

  private async write(cluster: KubeObject, observed: Observed): Promise<void> {
    const name = cluster.metadata.name!;
    const uid = cluster.metadata.uid;
    try {
      await this.store.update(
        undefined,
        name,
        {
          patch: (current) => {
            if (current.metadata.uid !== uid) throw new NotTheSameCluster();
            const stored = recordedIdentity(current);
            if (stored && stored.uid !== observed.identity?.uid) throw new StaleRecord(stored);
            current.status = nextStatus(current, observed);
            return current;
          },
        },
        'status',
        { fieldManager: FIELD_MANAGER },
      );
    } catch (err) {
      if (err instanceof NotTheSameCluster || isStatusError(err, 'NotFound')) return;
      if (!(err instanceof StaleRecord)) throw err;
      // Decided without the record the store has (another replica wrote it): decided again, with it.
      const known = this.known.get(name);
      if (known && known.uid === uid) known.identity = err.stored;
      this.queue.add(name);
      return;
    }
    const before = cluster.status ?? {};
    if ((before.phase ?? '') !== observed.phase || (before.reason ?? '') !== observed.reason)
      this.log('cluster health: phase', {
        name,
        phase: observed.phase,
        reason: observed.reason,
        online: observed.online,
        ...(observed.reason === 'ClusterUID'
          ? { recorded: observed.identity?.uid, answered: this.known.get(name)?.answered, holder: observed.holder }
          : {}),
      });
  }
}

/** A failed check as the status says it (its detail, for operators, to the log). */
function failure(
  err: unknown,
  name: string,
  log: (msg: string, fields?: Record<string, unknown>) => void,
): Omit<Observed, 'refused'> {
  if (!(err instanceof ClusterConnectionError)) {
    log('cluster health: the check failed unexpectedly', { name, error: String(err) });
    return {
      phase: 'Failed',
      reason: 'HealthCheckFailed',
      message: "the check failed unexpectedly; the server's log has the details",
      online: false,
    };
  }
  if (err.detail) log('cluster health: not connected', { name, reason: err.reason, error: err.detail });
  return { phase: err.phase, reason: err.reason, message: err.message, online: err.online };
}

/** The status after `observed`; the same object's content when nothing changed (then the store writes nothing). */
function nextStatus(cluster: KubeObject, observed: Observed): Record<string, unknown> {
  const stored = cluster.status ?? {};
  const recorded = observed.identity && !recordedIdentity(cluster) ? withIdentity(stored, observed.identity) : stored;
  const status = withRefused({ ...recorded }, observed.refused);
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

/** Whether `a` is older than `b`: created earlier, or at the same second and first by name. */
const older = ([aName, a]: [string, Known], [bName, b]: [string, Known]) =>
  a.creationTimestamp < b.creationTimestamp || (a.creationTimestamp === b.creationTimestamp && aName < bName);

/** Whether `a` recorded its uid before `b` did (then, as ever, the older first). */
const recordedFirst = (a: [string, Known], b: [string, Known]) => {
  const [x, y] = [a[1].identity!.recordedTime, b[1].identity!.recordedTime];
  return x < y || (x === y && older(a, b));
};

class NotTheSameCluster extends Error {}

/** The store has a record the check did not know of. */
class StaleRecord extends Error {
  constructor(readonly stored: ClusterIdentity) {
    super('the stored status has another record');
  }
}
