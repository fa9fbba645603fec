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
 * - `clusterUID`: which physical cluster it is (kinds/cluster/identity.ts).
 *
 * One physical cluster is one kube-system uid, and one Cluster: the one that recorded it first. A Cluster records
 * the uid its cluster answers at its first good check, unless another Cluster holds it: then it is Failed, reason
 * ClusterUID. Who holds a uid is kept in the server's own storage (clusteruidholders.ts): written before the status
 * records it, and kept when the holder goes (once its deletion is asked for: it is not checked after that), after
 * which only a Cluster created after that deletion records the uid.
 * A cluster connected twice by mistake and one that copies another's uid answer alike, and the copy must not take
 * the cluster of whoever deletes their Cluster to create it again: not when it was refused before, nor when it never
 * got that far (its cluster answered 401 until then), nor when its refusal could not be written (nothing about it is
 * written); so only a new Cluster, an administrator's act, connects that cluster again. A cluster's answer is the
 * cluster's to say, and a connected cluster may be a tenant's, so no answer moves a record: a Cluster whose cluster
 * answers another uid than its record is Failed/ClusterUID until it answers its own again (its imports and kube
 * configs stop with it: clusters/connections.ts), and the Cluster holding the uid it now answers is not concerned.
 * Two records of one uid (made before holders were stored) go to the earlier record. Among Clusters without a
 * record (new ones, and those stored before the record existed) that reach one cluster and may hold it, the older
 * (by creation, then name) records it, as the older won before records: so a newer one waits for the first check
 * (in this process) of each older one without a record before it records. When a Cluster goes, the others that
 * reached or recorded its cluster are checked again. Records stored before holders were (the last release kept
 * none) are adopted when the controller starts, each uid by its earliest record.
 *
 * The other Cluster of a ClusterUID refusal is named in the log only: the status is read by whoever may read this
 * Cluster, who may not be allowed to know of that one. A check never throws out of the controller: every failure is
 * a status.
 *
 * Every completed check, whatever it found, stamps `lastCheckTime`, so that a reader can tell a current status from
 * one nobody checks any more (kinds/cluster/freshness.ts: older than 3 intervals, it reads as Ready Unknown,
 * CheckOverdue). When nothing else changed, the stamp is written only once the stored one is RESTAMP_INTERVALS
 * old (kinds/overdue.ts): every other interval's check writes it, and the checks in between (a spec change,
 * another Cluster gone, the interval's check that finds the stamp recent) write nothing.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { isStatusError } from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { ClusterConnectionError, type ClusterConnector, type ClusterPhase } from '../clusters/connector.js';
import { CLUSTER_CHANGED, CLUSTER_TAKEN } from '../clusters/connections.js';
import { goTimeMillis, parseRFC3339 } from '../apimachinery/golang/time.js';
import { READY } from '../kinds/cluster/freshness.js';
import { RESTAMP_INTERVALS } from '../kinds/overdue.js';
import { recordTime, recordedIdentity, withIdentity, type ClusterIdentity } from '../kinds/cluster/identity.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { HolderChanged, type ClusterUidHolders } from './clusteruidholders.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { runQueueController } from './runner.js';
import { sleep } from '../apimachinery/sleep.js';
import { Cluster } from '../kinds/cluster/types.js';

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
  /** For the log only: the Cluster that holds the uid this one answered (see the top). */
  holder?: string;
}

interface Known {
  uid: string;
  creationTimestamp: string;
  generation: number;
  /** Its record: as stored, or as a check decided it until the store has it (so that no other Cluster takes it). */
  identity?: ClusterIdentity;
  /** The revision that created it, read at its first check without a record: whether it may hold a uid held before. */
  created?: string;
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
  /** It has no record, and a Cluster that is gone held the uid since before it was created. */
  | { heldBefore: true }
  /** `by` recorded or holds the uid first, or is older and has no record either. */
  | { takenBy: string }
  /** Older Clusters without a record that have not been checked yet. */
  | { waitFor: Set<string> };

export class ClusterHealth {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly store: Store<Cluster>;
  private readonly queue: WorkQueue;
  private readonly workers: number;
  /** By Cluster name. */
  private readonly known = new Map<string, Known>();
  /**
   * The names of the Clusters known here whose record is each kube-system uid (their `identity`, kept by setIdentity):
   * a check looks at the Clusters of the uid its cluster answered, not at every Cluster.
   */
  private readonly recordedAs = new Map<string, Set<string>>();

