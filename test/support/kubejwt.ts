/**
 * What kube-apiserver's JWT authenticator does with one `jwt` entry of an AuthenticationConfiguration
 * (--authentication-config), step by step, so that a test can hold a documented configuration against real tokens
 * of a real server. It follows kubernetes/kubernetes
 * staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/oidc/oidc.go (New, AuthenticateToken, getUsername,
 * getGroups, getUID, getExtra), the checks of staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation/validation.go
 * (validateJWTAuthenticator) and go-oidc v2's NewProvider and IDTokenVerifier.Verify, which oidc.go calls:
 *
 *   load:  the configuration's rules (https issuer, audiences, prefix beside claim, extra keys, CEL compiles);
 *          discovery from `discoveryURL` or `{url}/.well-known/openid-configuration`, whose `issuer` must equal
 *          `url`; the keys from its `jwks_uri`; both over TLS trusting only `certificateAuthority` when it is set
 *          (the host's roots otherwise), as kube's HTTP client does.
 *   token: an `iss` other than `url` is not this authenticator's (another may take it); then go-oidc's checks in its
 *          order: iss, aud (any of `audiences`: MatchAny), exp (no leeway), nbf (one minute), alg (kube allows every
 *          RS/ES/PS alg with structured configuration), the signature with the published keys (fetched again once
 *          for a key it does not know); then the claim mappings, required claims, claimValidationRules and
 *          userValidationRules.
 *
 * Not modelled: distributed claims, egress selectors, the group `system:authenticated` kube-apiserver adds to every
 * authenticated user after this authenticator, and kube's CEL cost limits. CEL is @bufbuild/cel with `claims` and
 * `user` as kube declares them (a map of the token's claims; username, uid, groups, extra).
 */
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { celEnv, isCelError, isCelList, parse, plan, type CelInput } from '@bufbuild/cel';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import { toCelValue } from '../../src/apimachinery/cel/cel.js';

/** The fields of a `jwt` entry (apiserver.config.k8s.io/v1beta1 and v1 have the same). */
export interface JWTAuthenticatorConfig {
  issuer: {
    url: string;
    discoveryURL?: string;
    certificateAuthority?: string;
    audiences: string[];
    audienceMatchPolicy?: string;
  };
  claimValidationRules?: { claim?: string; requiredValue?: string; expression?: string; message?: string }[];
  claimMappings: {
    username: PrefixedClaimOrExpression;
    groups?: PrefixedClaimOrExpression;
    uid?: { claim?: string; expression?: string };
    extra?: { key: string; valueExpression: string }[];
  };
  userValidationRules?: { expression: string; message?: string }[];
}

interface PrefixedClaimOrExpression {
  claim?: string;
  prefix?: string;
  expression?: string;
}

/** The user kube-apiserver's JWT authenticator answers (before the union adds system:authenticated). */
export interface KubeUser {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export type AuthenticationResult =
  /** The token is this issuer's and valid: the user. */
  | { user: KubeUser }
  /** The token names another issuer: this authenticator passes (kube then tries its other authenticators). */
  | { notThisIssuer: true }
  /** The token is this issuer's but refused: kube answers 401 and logs this error. */
  | { error: string };

/** kube's allowedSigningAlgs: all of them are allowed with structured authentication configuration. */
const SIGNING_ALGS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];
/** go-oidc's allowance for an nbf slightly in the future. */
const NBF_LEEWAY_S = 60;
/** kube's client timeout for discovery and keys. */
const FETCH_TIMEOUT_MS = 30_000;

const env = celEnv();
type Program = (vars: Record<string, CelInput>) => unknown;

