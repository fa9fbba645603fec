/** The 403 a request its caller may not make gets. */
import type { Attributes } from '../apimachinery/authorizer.js';
import * as errors from '../apimachinery/status.js';

/** kube's responsewriters.Forbidden message. */
export function forbidden(a: Attributes, reason?: string): errors.StatusError {
  let message: string;
  if (!a.isResourceRequest) {
    message = `User ${JSON.stringify(a.user.name)} cannot ${a.verb} path ${JSON.stringify(a.path)}`;
  } else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : 'at the cluster scope';
    message = `User ${JSON.stringify(a.user.name)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)} ${scope}`;
  }
  if (reason) message += `: ${reason}`;
  return errors.forbidden(
    a.isResourceRequest ? { group: a.apiGroup, resource: a.resource } : undefined,
    a.name,
    message,
  );
}
