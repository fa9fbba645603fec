/**
 * DirectClusterEndpointTokens: POST answers a JWT that a connected cluster verifies offline with the keys this
 * server publishes (/openid/v1/jwks, found through /.well-known/openid-configuration), checked here with jose as a
 * verifier would: issuer, audience, lifetime, caller, scope; expired and tampered tokens fail. Tokens are not
 * stored and the kind is create-only. Two replicas sign with one key set; a rotated key stays verifiable.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { TOKEN_SHOWN_ONCE_WARNING } from '../../src/actions/directclusterendpointtoken.js';
import { API_VERSION } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const AUDIENCE = 'management.platform.sh/direct-cluster-endpoint';
const TOKENS_PATH = `${GROUP_PATH}/directclusterendpointtokens`;

let etcd: TestEtcd;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let deployer: HttpClient;

beforeAll(async () => {
  etcd = await startTestEtcd();
  const server = await startTestServerWithUsers(
    {
      root: ['system:masters', 'platform:team:ops'],
      bob: ['platform:team:dev'],
      'system:serviceaccount:ci:deployer': ['system:serviceaccounts', 'deployers'],
    },
    { tokenMaxTtlMs: 2 * 3600_000 },
    etcd,
  );
  ({ root, bob, 'system:serviceaccount:ci:deployer': deployer } = server.as);
  ts = server;
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await etcd?.stop();
}, 60_000);

function tokenBody(spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec };
}

async function issue(
  client: HttpClient,
  spec: Record<string, unknown> = {},
): Promise<{ token: string; body: any; headers: Record<string, unknown> }> {
  const res = await client.post(TOKENS_PATH, tokenBody(spec));
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return { token: res.body.status.token, body: res.body, headers: res.headers };
}

/** What a connected cluster does: fetch the discovery document and the keys, anonymously, then verify. */
async function verifierOf(server: TestServer) {
  const discovery = await server.anonymous.get('/.well-known/openid-configuration');
  expect(discovery.status).toBe(200);
  const jwks = await server.anonymous.get(new URL(discovery.body.jwks_uri).pathname);
  expect(jwks.status).toBe(200);
  const keySet = createLocalJWKSet(jwks.body);
  return {
    issuer: discovery.body.issuer as string,
    keys: jwks.body.keys as any[],
    verify: (token: string, currentDate?: Date) =>
      jwtVerify(token, keySet, { issuer: discovery.body.issuer, audience: AUDIENCE, currentDate }),
  };
}

