/**
 * The TokenReview webhook of direct cluster endpoint tokens (issue 43): the webhook config file docs/api.md gives a
 * connected cluster's kube-apiserver, read from the doc and filled in as it says, used by a model of kube's webhook
 * token authenticator (test/support/kubewebhook.ts: TLS trusting the given CA, the file's credential, its cache on a
 * clock the test moves) against real tokens of a running server. A token asked with an access key passes, and is
 * refused once the key is disabled, deleted or rotated past its grace: by the webhook at once, by the cluster once
 * its cache TTL has passed and not before. Scopes are enforced as the doc says; bad requests change nothing; a
 * caller without the grant is 403. One server for the file, real etcd.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, importJWK, SignJWT, type CryptoKey } from 'jose';
import yaml from 'js-yaml';
import { API_VERSION, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse, warningsOf as warnings } from '../support/http.js';
import { loadWebhookAuthenticator, type WebhookResult } from '../support/kubewebhook.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const DOC = new URL('../../docs/api.md', import.meta.url);
const EXAMPLE_SERVER = 'https://platform.example.com';
const WEBHOOK = '/authenticate/direct-cluster-endpoint';
const THIS_CLUSTER = 'eu-1';
const OTHER_CLUSTER = 'eu-2';
const TOKEN_ID = 'management.platform.sh/token-id';
const KEY_CLAIM = 'management.platform.sh/access-key';
/** The cache TTL the doc starts kube-apiserver with (--authentication-token-webhook-cache-ttl). */
const TTL_MS =
  Number(/--authentication-token-webhook-cache-ttl=(\d+)s/.exec(readFileSync(DOC, 'utf8'))?.[1] ?? NaN) * 1000;
const KEYS = `${GROUP_PATH}/ownedaccesskeys`;

type Users = 'root' | 'alice' | 'reviewer';
let ts: TestServer & { as: Record<Users, HttpClient> };
let etcd: Etcd3;
/** The value of the OwnedAccessKey that eu-1's kube-apiserver reviews tokens with (user cluster-eu-1). */
let webhookKey: string;

const post = (client: HttpClient, path: string, kind: string, body: Record<string, unknown>) =>
  client.post(path, { apiVersion: API_VERSION, kind, ...body });

async function createKey(name: string, spec: Record<string, unknown>): Promise<string> {
  const res = await post(ts.as.root, KEYS, 'OwnedAccessKey', { metadata: { name }, spec });
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body.spec.key;
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: ['platform:team:web'], reviewer: [] });
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  const grant = { verbs: ['create'], subresources: ['tokenreviews'], users: ['cluster-eu-1', 'reviewer'] };
  for (const [name, access] of [
    [THIS_CLUSTER, [grant]],
    [OTHER_CLUSTER, []],
  ] as const)
    expect(
      (
        await post(ts.as.root, `${GROUP_PATH}/clusters`, 'Cluster', {
          metadata: { name },
          spec: { networkPeer: true, access },
        })
      ).status,
    ).toBe(201);
  for (const [name, allowed] of [
    ['shop', THIS_CLUSTER],
    ['billing', OTHER_CLUSTER],
  ])
    expect(
      (
        await post(ts.as.root, `${GROUP_PATH}/projects`, 'Project', {
          metadata: { name },
          spec: { owner: { team: 'web' }, allowedClusters: [{ name: allowed }] },
        })
      ).status,
    ).toBe(201);
  webhookKey = await createKey('cluster-eu-1', { user: 'cluster-eu-1' });
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
}, 60_000);

