/**
 * The authorization filter (kube's WithAuthorization): the authorizers' union decides; a list or watch it does not
 * allow shows only the objects the caller may see instead of failing; and a credential's own restriction (an access
 * key's scope) narrows both. Paths anyone may read (--authorization-always-allow-paths and what kube's
 * system:public-info-viewer allows) pass without asking. When the authorizers fail instead of deciding (a read of
 * the object or the host's SubjectAccessReview failed or timed out) the request fails with their error (5xx, 429):
 * never a 403, which clients take as final, nor a list narrowed as if the caller had been refused.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Attributes, Authorizer } from '../apimachinery/authorizer.js';
import { requestContext, requestUser, type RequestContext } from '../apimachinery/request.js';
import type { KubeObject } from '../apimachinery/types.js';
import { forbidden } from './forbidden.js';
import { OIDC_PATHS } from './oidc.js';
import { reviewedAs } from '../auth/directtokenreview.js';

const HEALTH_PATHS = ['/healthz', '/livez', '/readyz'];

/**
 * For a list or watch the authorizer does not allow: which objects the caller may still see. It reads nothing of an
 * object but its name, namespace and labels and what access/model.ts `grantsText` keeps, so that lists ask it of
 * what the watch cache keeps beside each object rather than of decoded objects.
 */
export type VisibleTo = (attrs: Attributes) => ((obj: KubeObject) => boolean) | undefined;

/**
 * Paths anyone may read without credentials: --authorization-always-allow-paths (a trailing * makes a prefix), and
 * what kube's system:public-info-viewer allows.
 */
export function publicPaths(alwaysAllow: string[] = HEALTH_PATHS): (path: string) => boolean {
  const exact = new Set([...alwaysAllow.filter((p) => !p.endsWith('*')), '/version', ...OIDC_PATHS]);
  const prefixes = alwaysAllow.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (path) => exact.has(trimmed(path)) || prefixes.some((prefix) => path.startsWith(prefix));
}

function trimmed(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

export function authorize(
  authorizer: Authorizer,
  visibleTo: VisibleTo | undefined,
  isPublic: (path: string) => boolean,
) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const context = requestContext(req);
    const { info } = context;
    const user = requestUser(req);
    if (!info.isResourceRequest && isPublic(info.path)) {
      context.authorization = { decision: 'allow', reason: 'always allowed path' };
      return next();
    }
    const attrs: Attributes = { user, ...info };
    // A token review is restricted as the grant it takes (a key scoped to a Cluster may review that Cluster's tokens).
    const restricted = user.restriction?.check(reviewedAs(attrs));
    if (restricted && !restricted.allowed) {
      context.authorization = { decision: 'forbid', reason: restricted.reason };
      throw forbidden(attrs, restricted.reason);
    }
    const decision = await failingWith(context, authorizer.authorize(attrs));
    if (decision.decision === 'allow' && info.verb === 'get' && !info.subresource)
      context.authorizedObject = decision.object;
    let visible: ((obj: KubeObject) => boolean) | undefined;
    context.authorization = { decision: 'allow' };
    if (decision.decision === 'allow' && (await failingWith(context, grantedForThisNameOnly(authorizer, attrs)))) {
      visible = visibleTo?.(attrs);
      if (visible) context.authorization = { decision: 'allow', reason: 'only while the object lets the user see it' };
    }
    if (decision.decision !== 'allow') {
      visible = visibleTo?.(attrs);
      context.authorization = visible
        ? { decision: 'allow', reason: 'only the objects the user may see' }
        : { decision: 'forbid', reason: decision.reason };
      if (!visible) throw forbidden(attrs, decision.reason);
    }
    const restriction = user.restriction;
    if (restriction && (info.verb === 'list' || info.verb === 'watch')) {
      const seen = visible ?? (() => true);
      const meta = (obj: KubeObject) => ({ name: obj.metadata.name ?? '', namespace: obj.metadata.namespace ?? '' });
      visible = (obj) => seen(obj) && restriction.check({ ...attrs, ...meta(obj) }).allowed;
    }
    context.visible = visible;
    next();
  };
}

/** `decided`, or its failure, audited as kube audits an authorizer's error (no decision, reason "internal error"). */
async function failingWith<T>(context: RequestContext, decided: Promise<T>): Promise<T> {
  try {
    return await decided;
  } catch (err) {
    context.authorization = undefined;
    (context.auditAnnotations ??= {})['authorization.k8s.io/reason'] = 'internal error';
    throw err;
  }
}

/**
 * A watch outlives its authorization. One of a single object that is allowed for that name only (by the object's
 * access list, or by host RBAC naming it, which the access sync generates from that list) is served filtered like
 * a collection watch, so that a grant revoked while it runs ends what it shows.
 */
async function grantedForThisNameOnly(authorizer: Authorizer, attrs: Attributes): Promise<boolean> {
  if (attrs.verb !== 'watch' || !attrs.name) return false;
  return (await authorizer.authorize({ ...attrs, name: '' })).decision !== 'allow';
}
