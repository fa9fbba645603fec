/**
 * The review behind the TokenReview webhook of direct cluster endpoint tokens (http/tokenreview.ts): what a
 * connected cluster's kube-apiserver learns of a token when it asks this server rather than verifying the JWT
 * itself, so that a token stops working once the access key it was issued to does.
 *
 * A token passes when, in this order:
 * 1. it is a JWT of this server's issuer whose signature verifies with a published key (any key of the JWKS, not only
 *    the one signing now: a token outlives its key's turn), for the direct cluster endpoint audience, not expired
 *    (no leeway) and not before its nbf (a minute's leeway), as kube's JWT authenticator checks it;
 * 2. the access key value it names (`management.platform.sh/access-key`), if any, still works (valueRefused: not
 *    disabled, expired, rotated past its grace or deleted, the uid checked), and the key still acts as the token's
 *    subject with its groups and without a scope (an admin narrowing a key narrows its tokens);
 * 3. its scope lets it reach the Cluster asking: `scope.clusters` lists it (or `*`), and of `scope.projects` one
 *    project (or every one, `*`) has it in `spec.allowedClusters`. What a connected cluster's kube-apiserver cannot
 *    enforce (roles, spaces, virtual clusters, rules) is refused, never dropped. Without a Cluster (the bare path)
 *    only unscoped tokens pass.
 * The user is the one docs/api.md's JWT authenticator configuration maps, so the two may serve side by side.
 * Refusals say why; none quotes the token.
 */
import {
  compactVerify,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWK,
  type JWTPayload,
} from 'jose';
import { GROUP_NAME } from '../apimachinery/group.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { decoded } from '../apimachinery/encoded.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { Attributes, Authorizer } from '../apimachinery/authorizer.js';
import { allowsCluster } from '../kinds/project/allowedclusters.js';
import type { Project } from '../kinds/project/types.js';
import {
  ACCESS_KEY_CLAIM,
  DIRECT_CLUSTER_ENDPOINT_AUDIENCE,
  MAX_SCOPE_ENTRIES,
  TOKEN_ID_EXTRA,
} from '../tokens/claims.js';
import type { AccessKeyUse } from '../apimachinery/user.js';

/** Where connected clusters post their TokenReviews; `/<cluster>` after it names the Cluster asking. */
export const TOKEN_REVIEW_PATH = '/authenticate/direct-cluster-endpoint';
/** The subresource of a Cluster whose `create` lets a caller review tokens for it. */
export const TOKEN_REVIEW_SUBRESOURCE = 'tokenreviews';

/** go-oidc's (and so kube's) allowance for an nbf slightly ahead of the verifier's clock. */
const NBF_LEEWAY_MS = 60_000;
/** How long the published keys are reused before they are read again. */
const JWKS_REUSE_MS = 30_000;
/** How long after a read a token naming an unknown key has them read again. */
const JWKS_REREAD_MS = 1000;
/** The scope fields a review can check at a connected cluster. */
const ENFORCEABLE = ['clusters', 'projects'];
const SYSTEM_PREFIX = 'system:';

/** The user of status.user (authentication.k8s.io UserInfo). */
export interface ReviewedUser {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export type ReviewResult =
  { authenticated: true; user: ReviewedUser; audiences: string[] } | { authenticated: false; error: string };

export interface DirectTokenReviewOptions {
  /** The tokens' `iss` (--token-issuer), read at each review. */
  issuer(): string;
  /** The published signing keys (/openid/v1/jwks). */
  jwks(): Promise<{ keys: JWK[] }>;
  /** Whether an access key value still works; without it a token naming a key is refused. */
  accessKeys?: {
    valueRefused(
      use: AccessKeyUse,
      issuedTo?: { name: string; groups: readonly string[] },
    ): Promise<string | undefined>;
  };
  /** A Project by name (undefined when there is none), and every Project (for `*`). */
  project(name: string): Promise<Project | undefined>;
  projects(): Promise<Project[]>;
  now?: () => number;
}

/** The Cluster a review path names: `{}` for the bare path, undefined for a path that is no review's. */
export function reviewTarget(path: string): { cluster?: string } | undefined {
  const trimmed = path.replace(/\/+$/, '');
  if (trimmed === TOKEN_REVIEW_PATH) return {};
  if (!trimmed.startsWith(`${TOKEN_REVIEW_PATH}/`)) return undefined;
  const rest = trimmed.slice(TOKEN_REVIEW_PATH.length + 1);
  if (!rest || rest.includes('/')) return undefined;
  try {
    return { cluster: decodeURIComponent(rest) };
  } catch {
    // Not a name at all (a bad %-escape): no Cluster's review path.
    return undefined;
  }
}

class Refusal extends Error {}
const refuse = (message: string): never => {
  throw new Refusal(message);
};

export class DirectTokenReviewer {
  private readonly now: () => number;
  private keys?: { at: number; set: ReturnType<typeof createLocalJWKSet> };