  constructor(
    registry: Registry,
    private readonly connector: ClusterConnector,
    private readonly holders: ClusterUidHolders,
    private readonly opts: ClusterHealthOptions,
  ) {
    this.log = opts.log ?? (() => {});
    this.store = registry.store(Cluster);
    this.workers = opts.workers ?? 4;
    this.queue = new WorkQueue({
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      name: 'cluster-health',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    await this.holders.load();
    const watch = watchStore(this.store, signal, {
      upsert: (obj) => this.upsert(obj),
      // A deleted object comes with the deletion's revision.
      remove: (obj) => {
        this.remove(obj.metadata.name!, obj.metadata.resourceVersion!);
        this.saveHolders();
      },
      resynced: (seen, revision) => {
        for (const [name, k] of this.known) if (!seen.has(k.uid)) this.remove(name, revision);
        this.holders.goneUnless(seen, revision);
        this.saveHolders();
      },
      log: (msg, fields) => this.log(`cluster health: ${msg}`, fields),
    });
    await runQueueController(
      {
        what: 'cluster health',
        log: this.log,
        watches: [watch],
        // Before any check decides without them (etcd not answering: checks could not write either).
        synced: async () => {
          while (!signal.aborted && !(await this.adoptRecords())) await sleep(this.opts.intervalMs, signal);
          // The first interval is one too: each Cluster, checked now, again at its point of it (not up to two
          // intervals from now), and those that come meanwhile at theirs (joinSpread).
          this.queue.spreadOver(this.known.keys(), this.opts.intervalMs);
        },
        queue: this.queue,
        workers: this.workers,
        resyncMs: this.opts.intervalMs,
        // Each Cluster at its own point of the interval: no burst at each tick, each checked an interval apart.
        resync: () => {
          this.queue.spreadOver(this.known.keys(), this.opts.intervalMs);
          this.saveHolders();
        },
        started: () => ({ clusters: this.known.size, intervalMs: this.opts.intervalMs }),
        handle: (name) => this.check(name),
        // Only writing the status can fail here (a check's failures are its result): etcd, most likely.
        failed: (name, err, delayMs) =>
          this.log('cluster health: could not write the status, will retry', { name, error: String(err), delayMs }),
      },
      signal,
    );
  }

  /**
   * A new Cluster, or one whose spec changed (a generation), is checked at once; a status write is not a change.
   * The same Cluster is updated in place: a check under way keeps what it learns. One being deleted is gone.
   */
  private upsert(obj: Cluster): void {
    const name = obj.metadata.name!;
    const before = this.known.get(name);
    if (obj.metadata.deletionTimestamp) {
      // Being deleted, it is gone here: no check writes its status any more, and what it held is free for Clusters
      // created from now on, so one replacing it need not wait for its finalizers (see the top).
      if (before) this.remove(name, obj.metadata.resourceVersion!);
      this.holders.gone({ name, uid: obj.metadata.uid! }, obj.metadata.resourceVersion!, recordedIdentity(obj)?.uid);
      this.saveHolders();
      return;
    }
    const generation = obj.metadata.generation ?? 0;
    const stored = recordedIdentity(obj);
    if (before && before.uid === obj.metadata.uid) {
      before.creationTimestamp = obj.metadata.creationTimestamp ?? '';
      // A record the store has is the record; one this controller is writing stays until the store has it.
      if (stored) this.setIdentity(name, before, stored);
      if (before.generation !== generation) this.queue.add(name);
      before.generation = generation;
      return;
    }
    // The same name, another uid: the old one was deleted at or before this one's creation.
    if (before) this.remove(name, obj.metadata.resourceVersion!);
    const known: Known = {
      uid: obj.metadata.uid!,
      creationTimestamp: obj.metadata.creationTimestamp ?? '',
      generation,
      checked: false,
    };
    this.known.set(name, known);
    this.setIdentity(name, known, stored);
    this.queue.add(name);
    this.queue.joinSpread(name);
  }

  /** Sets `k.identity`, and the index of who recorded which uid while `k` is the Cluster `name` known here. */
  private setIdentity(name: string, k: Known, identity: ClusterIdentity | undefined): void {
    const current = this.known.get(name) === k;
    const before = k.identity?.uid;
    if (identity) k.identity = identity;
    else delete k.identity;
    if (!current || before === identity?.uid) return;
    if (before) this.unrecord(name, before);
    if (identity) {
      let names = this.recordedAs.get(identity.uid);
      if (!names) this.recordedAs.set(identity.uid, (names = new Set()));
      names.add(name);
    }
  }

  private unrecord(name: string, kubeSystemUid: string): void {
    const names = this.recordedAs.get(kubeSystemUid);
    names?.delete(name);
    if (names && !names.size) this.recordedAs.delete(kubeSystemUid);
  }

  /** `name` is gone, at `revision` or before. */
  private remove(name: string, revision: string): void {
    const gone = this.known.get(name);
    if (gone?.identity) this.unrecord(name, gone.identity.uid);
    this.known.delete(name);
    if (!gone) return;
    this.holders.gone({ name, uid: gone.uid }, revision, gone.identity?.uid);
    this.connector.forget(gone.uid);
    for (const uid of new Set([gone.identity?.uid, gone.answered])) if (uid) this.recheckSharing(uid, name);
    this.stopWaitingFor(name);
  }

  /** The other Clusters that reached or recorded `kubeSystemUid`: who holds it may have changed. */
  private recheckSharing(kubeSystemUid: string, except: string): void {
    for (const [name, k] of this.known)
      if (name !== except && (k.answered === kubeSystemUid || k.identity?.uid === kubeSystemUid)) this.queue.add(name);
  }

  /**
   * Records stored before holders were (see the top) are held by their Clusters, the earliest record of a uid
   * first; false when storage did not take them all.
   */
  private async adoptRecords(): Promise<boolean> {
    const recorded = [...this.known].filter(([, k]) => k.identity).sort((a, b) => (recordedFirst(a, b) ? -1 : 1));
    try {
      for (const [name, k] of recorded)
        if (!this.holders.get(k.identity!.uid) && this.known.get(name) === k) await this.hold(k.identity!.uid, name, k);
      return true;
    } catch (err) {
      if (err instanceof HolderChanged) return false;
      this.log('cluster health: could not store which Clusters hold the kube-system uids they recorded, will retry', {
        error: String(err),
      });
      return false;
    }
  }

  /**
   * Stores that the Cluster `name` holds `kubeSystemUid` (HolderChanged if another replica changed who holds it);
   * false when the Cluster was deleted meanwhile: its deletion found nothing to let go of, so it lets go now.
   */
  private async hold(kubeSystemUid: string, name: string, k: Known): Promise<boolean> {
    await this.holders.hold(kubeSystemUid, { name, uid: k.uid });
    if (this.known.get(name)?.uid === k.uid) return true;
    await this.holders.goneNow({ name, uid: k.uid });
    this.saveHolders();
    return false;
  }

  /** Stores what the holders' memory has of Clusters gone; failures are tried again at the next interval. */
  private saveHolders(): void {
    this.holders.save().catch((err) =>
      this.log('cluster health: could not store that a Cluster holding a kube-system uid is gone, will retry', {
        error: String(err),
      }),
    );
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
      let cluster: Cluster;
      try {
        // From the watch cache, as an informer's lister: the status write's compare-and-swap starts from etcd's.
        cluster = await this.store.get(undefined, name, '0');
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
  private async observe(name: string, cluster: Cluster): Promise<Observed | undefined> {
    const mine = () => {
      const k = this.known.get(name);
      return k?.uid === cluster.metadata.uid ? k : undefined;
    };
    const before = mine();
    if (!before) return undefined; // a Cluster the watch has not brought yet: its upsert queues it
    if (!before.identity && before.created === undefined) before.created = await this.createdRevision(cluster);
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
      observed = { ...failure(err, name, this.log), identity: known.identity };
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
      // An older Cluster, or the holder, without a record that answered the same: it records it at its next check, now.
      if (holder && !holder.identity) this.queue.add(holding.takenBy);
    }
    const answered = { online: true, version, identity: known.identity };
    if ('changed' in holding) return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_CHANGED, ...answered };
    if ('heldBefore' in holding) return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_TAKEN, ...answered };
    if ('takenBy' in holding)
      return { phase: 'Failed', reason: 'ClusterUID', message: CLUSTER_TAKEN, holder: holding.takenBy, ...answered };
    // Recorded before any await, so that a check of another Cluster running meanwhile sees it.
    if (!known.identity) this.setIdentity(name, known, { uid, recordedTime: recordTime() });
    return { phase: 'Initialized', reason: '', message: '', ...answered, identity: known.identity };
  }

  private holding(name: string, me: Known, uid: string): Holding {
    if (me.identity && me.identity.uid !== uid) return { changed: true };
    for (const other of this.recordedAs.get(uid) ?? []) {
      const k = this.known.get(other)!;
      if (other === name) continue;
      if (!me.identity || recordedFirst([other, k], [name, me])) return { takenBy: other };
    }
    if (me.identity) return { holds: true };
    if (!this.mayHold(me, uid)) {
      const holder = this.holders.get(uid)!;
      return holder.goneAt === undefined ? { takenBy: holder.name } : { heldBefore: true };
    }
    // Nobody has recorded it: the oldest of the Clusters without a record that reach it, and may hold it, records
    // it. (One that answered was checked, and its creation read.)
    const waitFor = new Set<string>();
    for (const [other, k] of this.known) {
      if (other === name || k.identity || !older([other, k], [name, me])) continue;
      if (k.answered === uid && this.mayHold(k, uid)) return { takenBy: other };
      if (!k.checked) waitFor.add(other);
    }
    return waitFor.size ? { waitFor } : { holds: true };
  }

  private mayHold(k: Known, kubeSystemUid: string): boolean {
    return this.holders.mayHold(kubeSystemUid, k.uid, k.created);
  }

  /** The revision that created `cluster`; undefined when its name is another Cluster's by now. */
  private async createdRevision(cluster: Cluster): Promise<string | undefined> {
    const created = await this.holders.created(this.store.key(undefined, cluster.metadata.name!));
    // A Cluster's key was created before any of its writes; one created later is another Cluster's.
    return created !== undefined && Number(created) <= Number(cluster.metadata.resourceVersion) ? created : undefined;
  }

  private async write(cluster: Cluster, observed: Observed): Promise<void> {
    const name = cluster.metadata.name!;
    const uid = cluster.metadata.uid!;
    if (observed.identity && !recordedIdentity(cluster)) {
      // Held in the server's storage before the status says so, as that outlives the Cluster (see the top).
      const known = this.known.get(name);
      if (known?.uid !== uid) return;
      try {
        if (!(await this.hold(observed.identity.uid, name, known))) return;
      } catch (err) {
        if (!(err instanceof HolderChanged)) throw err;
        // Decided on what another replica changed: decided again, with what it wrote.
        if (known.identity === observed.identity) this.setIdentity(name, known, undefined);
        this.queue.add(name);
        return;
      }
    }
    // Nothing to write (most checks: the stamp is recent): the store's update steps are not run for nothing.
    if (jsonEqual(nextStatus(cluster, observed, this.opts.intervalMs), cluster.status ?? {})) return;
    try {
      await this.store.update(
        undefined,
        name,
        {
          patch: (current) => {
            if (current.metadata.uid !== uid) throw new NotTheSameCluster();
            const stored = recordedIdentity(current);
            if (stored && stored.uid !== observed.identity?.uid) throw new StaleRecord(stored);
            current.status = nextStatus(current, observed, this.opts.intervalMs);
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
      if (known && known.uid === uid) this.setIdentity(name, known, err.stored);
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
function failure(err: unknown, name: string, log: (msg: string, fields?: Record<string, unknown>) => void): Observed {
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

/**
 * The status after `observed`, checked `now`; the same object's content when nothing changed and the stored check
 * time is recent (then the store writes nothing: see the top).
 */
function nextStatus(
  cluster: Cluster,
  observed: Observed,
  intervalMs: number,
  now = new Date(),
): Record<string, unknown> {
  const stored = cluster.status ?? {};
  const status: Record<string, unknown> =
    observed.identity && !recordedIdentity(cluster) ? withIdentity(stored, observed.identity) : { ...stored };
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
  const lastCheck = typeof stored.lastCheckTime === 'string' ? parseRFC3339(stored.lastCheckTime) : undefined;
  const age = lastCheck ? now.getTime() - goTimeMillis(lastCheck) : NaN;
  // A stamp from the future (a clock stepped back, another replica's clock ahead) is written again, not kept.
  const recent = age >= 0 && age < intervalMs * RESTAMP_INTERVALS;
  if (!recent || !jsonEqual(status, stored)) status.lastCheckTime = recordTime(now);
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
