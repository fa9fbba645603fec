/** The caller's permission to delete an ownerReference's target, asked of the same authorizers as its request. */
import type { Registry } from '../registry/registry.js';
import type { MayDeleteOwner } from '../registry/ownerpermission.js';
import { findOwner } from '../registry/ownerlookup.js';
import type { AuthorizeOther } from '../registry/strategy.js';

export function mayDeleteOwner(registry: Registry, authorizeOther: AuthorizeOther, userName: string): MayDeleteOwner {
  return async (ref, namespace) => {
    const def = registry.lookupKind(ref.apiVersion, ref.kind)?.def;
    if (!def) {
      return { allowed: false, reason: `no resource of this server has apiVersion ${JSON.stringify(ref.apiVersion)} and kind ${JSON.stringify(ref.kind)}, so delete permission on it cannot be checked` };
    }
    const ns = def.namespaced ? (namespace ?? '') : '';
    const where = ns ? ` in the namespace ${JSON.stringify(ns)}` : '';
    const path = `/apis/${def.group}/${def.version}${ns ? `/namespaces/${ns}` : ''}/${def.plural}/${ref.name}`;
    const decision = await authorizeOther({
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
      return { allowed: false, reason: `User ${JSON.stringify(userName)} cannot delete ${def.plural}.${def.group} ${JSON.stringify(ref.name)}${where}${why}` };
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
