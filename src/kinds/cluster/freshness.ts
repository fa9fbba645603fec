/**
 * Whether a Cluster's status is current: every completed health check stamps status.lastCheckTime
 * (src/controllers/clusterhealth.ts), and a Cluster whose stamp is older than OVERDUE_INTERVALS check intervals reads
 * with its Ready condition Unknown, reason CheckOverdue, whatever else its status says (the Cluster's read view,
 * registry/readview.ts). It is derived where it is read, never stored: the replica that checks may be the one that
 * stopped, so no writer is needed for a reader to know. Imports and kube configs go through such a Cluster no more
 * than through one that is not Initialized (clusters/connections.ts).
 *
 * As kube's node lifecycle controller, which turns a Node's Ready to Unknown when its kubelet's heartbeats stop for
 * the grace period; the heartbeat is the status's own field rather than a Lease beside each Cluster (kube moved to
 * Leases because a Node's status is large and written every 10 s by thousands of kubelets; a Cluster's is a few
 * hundred bytes written once per interval, 30 s by default, by one replica; and a Lease per Cluster would be a second
 * object, and a second read, behind every read of a Cluster and every row of its Tables). A Cluster never stamped
 * (never checked since this field exists, or checks are off: --cluster-health-interval=0) reads as stored.
 */
import { goTimeMillis, parseRFC3339 } from '../../apimachinery/golang/time.js';
import { isPlainObject } from '../../apimachinery/types.js';
import { isRFC3339, nowRFC3339 } from '../../apimachinery/time.js';
import type { ReadView, ViewSettings } from '../../registry/readview.js';
import type { ServerStatusField } from '../../registry/serverstatus.js';
import type { Cluster } from './types.js';

export const READY = 'Ready';
/** The reason of the Ready condition of a Cluster whose last completed check is too old. */
export const CHECK_OVERDUE = 'CheckOverdue';
/** How many check intervals may pass without a completed check before a Cluster reads as CheckOverdue. */
export const OVERDUE_INTERVALS = 3;

/** Written by the server's status writes only: no client's moves it (registry/serverstatus.ts). */
export const lastCheckTimeField: ServerStatusField = {
  name: 'lastCheckTime',
  wellTyped: isRFC3339,
  serverWrites: 'always',
};

type Condition = Record<string, unknown>;

/** The Ready condition of a Cluster as read, when it says the checks are overdue; else undefined. */
export function overdueCondition(cluster: Cluster): Condition | undefined {
  const ready = conditionsOf(cluster.status).find((c) => c.type === READY);
  return ready?.reason === CHECK_OVERDUE ? ready : undefined;
}

/** The Cluster's read view with checks every `clusterHealthIntervalMs`; none when they are off. */
export function clusterReadView({ clusterHealthIntervalMs: intervalMs }: ViewSettings): ReadView | undefined {
  if (intervalMs <= 0) return undefined;
  const graceMs = OVERDUE_INTERVALS * intervalMs;
  const lastCheckOf = (cluster: Cluster) => {
    const stamp: unknown = isPlainObject(cluster.status) ? cluster.status.lastCheckTime : undefined;
    const parsed = typeof stamp === 'string' ? parseRFC3339(stamp) : undefined;
    return parsed && { stamp: stamp as string, at: goTimeMillis(parsed) };
  };
  return {
    derivedFrom: (cluster) => {
      const last = lastCheckOf(cluster);
      return last && last.at + graceMs;
    },
    derive: (cluster) => {
      const last = lastCheckOf(cluster)!;
      const status = cluster.status as Record<string, unknown>;
      const stored = conditionsOf(status).find((c) => c.type === READY);
      const overdue: Condition = {
        type: READY,
        status: 'Unknown',
        reason: CHECK_OVERDUE,
        message: `the server has not completed a check of this cluster since ${last.stamp} (more than ${OVERDUE_INTERVALS} check intervals of ${intervalMs / 1000}s): the replica that checks may be stopped or cut off from etcd or from the cluster, so what this status says may no longer hold`,
        ...(stored?.observedGeneration !== undefined ? { observedGeneration: stored.observedGeneration } : {}),
        // When it became overdue: the same at every read, so a list, a get and a watch event agree.
        lastTransitionTime: nowRFC3339(new Date(last.at + graceMs)),
      };
      const others = Array.isArray(status.conditions)
        ? (status.conditions as unknown[]).filter((c) => !(isPlainObject(c) && c.type === READY))
        : [];
      return { ...cluster, status: { ...status, conditions: [...others, overdue] } };
    },
    underive: (written, stored) => {
      if (!isPlainObject(written.status) || !Array.isArray(written.status.conditions)) return;
      const conditions: unknown[] = written.status.conditions;
      const at = conditions.findIndex((c) => isPlainObject(c) && c.type === READY && c.reason === CHECK_OVERDUE);
      if (at < 0) return;
      // Only reads derive it, and the health controller never writes it: whoever writes it back wrote what they read.
      const kept = conditionsOf(stored.status).find((c) => c.type === READY);
      if (kept) conditions[at] = structuredClone(kept);
      else conditions.splice(at, 1);
    },
  };
}

function conditionsOf(status: unknown): Condition[] {
  const conditions: unknown = isPlainObject(status) ? status.conditions : undefined;
  return Array.isArray(conditions) ? conditions.filter((c): c is Condition => isPlainObject(c)) : [];
}
