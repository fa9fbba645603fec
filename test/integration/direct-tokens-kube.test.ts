/**
 * The AuthenticationConfiguration docs/api.md gives for a connected cluster's kube-apiserver, read from the doc
 * itself and filled in as the doc says (this server's issuer and CA), loaded the way kube-apiserver's JWT
 * authenticator loads it (test/support/kubejwt.ts: discovery and keys fetched from the running server over TLS
 * trusting only that CA) and given real DirectClusterEndpointTokens: the user it answers is the one the doc says a
 * cluster sees, and the tokens a user would expect refused (expired, another issuer, another installation's keys,
 * another audience, a scope naming other clusters or more than clusters) are refused.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';
import yaml from 'js-yaml';
import { API_VERSION } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { loadJwtAuthenticator, type AuthenticationResult, type JWTAuthenticatorConfig } from '../support/kubejwt.js';

const DOC = new URL('../../docs/api.md', import.meta.url);
/** What the doc's example holds where the admin puts this server's issuer, its CA and the Cluster's name. */
const EXAMPLE_ISSUER = 'https://platform.example.com';
const THIS_CLUSTER = 'eu-1';
const TOKEN_ID = 'management.platform.sh/token-id';

let etcd: TestEtcd;
let ts: TestServer;
let usersDir: string;
const as: Record<string, HttpClient> = {};

beforeAll(async () => {
  etcd = await startTestEtcd();
  // bob and root have uids; carol, like a client-certificate user, has none.
  usersDir = mkdtempSync(join(tmpdir(), 'kube-jwt-users-'));
  const users: Array<[string, string, string]> = [
    ['bob', 'uid-bob', 'platform:team:dev'],
    ['root', 'uid-root', 'system:masters,platform:team:ops'],
    ['carol', '', 'platform:team:dev'],
  ];
  const tokens = Object.fromEntries(users.map(([name]) => [name, `${name}-${randomUUID()}`]));
  const tokenAuthFile = join(usersDir, 'tokens.csv');
  writeFileSync(
    tokenAuthFile,
    users.map(([name, uid, groups]) => `${tokens[name]},${name},${uid},"${groups}"\n`).join(''),
    { mode: 0o600 },
  );
  ts = await startTestServer({ tokenAuthFile }, etcd);
  for (const [name] of users) as[name] = ts.client(tokens[name]);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await etcd?.stop();
  if (usersDir) rmSync(usersDir, { recursive: true, force: true });
}, 60_000);

/** The doc's AuthenticationConfiguration, as an admin pastes it. */
function documentedConfiguration(): { apiVersion: string; kind: string; jwt: JWTAuthenticatorConfig[] } {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((b) => /^kind: AuthenticationConfiguration$/m.test(b));
  expect(found).toHaveLength(1);
  return yaml.load(found[0]) as { apiVersion: string; kind: string; jwt: JWTAuthenticatorConfig[] };
}

/** The doc's jwt entry filled in as the doc says: this server's issuer (its URL by default) and its CA. */
function filledIn(): JWTAuthenticatorConfig {
  const [jwt] = documentedConfiguration().jwt;
  expect(jwt.issuer.url).toBe(EXAMPLE_ISSUER);
  expect(jwt.issuer.certificateAuthority).toContain('-----BEGIN CERTIFICATE-----');
  return { ...jwt, issuer: { ...jwt.issuer, url: ts.server.url, certificateAuthority: ts.server.caPem } };
}

async function issue(client: HttpClient, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post(`${GROUP_PATH}/directclusterendpointtokens`, {
    apiVersion: API_VERSION,
    kind: 'DirectClusterEndpointToken',
    spec,
  });
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body.status.token;
}

function refusedWith(result: AuthenticationResult, text: string): void {
  expect(result).toEqual({ error: expect.stringContaining(text) });
}

describe('the documented configuration', () => {
  test('is an AuthenticationConfiguration of a version kube-apiserver 1.30 to 1.34 reads, with one jwt authenticator for this audience', () => {
    const config = documentedConfiguration();
    expect(config).toMatchObject({
      apiVersion: 'apiserver.config.k8s.io/v1beta1',
      kind: 'AuthenticationConfiguration',
    });
    expect(config.jwt).toHaveLength(1);
    expect(config.jwt[0].issuer.audiences).toEqual(['management.platform.sh/direct-cluster-endpoint']);
  });

  test("loads against the running server: discovery's issuer is the url, and the keys come over TLS trusting only the given CA", async () => {
    await expect(loadJwtAuthenticator(filledIn())).resolves.toBeDefined();
    // Without the CA the cluster would trust only its host's roots, which never signed this server's certificate.
    const { certificateAuthority: _ca, ...withoutCa } = filledIn().issuer;
    await expect(loadJwtAuthenticator({ ...filledIn(), issuer: withoutCa })).rejects.toThrow(/certificate/);
    // An issuer written differently from the tokens' iss (a trailing slash) does not match discovery's issuer.
    await expect(
      loadJwtAuthenticator({ ...filledIn(), issuer: { ...filledIn().issuer, url: `${ts.server.url}/` } }),
    ).rejects.toThrow('issuer did not match');
  });
});

