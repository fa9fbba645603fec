/**
 * DirectClusterEndpointToken: `POST {api}/directclusterendpointtokens` answers a signed JWT that lets the caller
 * connect straight to a connected cluster, which verifies it offline with the keys published at /openid/v1/jwks.
 * Tokens are not stored; the kind is create-only.
 *
 * Claims: iss (--token-issuer), sub (the caller), uid and groups (the caller's, without kube's reserved `system:`
 * groups: a connected cluster must never read system:masters or system:authenticated from it), aud (direct cluster endpoints),
 * iat, nbf, exp (iat + ttl), jti (unique per token, for audit), and `scope`: spec.scope with the deprecated
 * allowPlatformCli (of spec or of spec.scope) as the role `platformCLI` and the rules of spec.rules and
 * spec.scope.rules carried together as `scope.rules`. A caller authenticated by an OwnedAccessKey gets
 * `management.platform.sh/access-key` ({name, uid, generation}: which value of which key), so the TokenReview webhook
 * (src/tokens/review.ts) can refuse the token once that value stops working, and an `exp` no later than that value's
 * end (a Warning says so). Other credentials (static tokens, client certificates, the host's TokenReview) carry no
 * such claim: their tokens live until `exp`. The spec narrows what the token grants, so an unknown or duplicate
 * field in it is refused whatever fieldValidation says (422).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { StructuralSchema } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import { accessKeyUseOf, type AccessKeyUse, type UserInfo } from '../apimachinery/user.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import { validateScopeAndRules } from '../kinds/ownedaccesskey/scope.js';
import { ACCESS_KEY_CLAIM, DIRECT_CLUSTER_ENDPOINT_AUDIENCE, MAX_SCOPE_ENTRIES } from '../tokens/claims.js';
import type { Signer } from '../tokens/signingkeys.js';
import type { ScopeRole } from '../access/scopespec.js';
import { answer, requestSchema, type Action, type ActionCall } from './action.js';

const RESOURCE = 'directclusterendpointtokens';
const KIND = 'DirectClusterEndpointToken';
/** Said (a `Warning` header) with every token: it is kept nowhere. */
export const TOKEN_SHOWN_ONCE_WARNING =
  "status.token is shown only in this answer and is kept nowhere: keep it now (kubectl create -f token.yaml -o jsonpath='{.status.token}')";
/** The lifetime of a token that asks for none. */
export const DEFAULT_TOKEN_TTL_SECONDS = 3600;
const CLI_ROLE = 'platformCLI';
/** Kubernetes' reserved prefix for users and groups (system:masters, system:authenticated, system:serviceaccount:…). */
const SYSTEM_PREFIX = 'system:';

export interface DirectTokenOptions {
  /** The `iss` of every token (--token-issuer). */
  issuer: string;
  /** Longer ttls are shortened to this (--token-max-ttl). */
  maxTtlSeconds: number;
  signer(): Promise<Signer>;
}

/** The request schema: ttl, and scope, rules and allowPlatformCli as OwnedAccessKeys have them. */
function tokenSchema(keyDefinition: ResourceDefinition | undefined): StructuralSchema {
  const keySpec = keyDefinition?.schema.properties?.spec?.properties ?? {};
  const spec: StructuralSchema = {
    type: 'object',
    properties: {
      ttl: { type: 'integer', format: 'int64' },
      scope: keySpec.scope,
      rules: keySpec.rules,
      allowPlatformCli: keySpec.allowPlatformCli,
    },
  };
  for (const [field, s] of Object.entries(spec.properties!))
    if (!s) throw new Error(`the OwnedAccessKey schema has no spec.${field} to share`);
  return requestSchema({ spec, status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } });
}

