/**
 * What a direct cluster endpoint token says, named once for the action that issues it (actions/) and the TokenReview
 * webhook that checks it (auth/directtokenreview.ts).
 */
import { GROUP_NAME } from '../apimachinery/group.js';

/** The audience every direct cluster endpoint token is for; a connected cluster accepts only this one. */
export const DIRECT_CLUSTER_ENDPOINT_AUDIENCE = `${GROUP_NAME}/direct-cluster-endpoint`;
/** The claim naming the access key value a token was issued to: `{ name, uid, generation }`. */
export const ACCESS_KEY_CLAIM = `${GROUP_NAME}/access-key`;
/** The extra a connected cluster sees the token's `jti` under (docs/api.md's claim mappings). */
export const TOKEN_ID_EXTRA = `${GROUP_NAME}/token-id`;
/**
 * The most entries a token's scope list (scope.projects, scope.clusters, ..., the rules) may have: every review of
 * the token reads them, and a connected cluster asks again for every request made with a token it refused.
 */
export const MAX_SCOPE_ENTRIES = 256;