  constructor(private readonly opts: DirectTokenReviewOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The review of `token` for the Cluster `cluster` (none: the bare path), asked for `audiences`. */
  async review(token: string, audiences: string[], cluster: string | undefined): Promise<ReviewResult> {
    try {
      const claims = await this.verified(token);
      const user = userOf(claims);
      await this.checkKey(claims[ACCESS_KEY_CLAIM], user);
      await this.checkScope(claims.scope, cluster);
      const aud = typeof claims.aud === 'string' ? [claims.aud] : (claims.aud ?? []);
      return { authenticated: true, user, audiences: audiences.filter((a) => aud.includes(a)) };
    } catch (err) {
      if (err instanceof Refusal) return { authenticated: false, error: err.message };
      throw err;
    }
  }

  /** The claims of a token this server issued that is valid now (step 1). */
  private async verified(token: string): Promise<JWTPayload> {
    let claims: JWTPayload;
    try {
      decodeProtectedHeader(token);
      claims = decodeJwt(token);
    } catch {
      return refuse('the token is not a JWT');
    }
    const issuer = this.opts.issuer();
    if (claims.iss !== issuer) refuse(`the token was not issued by this server (issuer ${JSON.stringify(issuer)})`);
    await this.verifySignature(token);
    const aud = typeof claims.aud === 'string' ? [claims.aud] : (claims.aud ?? []);
    if (!aud.includes(DIRECT_CLUSTER_ENDPOINT_AUDIENCE))
      refuse(
        `the token is not for direct cluster endpoints (audience ${JSON.stringify(DIRECT_CLUSTER_ENDPOINT_AUDIENCE)})`,
      );
    const now = this.now();
    if (typeof claims.exp !== 'number') refuse('the token has no expiry (exp)');
    if (now >= claims.exp! * 1000) refuse(`the token expired at ${rfc3339(claims.exp! * 1000)}`);
    if (typeof claims.nbf === 'number' && now + NBF_LEEWAY_MS < claims.nbf * 1000)
      refuse(`the token is not valid before ${rfc3339(claims.nbf * 1000)}`);
    return claims;
  }

  /**
   * Checks the signature against the published keys, read again when the token names a key not among them (a key
   * published since), at most once a second so that made-up key ids cannot turn each review into an etcd read.
   */
  private async verifySignature(token: string): Promise<void> {
    if (!this.keys || this.now() - this.keys.at >= JWKS_REUSE_MS) await this.readKeys();
    const verify = () => compactVerify(token, this.keys!.set, { algorithms: ['ES256'] });
    const unverified = "the token's signature does not verify with this server's published keys";
    try {
      await verify();
      return;
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || this.now() - this.keys!.at < JWKS_REREAD_MS) refuse(unverified);
    }
    await this.readKeys();
    await verify().catch(() => refuse(unverified));
  }

  private async readKeys(): Promise<void> {
    this.keys = { at: this.now(), set: createLocalJWKSet(await this.opts.jwks()) };
  }

  /** Step 2: the access key value the token names still works, and still acts as the token's user with its groups. */
  private async checkKey(claim: unknown, user: ReviewedUser): Promise<void> {
    if (claim === undefined) return;
    const use = keyUseOf(claim);
    if (!use) return refuse(`the token's ${ACCESS_KEY_CLAIM} claim is not {name, uid, generation}`);
    if (!this.opts.accessKeys) return refuse('this server cannot check the access key the token was issued with');
    const refused = await this.opts.accessKeys.valueRefused(use, { name: user.username, groups: user.groups });
    if (refused) refuse(`the token was issued with an access key that no longer works: ${refused}`);
  }

  /** Step 3: the scope lets the token reach `cluster`, and says nothing a connected cluster cannot enforce. */
  private async checkScope(scope: unknown, cluster: string | undefined): Promise<void> {
    if (scope === undefined) return;
    if (!isPlainObject(scope)) return refuse("the token's scope is not an object");
    const named = Object.entries(scope).filter(([, v]) => !Array.isArray(v) || v.length > 0);
    for (const [field] of named)
      if (!ENFORCEABLE.includes(field))
        refuse(
          `the token's scope.${field} cannot be enforced at a connected cluster; only scope.clusters and scope.projects can`,
        );
    if (!named.length) return;
    // Before any lookup: a list this long was never issued here (tokens are capped at create), so it costs nothing.
    for (const [field, list] of named)
      if (Array.isArray(list) && list.length > MAX_SCOPE_ENTRIES)
        refuse(
          `the token's scope.${field} has ${list.length} entries; tokens are issued with at most ${MAX_SCOPE_ENTRIES}`,
        );
    if (cluster === undefined)
      return refuse(
        `the token's scope names clusters or projects, which a review without a Cluster cannot check: post to ${TOKEN_REVIEW_PATH}/<the Cluster's name>`,
      );
    const clusters = names(scope.clusters, 'cluster');
    if (clusters && !clusters.includes('*') && !clusters.includes(cluster))
      refuse(`the token's scope.clusters does not include the Cluster ${JSON.stringify(cluster)}`);
    const projects = names(scope.projects, 'project');
    if (projects && !(await this.someProjectAllows(projects, cluster)))
      refuse(
        `none of the token's scope.projects (${quoted(projects)}) may use the Cluster ${JSON.stringify(cluster)} (a Project's spec.allowedClusters)`,
      );
  }

