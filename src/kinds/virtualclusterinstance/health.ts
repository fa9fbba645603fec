/**
 * What the health check of a VirtualClusterInstance writes (controllers/virtualclusterhealth.ts): status.phase,
 * reason, message, online, kubernetesVersion, lastCheckTime and the condition VirtualClusterOnline. Only the server
 * writes them (placement.ts keepCreateRecords).
 */
import { isDateTime } from '../../apimachinery/schema.js';
import { isPlainObject } from '../../apimachinery/types.js';
import { absentOr, isString } from '../../registry/serverstatus.js';
import type { VirtualClusterInstanceStatus } from './types.js';

export type InstancePhase = NonNullable<VirtualClusterInstanceStatus['phase']>;

export const READY = 'Ready';
/** The reason of an instance whose check has nobody to rest on: stored before importers were recorded. */
export const NO_IMPORTER = 'ImporterNotRecorded';

/** The condition the check keeps (upstream's name): True when the virtual cluster's API answered. */
export const ONLINE_CONDITION = 'VirtualClusterOnline';

export const HEALTH_FIELDS = [
  'phase',
  'reason',
  'message',
  'online',
  'kubernetesVersion',
  'lastCheckTime',
  'conditions',
] as const;

/** Whether a written value has the field's type (one that has not is validation's to refuse). */
export const healthTyped: Record<(typeof HEALTH_FIELDS)[number], (v: unknown) => boolean> = {
  phase: isString,
  reason: isString,
  message: isString,
  online: (v) => typeof v === 'boolean',
  kubernetesVersion: isString,
  lastCheckTime: isDateTime,
  conditions: (v) => Array.isArray(v) && v.every(conditionTyped),
};

/** A condition as the CRD types it: type and status strings, the rest of their types when set. */
function conditionTyped(c: unknown): boolean {
  if (!isPlainObject(c) || typeof c.type !== 'string' || typeof c.status !== 'string') return false;
  return (
    absentOr(c.reason, isString) &&
    absentOr(c.message, isString) &&
    absentOr(c.observedGeneration, Number.isSafeInteger) &&
    absentOr(c.lastTransitionTime, isDateTime)
  );
}