/** The doc's webhook config file, as an admin pastes it. */
function documentedConfig(): any {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((b) => /^# --authentication-token-webhook-config-file$/m.test(b));
  expect(found).toHaveLength(1);
  return yaml.load(found[0]);
}

/** The doc's file filled in as it says: this server's address, its CA, a credential (eu-1's key by default). */
function filledIn(opts: { token?: string; cluster?: string } = {}): string {
  const config = documentedConfig();
  const { cluster } = config.clusters[0];
  expect(cluster.server).toBe(`${EXAMPLE_SERVER}${WEBHOOK}/${THIS_CLUSTER}`);
  cluster.server = `${ts.server.url}${WEBHOOK}/${opts.cluster ?? THIS_CLUSTER}`;
  cluster['certificate-authority-data'] = Buffer.from(ts.server.caPem!).toString('base64');
  config.users[0].user.token = opts.token ?? webhookKey;
  return yaml.dump(config);
}

/** eu-1's kube-apiserver, with the doc's cache TTL on a clock the test moves. */
function cluster(opts: { token?: string; version?: 'v1' | 'v1beta1' } = {}) {
  const clock = { now: Date.now() };
  const authenticator = loadWebhookAuthenticator(filledIn(opts), {
    cacheTtlMs: TTL_MS,
    version: opts.version,
    now: () => clock.now,
  });
  return { authenticator, clock };
}

async function issue(client: HttpClient, spec: Record<string, unknown> = {}): Promise<HttpResponse> {
  const res = await post(client, `${GROUP_PATH}/directclusterendpointtokens`, 'DirectClusterEndpointToken', { spec });
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res;
}
const tokenOf = async (client: HttpClient, spec?: Record<string, unknown>) =>
  (await issue(client, spec)).body.status.token as string;

function refusedWith(result: WebhookResult, text: string): void {
  expect(result).toEqual({ error: expect.stringContaining(text) });
}

/** A review posted straight to the webhook (not through the model), answered as is. */
const review = (client: HttpClient, token: string, path = `${WEBHOOK}/${THIS_CLUSTER}`, extra = {}) =>
  client.post(path, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...extra } });

/** Waits until the webhook refuses `token` (the server's key index follows etcd's events), and returns the error. */
async function refusedByWebhook(token: string): Promise<string> {
  const { authenticator } = cluster();
  const result = await waitFor('the webhook to refuse the token', async () => {
    const r = await authenticator.authenticate(token);
    return 'error' in r && r;
  });
  return result.error;
}

describe('the documented config file', () => {
  test('is a kubeconfig naming this Cluster in the path, a CA and a credential', () => {
    const config = documentedConfig();
    expect(config).toMatchObject({ apiVersion: 'v1', kind: 'Config', 'current-context': 'webhook' });
    expect(config.users[0].user).toHaveProperty('token');
    expect(config.clusters[0].cluster).toHaveProperty('certificate-authority-data');
    expect(TTL_MS).toBe(30_000);
    expect(readFileSync(DOC, 'utf8')).toContain('--authentication-token-webhook-version=v1');
  });

  test('posted over TLS trusting only the given CA', async () => {
    const unfilled = yaml.load(filledIn()) as any;
    delete unfilled.clusters[0].cluster['certificate-authority-data'];
    const authenticator = loadWebhookAuthenticator(yaml.dump(unfilled), { cacheTtlMs: TTL_MS });
    await expect(authenticator.authenticate(await tokenOf(ts.as.alice))).rejects.toThrow(/certificate/);
  });
});