/** Loads the configuration as kube-apiserver does at start (or reload); throws what kube would refuse it for. */
export async function loadJwtAuthenticator(
  config: JWTAuthenticatorConfig,
  now: () => Date = () => new Date(),
): Promise<{ authenticate(token: string): Promise<AuthenticationResult> }> {
  const { issuer, claimMappings: mappings } = config;
  const compiled = validate(config);

  const discoveryURL = issuer.discoveryURL || `${issuer.url.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const discovery = (await getJson(discoveryURL, issuer.certificateAuthority)) as {
    issuer?: string;
    jwks_uri?: string;
  };
  if (discovery.issuer !== issuer.url)
    throw new Error(
      `oidc: issuer did not match the issuer returned by provider, expected "${issuer.url}" got "${discovery.issuer}"`,
    );
  if (!discovery.jwks_uri) throw new Error('oidc: discovery document has no jwks_uri');
  const jwksUri = discovery.jwks_uri;
  let keys = createLocalJWKSet((await getJson(jwksUri, issuer.certificateAuthority)) as JSONWebKeySet);

  return {
    async authenticate(token: string): Promise<AuthenticationResult> {
      const fail = (error: string) => ({ error });
      // hasCorrectIssuer: a token of another issuer is left to the other authenticators.
      const untrusted = payloadOf(token);
      if (!untrusted || untrusted.iss !== issuer.url) return { notThisIssuer: true };
      const claims = untrusted;

      // go-oidc's IDTokenVerifier.Verify, in its order.
      const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
      if (!issuer.audiences.some((a) => aud.includes(a)))
        return fail(`oidc: expected audience in ${JSON.stringify(issuer.audiences)} got ${JSON.stringify(aud)}`);
      const nowS = now().getTime() / 1000;
      if (typeof claims.exp !== 'number' || claims.exp < nowS) return fail('oidc: token is expired');
      if (typeof claims.nbf === 'number' && nowS + NBF_LEEWAY_S < claims.nbf)
        return fail('oidc: current time before the nbf (not before) time');
      const { alg } = decodeProtectedHeader(token);
      if (!alg || !SIGNING_ALGS.includes(alg)) return fail(`oidc: id token signed with unsupported algorithm ${alg}`);
      try {
        await compactVerify(token, keys, { algorithms: SIGNING_ALGS });
      } catch {
        // go-oidc's remote key set fetches the keys again before it gives up on a signature.
        keys = createLocalJWKSet((await getJson(jwksUri, issuer.certificateAuthority)) as JSONWebKeySet);
        try {
          await compactVerify(token, keys, { algorithms: SIGNING_ALGS });
        } catch (err) {
          return fail(`failed to verify signature: ${(err as Error).message}`);
        }
      }

      const vars = { claims: toCelValue(claims) } as Record<string, CelInput>;
      try {
        const user: KubeUser = {
          username: prefixed(mappings.username, claims, vars, compiled.username, 'username'),
          groups: groupsOf(mappings.groups, claims, vars, compiled.groups),
          uid: uidOf(mappings.uid, claims, vars, compiled.uid),
          extra: {},
        };
        for (const [key, program] of compiled.extra) {
          const values = stringList(run(program, vars), `extra ${key}`);
          if (values.length) user.extra[key] = values;
        }
        for (const rule of config.claimValidationRules ?? [])
          if (rule.claim) {
            if (!(rule.claim in claims)) return fail(`oidc: required claim ${rule.claim} not present in ID token`);
            if (claims[rule.claim] !== (rule.requiredValue ?? ''))
              return fail(`oidc: required claim ${rule.claim} value does not match`);
          }
        for (const [rule, program] of compiled.claimValidation)
          if (!mustBeBool(run(program, vars)))
            return fail(
              `oidc: error evaluating claim validation expression: validation expression '${rule.expression}' failed: ${rule.message ?? ''}`,
            );
        const userVars = { user: toCelValue(user) } as Record<string, CelInput>;
        for (const [rule, program] of compiled.userValidation)
          if (!mustBeBool(run(program, userVars)))
            return fail(
              `oidc: error evaluating user info validation rule: validation expression '${rule.expression}' failed: ${rule.message ?? ''}`,
            );
        return { user };
      } catch (err) {
        return fail((err as Error).message);
      }
    },
  };
}

interface Compiled {
  username?: Program;
  groups?: Program;
  uid?: Program;
  extra: [string, Program][];
  claimValidation: [{ expression: string; message?: string }, Program][];
  userValidation: [{ expression: string; message?: string }, Program][];
}

/** validateJWTAuthenticator: the rules kube-apiserver refuses a configuration for, and the CEL it compiles. */
function validate(config: JWTAuthenticatorConfig): Compiled {
  const errs: string[] = [];
  const compile = (expression: string, field: string): Program => {
    try {
      return plan(env, parse(expression)) as Program;
    } catch (err) {
      errs.push(`${field}: ${(err as Error).message}`);
      return () => false;
    }
  };
  const { issuer, claimMappings: m } = config;
  for (const [field, value] of [
    ['issuer.url', issuer.url],
    ['issuer.discoveryURL', issuer.discoveryURL],
  ] as const) {
    if (!value) {
      if (field === 'issuer.url') errs.push('issuer.url: required');
      continue;
    }
    const u = URL.canParse(value) ? new URL(value) : undefined;
    if (!u || u.protocol !== 'https:') errs.push(`${field}: URL scheme must be https`);
    else if (u.username || u.password || u.search || u.hash)
      errs.push(`${field}: URL must not contain a username, password, query or fragment`);
  }
  if (!issuer.audiences?.length || issuer.audiences.some((a) => !a)) errs.push('issuer.audiences: required');
  if (issuer.audienceMatchPolicy && issuer.audienceMatchPolicy !== 'MatchAny')
    errs.push('issuer.audienceMatchPolicy: must be MatchAny (or empty for a single audience)');
  if (issuer.audiences?.length > 1 && issuer.audienceMatchPolicy !== 'MatchAny')
    errs.push('issuer.audienceMatchPolicy: audienceMatchPolicy must be MatchAny for multiple audiences');
  if (issuer.certificateAuthority !== undefined && !certificates(issuer.certificateAuthority).length)
    errs.push('issuer.certificateAuthority: data does not contain any valid RSA or ECDSA certificates');

  const c: Compiled = { extra: [], claimValidation: [], userValidation: [] };
  for (const [name, mapping, required] of [
    ['username', m?.username, true],
    ['groups', m?.groups, false],
  ] as const) {
    const field = `claimMappings.${name}`;
    if (mapping?.claim && mapping.expression) errs.push(`${field}: claim and expression can't both be set`);
    else if (mapping?.expression) {
      if (mapping.prefix !== undefined) errs.push(`${field}.prefix: may not be specified when expression is set`);
      c[name] = compile(mapping.expression, `${field}.expression`);
    } else if (mapping?.claim) {
      if (mapping.prefix === undefined) errs.push(`${field}.prefix: prefix is required when claim is set`);
    } else if (required) errs.push(`${field}: claim or expression is required`);
  }
  if (m?.uid?.claim && m.uid.expression) errs.push("claimMappings.uid: claim and expression can't both be set");
  else if (m?.uid?.expression) c.uid = compile(m.uid.expression, 'claimMappings.uid.expression');
  for (const [i, { key, valueExpression }] of (m?.extra ?? []).entries()) {
    const field = `claimMappings.extra[${i}]`;
    const domain = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(domain) || !domain.includes('.') || key.endsWith('/'))
      errs.push(`${field}.key: must be a domain-prefixed path (such as "acme.io/foo")`);
    if (key !== key.toLowerCase()) errs.push(`${field}.key: must be lowercase`);
    if (/(^|\.)(kubernetes\.io|k8s\.io)$/.test(domain))
      errs.push(`${field}.key: k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use`);
    if (!valueExpression) errs.push(`${field}.valueExpression: required`);
    else c.extra.push([key, compile(valueExpression, `${field}.valueExpression`)]);
  }
  for (const [i, rule] of (config.claimValidationRules ?? []).entries()) {
    const field = `claimValidationRules[${i}]`;
    if (rule.claim && rule.expression) errs.push(`${field}: claim and expression can't both be set`);
    else if (rule.claim && rule.message) errs.push(`${field}.message: may not be specified when claim is set`);
    else if (rule.expression && rule.requiredValue)
      errs.push(`${field}.requiredValue: may not be specified when expression is set`);
    else if (rule.expression)
      c.claimValidation.push([
        { expression: rule.expression, message: rule.message },
        compile(rule.expression, `${field}.expression`),
      ]);
    else if (!rule.claim) errs.push(`${field}: claim or expression is required`);
  }
  for (const [i, rule] of (config.userValidationRules ?? []).entries()) {
    if (!rule.expression) errs.push(`userValidationRules[${i}].expression: required`);
    else c.userValidation.push([rule, compile(rule.expression, `userValidationRules[${i}].expression`)]);
  }
  if (errs.length) throw new Error(`invalid jwt authenticator: ${errs.join('; ')}`);
  return c;
}

