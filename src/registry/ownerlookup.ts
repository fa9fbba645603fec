/**
 * Finding the owner an ownerReference points to, as kube's garbage collector does (`isDangling`): by the
 * reference's apiVersion and kind, in the dependent's namespace (none for a cluster-scoped owner) and by name,
 * and only if the object found there has the reference's uid. A reference whose uid is another object's than its
 * kind, name and namespace say points to no owner: the uid alone never designates anything.
 */
import { isStatusError } from '../apimachinery/status.js';
import type { KubeObject, OwnerReference } from '../apimachinery/types.js';
import { isValidPathSegmentName } from '../apimachinery/validation.js';
import type { Registry } from './registry.js';
import type { Store } from './store.js';

export type OwnerLookup =
  /** The owner exists: the object of that kind, namespace and name has the reference's uid. */
  | { found: KubeObject; store: Store }
  /** No owner: nothing of that kind and name (`store` unset when no served kind matches), or `other` there, with another uid. */
  | { absent: true; store?: Store; other?: KubeObject }
  /** A cluster-scoped object cannot have a namespaced owner: kube's collector neither keeps nor deletes it for that. */
  | { unresolvable: string; store: Store };

export async function findOwner(
  registry: Registry,
  ref: OwnerReference,
  dependentNamespace: string | undefined,
): Promise<OwnerLookup> {
  const store = registry.lookupKind(ref.apiVersion, ref.kind);
  if (!store) return { absent: true };
  if (store.def.namespaced && !dependentNamespace) {
    return {
      unresolvable: `a cluster-scoped object cannot be owned by the namespaced ${ref.kind} ${JSON.stringify(ref.name)}`,
      store,
    };
  }
  if (isValidPathSegmentName(ref.name).length) return { absent: true, store };
  const object = await store.get(store.def.namespaced ? dependentNamespace : undefined, ref.name).catch((err) => {
    if (isStatusError(err, 'NotFound')) return undefined;
    throw err;
  });
  if (!object) return { absent: true, store };
  return object.metadata.uid === ref.uid ? { found: object, store } : { absent: true, store, other: object };
}

/** Whether `ref`, on an object in `dependentNamespace`, points to `owner` (of `ownerStore`) by kind, name and uid. */
export function refersTo(
  ref: OwnerReference,
  dependentNamespace: string | undefined,
  owner: KubeObject,
  ownerStore: Store,
): boolean {
  const def = ownerStore.def;
  return (
    ref.uid === owner.metadata.uid &&
    ref.apiVersion === def.apiVersion &&
    ref.kind === def.kind &&
    ref.name === owner.metadata.name &&
    (!def.namespaced || (!!dependentNamespace && dependentNamespace === owner.metadata.namespace))
  );
}