describe('a token asked with an access key', () => {
  test('names the key value and passes, as the user the JWT authenticator maps', async () => {
    const aliceKey = await createKey(uniq('alice-ci'), { user: 'alice' });
    const token = await tokenOf(ts.client(aliceKey), { ttl: 600 });
    const claims = decodeJwt(token);
    const stored = (await ts.as.root.get(`${KEYS}/${(claims[KEY_CLAIM] as any).name}`)).body;
    expect(claims[KEY_CLAIM]).toEqual({ name: stored.metadata.name, uid: stored.metadata.uid, generation: 0 });
    const { authenticator } = cluster();
    expect(await authenticator.authenticate(token)).toEqual({
      user: { username: 'alice', uid: '', groups: ['platform:user:alice'], extra: { [TOKEN_ID]: [claims.jti] } },
    });
  });

  test('lives no longer than its key, with a Warning saying so', async () => {
    const name = uniq('short');
    const res = await issue(ts.client(await createKey(name, { user: 'alice', ttl: 120 })), { ttl: 3600 });
    const { exp, iat } = decodeJwt(res.body.status.token);
    expect(exp! - iat!).toBeLessThanOrEqual(120);
    expect(res.body.spec.ttl).toBe(exp! - iat!);
    expect(warnings(res)).toContainEqual(
      expect.stringContaining(`when the access key "${name}" it was asked with stops working`),
    );
  });

  test('is refused once its key is disabled: by the webhook at once, by the cluster after its cache TTL', async () => {
    const name = uniq('ci');
    const token = await tokenOf(ts.client(await createKey(name, { user: 'alice' })));
    const { authenticator, clock } = cluster();
    expect(await authenticator.authenticate(token)).toMatchObject({ user: { username: 'alice' } });
    const posted = authenticator.posted;
    expect((await ts.as.root.patch(`${KEYS}/${name}`, { spec: { disabled: true } }, MERGE_PATCH)).status).toBe(200);
    expect(await refusedByWebhook(token)).toBe(
      `the token was issued with an access key that no longer works: access key "${name}" is disabled`,
    );
    // kube keeps the answer for its cache TTL: until then the cluster does not ask.
    clock.now += TTL_MS - 1;
    expect(await authenticator.authenticate(token)).toMatchObject({ user: { username: 'alice' } });
    expect(authenticator.posted).toBe(posted);
    clock.now += 1;
    refusedWith(await authenticator.authenticate(token), `access key "${name}" is disabled`);
    // A refusal that says why is not kept: it is asked again, and stays refused.
    refusedWith(await authenticator.authenticate(token), 'is disabled');
    expect(authenticator.posted).toBe(posted + 2);
  });

  test('is refused once its key is deleted, and a new key of the same name does not bring it back', async () => {
    const name = uniq('gone');
    const token = await tokenOf(ts.client(await createKey(name, { user: 'alice' })));
    const { authenticator, clock } = cluster();
    expect(await authenticator.authenticate(token)).toMatchObject({ user: { username: 'alice' } });
    expect((await ts.as.root.delete(`${KEYS}/${name}`)).status).toBe(200);
    await createKey(name, { user: 'alice' });
    expect(await refusedByWebhook(token)).toContain(`access key "${name}" no longer exists`);
    clock.now += TTL_MS;
    refusedWith(await authenticator.authenticate(token), 'no longer exists');
  });

  test('asked with the value a rotation replaced: passes during the grace, refused after it', async () => {
    const rotate = (name: string, grace: number) =>
      post(ts.as.root, `${KEYS}/${name}/rotate`, 'OwnedAccessKey', {
        metadata: { name },
        spec: { rotationGracePeriod: grace },
      });
    // A grace of 5 minutes: the old value still gets tokens, capped at the grace's end, and they pass.
    const graced = uniq('graced');
    const oldValue = await createKey(graced, { user: 'alice' });
    const before = await tokenOf(ts.client(oldValue));
    expect((await rotate(graced, 300)).status).toBe(201);
    const during = await waitFor('the old value to be taken as the previous one', async () => {
      const res = await post(
        ts.client(oldValue),
        `${GROUP_PATH}/directclusterendpointtokens`,
        'DirectClusterEndpointToken',
        {
          spec: {},
        },
      );
      return res.status === 201 && warnings(res).some((w) => w.includes('was rotated')) && res;
    });
    const { exp, iat } = decodeJwt(during.body.status.token);
    expect(exp! - iat!).toBeLessThanOrEqual(300);
    const { authenticator } = cluster();
    for (const token of [before, during.body.status.token])
      expect(await authenticator.authenticate(token)).toMatchObject({ user: { username: 'alice' } });
    // No grace: a token of the old value is refused as soon as the rotation is seen.
    const sharp = uniq('sharp');
    const token = await tokenOf(ts.client(await createKey(sharp, { user: 'alice' })));
    expect((await rotate(sharp, 0)).status).toBe(201);
    expect(await refusedByWebhook(token)).toMatch(
      new RegExp(`access key "${sharp}" was rotated at .*; use the new value`),
    );
  });
});