describe('issuing and verifying', () => {
  test('the token names the caller, its groups, the audience and the lifetime, and verifies with the published keys', async () => {
    const { token, body, headers } = await issue(bob, { ttl: 900 });
    expect(headers['cache-control']).toBe('no-store');
    expect(body).toMatchObject({ apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec: { ttl: 900 } });
    const verifier = await verifierOf(ts);
    expect(verifier.issuer).toBe(ts.server.url);
    const { payload, protectedHeader } = await verifier.verify(token);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'JWT' });
    expect(verifier.keys.map((k) => k.kid)).toContain(protectedHeader.kid);
    expect(payload).toMatchObject({ iss: ts.server.url, sub: 'bob', uid: 'uid-bob', aud: [AUDIENCE] });
    expect(payload.groups).toEqual(['platform:team:dev']);
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(payload.nbf).toBe(payload.iat);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(30);
    expect(payload.scope).toBeUndefined();
    expect(typeof payload.jti).toBe('string');
    expect(Date.parse(body.status.expirationTimestamp) / 1000).toBe(payload.exp);
  });

  test('the published keys hold no private parts, and the discovery document is what kube-apiserver publishes', async () => {
    const discovery = await ts.anonymous.get('/.well-known/openid-configuration');
    expect(discovery.headers['content-type']).toMatch(/^application\/json/);
    expect(discovery.body).toEqual({
      issuer: ts.server.url,
      jwks_uri: `${ts.server.url}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
    });
    const jwks = await ts.anonymous.get('/openid/v1/jwks');
    expect(jwks.headers['content-type']).toMatch(/^application\/jwk-set\+json/);
    expect(jwks.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
    for (const key of jwks.body.keys) {
      expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    }
    // Also under the direct prefix, as clients outside the aggregator reach this server.
    expect((await ts.anonymous.get('/orchestrator/management/openid/v1/jwks')).body).toEqual(jwks.body);
  });

  test('an expired token fails verification', async () => {
    const { token } = await issue(root, { ttl: 600 });
    const verifier = await verifierOf(ts);
    const { payload } = await verifier.verify(token);
    await expect(verifier.verify(token, new Date((payload.exp! + 1) * 1000))).rejects.toMatchObject({
      code: 'ERR_JWT_EXPIRED',
    });
    await expect(verifier.verify(token, new Date((payload.exp! - 5) * 1000))).resolves.toBeDefined();
  });

  test('a tampered token fails verification', async () => {
    const { token } = await issue(bob, { ttl: 600 });
    const verifier = await verifierOf(ts);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as JWTPayload;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'root', groups: ['system:masters'] })).toString(
      'base64url',
    );
    await expect(verifier.verify(`${header}.${forged}.${signature}`)).rejects.toMatchObject({
      code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    });
    const unsigned = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    await expect(verifier.verify(`${unsigned}.${payload}.`)).rejects.toThrow();
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(verifier.verify(`${header}.${payload}.${flipped}`)).rejects.toThrow();
  });

  test('a token of another installation is not verified by these keys', async () => {
    const other = await startTestServer({}, etcd);
    try {
      const { token } = await issue(other.admin, { ttl: 600 });
      const verifier = await verifierOf(ts);
      await expect(
        jwtVerify(token, createLocalJWKSet({ keys: verifier.keys }), { audience: AUDIENCE }),
      ).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
    } finally {
      await other.stop();
    }
  });
});

describe('lifetime and scope', () => {
  test('no ttl or 0: one hour; longer than --token-max-ttl: shortened, with a warning', async () => {
    const verifier = await verifierOf(ts);
    for (const spec of [{}, { ttl: 0 }]) {
      const { token, body, headers } = await issue(root, spec);
      const { payload } = await verifier.verify(token);
      expect(payload.exp! - payload.iat!).toBe(3600);
      expect(body.spec.ttl).toBe(3600);
      // The token is kept nowhere: the answer says so.
      expect(headers.warning).toBe(`299 - ${JSON.stringify(TOKEN_SHOWN_ONCE_WARNING)}`);
    }
    const { token, body, headers } = await issue(root, { ttl: 10 * 3600 });
    expect((await verifier.verify(token)).payload.exp! - (await verifier.verify(token)).payload.iat!).toBe(7200);
    expect(body.spec.ttl).toBe(7200);
    expect(headers.warning).toBe(
      `299 - "spec.ttl 36000 is longer than this server issues tokens for; the token expires after 7200 seconds", 299 - ${JSON.stringify(TOKEN_SHOWN_ONCE_WARNING)}`,
    );
  });

  test('the scope is carried; the deprecated allowPlatformCli and rules are mapped into it, with warnings', async () => {
    const verifier = await verifierOf(ts);
    const scope = { projects: [{ project: 'web' }], clusters: [{ cluster: 'eu-1' }] };
    expect((await verifier.verify((await issue(bob, { scope })).token)).payload.scope).toEqual(scope);

    const rules = [{ verbs: ['get'], resources: [{ group: '', resources: ['pods'] }], namespaces: ['web'] }];
    const res = await issue(bob, { scope: { projects: [{ project: 'web' }] }, allowPlatformCli: true, rules });
    expect((await verifier.verify(res.token)).payload.scope).toEqual({
      projects: [{ project: 'web' }],
      roles: [{ role: 'platformCLI' }],
      rules,
    });
    const warnings = String(res.headers.warning);
    expect(warnings).toContain(
      'spec.allowPlatformCli is deprecated; use a spec.scope.roles entry with role \\"platformCLI\\"',
    );
    expect(warnings).toContain('spec.rules is deprecated');
    // platformCLI already asked for is not repeated.
    const again = await issue(bob, { scope: { roles: [{ role: 'platformCLI' }] }, allowPlatformCli: true });
    expect((await verifier.verify(again.token)).payload.scope).toEqual({ roles: [{ role: 'platformCLI' }] });
  });

  test('a request without kind or apiVersion is 400 as kube answers for custom resources; no token', async () => {
    for (const body of [{ spec: { ttl: 600 } }, {}, { apiVersion: API_VERSION, spec: {} }]) {
      const res = await root.post(TOKENS_PATH, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        reason: 'BadRequest',
        message: "Object 'Kind' is missing in 'object has no kind field '",
      });
    }
    const res = await root.post(TOKENS_PATH, { kind: 'DirectClusterEndpointToken', spec: {} });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(
      'the API version in the data () does not match the expected API version (management.platform.sh/v1)',
    );
    expect(res.body.status?.token).toBeUndefined();
  });

  test.each([
    ['a negative ttl', { ttl: -1 }, 'spec.ttl', 'FieldValueInvalid'],
    ['a ttl that is not a number', { ttl: '1h' }, 'spec.ttl', 'FieldValueTypeInvalid'],
    [
      'a project entry without its project',
      { scope: { projects: [{}] } },
      'spec.scope.projects[0].project',
      'FieldValueRequired',
    ],
    ['a rule verb that is no verb', { rules: [{ verbs: ['GET'] }] }, 'spec.rules[0].verbs[0]', 'FieldValueInvalid'],
  ])('%s: 422 naming the field', async (_what, spec, field, reason) => {
    const res = await root.post(TOKENS_PATH, tokenBody(spec));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Invalid',
      details: { kind: 'DirectClusterEndpointToken' },
    });
    expect(res.body.details.causes).toEqual([expect.objectContaining({ field, reason })]);
  });
});

describe('a create-only kind that stores nothing', () => {
  test('other verbs are 405; discovery says create only', async () => {
    const cases: Array<[string, string]> = [
      ['GET', TOKENS_PATH],
      ['GET', `${TOKENS_PATH}?watch=true`],
      ['GET', `${TOKENS_PATH}/some-token`],
      ['PUT', `${TOKENS_PATH}/some-token`],
      ['PATCH', `${TOKENS_PATH}/some-token`],
      ['DELETE', `${TOKENS_PATH}/some-token`],
      ['DELETE', TOKENS_PATH],
      ['POST', `${TOKENS_PATH}/some-token`],
    ];
    for (const [method, path] of cases) {
      const res = await root.request(method, path, {
        body: ['PUT', 'PATCH', 'POST'].includes(method) ? tokenBody() : undefined,
        contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined,
      });
      expect({ method, path, status: res.status, reason: res.body?.reason }).toEqual({
        method,
        path,
        status: 405,
        reason: 'MethodNotAllowed',
      });
    }
    const discovery = await root.get(GROUP_PATH);
    expect(discovery.body.resources).toContainEqual({
      name: 'directclusterendpointtokens',
      singularName: 'directclusterendpointtoken',
      namespaced: false,
      kind: 'DirectClusterEndpointToken',
      verbs: ['create'],
    });
  });

  test('no token is kept in etcd, only the signing keys', async () => {
    const { token } = await issue(root);
    const kv = new Etcd3({ hosts: etcd.endpoint });
    try {
      const all = await kv.getAll().prefix(`${ts.config.etcdPrefix}/`).strings();
      expect(
        Object.keys(all).filter((k) => k.includes('directclusterendpointtokens') && !k.includes('/signingkeys/')),
      ).toEqual([]);
      for (const value of Object.values(all)) expect(value).not.toContain(token.split('.')[2]);
    } finally {
      kv.close();
    }
  });

  test('a caller whose credential is restricted (a scoped access key) may not create tokens', async () => {
    const created = await root.post(`${GROUP_PATH}/ownedaccesskeys`, {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name: 'bob-scoped' },
      spec: {
        user: 'bob',
        rules: [
          {
            verbs: ['create'],
            resources: [{ group: 'management.platform.sh', resources: ['directclusterendpointtokens'] }],
          },
        ],
      },
    });
    expect(created.status).toBe(201);
    const res = await ts.client(created.body.spec.key).post(TOKENS_PATH, tokenBody({ ttl: 600 }));
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('a credential with a scope or rules may not create tokens');
  });

  test("kube's reserved system: groups never reach a token (system:masters would be cluster-admin where groups map directly)", async () => {
    const { token } = await issue(root);
    const { payload } = await (await verifierOf(ts)).verify(token);
    expect({ sub: payload.sub, groups: payload.groups }).toEqual({ sub: 'root', groups: ['platform:team:ops'] });
  });

  test('a caller whose name has the reserved system: prefix (a service account, say) gets no token: 403', async () => {
    const res = await deployer.post(TOKENS_PATH, tokenBody());
    expect({ status: res.status, reason: res.body?.reason, message: res.body?.message }).toEqual({
      status: 403,
      reason: 'Forbidden',
      message:
        'directclusterendpointtokens.management.platform.sh is forbidden: User "system:serviceaccount:ci:deployer" cannot create resource "directclusterendpointtokens" in API group "management.platform.sh" at the cluster scope: ' +
        'names starting with "system:" are reserved for Kubernetes\' own identities and are not given tokens for connected clusters',
    });
  });

  test('without credentials: 401', async () => {
    expect((await ts.anonymous.post(TOKENS_PATH, tokenBody())).status).toBe(401);
  });
});

describe('several replicas and key rotation', () => {
  test('two replicas sign with one key set: a token from one verifies with the keys of the other', async () => {
    const prefix = `/shared-${Date.now()}`;
    const a = await startTestServer({ etcdPrefix: prefix, tokenIssuer: 'https://platform.example.com' }, etcd);
    const b = await startTestServer({ etcdPrefix: prefix, tokenIssuer: 'https://platform.example.com' }, etcd);
    try {
      const results = await Promise.all([...Array(10)].map((_, i) => issue(i % 2 ? a.admin : b.admin, { ttl: 600 })));
      const kids = new Set(results.map((r) => decodeProtectedHeader(r.token).kid));
      expect(kids.size).toBe(1);
      const fromB = await verifierOf(b);
      expect(fromB.issuer).toBe('https://platform.example.com');
      for (const r of results) await expect(fromB.verify(r.token)).resolves.toBeDefined();
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('after a rotation, tokens of the old key still verify, and the new key signs', async () => {
    const rotating = await startTestServer(
      { tokenSigningKeyRotationPeriodMs: 1500, tokenSigningKeyPublishDelayMs: 500 },
      etcd,
    );
    try {
      const first = await issue(rotating.admin, { ttl: 600 });
      const firstKid = decodeProtectedHeader(first.token).kid;
      const later = await waitFor(
        'a token signed with a new key',
        async () => {
          const t = await issue(rotating.admin, { ttl: 600 });
          return decodeProtectedHeader(t.token).kid !== firstKid && t;
        },
        15_000,
        200,
      );
      const verifier = await verifierOf(rotating);
      expect(verifier.keys.map((k) => k.kid)).toEqual(
        expect.arrayContaining([firstKid, decodeProtectedHeader(later.token).kid]),
      );
      await expect(verifier.verify(first.token)).resolves.toBeDefined();
      await expect(verifier.verify(later.token)).resolves.toBeDefined();
    } finally {
      await rotating.stop();
    }
  });
});
