/**
 * Authorization for now: members of system:masters may do everything, and every authenticated user may read
 * discovery (as kube's system:discovery role allows). Richer authorizers join the union later.
 */
import type { Attributes, Authorizer, Decision } from '../apimachinery/authorizer.js';
import { AUTHENTICATED_GROUP, MASTERS_GROUP } from '../apimachinery/user.js';

export const mastersAuthorizer: Authorizer = {
  async authorize(attrs: Attributes): Promise<Decision> {
    return attrs.user.groups.includes(MASTERS_GROUP) ? { decision: 'allow' } : { decision: 'noOpinion' };
  },
};

const DISCOVERY_PATHS = [
  /^\/api\/?$/,
  /^\/apis\/?$/,
  /^\/apis\/[^/]+\/?$/,
  /^\/apis\/[^/]+\/[^/]+\/?$/,
  /^\/version\/?$/,
  // kubectl's namespace check after a NotFound (see http/nonresource.ts namespaceDocument).
  /^\/api\/v1\/namespaces\/[^/]+$/,
  // OpenAPI: system:discovery allows /openapi, /openapi/*.
  /^\/openapi\/v2\/?$/,
  /^\/openapi\/v3\/?$/,
  /^\/openapi\/v3\/.+$/,
];

export const discoveryAuthorizer: Authorizer = {
  async authorize(attrs: Attributes): Promise<Decision> {
    const readsDiscovery =
      !attrs.isResourceRequest && attrs.verb === 'get' && DISCOVERY_PATHS.some((p) => p.test(attrs.path));
    return readsDiscovery && attrs.user.groups.includes(AUTHENTICATED_GROUP)
      ? { decision: 'allow' }
      : { decision: 'noOpinion' };
  },
};

/** The first authorizer with an opinion decides; none means deny, with the reasons they gave (kube's union). */
export function unionAuthorizer(...authorizers: Authorizer[]): Authorizer {
  return {
    async authorize(attrs: Attributes): Promise<Decision> {
      const reasons: string[] = [];
      for (const a of authorizers) {
        const d = await a.authorize(attrs);
        if (d.decision !== 'noOpinion') return d;
        if (d.reason) reasons.push(d.reason);
      }
      return reasons.length ? { decision: 'deny', reason: reasons.join('; ') } : { decision: 'deny' };
    },
  };
}