describe('scopes', () => {
  // The bare path is for a caller allowed every Cluster's reviews (root).
  const reviewed = async (spec: Record<string, unknown>, path?: string) =>
    (await review(path ? ts.as.root : ts.as.reviewer, await tokenOf(ts.as.alice, spec), path)).body.status;

  test('a token for this cluster, every cluster, or a project allowed on it passes', async () => {
    for (const scope of [
      { clusters: [{ cluster: THIS_CLUSTER }] },
      { clusters: [{ cluster: OTHER_CLUSTER }, { cluster: '*' }] },
      { projects: [{ project: 'shop' }] },
      { projects: [{ project: 'billing' }, { project: 'shop' }] },
      { projects: [{ project: '*' }], clusters: [{ cluster: THIS_CLUSTER }] },
    ])
      expect({ scope, status: await reviewed({ scope }) }).toMatchObject({ scope, status: { authenticated: true } });
  });

  test('a token for another cluster, or a project not allowed on this one, is refused saying so', async () => {
    for (const [scope, error] of [
      [
        { clusters: [{ cluster: OTHER_CLUSTER }] },
        `the token's scope.clusters does not include the Cluster "${THIS_CLUSTER}"`,
      ],
      [
        { projects: [{ project: 'billing' }, { project: 'nowhere' }] },
        `none of the token's scope.projects (billing, nowhere) may use the Cluster "${THIS_CLUSTER}"`,
      ],
      [{ clusters: [{ cluster: THIS_CLUSTER }], projects: [{ project: 'billing' }] }, 'scope.projects'],
    ] as const)
      expect({ scope, status: await reviewed({ scope }) }).toEqual({
        scope,
        status: { authenticated: false, error: expect.stringContaining(error) },
      });
  });

  test('what a cluster cannot enforce is refused, never dropped; the bare path takes only unscoped tokens', async () => {
    for (const [spec, field] of [
      [{ scope: { virtualClusters: [{ project: 'shop', virtualCluster: 'dev' }] } }, 'virtualClusters'],
      [{ scope: { spaces: [{ project: 'shop', space: 'dev' }] } }, 'spaces'],
      [{ allowPlatformCli: true }, 'roles'],
      [{ rules: [{ cluster: THIS_CLUSTER, verbs: ['get'] }] }, 'rules'],
    ] as const)
      expect(await reviewed(spec)).toEqual({
        authenticated: false,
        error: `the token's scope.${field} cannot be enforced at a connected cluster; only scope.clusters and scope.projects can`,
      });
    expect(await reviewed({ scope: { clusters: [{ cluster: '*' }] } }, WEBHOOK)).toEqual({
      authenticated: false,
      error: expect.stringContaining(
        `a review without a Cluster cannot check: post to ${WEBHOOK}/<the Cluster's name>`,
      ),
    });
    expect(await reviewed({}, WEBHOOK)).toMatchObject({ authenticated: true });
  });
});

