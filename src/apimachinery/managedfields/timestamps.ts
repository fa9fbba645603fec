/**
 * kube's IgnoreManagedFieldsTimestampsTransformer (apiserver endpoints/handlers/fieldmanager): a write whose
 * only effect would be newer managedFields timestamps keeps the stored timestamps, so it stays a no-op and
 * does not bump resourceVersion.
 */
import { jsonEqual } from '../equality.js';
import { sameInstant } from '../time.js';
import type { KubeObject, ManagedFieldsEntry } from '../types.js';

function withoutTime(e: ManagedFieldsEntry): ManagedFieldsEntry {
  const { time: _drop, ...rest } = e;
  return rest;
}

function withoutManagedFields(obj: KubeObject): unknown {
  const { managedFields: _drop, ...metadata } = obj.metadata ?? {};
  return { ...obj, metadata };
}

/**
 * Returns `updated` with `live`'s managedFields timestamps when the two objects are equal apart from those
 * timestamps (entry by entry, in order); otherwise `updated` itself.
 */
export function keepTimestampsOfNoopWrite(updated: KubeObject, live: KubeObject | undefined): KubeObject {
  if (!live) return updated;
  const before = live.metadata?.managedFields ?? [];
  const after = updated.metadata?.managedFields ?? [];
  if (before.length !== after.length || after.length === 0) return updated;
  if (after.every((e, i) => sameInstant(e.time, before[i].time))) return updated;
  if (!after.every((e, i) => jsonEqual(withoutTime(e), withoutTime(before[i])))) return updated;
  if (!jsonEqual(withoutManagedFields(updated), withoutManagedFields(live))) return updated;
  const managedFields = after.map((e, i) => {
    const t = before[i].time;
    return t === undefined ? withoutTime(e) : { ...e, time: t };
  });
  return { ...updated, metadata: { ...updated.metadata, managedFields } };
}