function prefixed(
  mapping: PrefixedClaimOrExpression,
  claims: Record<string, unknown>,
  vars: Record<string, CelInput>,
  program: Program | undefined,
  what: string,
): string {
  if (program) {
    const value = run(program, vars);
    if (typeof value !== 'string')
      throw new Error(`oidc: error evaluating ${what} claim expression: must return a string`);
    return value;
  }
  const value = claims[mapping.claim!];
  if (typeof value !== 'string') throw new Error(`oidc: parse ${what} claims "${mapping.claim}": not a string`);
  if (mapping.claim === 'email' && 'email_verified' in claims && claims.email_verified !== true)
    throw new Error('oidc: email not verified');
  return (mapping.prefix ?? '') + value;
}

/** getGroups: the claim (a string or a list of strings) with its prefix when present, else the expression. */
function groupsOf(
  mapping: PrefixedClaimOrExpression | undefined,
  claims: Record<string, unknown>,
  vars: Record<string, CelInput>,
  program: Program | undefined,
): string[] {
  if (mapping?.claim && mapping.claim in claims) {
    const value = claims[mapping.claim];
    const groups = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string'))
      throw new Error(`oidc: parse groups claim "${mapping.claim}": not a string or a list of strings`);
    return groups.map((g) => (mapping.prefix ?? '') + g);
  }
  return program ? stringList(run(program, vars), 'group') : [];
}

