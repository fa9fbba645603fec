/**
 * The spec's `{api}/virtualclusterinstances/<name>/kubeconfig` names no namespace: for actions that allow it, the
 * object is looked for by name among those the caller may use. Exactly one: the request goes on as if its path
 * named that namespace. Several: 409 listing their paths. None: it goes on as it is (authorization at the
 * cluster scope answers 403, or the action 404). Objects the caller may not use are never revealed.
 *
 * A filter of its own, after authentication (it needs the user) and before authorization (which then decides on
 * the namespace found).
 */
import type { NextFunction, Request, Response } from 'express';
import { decoded } from '../apimachinery/encoded.js';
import type { Authorizer } from '../apimachinery/authorizer.js';
import { requestContext, requestUser } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import type { ServedActions } from '../actions/served.js';
import { restrictedAuthorizer } from '../auth/restriction.js';
import type { Registry } from '../registry/registry.js';

export function findNamespace(registry: Registry, actions: ServedActions, authorizer: Authorizer) {
  const restricted = restrictedAuthorizer(authorizer);
  return async (req: Request, _res: Response, next: NextFunction) => {
    const { info } = requestContext(req);
    if (!info.isResourceRequest || info.namespace || !info.name) return next();
    const action = actions.find(info.apiGroup, info.apiVersion, info.resource, info.subresource);
    const store = registry.lookup(info.apiGroup, info.apiVersion, info.resource);
    if (!action?.anyNamespace || !store) return next();
    const user = requestUser(req);
    const sameName = await store.list(undefined, {
      predicate: {
        matches: (o) => o.metadata.name === info.name,
        matchesAttributes: (a) => a.name === info.name,
        empty: false,
      },
    });
    const usable: string[] = [];
    for (const item of sameName.items) {
      const namespace = decoded(item).metadata.namespace ?? '';
      if ((await restricted.authorize({ ...info, user, namespace })).decision === 'allow') usable.push(namespace);
    }
    if (usable.length === 1) info.namespace = usable[0];
    if (usable.length > 1) {
      const paths = usable.map(
        (ns) =>
          `/apis/${info.apiGroup}/${info.apiVersion}/namespaces/${ns}/${info.resource}/${info.name}/${info.subresource}`,
      );
      throw errors.conflict(
        { group: info.apiGroup, resource: info.resource },
        info.name,
        `the name is used in ${usable.length} namespaces (${usable.join(', ')}); ask for one of ${paths.join(', ')}`,
      );
    }
    next();
  };
}
