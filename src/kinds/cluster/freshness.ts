/**
 * Whether a Cluster's status is current: every completed health check stamps status.lastCheckTime
 * (src/controllers/clusterhealth.ts), and a Cluster whose stamp is older than OVERDUE_INTERVALS check intervals reads
 * with its Ready condition Unknown, reason CheckOverdue, whatever else its status says (the Cluster's read view,
 * registry/readview.ts, made as a VirtualClusterInstance's is: kinds/overdue.ts). It is derived where it is read,
 * never stored: the replica that checks may be the one that stopped, so no writer is needed for a reader to know.
 * Imports and kube configs go through such a Cluster no more than through one that is not Initialized
 * (clusters/connections.ts).
 *
 * As kube's node lifecycle controller, which turns a Node's Ready to Unknown when its kubelet's heartbeats stop for
 * the grace period; the heartbeat is the status's own field rather than a Lease beside each Cluster (kube moved to
 * Leases because a Node's status is large and written every 10 s by thousands of kubelets; a Cluster's is a few
 * hundred bytes written once per interval, 30 s by default, by one replica; and a Lease per Cluster would be a second
 * object, and a second read, behind every read of a Cluster and every row of its Tables). A Cluster never stamped
 * (never checked since this field exists, or checks are off: --cluster-health-interval=0) reads as stored.
 */
import { isDateTime } from '../../apimachinery/schema.js';
import type { KindSettings } from '../../registry/kindsettings.js';
import type { ReadView } from '../../registry/readview.js';
import type { ServerStatusField } from '../../registry/serverstatus.js';
import { overdueCondition as overdue, overdueReadView } from '../overdue.js';
import type { Cluster } from './types.js';

export { CHECK_OVERDUE, OVERDUE_INTERVALS } from '../overdue.js';

export const READY = 'Ready';

/** Written by the server's status writes only: no client's moves it (registry/serverstatus.ts). */
export const lastCheckTimeField: ServerStatusField = {
  name: 'lastCheckTime',
  wellTyped: isDateTime,
  serverWrites: 'always',
};

/** The Ready condition of a Cluster as read, when it says the checks are overdue; else undefined. */
export function overdueCondition(cluster: Cluster): Record<string, unknown> | undefined {
  return overdue(cluster, READY);
}

/** The Cluster's read view with checks every `clusterHealthIntervalMs`; none when they are off (kinds/overdue.ts). */
export function clusterReadView({ clusterHealthIntervalMs: intervalMs }: KindSettings): ReadView | undefined {
  return overdueReadView<Cluster>({
    condition: READY,
    intervalMs,
    message: (since) =>
      `the server has not completed a check of this cluster ${since}: the replica that checks may be stopped or cut off from etcd or from the cluster, so what this status says may no longer hold`,
  });
}