describe('other callers and tokens', () => {
  test('a token asked with a static token names no key, passes, and lives until its exp', async () => {
    const token = await tokenOf(ts.as.alice, { ttl: 600 });
    const claims = decodeJwt(token);
    expect(claims[KEY_CLAIM]).toBeUndefined();
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(await cluster().authenticator.authenticate(token)).toEqual({
      user: { username: 'alice', uid: 'uid-alice', groups: ['platform:team:web'], extra: { [TOKEN_ID]: [claims.jti] } },
    });
  });

  test('v1beta1 is answered in v1beta1; the audiences asked are answered with those the token has', async () => {
    const token = await tokenOf(ts.as.alice);
    expect(await cluster({ version: 'v1beta1' }).authenticator.authenticate(token)).toMatchObject({
      user: { username: 'alice' },
    });
    const res = await ts.as.reviewer.post(`${WEBHOOK}/${THIS_CLUSTER}`, {
      apiVersion: 'authentication.k8s.io/v1beta1',
      kind: 'TokenReview',
      spec: { token, audiences: ['https://kubernetes.default.svc', 'management.platform.sh/direct-cluster-endpoint'] },
    });
    expect(res.body).toMatchObject({
      apiVersion: 'authentication.k8s.io/v1beta1',
      kind: 'TokenReview',
      status: { authenticated: true, audiences: ['management.platform.sh/direct-cluster-endpoint'] },
    });
    expect(res.text).not.toContain(token);
    // kube-apiserver asks for its own audiences, which the token does not have: none answered, which kube reads as
    // its own, and it authenticates.
    expect(await cluster().authenticator.authenticate(token, ['https://kubernetes.default.svc'])).toMatchObject({
      user: { username: 'alice' },
      audiences: ['https://kubernetes.default.svc'],
    });
  });

  test('a caller not allowed to review for the Cluster is 403, naming the grant', async () => {
    const aliceKey = await createKey(uniq('alice-webhook'), { user: 'alice' });
    const token = await tokenOf(ts.as.alice);
    refusedWith(await cluster({ token: aliceKey }).authenticator.authenticate(token), 'webhook answered 403');
    for (const [client, path, user] of [
      [ts.as.alice, `${WEBHOOK}/${THIS_CLUSTER}`, 'alice'],
      [ts.as.reviewer, `${WEBHOOK}/${OTHER_CLUSTER}`, 'reviewer'],
      [ts.as.reviewer, WEBHOOK, 'reviewer'],
    ] as const) {
      const res = await review(client, token, path);
      expect({ path, status: res.status, reason: res.body.reason }).toEqual({ path, status: 403, reason: 'Forbidden' });
      expect(res.body.message).toContain(`User "${user}" cannot post path "${path}"`);
      expect(res.body.message).toContain('create on clusters/tokenreviews');
    }
    expect((await ts.anonymous.post(`${WEBHOOK}/${THIS_CLUSTER}`, {})).status).toBe(401);
  });

  test('bad requests get a 400 Status or a refusal saying why, and change nothing', async () => {
    const revision = async () => (await etcd.get('/').exec()).header.revision;
    const path = `${WEBHOOK}/${THIS_CLUSTER}`;
    const token = await tokenOf(ts.as.alice);
    const header = decodeProtectedHeader(token);
    const ownKey = await signingKey(header.kid!);
    const at = await revision();
    const bad: Array<[unknown, string]> = [
      [
        { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { token } },
        'the body is kind "SubjectAccessReview"',
      ],
      [{ kind: 'TokenReview', spec: { token } }, 'of apiVersion (none)'],
      [{ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: {} }, 'spec.token is required'],
      [{ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 7 } }, 'spec.token is required'],
      [`{"spec":{"token":"${token}"`, 'the body is not valid JSON'],
      ['[]', 'the body is not an object'],
    ];
    for (const [body, message] of bad) {
      const res = await ts.as.reviewer.post(path, body);
      expect({ body, status: res.status, reason: res.body?.reason, kind: res.body?.kind }).toEqual({
        body,
        status: 400,
        reason: 'BadRequest',
        kind: 'Status',
      });
      expect(res.body.message).toContain(message);
      expect(res.text).not.toContain(token);
    }
    // Reviews are POSTs: a GET is not one, even for a caller who may do everything.
    expect((await ts.as.root.get(path)).status).toBe(405);

    // Tokens that are not this server's valid ones: 200, not authenticated, the reason named.
    const claims = decodeJwt(token);
    const stranger = (await generateKeyPair('ES256')).privateKey;
    const signed = (payload: Record<string, unknown>, key: CryptoKey | Uint8Array = stranger) =>
      new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: header.kid, typ: 'JWT' }).sign(key);
    const now = Math.floor(Date.now() / 1000);
    for (const [what, t, error] of [
      ['garbage', 'not-a-token', 'the token is not a JWT'],
      [
        'another issuer',
        await signed({ ...claims, iss: 'https://platform.other.example' }),
        'the token was not issued by this server',
      ],
      [
        'another signer',
        await signed(claims),
        "the token's signature does not verify with this server's published keys",
      ],
      [
        'expired',
        await signed({ ...claims, iat: now - 700, nbf: now - 700, exp: now - 100 }, ownKey),
        'the token expired at',
      ],
      [
        'another audience',
        await signed({ ...claims, aud: ['elsewhere'] }, ownKey),
        'the token is not for direct cluster endpoints',
      ],
      [
        'system: groups',
        await signed({ ...claims, groups: ['system:masters'] }, ownKey),
        'names starting with "system:" are Kubernetes\' own',
      ],
    ] as const) {
      const res = await review(ts.as.reviewer, t, path);
      expect({ what, status: res.status, review: res.body.status }).toEqual({
        what,
        status: 200,
        review: { authenticated: false, error: expect.stringContaining(error) },
      });
      expect(res.text).not.toContain(t);
    }
    // Nothing was written (the callers are static tokens, whose use is not recorded).
    expect(await revision()).toBe(at);
  });
});

/** The private key of this server's signing key `kid`, from etcd (to sign tokens only this server could). */
async function signingKey(kid: string): Promise<CryptoKey | Uint8Array> {
  const doc = JSON.parse(
    (await etcd.get(`${ts.config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`).string())!,
  );
  const key = doc.keys.find((k: { kid: string }) => k.kid === kid);
  return importJWK(key.privateJwk, 'ES256');
}
