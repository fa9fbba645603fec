/**
 * The authorizers as a caller's further requests meet them: the credential's own restriction (an access key's scope)
 * first, then the authorizers. What a request also needs besides itself is asked of this (an apply that creates, an
 * action's checks, an ownerReference that needs delete permission on its owner, the namespaces a name is usable in),
 * so that a restricted credential can do no more through them than by asking directly.
 */
import type { Authorizer } from '../apimachinery/authorizer.js';

export function restrictedAuthorizer(authorizer: Authorizer): Authorizer {
  return {
    async authorize(attrs) {
      const limited = attrs.user.restriction?.check(attrs);
      if (limited && !limited.allowed) return { decision: 'deny', reason: limited.reason };
      return authorizer.authorize(attrs);
    },
  };
}
