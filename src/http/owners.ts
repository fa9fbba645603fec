/** The caller's permission to delete an ownerReference's target, asked of the same authorizers as its request. */
import type { Registry } from '../registry/registry.js';
import type { MayDeleteOwner } from '../registry/ownerpermission.js';
import { findObjectByUid } from '../registry/uidlookup.js';
import type { AuthorizeOther } from './app.js';

export function mayDeleteOwner(registry: Registry, authorizeOther: AuthorizeOther, userName: string): MayDeleteOwner {
  return async (ref, namespace) => {
    const def = registry.definitions.find((d) => d.apiVersion === ref.apiVersion && d.kind === ref.kind);
    if (!def) {
      return { allowed: false, reason: `no resource of this server has apiVersion ${JSON.stringify(ref.apiVersion)} and kind ${JSON.stringify(ref.kind)}, so delete permission on it cannot be checked` };
    }
    const ns = def.namespaced ? (namespace ?? '') : '';
    // The garbage collector follows the uid: the permission asked about must be for the object it names.
    const store = registry.lookup(def.group, def.version, def.plural)!;
    const owner = await findObjectByUid(registry, ref.uid, { store, namespace: ns || undefined, name: ref.name });
    const meta = owner?.object.metadata;
    if (owner && meta && (owner.store !== store || meta.name !== ref.name || (def.namespaced && meta.namespace !== ns))) {
      const where = def.namespaced ? ` in the namespace ${JSON.stringify(ns)}` : '';
      return {
        allowed: false,
        misnamed: `is the uid of another object than the ${ref.kind} ${JSON.stringify(ref.name)}${where} this reference names; the garbage collector follows the uid, so a reference with blockOwnerDeletion must name its owner by both`,
      };
    }
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
    if (decision.decision === 'allow') return { allowed: true };
    const where = ns ? ` in the namespace ${JSON.stringify(ns)}` : '';
    const why = decision.reason ? `: ${decision.reason}` : '';
    return { allowed: false, reason: `User ${JSON.stringify(userName)} cannot delete ${def.plural}.${def.group} ${JSON.stringify(ref.name)}${where}${why}` };
  };
}
