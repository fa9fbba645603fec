/** The controllers step: the list of controllers, run on the replica that holds the leader lease. */
import type { Authorizer } from '../apimachinery/authorizer.js';
import type { Auth } from '../auth/setup.js';
import type { Config } from '../config.js';
import { AccessSync } from '../controllers/accesssync.js';
import { ClusterHealth } from '../controllers/clusterhealth.js';
import { ClusterUidHolders } from '../controllers/clusteruidholders.js';
import { DeliveryRecords } from '../controllers/deliveryrecords.js';
import { GarbageCollector } from '../controllers/garbagecollector.js';
import { startControllers, type Controller } from '../controllers/manager.js';
import { ProjectSecretDelivery } from '../controllers/projectsecretdelivery.js';
import { TargetReach } from '../controllers/delivery/reach.js';
import { ProjectSecretSync } from '../controllers/projectsecretsync.js';
import { VirtualClusterHealth } from '../controllers/virtualclusterhealth.js';
import type { HostCluster } from '../host/cluster.js';
import { HostRbac } from '../host/rbac.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Registry } from '../registry/registry.js';
import type { EtcdStorage } from '../storage/etcd.js';
import type { Cleanups } from './cleanups.js';
import type { ConnectedClusters } from './clusters.js';

/** The controllers, on the replica that holds the leader lease; and, at shutdown, the access keys' last activity. */
export function runControllers(
  config: Config,
  log: Logger,
  metrics: Metrics,
  storage: EtcdStorage,
  registry: Registry,
  host: HostCluster | undefined,
  clusters: ConnectedClusters,
  auth: Auth,
  cleanups: Cleanups,
): void {
  const controllers = startControllers({
    leaseLock: (key) => storage.leaseLock(key),
    etcdPrefix: config.etcdPrefix,
    leaseDurationMs: config.leaderElectLeaseDurationMs,
    controllers: serverControllers(config, registry, storage, host, clusters, auth.authorizer, log, metrics),
    log,
  });
  cleanups.add('stopping the controllers and releasing the leader lease', () => controllers.stop());
  metrics.leaderElection('controllers', () => controllers.isLeader());
  // Cleanups run in reverse: access key activity is still written first at shutdown, then the controllers stop.
  cleanups.add('writing access key activity', () => auth.stop());
}

/**
 * What runs on the elected replica: the garbage collector, the ProjectSecret sync, the Clusters' health checks
 * (unless --cluster-health-interval is 0), and what needs a host cluster when there is one.
 */
function serverControllers(
  config: Config,
  registry: Registry,
  storage: EtcdStorage,
  host: HostCluster | undefined,
  clusters: ConnectedClusters,
  authorizer: Authorizer,
  log: Logger,
  metrics: Metrics,
): Controller[] {
  const info = (msg: string, fields?: Record<string, unknown>) => log.info(msg, fields);
  const workQueueMetrics = metrics.workQueues;
  const controllers: Controller[] = [
    {
      name: 'garbage-collector',
      run: (signal) => new GarbageCollector(registry, { log: info, workQueueMetrics }).run(signal),
    },
    {
      // Without a host cluster too: then an owner's access is its owner and access lists alone.
      name: 'projectsecret-sync',
      run: (signal) =>
        new ProjectSecretSync(registry, authorizer, {
          log: info,
          resyncIntervalMs: config.accessResyncPeriodMs,
          workQueueMetrics,
        }).run(signal),
    },
  ];
  if (config.clusterHealthIntervalMs > 0) {
    // Without a host cluster too: then the status of a local Cluster, or one with a config Secret, says so.
    controllers.push({
      name: 'cluster-health',
      run: (signal) =>
        new ClusterHealth(registry, clusters.connector, new ClusterUidHolders(storage, config.etcdPrefix), {
          intervalMs: config.clusterHealthIntervalMs,
          log: info,
          workQueueMetrics,
        }).run(signal),
    });
  }
  if (host) controllers.push(...hostControllers(config, registry, storage, host, clusters, authorizer, log, metrics));
  return controllers;
}

/**
 * What runs on the elected replica with a host cluster: the access sync, the virtual clusters' health checks unless
 * --virtual-cluster-health-interval is 0 (without a host no Cluster is connected, so no virtual cluster is reached),
 * and the ProjectSecret delivery unless off.
 */
function hostControllers(
  config: Config,
  registry: Registry,
  storage: EtcdStorage,
  host: HostCluster,
  clusters: ConnectedClusters,
  authorizer: Authorizer,
  log: Logger,
  metrics: Metrics,
): Controller[] {
  const info = (msg: string, fields?: Record<string, unknown>) => log.info(msg, fields);
  const workQueueMetrics = metrics.workQueues;
  const controllers: Controller[] = [];
  const rbac = new HostRbac(host);
  controllers.push({
    name: 'access-sync',
    run: (signal) =>
      new AccessSync(registry, rbac, {
        log: info,
        resyncIntervalMs: config.accessResyncPeriodMs,
        workQueueMetrics,
      }).run(signal),
  });
  if (config.virtualClusterHealthIntervalMs > 0)
    controllers.push({
      name: 'virtualcluster-health',
      run: (signal) =>
        new VirtualClusterHealth(registry, clusters.connections, authorizer, {
          intervalMs: config.virtualClusterHealthIntervalMs,
          allowedServers: config.virtualClusterAllowedServers,
          log: info,
          workQueueMetrics,
        }).run(signal),
    });
  // One set of records for every run of the delivery: what storage did not take yet is still known to the next.
  const records = new DeliveryRecords(storage, config.etcdPrefix);
  const targetRecords = new DeliveryRecords(storage, config.etcdPrefix, 'projectsecrettargets');
  if (config.projectSecretDelivery)
    controllers.push({
      name: 'projectsecret-delivery',
      run: (signal) =>
        new ProjectSecretDelivery(registry, host, records, {
          log: info,
          resyncIntervalMs: config.accessResyncPeriodMs,
          workQueueMetrics,
          // Virtual clusters and connected clusters, reached as kube configs reach them.
          targets: {
            records: targetRecords,
            reach: new TargetReach(registry, clusters.connections, authorizer, {
              allowedServers: config.virtualClusterAllowedServers,
            }),
          },
        }).run(signal),
    });
  return controllers;
}
