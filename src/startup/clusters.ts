/** The clusters step: connections to Clusters, and the actions that use them. */
import { importVirtualClusterAction } from '../actions/importvirtualcluster.js';
import type { ServedActions } from '../actions/served.js';
import { kubeConfigAction } from '../actions/virtualclusterkubeconfig.js';
import { ClusterConnections, ClusterNotReadyError } from '../clusters/connections.js';
import { ClusterConnector } from '../clusters/connector.js';
import type { Authorizer } from '../apimachinery/authorizer.js';
import type { Config } from '../config.js';
import type { HostCluster } from '../host/cluster.js';
import { Cluster } from '../kinds/cluster/types.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import type { ConnectCluster } from '../registry/strategy.js';
import type { Cleanups } from './cleanups.js';

/** How the stores, the actions and the controllers reach a Cluster. */
export interface ConnectedClusters {
  connector: ClusterConnector;
  /** Initialized Clusters' connections, for work on them (imports, kube configs, virtual clusters' health). */
  connections: ClusterConnections;
  connect: ConnectCluster;
}

/** How the stores and the actions reach a Cluster: through its config Secret, or the host itself. */
export function connectClusters(
  config: Config,
  log: Logger,
  registry: Registry,
  host: HostCluster | undefined,
  actions: ServedActions,
  /** The server's authorizers: the actions ask them as an importer what the import asked. */
  authorizer: Authorizer,
  cleanups: Cleanups,
): ConnectedClusters {
  // Without a host cluster too: then a local Cluster, or one with a config Secret, is never Initialized.
  const connector = new ClusterConnector({
    host,
    secretNamespace: config.clusterSecretNamespace,
    watchSecrets: config.watchClusterSecrets,
    log: (msg, fields) => log.warn(msg, fields),
  });
  if (config.watchClusterSecrets && host)
    cleanups.add('stopping the watch of the cluster config Secrets', async () => connector.stop());
  const connections = new ClusterConnections(registry.store(Cluster), connector);
  actions.add(importVirtualClusterAction(registry, connections, log));
  actions.add(
    kubeConfigAction(
      registry,
      connections,
      authorizer,
      log,
      config.virtualClusterAllowedServers,
      config.kubeConfigMaxCertificateTtlSeconds,
    ),
  );
  const connect: ConnectCluster = async (name) => {
    try {
      return await connections.connection(name);
    } catch (err) {
      throw err instanceof ClusterNotReadyError ? err.toStatus() : err;
    }
  };
  return { connector, connections, connect };
}