export function directClusterEndpointTokenAction(definitions: ResourceDefinition[], opts: DirectTokenOptions): Action {
  const action: Action = {
    group: GROUP_NAME,
    version: 'v1',
    resource: RESOURCE,
    subresource: '',
    kind: KIND,
    namespaced: false,
    verbs: ['create'],
    schema: tokenSchema(definitions.find((d) => d.group === GROUP_NAME && d.kind === 'OwnedAccessKey')),
    // A token's spec narrows what it grants: nothing in it is dropped unread (as an OwnedAccessKey's spec).
    restrictingFields: [['spec']],
    async serve(call: ActionCall): Promise<KubeObject> {
      const { user } = call;
      refuseUnissuable(user);
      const spec = (call.object!.spec ?? {}) as Record<string, unknown>;
      validateTokenSpec(spec);
      const iat = Math.floor(Date.now() / 1000);
      const key = accessKeyUseOf(user);
      const ttl = keyTtl(key, iat, tokenTtl(spec, opts.maxTtlSeconds, call.warnings), call.warnings);
      call.warnings.push(...deprecationWarnings(spec));
      const token = await signToken(opts, user, key, spec, iat, ttl);
      // Tokens are not stored: a plain `kubectl create -f` prints just a name, so the warning says so before the
      // token is lost.
      call.warnings.push(TOKEN_SHOWN_ONCE_WARNING);
      const { metadata } = call.object!;
      return answer(action, metadata, {
        spec: { ...spec, ttl },
        status: { token, expirationTimestamp: nowRFC3339(new Date((iat + ttl) * 1000)) },
      });
    },
  };
  return action;
}

/** 403 for a caller no token is given to. */
function refuseUnissuable(user: UserInfo): void {
  // The token would carry the caller's identity without the credential's restriction (as for access keys).
  if (user.restriction) {
    throw errors.forbidden(
      { group: GROUP_NAME, resource: RESOURCE },
      '',
      `User ${JSON.stringify(user.name)} cannot create resource "${RESOURCE}" in API group "${GROUP_NAME}" at the cluster scope: a credential with a scope or rules may not create tokens`,
    );
  }
  // kube reserves `system:` names for its own identities (service accounts, nodes, components): a connected
  // cluster mapping the token's subject directly would take it for one of them.
  if (user.name.startsWith(SYSTEM_PREFIX)) {
    throw errors.forbidden(
      { group: GROUP_NAME, resource: RESOURCE },
      '',
      `User ${JSON.stringify(user.name)} cannot create resource "${RESOURCE}" in API group "${GROUP_NAME}" at the cluster scope: names starting with "${SYSTEM_PREFIX}" are reserved for Kubernetes' own identities and are not given tokens for connected clusters`,
    );
  }
}

/** 422 for a spec whose scope, rules or ttl are not valid. */
function validateTokenSpec(spec: Record<string, unknown>): void {
  const errs: FieldError[] = validateScopeAndRules(spec, Path.root('spec'));
  if (typeof spec.ttl === 'number' && spec.ttl < 0)
    errs.push(
      fieldError.invalid(
        Path.root('spec').child('ttl'),
        spec.ttl,
        'must be greater than or equal to 0 (0 or absent: the default of 3600 seconds)',
      ),
    );
  errs.push(...tooLongLists(spec));
  if (errs.length) throw errors.invalid({ group: GROUP_NAME, kind: KIND }, '', errs);
}

/** A scope list or the rules with more than MAX_SCOPE_ENTRIES entries (each review of the token reads them). */
function tooLongLists(spec: Record<string, unknown>): FieldError[] {
  const at = Path.root('spec');
  const lists: Array<[Path, unknown]> = [[at.child('rules'), spec.rules]];
  if (isPlainObject(spec.scope))
    for (const [field, list] of Object.entries(spec.scope)) lists.push([at.child('scope').child(field), list]);
  return lists
    .filter(([, list]) => Array.isArray(list) && list.length > MAX_SCOPE_ENTRIES)
    .map(([path, list]) => fieldError.tooMany(path, (list as unknown[]).length, MAX_SCOPE_ENTRIES));
}

/** The token's lifetime (s): the one asked for (or the default), at most the server's; a warning if cut. */
function tokenTtl(spec: Record<string, unknown>, maxTtlSeconds: number, warnings: string[]): number {
  const ttl = typeof spec.ttl === 'number' && spec.ttl > 0 ? spec.ttl : DEFAULT_TOKEN_TTL_SECONDS;
  if (ttl <= maxTtlSeconds) return ttl;
  warnings.push(
    `spec.ttl ${ttl} is longer than this server issues tokens for; the token expires after ${maxTtlSeconds} seconds`,
  );
  return maxTtlSeconds;
}

