/**
 * Finding an object by its uid, as the garbage collector does when it follows an ownerReference: whatever kind,
 * name or namespace the reference says, it is the uid that decides which object is the owner.
 */
import { isStatusError } from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import { isValidPathSegmentName } from '../apimachinery/validation.js';
import type { Registry } from './registry.js';
import type { Store } from './store.js';

export interface FoundObject {
  store: Store;
  object: KubeObject;
}

/**
 * The object with `uid` among all served resources, or undefined. `likely` (the object a reference names) is
 * read first, as it is nearly always the one; otherwise every resource's list (from the watch cache) is searched.
 */
export async function findObjectByUid(registry: Registry, uid: string, likely?: { store: Store; namespace?: string; name: string }): Promise<FoundObject | undefined> {
  if (likely && isValidPathSegmentName(likely.name).length === 0) {
    const object = await likely.store.get(likely.namespace, likely.name).catch((err) => {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    });
    if (object?.metadata.uid === uid) return { store: likely.store, object };
  }
  for (const def of registry.definitions) {
    const store = registry.lookup(def.group, def.version, def.plural);
    const object = store && (await store.list(undefined)).items.find((o) => o.metadata.uid === uid);
    if (store && object) return { store, object };
  }
  return undefined;
}
