/**
 * Setting `blockOwnerDeletion: true` holds an owner's foreground deletion back, so (as kube's
 * OwnerReferencesPermissionEnforcement admission, and as our spec words it) only a caller allowed to delete the
 * owner may set it. Only references that newly block are checked, so an unrelated update by someone else
 * is never refused over a reference it did not touch.
 *
 * The garbage collector finds an owner by the reference's kind, name and namespace, and only with the reference's
 * uid: a blocking reference whose uid is not that of the object it names (so it points to no owner) is refused
 * outright, told only to a caller who may delete what it names. A name that names no object is checked as kube's
 * admission does; it can hold nothing back.
 *
 * Any ownerReference is also a deletion trigger for the object that carries it: the garbage collector deletes an
 * object once all its owners are absent. So (as kube's admission) a caller who may not delete an object may not add
 * or change its ownerReferences, on update. Removing all of them is left to anyone who may update (an object with no
 * owner is never collected); removing only some is not, since what remains may be owners already gone. A create needs
 * nothing more: a creator could as well not have created the object, and a create replaces nothing.
 */
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import type { KubeObject, OwnerReference } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';

export type OwnerDeletionPermission =
  | { allowed: true }
  | { allowed: false; reason: string }
  /** The object the reference's kind and name say has another uid than the reference: why, for a person. */
  | { allowed: false; misnamed: string };

/**
 * Whether the caller may delete the object `ref` names by kind and name (namespaced ones live in `namespace`, the
 * dependent's), which must have `ref`'s uid if it exists.
 */
export type MayDeleteOwner = (ref: OwnerReference, namespace: string | undefined) => Promise<OwnerDeletionPermission>;

/** The same for any caller: built once at start from the authorizers (auth/ownerdeletion.ts), asked per write. */
export type OwnerDeletionCheck = (
  user: UserInfo,
  ref: OwnerReference,
  namespace: string | undefined,
) => Promise<OwnerDeletionPermission>;

/** Both checks, as every write by a client (create, update, patch, apply, dry run) needs them. */
export async function checkOwnerReferencePermissions(
  obj: KubeObject,
  old: KubeObject | undefined,
  mayDelete: MayDeleteOwner,
): Promise<FieldError[]> {
  return [
    ...(await checkOwnerReferenceChange(obj, old, mayDelete)),
    ...(await checkBlockingOwnerReferences(obj, old, mayDelete)),
  ];
}

/** A change of an existing object's ownerReferences, other than removing them all, needs delete permission on it. */
export async function checkOwnerReferenceChange(
  obj: KubeObject,
  old: KubeObject | undefined,
  mayDelete: MayDeleteOwner,
): Promise<FieldError[]> {
  const refs = obj.metadata.ownerReferences ?? [];
  if (!old || !refs.length || sameReferences(refs, old.metadata.ownerReferences ?? [])) return [];
  const self = {
    apiVersion: obj.apiVersion ?? '',
    kind: obj.kind ?? '',
    name: obj.metadata.name ?? '',
    uid: old.metadata.uid ?? '',
  };
  const permission = await mayDelete(self, obj.metadata.namespace);
  if (permission.allowed) return [];
  const why = 'reason' in permission ? permission.reason : permission.misnamed;
  return [
    fieldError.forbidden(
      Path.root('metadata').child('ownerReferences'),
      `cannot add or change ownerReferences on an object you can't delete (the garbage collector deletes an object whose owners are all gone; removing them all is allowed): ${why}`,
    ),
  ];
}

/** The same references, in any order (compared as JSON with sorted keys, as a client may reorder either). */
function sameReferences(a: OwnerReference[], b: OwnerReference[]): boolean {
  if (a.length !== b.length) return false;
  const key = (r: OwnerReference) =>
    JSON.stringify(
      Object.keys(r)
        .sort()
        .map((k) => [k, (r as unknown as Record<string, unknown>)[k]]),
    );
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}

export async function checkBlockingOwnerReferences(
  obj: KubeObject,
  old: KubeObject | undefined,
  mayDeleteOwner: MayDeleteOwner,
): Promise<FieldError[]> {
  const blockedBefore = new Set(
    (old?.metadata.ownerReferences ?? []).filter((r) => r.blockOwnerDeletion === true).map((r) => r.uid),
  );
  const errs: FieldError[] = [];
  const refs = obj.metadata.ownerReferences ?? [];
  for (const [i, ref] of refs.entries()) {
    if (ref.blockOwnerDeletion !== true || blockedBefore.has(ref.uid)) continue;
    const permission = await mayDeleteOwner(ref, obj.metadata.namespace);
    if (permission.allowed) continue;
    const at = Path.root('metadata').child('ownerReferences').index(i);
    if ('misnamed' in permission) errs.push(fieldError.invalid(at.child('uid'), ref.uid, permission.misnamed));
    else
      errs.push(
        fieldError.forbidden(
          at.child('blockOwnerDeletion'),
          `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't delete: ${permission.reason}`,
        ),
      );
  }
  return errs;
}