/**
 * The lifetime left once capped at the end of the access key value the caller used (its key's expiry or a
 * rotation's grace), with a warning when that cuts it: the token would be refused from then on anyway.
 */
function keyTtl(key: AccessKeyUse | undefined, iat: number, ttl: number, warnings: string[]): number {
  if (key?.until === undefined) return ttl;
  const left = Math.max(1, Math.floor(key.until / 1000) - iat);
  if (left >= ttl) return ttl;
  warnings.push(
    `the token expires after ${left} seconds, at ${nowRFC3339(new Date((iat + left) * 1000))}, when the access key ${JSON.stringify(key.name)} it was asked with stops working`,
  );
  return left;
}

/** A warning for each deprecated field the spec sets. */
function deprecationWarnings(spec: Record<string, unknown>): string[] {
  const warnings: string[] = [];
  const given = isPlainObject(spec.scope) ? spec.scope : {};
  for (const [field, value] of [
    ['spec.allowPlatformCli', spec.allowPlatformCli],
    ['spec.scope.allowPlatformCli', given.allowPlatformCli],
  ])
    if (value !== undefined)
      warnings.push(`${field} is deprecated; use a spec.scope.roles entry with role "${CLI_ROLE}"`);
  for (const [field, value] of [
    ['spec.rules', spec.rules],
    ['spec.scope.rules', given.rules],
  ])
    if (value !== undefined)
      warnings.push(
        `${field} is deprecated; use spec.scope.projects, spec.scope.spaces and spec.scope.virtualClusters`,
      );
  return warnings;
}

/**
 * The signed JWT, issued at `iat` (in seconds): the caller as subject with its groups (but `system:` ones) and uid,
 * the access key value it used if any, and the spec's scope if any.
 */
async function signToken(
  opts: DirectTokenOptions,
  user: UserInfo,
  key: AccessKeyUse | undefined,
  spec: Record<string, unknown>,
  iat: number,
  ttl: number,
): Promise<string> {
  const signer = await opts.signer();
  const scope = tokenScope(spec);
  const claims: Record<string, unknown> = { groups: user.groups.filter((g) => !g.startsWith(SYSTEM_PREFIX)) };
  if (user.uid) claims.uid = user.uid;
  if (key) claims[ACCESS_KEY_CLAIM] = { name: key.name, uid: key.uid, generation: key.generation };
  if (scope) claims.scope = scope;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'JWT' })
    .setIssuer(opts.issuer)
    .setSubject(user.name)
    .setAudience([DIRECT_CLUSTER_ENDPOINT_AUDIENCE])
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(iat + ttl)
    .setJti(randomUUID())
    .sign(signer.key);
}

/**
 * spec.scope with the deprecated fields of both placements mapped in (allowPlatformCli as the role, the rules of
 * spec.rules and spec.scope.rules as one list); undefined when the token is not narrowed at all.
 */
function tokenScope(spec: Record<string, unknown>): Record<string, unknown> | undefined {
  const {
    allowPlatformCli,
    rules: scopeRules,
    ...scope
  }: { roles?: ScopeRole[]; [field: string]: unknown } = isPlainObject(spec.scope) ? spec.scope : {};
  const cli = spec.allowPlatformCli === true || allowPlatformCli === true;
  if (cli && !(scope.roles ?? []).some((r) => r.role === CLI_ROLE && !r.projects?.length && !r.virtualClusters?.length))
    scope.roles = [...(scope.roles ?? []), { role: CLI_ROLE }];
  const rules = [spec.rules, scopeRules].flatMap((r) => (Array.isArray(r) ? r : []));
  if (rules.length) scope.rules = rules;
  const narrowed = Object.values(scope).some((v) => !Array.isArray(v) || v.length > 0);
  return narrowed ? scope : undefined;
}
