/**
 * Authorization for now: members of system:masters may do everything, and every authenticated user may read
 * discovery (as kube's system:discovery role allows). Richer authorizers join the union later.
 */
import type { Attributes, Authorizer, Decision } from '../apimachinery/authorizer.js';
import { AUTHENTICATED_GROUP, MASTERS_GROUP } from '../apimachinery/user.js';
import { isSelfReview } from '../access/scope.js';

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

/** Every authenticated caller may ask who it is (a SelfSubjectReview), as kube's system:basic-user role allows. */
export const selfReviewAuthorizer: Authorizer = {
  async authorize(attrs: Attributes): Promise<Decision> {
    return isSelfReview(attrs) && attrs.user.groups.includes(AUTHENTICATED_GROUP)
      ? { decision: 'allow' }
      : { decision: 'noOpinion' };
  },
};

/**
 * The first authorizer with an opinion decides; none means deny, with the reasons they gave (kube's union). One that
 * fails (throws) is passed over, as kube's union goes on past an authorizer's error; if no later one decides, the
 * union throws that failure rather than deny: a request nobody could decide on is an error, never a 403 saying the
 * caller may not (kube's WithAuthorization answers it with 500).
 */
export function unionAuthorizer(...authorizers: Authorizer[]): Authorizer {
  return {
    async authorize(attrs: Attributes): Promise<Decision> {
      const reasons: string[] = [];
      let failure: { error: unknown } | undefined;
      for (const a of authorizers) {
        let d: Decision;
        try {
          d = await a.authorize(attrs);
        } catch (error) {
          failure ??= { error };
          continue;
        }
        if (d.decision !== 'noOpinion') return d;
        if (d.reason) reasons.push(d.reason);
      }
      if (failure) throw failure.error;
      return reasons.length ? { decision: 'deny', reason: reasons.join('; ') } : { decision: 'deny' };
    },
  };
}
