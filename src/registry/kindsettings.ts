/**
 * The server's settings the kinds' rules depend on, given to the registry at start (RegistryDependencies.settings):
 * what a kind's read view derives (readview.ts) and the limits its writes are held to (Strategy.withSettings).
 */
export interface KindSettings {
  /** --cluster-health-interval (ms); 0 when Clusters are not checked. */
  clusterHealthIntervalMs: number;
  /** --virtual-cluster-health-interval (ms); 0 when VirtualClusterInstances are not checked. */
  virtualClusterHealthIntervalMs: number;
  /** --access-key-max-ttl (seconds): the longest ttl a key gets outside system:masters; 0 for no limit. */
  accessKeyMaxTtlSeconds: number;
  /** The clock objects are read at (ms since the epoch). */
  now: () => number;
}

/** A registry made without settings (unit tests): no view shows anything, no limit applies. */
export const noKindSettings: KindSettings = {
  clusterHealthIntervalMs: 0,
  virtualClusterHealthIntervalMs: 0,
  accessKeyMaxTtlSeconds: 0,
  now: Date.now,
};
