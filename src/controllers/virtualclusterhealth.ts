/**
 * Checks every VirtualClusterInstance when it is created or its spec changes (a generation), when the status of its
 * Cluster changes, and every `intervalMs`, through the connection the kube config flow uses
 * (actions/virtualclusterkubeconfig.ts): the Cluster it names (Initialized, and still the physical cluster the
 * instance was created on), the `vc-<name>` Secret there, then the virtual cluster's GET /version, bounded in time
 * and bytes, to the servers the allow-list lets through (clusters/virtualcluster.ts). It writes what it found
 * (kinds/virtualclusterinstance/health.ts):
 *
 * - `phase`: `Ready` when the virtual cluster answered; `Pending` while its Cluster is not Initialized (as upstream,
 *   where an instance waits for its cluster: the cluster's own status says why, and the instance follows it) or while
 *   there is nobody its check rests on (an instance stored before importers were recorded); `Failed` otherwise;
 * - `reason` and `message` (cleared when Ready), `online` (the virtual cluster answered, if not as it should),
 *   `kubernetesVersion` (at the last check that reached it);
 * - the condition `VirtualClusterOnline`, whose lastTransitionTime moves only when its status does (conditions.ts);
 * - `lastCheckTime`: with every change, and otherwise once the stored one is RESTAMP_INTERVALS old
 *   (kinds/overdue.ts), so an unchanged instance costs a write every other interval.
 *
 * The Secret is read with the server's credential because a tenant named it, so the check rests on whoever imported
 * the instance (status.importedBy, kept by the server) passing, again at every check and as the kube config flow asks
 * it, what the import checked: asked of this server's authorizers as them, that they may get the Cluster and that the
 * project still allows it (placement.ts's importerLostCluster), then asked of the Cluster, that they may get the
 * Secret. Once one fails, the instance is Failed/ImporterLostAccess and nothing is read of the virtual cluster; when
 * the Cluster cannot answer, Failed/ImporterAccessUnknown, unread until the next check. system:masters importers are
 * not asked about, as in that flow; an instance without an importer has nobody to rest on (the flow asks its caller
 * instead), so it is Pending/ImporterNotRecorded, unread.
 *
 * A status is read by whoever may read the instance, so its messages name nothing of the host but what the
 * instance names itself (its Cluster, namespace and virtual cluster); what went wrong in detail goes to the log.
 * Nothing is written when nothing changed. A check never throws out of the controller: every failure is a status.
 */
import type { Authorizer } from '../apimachinery/authorizer.js';
import { DeadlineExceeded, withDeadline } from '../apimachinery/deadline.js';
import { goTimeMillis, parseRFC3339 } from '../apimachinery/golang/time.js';
import { kubernetesVersionOf } from '../apimachinery/kubeversion.js';
import { isStatusError } from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { isMaster } from '../apimachinery/user.js';
import { jsonEqual } from '../apimachinery/equality.js';
import { ClusterNotReadyError, untilReady, type ClusterConnections } from '../clusters/connections.js';
import { CHECK_TIMEOUT_MS, type ClusterConnection } from '../clusters/connector.js';
import {
  VirtualClusterConnectionError,
  connectVirtualCluster,
  type VirtualCluster,
} from '../clusters/virtualcluster.js';
import { HostClusterError } from '../host/cluster.js';
import { AnswerTooLargeError } from '../host/kuberequest.js';
import { ServerAllowList } from '../host/serverallowlist.js';
import { Cluster } from '../kinds/cluster/types.js';
import { Project } from '../kinds/project/types.js';
import { recordedIdentity } from '../kinds/cluster/identity.js';
import { NO_IMPORTER, ONLINE_CONDITION, READY, type InstancePhase } from '../kinds/virtualclusterinstance/health.js';
import {
  connectionSecretWhere,
  holdsVirtualCluster,
  importerLostCluster,
  instanceImporter,
  instanceRef,
  type VirtualClusterRef,
} from '../kinds/virtualclusterinstance/placement.js';
import { VirtualClusterInstance } from '../kinds/virtualclusterinstance/types.js';
import { RESTAMP_INTERVALS } from '../kinds/overdue.js';
import { asUserInfo } from '../registry/recordeduser.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import type { AuthorizeOther } from '../registry/strategy.js';
import { setCondition, writeStatus } from './conditions.js';
import { runQueueController } from './runner.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';

