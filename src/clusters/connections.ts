/**
 * The one place that hands out a Cluster's connection for work on it (imports, kube configs): only a Cluster whose
 * status.phase is Initialized (the health controller, src/controllers/clusterhealth.ts, says so) is connected, on
 * any replica, through the same connector and checks; anything else is a ClusterNotReadyError carrying the
 * Cluster's reason and message, which callers answer as 503 (toStatus). A connection is kept for `cacheMs`, so a
 * burst of requests does not read the Secret and probe the cluster each time.
 */
import { GROUP_NAME } from '../apimachinery/group.js';
import * as errors from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { StoredObjects } from '../registry/strategy.js';
import { ClusterConnectionError, type ClusterConnection, type ClusterConnector } from './connector.js';

/** The Cluster cannot be worked on now: not there, not (yet) Initialized, or its connection failed just now. */
export class ClusterNotReadyError extends Error {
  constructor(
    readonly cluster: string,
    /** The Cluster's status.reason (one CamelCase word), or NotFound / NotInitialized. */
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
  /** How long a connection is used before the cluster is checked again (ms). */
  cacheMs?: number;
  now?: () => number;
}

export class ClusterConnections {
  private readonly cache = new Map<string, { clusterUid: string; at: number; connection: ClusterConnection }>();
  private readonly cacheMs: number;
  private readonly now: () => number;

  constructor(
    private readonly clusters: StoredObjects,
    private readonly connector: ClusterConnector,
    opts: ClusterConnectionsOptions = {},
  ) {
    this.cacheMs = opts.cacheMs ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  /** The connection of the Cluster `name` if it is Initialized (its API and kube-system uid); else ClusterNotReadyError. */
  async connection(name: string): Promise<ClusterConnection> {
    let cluster: KubeObject;
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
    const status = cluster.status ?? {};
    if (status.phase !== 'Initialized')
      throw new ClusterNotReadyError(
        name,
        status.reason || 'NotInitialized',
        status.message || 'the cluster has not been connected yet; wait until its status.phase is Initialized',
      );
    const uid = cluster.metadata.uid ?? '';
    const cached = this.cache.get(name);
    if (cached && cached.clusterUid === uid && this.now() - cached.at < this.cacheMs) return cached.connection;
    try {
      const connection = await this.connector.connect(cluster);
      this.cache.set(name, { clusterUid: uid, at: this.now(), connection });
      return connection;
    } catch (err) {
      this.cache.delete(name);
      if (err instanceof ClusterConnectionError) throw new ClusterNotReadyError(name, err.reason, err.message);
      throw err;
    }
  }
}
