/**
 * Whether a caller may delete the object an ownerReference names, asked of the same authorizers as its requests
 * (kube's OwnerReferencesPermissionEnforcement admission asks its authorizer the same). Built once at start, once
 * the authorizers exist, and handed to the registry, whose compare-and-swap loop asks it for each write by a client
 * (registry/ownerpermission.ts says which references need it).
 */
import type { Authorizer } from '../apimachinery/authorizer.js';
import type { UserInfo } from '../apimachinery/user.js';
import type { Registry } from '../registry/registry.js';
import type { OwnerDeletionCheck } from '../registry/ownerpermission.js';
import { findOwner } from '../registry/ownerlookup.js';
import { restrictedAuthorizer } from './restriction.js';

export function ownerDeletionCheck(registry: Registry, authorizer: Authorizer): OwnerDeletionCheck {
  const restricted = restrictedAuthorizer(authorizer);
  return async (user: UserInfo, ref, namespace) => {
    const def = registry.lookupKind(ref.apiVersion, ref.kind)?.def;
    if (!def) {
      return {
        allowed: false,
        reason: `no resource of this server has apiVersion ${JSON.stringify(ref.apiVersion)} and kind ${JSON.stringify(ref.kind)}, so delete permission on it cannot be checked`,
      };
    }
    const ns = def.namespaced ? (namespace ?? '') : '';
    const where = ns ? ` in the namespace ${JSON.stringify(ns)}` : '';
    const path = `/apis/${def.group}/${def.version}${ns ? `/namespaces/${ns}` : ''}/${def.plural}/${ref.name}`;
    const decision = await restricted.authorize({
      user,
      verb: 'delete',
      isResourceRequest: true,
      path,
      apiGroup: def.group,
      apiVersion: def.version,
      namespace: ns,
      resource: def.plural,
      subresource: '',
      name: ref.name,
    });
    if (decision.decision !== 'allow') {
      const why = decision.reason ? `: ${decision.reason}` : '';
      return {
        allowed: false,
        reason: `User ${JSON.stringify(user.name)} cannot delete ${def.plural}.${def.group} ${JSON.stringify(ref.name)}${where}${why}`,
      };
    }
    // Told only to a caller who may delete what the reference names: the object there has another uid, so the
    // garbage collector takes the reference for one to an absent owner.
    const owner = await findOwner(registry, ref, namespace);
    if ('absent' in owner && owner.other) {
      return {
        allowed: false,
        misnamed: `is not the uid of the ${ref.kind} ${JSON.stringify(ref.name)}${where} this reference names; the garbage collector looks an owner up by kind, name and uid, so a reference with blockOwnerDeletion must name its owner by all three`,
      };
    }
    return { allowed: true };
  };
}
