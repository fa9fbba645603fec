/** A write's Preconditions checked against the object it would change (kube's Preconditions.Check). */
import { PreconditionFailedError, type Preconditions, type StoredObject } from './interface.js';

/** Throws PreconditionFailedError when `obj`, stored under `key`, does not hold `preconditions`; the uid comes first. */
export function checkPreconditions(key: string, preconditions: Preconditions | undefined, obj: StoredObject): void {
  const { uid, resourceVersion } = preconditions ?? {};
  const actualUid = (obj.metadata as { uid?: string }).uid;
  if (uid && uid !== actualUid) throw new PreconditionFailedError(key, 'uid', uid, actualUid);
  if (resourceVersion && resourceVersion !== obj.metadata.resourceVersion)
    throw new PreconditionFailedError(key, 'resourceVersion', resourceVersion, obj.metadata.resourceVersion);
}