describe('what a cluster sees', () => {
  test('the caller, its uid, its groups without system: ones, and the token id', async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    const token = await issue(as.bob, { ttl: 600 });
    expect(await authenticator.authenticate(token)).toEqual({
      user: {
        username: 'bob',
        uid: 'uid-bob',
        groups: ['platform:team:dev'],
        extra: { [TOKEN_ID]: [decodeJwt(token).jti] },
      },
    });
    const root = await authenticator.authenticate(await issue(as.root));
    expect(root).toMatchObject({ user: { username: 'root', uid: 'uid-root', groups: ['platform:team:ops'] } });
  });

  test('a caller without a uid is still authenticated, with an empty uid', async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    const token = await issue(as.carol);
    expect(decodeJwt(token).uid).toBeUndefined();
    expect(await authenticator.authenticate(token)).toMatchObject({
      user: { username: 'carol', uid: '', groups: ['platform:team:dev'] },
    });
  });

  test('a token narrowed to this cluster, or to every cluster, is accepted', async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    for (const scope of [
      { clusters: [{ cluster: THIS_CLUSTER }] },
      { clusters: [{ cluster: 'eu-2' }, { cluster: THIS_CLUSTER }] },
      { clusters: [{ cluster: '*' }] },
      { clusters: [{ cluster: THIS_CLUSTER }], projects: [] },
    ])
      expect({ scope, result: await authenticator.authenticate(await issue(as.bob, { scope })) }).toMatchObject({
        scope,
        result: { user: { username: 'bob' } },
      });
  });
});

describe('what a cluster refuses', () => {
  test('a token narrowed to other clusters, or by what kube-apiserver cannot enforce', async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    for (const spec of [
      { scope: { clusters: [{ cluster: 'eu-2' }] } },
      { scope: { clusters: [{ cluster: THIS_CLUSTER }], projects: [{ project: 'web' }] } },
      { scope: { projects: [{ project: 'web' }] } },
      { allowPlatformCli: true },
      { rules: [{ cluster: THIS_CLUSTER, verbs: ['get'] }] },
    ])
      refusedWith(
        await authenticator.authenticate(await issue(as.bob, spec)),
        "failed: the token's scope does not let it reach this cluster",
      );
  });

  test('an expired token', async () => {
    const token = await issue(as.bob, { ttl: 600 });
    const { exp } = decodeJwt(token);
    const at = (seconds: number) => loadJwtAuthenticator(filledIn(), () => new Date(seconds * 1000));
    refusedWith(await (await at(exp! + 1)).authenticate(token), 'token is expired');
    expect(await (await at(exp! - 5)).authenticate(token)).toMatchObject({ user: { username: 'bob' } });
  });

  test("another issuer's token is not this authenticator's; another installation's token claiming this issuer fails its signature", async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    const elsewhere = await startTestServer({ tokenIssuer: 'https://platform.other.example' }, etcd);
    const impostor = await startTestServer({ tokenIssuer: ts.server.url }, etcd);
    try {
      expect(await authenticator.authenticate(await issue(elsewhere.admin))).toEqual({ notThisIssuer: true });
      const claimed = await issue(impostor.admin);
      expect(decodeJwt(claimed).iss).toBe(ts.server.url);
      refusedWith(await authenticator.authenticate(claimed), 'failed to verify signature');
    } finally {
      await elsewhere.stop();
      await impostor.stop();
    }
  });

  test("a token for another audience, even signed with this server's own key", async () => {
    const authenticator = await loadJwtAuthenticator(filledIn());
    const real = await issue(as.bob);
    const kv = new Etcd3({ hosts: etcd.endpoint });
    let stored: { keys: Array<{ kid: string; privateJwk: Record<string, string> }> };
    try {
      stored = JSON.parse(
        (await kv.get(`${ts.config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`).string()) ?? '',
      );
    } finally {
      kv.close();
    }
    const { kid } = decodeProtectedHeader(real);
    const key = stored.keys.find((k) => k.kid === kid)!;
    const otherAudience = await new SignJWT({ ...decodeJwt(real), aud: ['some-other-service'] })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
      .sign(await importJWK(key.privateJwk, 'ES256'));
    refusedWith(await authenticator.authenticate(otherAudience), 'expected audience');
    // The same claims with the right audience pass: only the audience was wrong.
    const sameAudience = await new SignJWT(decodeJwt(real))
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
      .sign(await importJWK(key.privateJwk, 'ES256'));
    expect(await authenticator.authenticate(sameAudience)).toMatchObject({ user: { username: 'bob' } });
  });
});