/** getUID: the claim must be present and a string; an expression must give a string. */
function uidOf(
  mapping: { claim?: string } | undefined,
  claims: Record<string, unknown>,
  vars: Record<string, CelInput>,
  program: Program | undefined,
): string {
  if (mapping?.claim) {
    const value = claims[mapping.claim];
    if (typeof value !== 'string') throw new Error(`oidc: parse uid claim "${mapping.claim}": claim not present`);
    return value;
  }
  if (!program) return '';
  const value = run(program, vars);
  if (typeof value !== 'string') throw new Error('oidc: error evaluating uid claim expression: must return a string');
  return value;
}

function run(program: Program, vars: Record<string, CelInput>): unknown {
  const value = program(vars);
  if (isCelError(value)) throw new Error(`oidc: error evaluating expression: ${value.message}`);
  return value;
}

function mustBeBool(value: unknown): boolean {
  if (typeof value !== 'boolean') throw new Error('validation expression must return a boolean');
  return value;
}

/** convertCELValueToStringList: a string or a list of strings; "" and [] are nothing, "" in a list is dropped. */
function stringList(value: unknown, what: string): string[] {
  if (value === null) return [];
  if (typeof value === 'string') return value ? [value] : [];
  if (isCelList(value)) {
    const items = [...value];
    if (items.some((v) => typeof v !== 'string'))
      throw new Error(
        `oidc: error evaluating ${what} claim expression: expression must return a string or a list of strings`,
      );
    return (items as string[]).filter((v) => v);
  }
  throw new Error(
    `oidc: error evaluating ${what} claim expression: expression must return a string or a list of strings`,
  );
}

/** The payload of a compact JWT, unverified (kube's untrustedIssuer); undefined when it is not one. */
function payloadOf(token: string): Record<string, unknown> | undefined {
  const parts = token.trim().startsWith('{') ? [] : token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString());
    return payload && typeof payload === 'object' ? payload : undefined;
  } catch {
    return undefined;
  }
}

/** The certificates of a PEM bundle (cert.NewPoolFromBytes). */
function certificates(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const certs: X509Certificate[] = [];
  for (const block of blocks) {
    try {
      certs.push(new X509Certificate(block));
    } catch {
      // kube skips what does not parse; a bundle with no certificate at all is refused above.
    }
  }
  return certs;
}

/** A GET over TLS trusting only `ca` when given (kube's client for discovery and keys); a 200 JSON answer. */
function getJson(url: string, ca: string | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', ca, timeout: FETCH_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}: ${text}`));
        try {
          resolve(JSON.parse(text));
        } catch {
          reject(new Error(`GET ${url}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}
