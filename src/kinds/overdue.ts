/**
 * The read view of a kind whose health checks stamp status.lastCheckTime at every completed check (a Cluster, a
 * VirtualClusterInstance): once the stamp is older than OVERDUE_INTERVALS check intervals, the condition that says
 * what the checks found reads as Unknown, reason CheckOverdue, saying since when no check completed (the kind may
 * have other status fields read so too: deriveStatus). It is derived where it is read, never stored: the replica
 * that checks may be the one that stopped, so no writer is needed for a reader to know. An object never stamped
 * (never checked since the field exists, or checks are off) reads as stored.
 *
 * As kube's node lifecycle controller, which turns a Node's Ready to Unknown when its kubelet's heartbeats stop for
 * the grace period (kinds/cluster/freshness.ts says why the heartbeat is the status's own field).
 */
import { goTimeMillis, parseRFC3339 } from '../apimachinery/golang/time.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { ReadView } from '../registry/readview.js';

/** The reason of the condition of an object whose last completed check is too old. */
export const CHECK_OVERDUE = 'CheckOverdue';
/** How many check intervals may pass without a completed check before an object reads as CheckOverdue. */
export const OVERDUE_INTERVALS = 3;
/**
 * How old (in intervals) a stored lastCheckTime may get before a check that changes nothing else writes it again:
 * a check an interval apart finds it 1 interval old (left), then 2 (written), so an unchanged object costs a write
 * every other interval, and its stamp is at most about 2 intervals old, one short of OVERDUE_INTERVALS (a kubelet
 * renews its Lease 4 times within the node's grace period; a status write costs far more than a Lease's, so less
 * often here, with one interval of slack for a late check).
 */
export const RESTAMP_INTERVALS = 1.5;

type Condition = Record<string, unknown>;
type Status = Record<string, unknown>;

export interface OverdueChecks<O extends KubeObject> {
  /** The condition the checks keep, which reads as Unknown/CheckOverdue (a Cluster's Ready). */
  condition: string;
  /** How often the checks run (ms); 0 or less when they are off, and then there is no view. */
  intervalMs: number;
  /** The overdue condition's message; `since` says when the last check completed and how often one should. */
  message(since: string, obj: O): string;
  /** What else an overdue object's status reads as (a copy: the stored one is left as it is), its condition set. */
  deriveStatus?(status: Status, overdue: Condition): Status;
  /** Puts back in `written` (a status to store, the caller's own) what deriveStatus put in, as `stored` has it. */
  underiveStatus?(written: Status, stored: Status): void;
}

/** The view that reads an object whose checks are overdue as such (see the top); none when checks are off. */
export function overdueReadView<O extends KubeObject>(checks: OverdueChecks<O>): ReadView<O> | undefined {
  const { condition: type, intervalMs } = checks;
  if (intervalMs <= 0) return undefined;
  const graceMs = OVERDUE_INTERVALS * intervalMs;
  const lastCheckOf = (obj: O) => {
    const stamp: unknown = isPlainObject(obj.status) ? obj.status.lastCheckTime : undefined;
    const parsed = typeof stamp === 'string' ? parseRFC3339(stamp) : undefined;
    return parsed && { stamp: stamp as string, at: goTimeMillis(parsed) };
  };
  return {
    derivedFrom: (obj) => {
      const last = lastCheckOf(obj);
      return last && last.at + graceMs;
    },
    derive: (obj) => {
      const last = lastCheckOf(obj)!;
      const status = obj.status as Status;
      const stored = conditionsOf(status).find((c) => c.type === type);
      const since = `since ${last.stamp} (more than ${OVERDUE_INTERVALS} check intervals of ${intervalMs / 1000}s)`;
      const overdue: Condition = {
        type,
        status: 'Unknown',
        reason: CHECK_OVERDUE,
        message: checks.message(since, obj),
        ...(stored?.observedGeneration !== undefined ? { observedGeneration: stored.observedGeneration } : {}),
        // When it became overdue: the same at every read, so a list, a get and a watch event agree.
        lastTransitionTime: nowRFC3339(new Date(last.at + graceMs)),
      };
      const others = Array.isArray(status.conditions)
        ? (status.conditions as unknown[]).filter((c) => !(isPlainObject(c) && c.type === type))
        : [];
      const derived = { ...status, conditions: [...others, overdue] };
      return { ...obj, status: checks.deriveStatus ? checks.deriveStatus(derived, overdue) : derived };
    },
    underive: (written, stored) => {
      if (!isPlainObject(written.status)) return;
      checks.underiveStatus?.(written.status, isPlainObject(stored.status) ? stored.status : {});
      if (!Array.isArray(written.status.conditions)) return;
      const conditions: unknown[] = written.status.conditions;
      const at = conditions.findIndex((c) => isPlainObject(c) && c.type === type && c.reason === CHECK_OVERDUE);
      if (at < 0) return;
      // Only reads derive it, and the health checks never write it: whoever writes it back wrote what they read.
      const kept = conditionsOf(stored.status).find((c) => c.type === type);
      if (kept) conditions[at] = structuredClone(kept);
      else conditions.splice(at, 1);
    },
  };
}

/** The condition `type` of `obj` as read, when it says the checks are overdue; else undefined. */
export function overdueCondition(obj: KubeObject, type: string): Condition | undefined {
  const condition = conditionsOf(obj.status).find((c) => c.type === type);
  return condition?.reason === CHECK_OVERDUE ? condition : undefined;
}

function conditionsOf(status: unknown): Condition[] {
  const conditions: unknown = isPlainObject(status) ? status.conditions : undefined;
  return Array.isArray(conditions) ? conditions.filter((c): c is Condition => isPlainObject(c)) : [];
}
