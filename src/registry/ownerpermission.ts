/**
 * Setting `blockOwnerDeletion: true` holds an owner's foreground deletion back, so (as kube's
 * OwnerReferencesPermissionEnforcement admission, and as our spec words it) only a caller allowed to delete the
 * owner may set it. Only references that newly block are checked, so an unrelated update by someone else
 * is never refused over a reference it did not touch.
 *
 * The garbage collector finds an owner by the reference's uid, so the owner checked is the object the uid names;
 * a blocking reference whose uid names another object than its kind and name (or one in another namespace) is
 * refused outright. A uid that names no object is checked as the reference names it (as kube's admission does):
 * uids are the server's and never reused, so such a reference can never hold anything back.
 */
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import type { KubeObject, OwnerReference } from '../apimachinery/types.js';

export type OwnerDeletionPermission =
  | { allowed: true }
  | { allowed: false; reason: string }
  /** The reference's uid is that of another object than the one its kind and name say: why, for a person. */
  | { allowed: false; misnamed: string };

/**
 * Whether the caller may delete the object `ref`'s uid names, which must be the object its kind and name name
 * (namespaced owners live in the dependent's namespace).
 */
export type MayDeleteOwner = (ref: OwnerReference, namespace: string | undefined) => Promise<OwnerDeletionPermission>;

export async function checkBlockingOwnerReferences(obj: KubeObject, old: KubeObject | undefined, mayDeleteOwner: MayDeleteOwner): Promise<FieldError[]> {
  const blockedBefore = new Set((old?.metadata.ownerReferences ?? []).filter((r) => r.blockOwnerDeletion === true).map((r) => r.uid));
  const errs: FieldError[] = [];
  const refs = obj.metadata.ownerReferences ?? [];
  for (const [i, ref] of refs.entries()) {
    if (ref.blockOwnerDeletion !== true || blockedBefore.has(ref.uid)) continue;
    const permission = await mayDeleteOwner(ref, obj.metadata.namespace);
    if (permission.allowed) continue;
    const at = Path.root('metadata').child('ownerReferences').index(i);
    if ('misnamed' in permission) errs.push(fieldError.invalid(at.child('uid'), ref.uid, permission.misnamed));
    else errs.push(fieldError.forbidden(at.child('blockOwnerDeletion'), `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't delete: ${permission.reason}`));
  }
  return errs;
}