const FIELD_MANAGER = 'virtualcluster-health';

/**
 * The most one check may take, whatever it waits on: the Cluster's review, the Secret read and /version are each
 * bounded by CHECK_TIMEOUT_MS, and a tenant who runs the connected cluster and the virtual cluster could stall all
 * three. Past it the check's worker moves on (the requests end at their own bounds). Twice one request's bound, so
 * that a virtual cluster that alone does not answer is said so (VirtualClusterUnreachable).
 */
const CHECK_DEADLINE_MS = 2 * CHECK_TIMEOUT_MS;
/** Instances checked at once, and at most how many of them one importer's (see the queue in the constructor). */
const WORKERS = 16;
const WORKERS_PER_IMPORTER = 4;

export interface VirtualClusterHealthOptions {
  /** How often every instance is checked (ms): --cluster-health-interval, as for Clusters. */
  intervalMs: number;
  /** --virtual-cluster-allowed-servers. */
  allowedServers?: readonly string[];
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Instances checked at once. */
  workers?: number;
  workQueueMetrics?: WorkQueueMetrics;
}

/** What a check found, as the status says it. */
interface Observed {
  phase: Exclude<InstancePhase, ''>;
  reason: string;
  message: string;
  online: boolean;
  version?: string;
}

interface Known {
  uid: string;
  generation: number;
  /** The Cluster it names (spec.clusterRef.cluster, fixed at create). */
  cluster: string;
  /** Whose checks it counts among: its importer's, or its namespace's when none is recorded. */
  flow: string;
}

export class VirtualClusterHealth {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly instances: Store<VirtualClusterInstance>;
  private readonly clusters: Store<Cluster>;
  private readonly projects: Store<Project>;
  private readonly servers: ServerAllowList;
  private readonly queue: WorkQueue;
  /** By `<namespace>/<name>`. */
  private readonly known = new Map<string, Known>();
  /**
   * The connection each instance's last check made, by `<namespace>/<name>`, used again while its Secret stays at
   * its resourceVersion (connectVirtualCluster): kept-alive connections and TLS sessions, no parse per check.
   */
  private readonly reached = new Map<string, { uid: string; vc: VirtualCluster }>();
  /** What of each Cluster's status an instance's check depends on, by Cluster name: a change checks its instances. */
  private readonly clusterStates = new Map<string, string>();

