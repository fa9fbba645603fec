/**
 * Whether a VirtualClusterInstance's health is current: every completed check stamps status.lastCheckTime
 * (controllers/virtualclusterhealth.ts), and an instance whose stamp is older than OVERDUE_INTERVALS check intervals
 * (--virtual-cluster-health-interval) reads, as a Cluster does (kinds/overdue.ts), with its condition
 * VirtualClusterOnline Unknown, reason CheckOverdue; kube configs are then 503 (actions/virtualclusterkubeconfig.ts).
 *
 * Unlike a Cluster, its phase reads as Unknown too, with reason CheckOverdue and the condition's message (which says
 * what the last check found): `Ready` is what clients wait for (`kubectl wait --for=jsonpath='{.status.phase}'=Ready`)
 * and what `kubectl get vci` shows in PHASE, and an instance nobody checks any more is not known to be ready (as a
 * Pod's phase Unknown: its state could not be obtained). online, kubernetesVersion and lastCheckTime read as stored:
 * they say what the last check found, and when.
 */
import { isPlainObject } from '../../apimachinery/types.js';
import type { KindSettings } from '../../registry/kindsettings.js';
import type { ReadView } from '../../registry/readview.js';
import { CHECK_OVERDUE, overdueCondition, overdueReadView } from '../overdue.js';
import { ONLINE_CONDITION } from './health.js';
import type { VirtualClusterInstance } from './types.js';

/** The phase an instance whose checks are overdue reads as; never stored. */
export const UNKNOWN = 'Unknown';

/** What an overdue status says instead of the last check's. */
const DERIVED_FIELDS = ['phase', 'reason', 'message'] as const;

/** The condition VirtualClusterOnline of an instance as read, when it says the checks are overdue; else undefined. */
export function instanceOverdue(instance: VirtualClusterInstance): Record<string, unknown> | undefined {
  return overdueCondition(instance, ONLINE_CONDITION);
}

/** The instance's read view with checks every `virtualClusterHealthIntervalMs`; none when they are off. */
export function virtualClusterReadView({
  virtualClusterHealthIntervalMs: intervalMs,
}: KindSettings): ReadView | undefined {
  return overdueReadView<VirtualClusterInstance>({
    condition: ONLINE_CONDITION,
    intervalMs,
    message: (since, instance) =>
      `the server has not completed a check of this virtual cluster ${since}: the replica that checks may be stopped or cut off from etcd, from the Cluster or from the virtual cluster, so what this status says may no longer hold; the last check found it ${lastFound(instance.status)}`,
    deriveStatus: (status, overdue) => ({ ...status, phase: UNKNOWN, reason: CHECK_OVERDUE, message: overdue.message }),
    underiveStatus: (written, stored) => {
      if (written.phase !== UNKNOWN || written.reason !== CHECK_OVERDUE) return;
      for (const field of DERIVED_FIELDS) {
        if (stored[field] !== undefined) written[field] = stored[field];
        else delete written[field];
      }
    },
  });
}

/** The last check's finding as the overdue message names it: `Ready`, `Failed (ConnectionNotFound)`. */
function lastFound(status: unknown): string {
  const { phase, reason } = isPlainObject(status) ? status : {};
  const found = typeof phase === 'string' && phase ? phase : 'without a phase';
  return typeof reason === 'string' && reason ? `${found} (${reason})` : found;
}