  private async someProjectAllows(projects: string[], cluster: string): Promise<boolean> {
    const candidates = projects.includes('*')
      ? await this.opts.projects()
      : await Promise.all(projects.map((p) => this.opts.project(p)));
    return candidates.some((p) => p !== undefined && allowsCluster(p, cluster));
  }
}

/**
 * The user docs/api.md's JWT authenticator maps: sub, uid ('' without one), groups, the token id as extra; `system:`
 * names refused as its userValidationRules refuse them.
 */
function userOf(claims: JWTPayload): ReviewedUser {
  const username = claims.sub;
  if (typeof username !== 'string' || !username) return refuse('the token has no subject (sub)');
  const groups = claims.groups ?? [];
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string'))
    return refuse("the token's groups are not a list of strings");
  if (username.startsWith(SYSTEM_PREFIX) || groups.some((g) => g.startsWith(SYSTEM_PREFIX)))
    refuse(`names starting with ${JSON.stringify(SYSTEM_PREFIX)} are Kubernetes' own`);
  const user: ReviewedUser = {
    username,
    uid: typeof claims.uid === 'string' ? claims.uid : '',
    groups,
    extra: {},
  };
  if (typeof claims.jti === 'string') user.extra[TOKEN_ID_EXTRA] = [claims.jti];
  return user;
}

function keyUseOf(claim: unknown): AccessKeyUse | undefined {
  if (!isPlainObject(claim)) return undefined;
  const { name, uid, generation } = claim;
  if (typeof name !== 'string' || typeof uid !== 'string' || !Number.isSafeInteger(generation)) return undefined;
  return { name, uid, generation: generation as number };
}

/** The names of a scope list's entries (`{cluster: name}`), undefined when the list is absent or empty. */
function names(list: unknown, field: string): string[] | undefined {
  if (!Array.isArray(list) || !list.length) return undefined;
  return list.map((e) => (isPlainObject(e) && typeof e[field] === 'string' ? e[field] : ''));
}

/** Names for a message: the first few, then how many more. */
function quoted(list: string[]): string {
  const shown = list.slice(0, 5).join(', ');
  return list.length > 5 ? `${shown} and ${list.length - 5} more` : shown;
}

const rfc3339 = (ms: number) => nowRFC3339(new Date(ms));

/**
 * Who may review tokens for a Cluster: a caller allowed `create` on its subresource `tokenreviews` (the Cluster's
 * owner, a spec.access entry with that verb and subresource, or RBAC on clusters/tokenreviews with its name; without
 * a name, for the bare path). The request itself is a POST of a non-resource path, as kube's webhook makes it; the
 * grant is asked of the same authorizers in the terms of the Cluster, so an admin grants it per Cluster.
 */
export function tokenReviewAuthorizer(inner: Authorizer): Authorizer {
  return {
    async authorize(attrs) {
      const target = reviewPost(attrs);
      if (!target) return inner.authorize(attrs);
      const decision = await inner.authorize(grantAttributes(attrs, target.cluster ?? ''));
      if (decision.decision === 'allow') return { decision: 'allow' };
      const what = `create on clusters/${TOKEN_REVIEW_SUBRESOURCE}`;
      return {
        decision: 'deny',
        reason: target.cluster
          ? `reviewing tokens for the Cluster ${JSON.stringify(target.cluster)} takes ${what} ${JSON.stringify(target.cluster)} in API group ${JSON.stringify(GROUP_NAME)} (the Cluster's owner, a spec.access entry with verb create and subresource ${TOKEN_REVIEW_SUBRESOURCE}, or RBAC)`
          : `reviewing tokens without a Cluster takes ${what} of every Cluster in API group ${JSON.stringify(GROUP_NAME)}`,
      };
    },
  };
}

/** The review a request is (a POST of a review path), or undefined. */
function reviewPost(attrs: Attributes): { cluster?: string } | undefined {
  return attrs.isResourceRequest || attrs.verb !== 'post' ? undefined : reviewTarget(attrs.path);
}

/**
 * What a request is asked as: for a token review, the grant it takes (`create` on the Cluster's tokenreviews), so
 * that a credential's restriction (an access key scoped to that Cluster) is checked in the same terms; otherwise
 * the request itself.
 */
export function reviewedAs(attrs: Attributes): Attributes {
  const target = reviewPost(attrs);
  return target ? grantAttributes(attrs, target.cluster ?? '') : attrs;
}

function grantAttributes(attrs: Attributes, cluster: string): Attributes {
  return {
    ...attrs,
    verb: 'create',
    isResourceRequest: true,
    apiGroup: GROUP_NAME,
    apiVersion: 'v1',
    namespace: '',
    resource: 'clusters',
    subresource: TOKEN_REVIEW_SUBRESOURCE,
    name: cluster,
  };
}

/** Every Project, from a store's list (its items may be encoded). */
export async function allProjects(list: () => Promise<{ items: unknown[] }>): Promise<Project[]> {
  const { items } = await list();
  return items.map((i) => decoded(i as Parameters<typeof decoded>[0]) as Project);
}