  constructor(
    registry: Registry,
    private readonly connections: ClusterConnections,
    /** This server's authorizers, asked as the importer what the import asked (see the top). */
    private readonly authorizer: Authorizer,
    private readonly opts: VirtualClusterHealthOptions,
  ) {
    this.log = opts.log ?? (() => {});
    this.instances = registry.store(VirtualClusterInstance);
    this.clusters = registry.store(Cluster);
    this.projects = registry.store(Project);
    this.servers = new ServerAllowList(opts.allowedServers ?? [], '--virtual-cluster-allowed-servers');
    // The checks are waits on tenants' servers: many at once, and no importer's instances (virtual clusters that
    // never answer, say) take more than a few workers from everyone else's.
    this.queue = new WorkQueue({
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      name: 'virtualcluster-health',
      metrics: opts.workQueueMetrics,
      flowOf: (key) => this.known.get(key)?.flow ?? key,
      maxPerFlow: WORKERS_PER_IMPORTER,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const log = (msg: string, fields?: Record<string, unknown>) => this.log(`virtual cluster health: ${msg}`, fields);
    const instances = watchStore(this.instances, signal, {
      upsert: (obj) => this.upsert(obj),
      remove: (obj) => this.forget(keyOf(obj)),
      resynced: (seen) => {
        for (const [key, k] of this.known) if (!seen.has(k.uid)) this.forget(key);
      },
      log,
    });
    const clusters = watchStore(this.clusters, signal, {
      upsert: (obj) => this.clusterSeen(obj.metadata.name!, clusterState(obj)),
      remove: (obj) => this.clusterSeen(obj.metadata.name!, undefined),
      resynced: () => {},
      log,
    });
    await runQueueController(
      {
        what: 'virtual cluster health',
        log: this.log,
        watches: [instances, clusters],
        // The first interval is one too (as for Clusters).
        synced: async () => this.queue.spreadOver(this.known.keys(), this.opts.intervalMs),
        queue: this.queue,
        workers: this.opts.workers ?? WORKERS,
        resyncMs: this.opts.intervalMs,
        // Each instance at its own point of the interval (as Clusters are).
        resync: () => this.queue.spreadOver(this.known.keys(), this.opts.intervalMs),
        started: () => ({ instances: this.known.size, intervalMs: this.opts.intervalMs }),
        handle: (key) => this.check(key),
        // Only writing the status can fail here (a check's failures are its result): etcd, most likely.
        failed: (key, err, delayMs) =>
          this.log('virtual cluster health: could not write the status, will retry', {
            instance: key,
            error: String(err),
            delayMs,
          }),
      },
      signal,
    );
  }

  /** A new instance, or one whose spec changed, is checked at once; a status write is not a change. */
  private upsert(obj: VirtualClusterInstance): void {
    const key = keyOf(obj);
    if (obj.metadata.deletionTimestamp) {
      this.forget(key);
      return;
    }
    const before = this.known.get(key);
    const generation = obj.metadata.generation ?? 0;
    const importer = instanceImporter(obj)?.username;
    this.known.set(key, {
      uid: obj.metadata.uid!,
      generation,
      cluster: instanceRef(obj).cluster,
      flow: importer !== undefined ? `user:${importer}` : `namespace:${obj.metadata.namespace}`,
    });
    if (!before || before.uid !== obj.metadata.uid || before.generation !== generation) this.queue.add(key);
    if (!before) this.queue.joinSpread(key);
  }

  private forget(key: string): void {
    this.known.delete(key);
    this.reached.delete(key);
  }

  /** The Cluster `name`'s state as its instances' checks see it (undefined: gone); a change checks them again. */
  private clusterSeen(name: string, state: string | undefined): void {
    if (this.clusterStates.get(name) === state) return;
    if (state === undefined) this.clusterStates.delete(name);
    else this.clusterStates.set(name, state);
    for (const [key, k] of this.known) if (k.cluster === name) this.queue.add(key);
  }

  private async check(key: string): Promise<void> {
    const slash = key.indexOf('/');
    let instance: VirtualClusterInstance;
    try {
      // From the watch cache (as Clusters are read by their check).
      instance = await this.instances.get(key.slice(0, slash), key.slice(slash + 1), '0');
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return;
      throw err;
    }
    if (instance.metadata.deletionTimestamp) return;
    let observed: Observed;
    try {
      observed = await withDeadline(this.observe(instance), CHECK_DEADLINE_MS, 'the check took too long');
    } catch (err) {
      if (err instanceof DeadlineExceeded) {
        observed = failed(
          'CheckTimedOut',
          `the check did not complete within ${CHECK_DEADLINE_MS / 1000}s (the instance's Cluster or its virtual cluster did not answer in time); it is checked again at the next interval`,
        );
      } else {
        this.log('virtual cluster health: the check failed unexpectedly', { instance: key, error: String(err) });
        observed = failed('HealthCheckFailed', "the check failed unexpectedly; the server's log has the details");
      }
    }
    const now = Date.now();
    await writeStatus(
      this.instances,
      instance,
      (obj) => applyObserved(obj, observed, now, this.opts.intervalMs),
      FIELD_MANAGER,
    );
    const before = instance.status ?? {};
    if ((before.phase ?? '') !== observed.phase || (before.reason ?? '') !== observed.reason)
      this.log('virtual cluster health: phase', {
        instance: key,
        phase: observed.phase,
        reason: observed.reason,
        online: observed.online,
      });
  }

  /** What a check of `instance` finds (see the top); the steps in the kube config flow's order. */
  private async observe(instance: VirtualClusterInstance): Promise<Observed> {
    const ref = instanceRef(instance);
    const cluster = JSON.stringify(ref.cluster);
    if (!ref.namespace)
      return failed(
        'NoHostNamespace',
        'spec.clusterRef.namespace is empty: the instance does not say where its virtual cluster runs, so it cannot be reached',
      );
    let connection: ClusterConnection;
    try {
      // The Cluster's own check of this interval will do: its health check asks it every interval.
      connection = await this.connections.connection(ref.cluster, this.opts.intervalMs);
    } catch (err) {
      if (!(err instanceof ClusterNotReadyError)) throw err;
      // The Cluster's message may name Secrets of the management host: its own status has it, for its readers.
      return {
        phase: 'Pending',
        reason: 'ClusterNotReady',
        message: `Cluster ${cluster}, where the virtual cluster runs, is not ready (${err.reason}); the instance is checked again ${untilReady(err.reason)}`,
        online: false,
      };
    }
    if (ref.clusterUid && ref.clusterUid !== connection.kubeSystemUid)
      return failed(
        'ClusterUID',
        `Cluster ${cluster} now connects to another physical cluster than the one the instance was created on (its kube-system uid differs, status.clusterUID), so its virtual cluster is not there; an administrator may connect the Cluster to that cluster again`,
      );
    const refused = await this.importerRefused(instance, connection, ref);
    if (refused) return refused;
    return this.reach(instance, connection, ref);
  }

  /** Why the check may not rest on the instance's importer (see the top); undefined when it may. */
  private async importerRefused(
    instance: VirtualClusterInstance,
    connection: ClusterConnection,
    ref: VirtualClusterRef,
  ): Promise<Observed | undefined> {
    const importer = instanceImporter(instance);
    if (!importer)
      return {
        phase: 'Pending',
        reason: NO_IMPORTER,
        message:
          'the instance was stored before importers were recorded (status.importedBy), so there is nobody its health check rests on and the virtual cluster is not checked; its kube configs are still issued to those who have the virtual cluster, and importing it again records its importer',
        online: false,
      };
    const user = asUserInfo(importer);
    if (isMaster(user)) return undefined;
    // Asked of this server first: nothing is asked of the cluster for an importer who lost the Cluster here.
    const authorize: AuthorizeOther = (attrs) => this.authorizer.authorize({ ...attrs, user });
    const lost = await importerLostCluster(this.projects, instance, { user, authorize });
    if (lost)
      return failed(
        'ImporterLostAccess',
        `the import's checks no longer pass: ${lost}; the instance's checks and kube configs rest on them, so the virtual cluster is not read until they pass again`,
      );
    let holds: boolean;
    try {
      holds = await holdsVirtualCluster(connection, ref, user, 'a health check of the virtual cluster');
    } catch (err) {
      if (!isStatusError(err)) throw err;
      // The cluster's answer may name its service accounts or addresses: the log has it, the status does not.
      this.log("virtual cluster health: the importer's hold could not be asked", {
        instance: keyOf(instance),
        reason: err.message,
      });
      return failed(
        'ImporterAccessUnknown',
        `Cluster ${JSON.stringify(ref.cluster)} could not tell whether the instance's importer may still get the virtual cluster's connection Secret ${connectionSecretWhere(ref)}, so it was not read; it is asked again at the next check, and the server's log has the details`,
      );
    }
    if (holds) return undefined;
    return failed(
      'ImporterLostAccess',
      `the instance's importer (status.importedBy, User ${JSON.stringify(importer.username)}) may no longer get the virtual cluster's connection Secret ${connectionSecretWhere(ref)}, on whose hold its checks and kube configs rest; someone who has the virtual cluster may import it again`,
    );
  }

  /** The virtual cluster's connection Secret, then its /version; each failure its own reason, the detail logged. */
  private async reach(
    instance: VirtualClusterInstance,
    connection: ClusterConnection,
    ref: VirtualClusterRef,
  ): Promise<Observed> {
    const key = keyOf(instance);
    const secret = connectionSecretWhere(ref);
    const uid = instance.metadata.uid!;
    let api;
    try {
      const kept = this.reached.get(key);
      const vc = await connectVirtualCluster(
        connection.api,
        ref.namespace!,
        ref.virtualCluster,
        this.servers,
        `Cluster ${JSON.stringify(ref.cluster)}`,
        kept?.uid === uid ? kept.vc : undefined,
      );
      if (this.known.get(key)?.uid === uid) this.reached.set(key, { uid, vc });
      api = vc.api;
    } catch (err) {
      this.reached.delete(key);
      if (!(err instanceof VirtualClusterConnectionError || err instanceof HostClusterError)) throw err;
      this.log('virtual cluster health: no connection', { instance: key, reason: err.message });
      if (err instanceof HostClusterError)
        return failed(
          'ConnectionUnreadable',
          `the virtual cluster's connection Secret ${secret} could not be read; the server's log has the details`,
        );
      if (err.problem === 'missing')
        return failed(
          'ConnectionNotFound',
          `the virtual cluster's connection Secret ${secret} does not exist; is the virtual cluster running?`,
        );
      return failed(
        'InvalidConnection',
        `the virtual cluster's connection Secret ${secret} does not hold a kubeconfig the server can use (one server with its CA, client certificates or a token; no exec plugins, files or auth providers); the server's log has the details`,
      );
    }
    let answer: unknown;
    try {
      answer = await api.request<unknown>('reading /version of the virtual cluster', 'GET', '/version', {
        timeoutMs: Math.min(CHECK_TIMEOUT_MS, this.opts.intervalMs),
      });
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      this.log('virtual cluster health: not reached', { instance: key, reason: err.message });
      // It answered, though not as it should (an answer too large is cut: no answer).
      if (err.code !== undefined && !(err instanceof AnswerTooLargeError))
        return {
          ...failed(
            'VirtualClusterUnavailable',
            `the virtual cluster's API answered GET /version with HTTP ${err.code}; the server's log has the details`,
          ),
          online: true,
        };
      return failed(
        'VirtualClusterUnreachable',
        "the virtual cluster's API did not answer GET /version within the bounds of a check (time, size, the allowed servers); is it running? the server's log has the details",
      );
    }
    const version = kubernetesVersionOf(answer);
    return { phase: READY, reason: '', message: '', online: true, version };
  }
}

const keyOf = (obj: VirtualClusterInstance) => `${obj.metadata.namespace}/${obj.metadata.name}`;

const failed = (reason: string, message: string): Observed => ({ phase: 'Failed', reason, message, online: false });

/** What of a Cluster's status its instances' checks depend on (connections.ts reads the same). */
function clusterState(cluster: Cluster): string {
  const status = cluster.status ?? {};
  return JSON.stringify([
    cluster.metadata.uid,
    status.phase ?? '',
    status.reason ?? '',
    recordedIdentity(cluster)?.uid,
  ]);
}

/**
 * `obj`'s status after `observed`, checked at `now`: lastCheckTime moves with any change, else once the stored one
 * is RESTAMP_INTERVALS of `intervalMs` old (see the top).
 */
function applyObserved(obj: VirtualClusterInstance, observed: Observed, now: number, intervalMs: number): void {
  const stored = obj.status ?? {};
  const status = { ...stored, phase: observed.phase, online: observed.online };
  if (observed.reason) status.reason = observed.reason;
  else delete status.reason;
  if (observed.message) status.message = observed.message;
  else delete status.message;
  if (observed.version) status.kubernetesVersion = observed.version;
  obj.status = status;
  setCondition(
    obj,
    ONLINE_CONDITION,
    observed.phase === READY
      ? {
          status: 'True',
          reason: 'Online',
          message: `the virtual cluster's API answers${observed.version ? ` (Kubernetes ${observed.version})` : ''}`,
        }
      : {
          status: observed.phase === 'Failed' ? 'False' : 'Unknown',
          reason: observed.reason,
          message: observed.message,
        },
    obj,
  );
  const parsed = stored.lastCheckTime ? parseRFC3339(stored.lastCheckTime) : undefined;
  const age = parsed ? now - goTimeMillis(parsed) : NaN;
  // A stamp from the future (a clock stepped back, another replica's clock ahead) is written again, not kept.
  const fresh = age >= 0 && age < intervalMs * RESTAMP_INTERVALS;
  const { lastCheckTime: _before, ...rest } = stored;
  const { lastCheckTime: _after, ...next } = obj.status;
  if (!(fresh && jsonEqual(rest, next))) obj.status = { ...obj.status, lastCheckTime: nowRFC3339(new Date(now)) };
}
