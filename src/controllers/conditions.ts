/**
 * The status conditions the controllers write (kube's metav1.Condition): one per type, its lastTransitionTime moved
 * only when its status does, and a status written only when it changes, to the object that was read (its uid), never
 * to another one made under the same name since.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { isStatusError } from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import type { Store } from '../registry/store.js';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export type Outcome = Pick<Condition, 'status' | 'reason' | 'message'>;

/** Any kind's object, as far as its conditions go: `status.conditions`, when its status is an object. */
type WithStatus = KubeObject<unknown, unknown>;

function statusOf(obj: WithStatus): Record<string, unknown> {
  return isPlainObject(obj.status) ? obj.status : {};
}

function conditionsOf(obj: WithStatus): Condition[] | undefined {
  const conditions = statusOf(obj).conditions;
  return Array.isArray(conditions) ? (conditions as Condition[]) : undefined;
}

export function conditionOf(obj: WithStatus, type: string): Condition | undefined {
  return conditionsOf(obj)?.find((c) => c?.type === type);
}

/** Sets a condition, observing `read`'s generation; its lastTransitionTime moves only when its status does. */
export function setCondition(obj: WithStatus, type: string, outcome: Outcome, read: KubeObject): void {
  const old = conditionOf(obj, type);
  const next: Condition = {
    type,
    ...outcome,
    observedGeneration: read.metadata.generation,
    lastTransitionTime: old && old.status === outcome.status ? old.lastTransitionTime : nowRFC3339(),
  };
  if (old && jsonEqual(old, next)) return;
  dropCondition(obj, type);
  obj.status = { ...statusOf(obj), conditions: [...(conditionsOf(obj) ?? []), next] };
}

export function dropCondition(obj: WithStatus, type: string): void {
  const conditions = conditionsOf(obj);
  if (!conditions) return;
  obj.status = { ...statusOf(obj), conditions: conditions.filter((c) => c?.type !== type) };
}

/**
 * Applies `change` to the stored object's status when it is still `read`'s object (its uid), and writes only a
 * change; an object gone or replaced meanwhile is left alone (its own event brings it back). `change` sets
 * obj.status to a new value and changes nothing it reads in place (as setCondition and dropCondition do): it is
 * first tried on a shallow copy of `read`, to see whether there is a change at all, without copying the object
 * (a health check asks this of every object every interval).
 */
export async function writeStatus<O extends KubeObject>(
  store: Store<O>,
  read: O,
  change: (obj: O) => void,
  fieldManager: string,
): Promise<void> {
  const probe = { ...read };
  change(probe);
  if (jsonEqual(probe.status ?? {}, read.status ?? {})) return;
  await writeIfSame(store, read, change, fieldManager, 'status');
}

/** Thrown by a change of writeIfSame to leave the object as it is: it is no longer what the write was for. */
export class StaleObject extends Error {}

/**
 * Applies `change` to the stored object (or its status) as the server, when it is still `read`'s object (its uid),
 * and answers what was stored; undefined when it is gone, replaced, or `change` threw StaleObject.
 */
export async function writeIfSame<O extends KubeObject>(
  store: Store<O>,
  read: O,
  change: (obj: O) => void,
  fieldManager: string,
  subresource?: 'status',
): Promise<O | undefined> {
  try {
    return await store.update(
      read.metadata.namespace,
      read.metadata.name!,
      {
        patch: (obj) => {
          if (obj.metadata.uid !== read.metadata.uid) throw new StaleObject();
          change(obj);
          return obj;
        },
      },
      subresource,
      { fieldManager },
    );
  } catch (err) {
    if (err instanceof StaleObject || isStatusError(err, 'NotFound')) return undefined;
    throw err;
  }
}
