/**
 * The one place that hands out a Cluster's connection for work on it (imports, kube configs): only a Cluster whose
 * status.phase is Initialized (the health controller, src/controllers/clusterhealth.ts, says so), and whose checks
 * are not overdue (its status is current: kinds/cluster/freshness.ts, as the Cluster is read), is connected, on
 * any replica, through the same connector and checks; anything else is a ClusterNotReadyError carrying the
 * Cluster's reason and message, which callers answer as 503 (toStatus). A check of the cluster up to `cacheMs` old
 * (the health check's, or one made here) is used again (ClusterConnector.connect's maxAgeMs), so a burst of requests
 * does not read the Secret and probe the cluster each time.
 *
 * A connection is to the physical cluster the Cluster recorded (status.clusterUID, kinds/cluster/identity.ts):
 * a cluster that answers another kube-system uid is refused (ClusterUID) at once, not only at the next health check,
 * and the uid handed out, which names the virtual clusters there, is the record, never the answer. A Cluster without
 * a record (stored before records existed, not checked since) is not connected until its next check records one.
 */
import { GROUP_NAME } from '../apimachinery/group.js';
import * as errors from '../apimachinery/status.js';
import { CHECK_OVERDUE, overdueCondition } from '../kinds/cluster/freshness.js';
import { recordedIdentity } from '../kinds/cluster/identity.js';
import type { Cluster } from '../kinds/cluster/types.js';
import type { StoredObjects } from '../registry/strategy.js';
import { ClusterConnectionError, type ClusterConnection, type ClusterConnector } from './connector.js';

/** Why a Cluster whose cluster answers another kube-system uid than its record is refused (status.message). */
export const CLUSTER_CHANGED =
  'the cluster now answers as another cluster: the uid of its kube-system Namespace is not the one recorded when this Cluster was first connected (status.clusterUID), and a Cluster stays the cluster it was first connected to; point its config back at that cluster, or connect the other one with a new Cluster';
/**
 * Why a Cluster whose cluster another Cluster holds, or held while this one existed, is refused (status.message):
 * the same words whether that one is still there or not. The other is not named: whoever may read this Cluster may
 * not know of that one (the server's log names it).
 */
export const CLUSTER_TAKEN =
  "another Cluster connected to this cluster first (the uid of its kube-system Namespace was that Cluster's): a cluster is connected once, and only a Cluster created after that one is deleted connects to it again, never this one. To keep the other, delete this Cluster; to keep this one, delete the other, then delete this Cluster and create it again (the server's log names the other)";

/** When work on a Cluster not ready for `reason` can go on, for messages ("try again ..."). */
export const untilReady = (reason: string): string =>
  reason === CHECK_OVERDUE
    ? 'once its health checks run again (status.lastCheckTime is recent)'
    : 'once its status.phase is Initialized';

/** The Cluster cannot be worked on now: not there, not (yet) Initialized, or its connection failed just now. */
export class ClusterNotReadyError extends Error {
  constructor(
    readonly cluster: string,
    /** The Cluster's status.reason (one CamelCase word), or NotFound / NotInitialized / CheckOverdue. */
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'ClusterNotReadyError';
  }

  /** The answer to a client: 503, naming the Cluster, the reason and what to do (the message is the status's). */
  toStatus(): errors.StatusError {
    return errors.serviceUnavailable(
      `Cluster ${JSON.stringify(this.cluster)} is not ready (${this.reason}): ${this.message}`,
    );
  }
}

export interface ClusterConnectionsOptions {
  /** How old a check of the cluster may be to be used again (ms), unless a caller says. */
  cacheMs?: number;
}

export class ClusterConnections {
  private readonly cacheMs: number;

  constructor(
    private readonly clusters: StoredObjects<Cluster>,
    private readonly connector: ClusterConnector,
    opts: ClusterConnectionsOptions = {},
  ) {
    this.cacheMs = opts.cacheMs ?? 10_000;
  }

  /**
   * The connection of the Cluster `name` if it is Initialized (its API and recorded kube-system uid); else
   * ClusterNotReadyError. A check of the cluster less than `maxAgeMs` old is used again.
   */
  async connection(name: string, maxAgeMs = this.cacheMs): Promise<ClusterConnection> {
    let cluster: Cluster;
    try {
      cluster = await this.clusters.get(undefined, name);
    } catch (err) {
      if (errors.isStatusError(err, 'NotFound'))
        throw new ClusterNotReadyError(
          name,
          'NotFound',
          `there is no Cluster ${JSON.stringify(name)} in ${GROUP_NAME}`,
        );
      throw err;
    }
    // Before the phase: an overdue status may say anything, and that no check has confirmed it lately is the news.
    const overdue = overdueCondition(cluster);
    if (overdue) throw new ClusterNotReadyError(name, String(overdue.reason), String(overdue.message));
    const status = cluster.status ?? {};
    if (status.phase !== 'Initialized')
      throw new ClusterNotReadyError(
        name,
        status.reason || 'NotInitialized',
        status.message || 'the cluster has not been connected yet; wait until its status.phase is Initialized',
      );
    const recorded = recordedIdentity(cluster)?.uid;
    if (!recorded)
      throw new ClusterNotReadyError(
        name,
        'NotInitialized',
        'which cluster this Cluster is has not been recorded yet (status.clusterUID); its next check records it',
      );
    // What is kept is kept by Cluster uid: a new Cluster of the same name is another Cluster.
    let connection: ClusterConnection;
    try {
      connection = await this.connector.connect(cluster, maxAgeMs);
    } catch (err) {
      if (err instanceof ClusterConnectionError) throw new ClusterNotReadyError(name, err.reason, err.message);
      throw err;
    }
    if (connection.kubeSystemUid !== recorded) throw new ClusterNotReadyError(name, 'ClusterUID', CLUSTER_CHANGED);
    return connection;
  }
}
