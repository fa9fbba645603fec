/**
 * The auth matrix against the host cluster stand-in (test/support/hostcluster.ts), over HTTPS: one server with
 * --kubeconfig pointing at the stand-in (answers never cached, so each request asks), the embedded admin token and
 * a --client-ca-file user:
 *
 * - TokenReview: a token the host accepts is its user with its groups (teams, masters); one it denies is 401;
 *   static tokens and certificates never reach the host;
 * - SubjectAccessReview: RBAC in the host (Role/RoleBinding, ClusterRole/ClusterRoleBinding, ServiceAccount and
 *   Group subjects) grants exactly what it says; the host's reasons end up in the Forbidden message;
 * - host down (refused or 503): TokenReview users are 401, everyone else keeps what the host did not give them,
 *   and what only the host could allow fails with the host's failure (500; 429 when the host says it is overloaded),
 *   never a 403 saying the caller may not, nor a list narrowed as if the caller had been refused;
 * - neither the admin token nor the host's tokens appear in any response body (the last test of the file).
 *
 * Static tokens, access lists, certificates and forged headers: auth-matrix.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as errors from '../../src/apimachinery/status.js';
import { makeCa, makeCert, type TestCert } from '../support/certs.js';
import {
  authMatrix,
  collectionPath,
  expectAllowed,
  KINDS,
  listedNames as names,
  objectPath,
  RecordingClient,
  seen,
  type Target,
  type Verb,
} from '../support/authmatrix.js';
import { DIRECT_PREFIX, GROUP, MERGE_PATCH, secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import type { HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { closeWatches, openWatch } from '../support/watch.js';

const secret = (who: string) => `${who}-${randomBytes(24).toString('hex')}`;

/** Tokens the stand-in's TokenReview accepts, and the users it says they are. */
const HOST_USERS = {
  alice: {
    token: secret('tr-alice'),
    user: { name: 'tr-alice', uid: 'uid-tr-alice', groups: ['platform:team:green', 'developers'] },
  },
  root: { token: secret('tr-root'), user: { name: 'tr-root', uid: 'uid-tr-root', groups: ['system:masters'] } },
  dave: { token: secret('tr-dave'), user: { name: 'tr-dave', uid: 'uid-tr-dave', groups: [] as string[] } },
  deployer: {
    token: secret('tr-sa'),
    user: {
      name: 'system:serviceaccount:ci:deployer',
      uid: 'uid-sa',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ci'],
    },
  },
  viewer: { token: secret('tr-viewer'), user: { name: 'tr-viewer', groups: ['cluster-viewers'] } },
};
/** A token the stand-in does not know. */
const DENIED = secret('tr-denied');

const clientCa = makeCa('client-ca');
const CAROL: TestCert = makeCert({ commonName: 'carol', issuer: clientCa });

// ---------------------------------------------------------------------------------------------------------------
// The server and the host
// ---------------------------------------------------------------------------------------------------------------

let host: HostClusterStandIn;
let ts: TestServer;
let dir: string;
let adminToken: string;
let admin: RecordingClient;
let carol: RecordingClient;
const as: Record<keyof typeof HOST_USERS, RecordingClient> = {} as any;
let denied: RecordingClient;
let nobody: RecordingClient;

const client = (token?: string, cert?: TestCert) =>
  new RecordingClient(ts.server.url, ts.server.caPem ?? '', token, { cert });

beforeAll(async () => {
  host = await startHostCluster();
  for (const { token, user } of Object.values(HOST_USERS)) host.addToken(token, user);
  host.addNamespace(NS);
  dir = mkdtempSync(join(tmpdir(), 'auth-delegated-'));
  writeFileSync(join(dir, 'client-ca.crt'), clientCa.certPem);
  ts = await startTestServer({
    kubeconfig: host.kubeconfigPath,
    clientCaFile: join(dir, 'client-ca.crt'),
    // Every request asks the host: the matrix below changes RBAC and takes the host down between requests.
    authenticationTokenWebhookCacheTtlMs: 0,
    authorizationWebhookCacheAuthorizedTtlMs: 0,
    authorizationWebhookCacheUnauthorizedTtlMs: 0,
  });
  adminToken = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
  admin = client(adminToken);
  for (const [k, { token }] of Object.entries(HOST_USERS)) as[k as keyof typeof HOST_USERS] = client(token);
  denied = client(DENIED);
  nobody = client();
  carol = client(undefined, CAROL);
}, 120_000);

afterEach(async () => {
  closeWatches();
  host.onSubjectAccessReview = undefined;
  await host.setDown(false);
});

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

// ---------------------------------------------------------------------------------------------------------------
// Objects, verbs, expected answers
// ---------------------------------------------------------------------------------------------------------------

const PREFIXES = ['', DIRECT_PREFIX];

const NS = uniq('deleg');

const { make, act } = authMatrix(() => admin, NS);

/**
 * A 401 Status with reason Unauthorized. The message is checked on its own (see 'a denied token's 401 says only
 * "Unauthorized"'), so that one deviation there fails one test rather than all of them.
 */
function expectUnauthorized(res: HttpResponse, what = ''): void {
  expect({ what, status: res.status, body: res.body }).toEqual({
    what,
    status: 401,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: expect.any(String),
      reason: 'Unauthorized',
      code: 401,
    },
  });
}

/** The 500 of an authorization the host failed to decide: what failed, not the host's address or its answer. */
function expectHostFailure(res: HttpResponse, what: string): void {
  const message =
    'the host cluster did not answer the SubjectAccessReview that decides whether this request is allowed; please try again (the server log says why)';
  expect({ what, status: res.status, body: res.body }).toEqual({
    what,
    status: 500,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Internal error occurred: ${message}`,
      reason: 'InternalError',
      details: { causes: [{ message }] },
      code: 500,
    },
  });
}

function expectForbidden(res: HttpResponse, user: string, verb: Verb, t: Target, reason = ''): void {
  const [v, sub = ''] = verb.split(' ');
  const named = !['create', 'list'].includes(v);
  const gr = `${t.kind}.${GROUP}`;
  const subject = named ? `${gr} ${JSON.stringify(t.name)}` : gr;
  const scope = t.kind === 'clusters' ? 'at the cluster scope' : `in the namespace ${JSON.stringify(t.ns)}`;
  const resource = sub ? `${t.kind}/${sub}` : t.kind;
  expect({ verb, status: res.status, body: res.body }).toEqual({
    verb,
    status: 403,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${subject} is forbidden: User ${JSON.stringify(user)} cannot ${v} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(GROUP)} ${scope}${reason ? `: ${reason}` : ''}`,
      reason: 'Forbidden',
      details: { ...(named ? { name: t.name } : {}), group: GROUP, kind: t.kind },
      code: 403,
    },
  });
}

// RBAC in the host.
function role(ns: string, name: string, rules: object[]): KubeObj {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: ns ? 'Role' : 'ClusterRole',
    metadata: ns ? { name, namespace: ns } : { name },
    rules,
  };
}

function binding(ns: string, name: string, roleRef: { kind: string; name: string }, subjects: object[]): KubeObj {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: ns ? 'RoleBinding' : 'ClusterRoleBinding',
    metadata: ns ? { name, namespace: ns } : { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
    subjects,
  };
}

const rule = (resources: string[], verbs: string[], extra: object = {}) => ({
  apiGroups: [GROUP],
  resources,
  verbs,
  ...extra,
});

// ---------------------------------------------------------------------------------------------------------------
// TokenReview
// ---------------------------------------------------------------------------------------------------------------

describe('TokenReview', () => {
  test.each(KINDS)(
    'a token the host accepts is that user: its access-list grants on %s apply, on both path forms',
    async (kind) => {
      const t = await make(kind, { access: [{ verbs: ['get'], users: ['tr-alice'] }] });
      for (const prefix of PREFIXES) {
        host.resetCounts();
        expectAllowed(await act(as.alice, 'get', t, prefix), 'get', prefix);
        expect(host.count('tokenreviews', 'POST')).toBe(1);
        for (const verb of ['update', 'patch', 'delete', 'create', 'get status'] as Verb[])
          expectForbidden(await act(as.alice, verb, t, prefix), 'tr-alice', verb, t);
      }
    },
  );

  test('its groups come along: a team from TokenReview reaches team grants and owners, and lists are filtered for it', async () => {
    const ns = uniq('tr');
    host.addNamespace(ns);
    const team = await make('sharedsecrets', { access: [{ verbs: ['get', 'update'], teams: ['green'] }] }, { ns });
    const owned = await make('sharedsecrets', { owner: { team: 'green' } }, { ns });
    const other = await make('sharedsecrets', { owner: { team: 'blue' } }, { ns });
    expectAllowed(await act(as.alice, 'get', team), 'get');
    expectAllowed(await act(as.alice, 'update', team), 'update');
    expectForbidden(await act(as.alice, 'delete', team), 'tr-alice', 'delete', team);
    for (const verb of ['get', 'patch', 'get status', 'delete'] as Verb[])
      expectAllowed(await act(as.alice, verb, owned), verb);
    expectForbidden(await act(as.alice, 'get', other), 'tr-alice', 'get', other);
    expect(names(await as.alice.request('GET', collectionPath('sharedsecrets', ns)))).toEqual([team.name]);
    expect(names(await as.dave.request('GET', collectionPath('sharedsecrets', ns)))).toEqual([]);
  });

  test.each(KINDS)('a TokenReview user in system:masters may do every verb on %s', async (kind) => {
    for (const prefix of PREFIXES) {
      const t = await make(kind);
      for (const verb of ['get', 'list', 'create', 'update', 'patch', 'get status', 'delete'] as Verb[])
        expectAllowed(await act(as.root, verb, t, prefix), verb, prefix);
    }
  });

  test.each(KINDS)('a token the host denies is 401 on every verb on %s, both path forms', async (kind) => {
    const t = await make(kind);
    for (const prefix of PREFIXES) {
      for (const verb of ['get', 'list', 'create', 'update', 'patch', 'delete', 'get status'] as Verb[]) {
        host.resetCounts();
        expectUnauthorized(await act(denied, verb, t, prefix), `${verb} ${prefix}`);
        expect(host.count('tokenreviews', 'POST')).toBe(1);
      }
    }
  });

  test('a denied token is 401 on discovery and public paths too', async () => {
    for (const path of [
      '/apis',
      `/apis/${GROUP}/v1`,
      `${DIRECT_PREFIX}/apis/${GROUP}/v1`,
      '/openapi/v2',
      '/healthz',
      '/version',
    ])
      expectUnauthorized(await denied.request('GET', path), path);
  });

  test('a denied token\'s 401 says only "Unauthorized", as kube-apiserver\'s does (reference §1.2: failed credentials)', async () => {
    const t = await make('sharedsecrets');
    for (const res of [await act(denied, 'get', t), await denied.request('GET', `/apis/${GROUP}/v1`)]) {
      expect({ status: res.status, message: res.body?.message }).toEqual({ status: 401, message: 'Unauthorized' });
    }
  });

  test('a token removed from the host stops working at once (no cache configured)', async () => {
    const token = secret('tr-temp');
    host.addToken(token, { name: 'tr-temp', groups: ['system:masters'] });
    const temp = client(token);
    const t = await make('clusters');
    expectAllowed(await act(temp, 'get', t), 'get');
    host.removeToken(token);
    expectUnauthorized(await act(temp, 'get', t));
  });

  test('the admin token, client certificates and anonymous requests never reach TokenReview', async () => {
    const t = await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['carol'] }] });
    host.resetCounts();
    expectAllowed(await act(admin, 'get', t), 'get');
    expectAllowed(await act(admin, 'list', t), 'list');
    expectAllowed(await act(carol, 'get', t), 'get');
    expect((await nobody.request('GET', '/healthz')).status).toBe(200);
    expectUnauthorized(await act(nobody, 'get', t));
    expect(host.count('tokenreviews')).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// SubjectAccessReview
// ---------------------------------------------------------------------------------------------------------------

describe('SubjectAccessReview', () => {
  test('a RoleBinding granting get on sharedsecrets in ns1 lets the TokenReview user get a SharedSecret there, not in ns2', async () => {
    const ns1 = uniq('ns1');
    const ns2 = uniq('ns2');
    host.addNamespace(ns1);
    host.addNamespace(ns2);
    const in1 = await make('sharedsecrets', {}, { ns: ns1 });
    const in2 = await make('sharedsecrets', {}, { ns: ns2 });
    const c = await make('clusters');
    // Nothing yet.
    expectForbidden(await act(as.dave, 'get', in1), 'tr-dave', 'get', in1);

    host.put(role(ns1, 'sharedsecret-reader', [rule(['sharedsecrets'], ['get'])]));
    host.put(
      binding(ns1, 'dave-reads', { kind: 'Role', name: 'sharedsecret-reader' }, [
        { kind: 'User', name: 'tr-dave', apiGroup: 'rbac.authorization.k8s.io' },
      ]),
    );
    for (const prefix of PREFIXES) {
      expectAllowed(await act(as.dave, 'get', in1, prefix), 'get', prefix);
      expectForbidden(await act(as.dave, 'get', in2, prefix), 'tr-dave', 'get', in2);
      // Only get, only sharedsecrets, not their status, not clusters.
      for (const verb of ['update', 'patch', 'delete', 'create', 'get status'] as Verb[])
        expectForbidden(await act(as.dave, verb, in1, prefix), 'tr-dave', verb, in1);
      expectForbidden(await act(as.dave, 'get', c, prefix), 'tr-dave', 'get', c);
    }
    // Another user is not named by the binding.
    expectForbidden(await act(as.alice, 'get', in1), 'tr-alice', 'get', in1);

    // Removing the binding takes the access away.
    host.remove('rolebindings', ns1, 'dave-reads');
    expectForbidden(await act(as.dave, 'get', in1), 'tr-dave', 'get', in1);
  });

  test('a ServiceAccount subject with list, update and status: lists are complete, not filtered', async () => {
    const ns = uniq('sa');
    host.addNamespace(ns);
    const a = await make('sharedsecrets', {}, { ns });
    const b = await make('sharedsecrets', { owner: { user: 'someone' } }, { ns });
    // The access sync writes b (finalizer, condition) for its owner: its updates are done before the ones below.
    await waitFor('b to be AccessSynced', async () =>
      (await admin.request('GET', objectPath(b))).body?.status?.conditions?.some((c: any) => c.type === 'AccessSynced'),
    );
    host.put(role(ns, 'deployer', [rule(['sharedsecrets', 'sharedsecrets/status'], ['get', 'list', 'update'])]));
    host.put(
      binding(ns, 'deployer', { kind: 'Role', name: 'deployer' }, [
        { kind: 'ServiceAccount', name: 'deployer', namespace: 'ci' },
      ]),
    );
    for (const prefix of PREFIXES) {
      expect(names(await act(as.deployer, 'list', a, prefix))).toEqual([a.name, b.name].sort());
      expectAllowed(await act(as.deployer, 'update', b, prefix), 'update');
      expectAllowed(await act(as.deployer, 'get status', b, prefix), 'get status');
      expectForbidden(await act(as.deployer, 'patch', b, prefix), 'system:serviceaccount:ci:deployer', 'patch', b);
      expectForbidden(await act(as.deployer, 'delete', a, prefix), 'system:serviceaccount:ci:deployer', 'delete', a);
    }
  });

  test('an apply that would create needs create, not only patch (kube authorizes a create-on-update as create); PUT never creates', async () => {
    const ns = uniq('applycreate');
    host.addNamespace(ns);
    const existing = await make('sharedsecrets', {}, { ns });
    host.put(role(ns, 'patcher', [rule(['sharedsecrets'], ['get', 'patch', 'update'])]));
    host.put(
      binding(ns, 'dave-patches', { kind: 'Role', name: 'patcher' }, [
        { kind: 'User', name: 'tr-dave', apiGroup: 'rbac.authorization.k8s.io' },
      ]),
    );
    const name = uniq('new');
    const target: Target = { kind: 'sharedsecrets', ns, name };
    const path = `${collectionPath('sharedsecrets', ns)}/${name}`;
    const config = {
      apiVersion: `${GROUP}/v1`,
      kind: 'SharedSecret',
      metadata: { name },
      spec: { displayName: 'made by apply', data: { token: 'c2VjcmV0' } },
    };
    const apply = (query = '') =>
      as.dave.request('PATCH', `${path}?fieldManager=dave${query}`, {
        body: JSON.stringify(config),
        contentType: 'application/apply-patch+yaml',
      });
    const refused = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `sharedsecrets.${GROUP} ${JSON.stringify(name)} is forbidden: User "tr-dave" cannot create resource "sharedsecrets" in API group ${JSON.stringify(GROUP)} in the namespace ${JSON.stringify(ns)}`,
      reason: 'Forbidden',
      details: { name, group: GROUP, kind: 'sharedsecrets' },
      code: 403,
    };
    expectForbidden(await act(as.dave, 'create', target), 'tr-dave', 'create', target);
    for (const query of ['', '&dryRun=All']) {
      const res = await apply(query);
      expect({ query, status: res.status, body: res.body }).toEqual({ query, status: 403, body: refused });
    }
    // A PUT of a missing object is 404, not a create.
    const put = await as.dave.request('PUT', path, { body: config });
    expect({ status: put.status, reason: put.body?.reason }).toEqual({ status: 404, reason: 'NotFound' });
    expect((await admin.request('GET', path)).status).toBe(404);
    // Applying to an existing object needs only patch.
    const onExisting = {
      ...config,
      metadata: { name: existing.name },
      spec: { ...config.spec, displayName: 'applied' },
    };
    const applied = await as.dave.request(
      'PATCH',
      `${collectionPath('sharedsecrets', ns)}/${existing.name}?fieldManager=dave&force=true`,
      {
        body: JSON.stringify(onExisting),
        contentType: 'application/apply-patch+yaml',
      },
    );
    expect({ status: applied.status, displayName: applied.body?.spec?.displayName }).toEqual({
      status: 200,
      displayName: 'applied',
    });
    // With create as well, the apply creates.
    host.put(role(ns, 'patcher', [rule(['sharedsecrets'], ['get', 'patch', 'update', 'create'])]));
    const created = await apply();
    expect({ status: created.status, name: created.body?.metadata?.name }).toEqual({ status: 201, name });
  });

  test('a watch of one object that host RBAC allows for that name only (as access sync makes it) ends in DELETED when the grant goes', async () => {
    const ns = uniq('namedwatch');
    host.addNamespace(ns);
    const t = await make(
      'sharedsecrets',
      { access: [{ verbs: ['get', 'list', 'watch'], users: ['tr-dave'] }] },
      { ns },
    );
    // The access sync turns the entry into a Role for this name: the host allows the watch by itself.
    const prefix = `platform-sharedsecret-${t.name}-access-`;
    await waitFor('the generated Role and RoleBinding', () => {
      const role = host.list('roles', ns).find((r) => r.metadata.name.startsWith(prefix));
      return role && host.get('rolebindings', ns, role.metadata.name);
    });
    const s = await openWatch(as.dave, `${objectPath(t)}?watch=true`);
    expect(s.status).toBe(200);
    await s.count(1);
    const revoke = await admin.request('PATCH', objectPath(t), {
      body: { spec: { access: null } },
      contentType: MERGE_PATCH,
    });
    expect(revoke.status).toBe(200);
    // The data changes before the access sync has removed the Role.
    const changed = await admin.request('PATCH', objectPath(t), {
      body: { spec: { data: { token: 'bmV3LXNlY3JldA==' } } },
      contentType: MERGE_PATCH,
    });
    expect(changed.status).toBe(200);
    await s.count(2);
    await s.quiet(300);
    expect(
      s.events.map((e) => ({ type: e.type, rv: e.object.metadata.resourceVersion, data: e.object.spec?.data })),
    ).toEqual([
      { type: 'ADDED', rv: expect.any(String), data: { token: 'c2VjcmV0' } },
      { type: 'DELETED', rv: revoke.body.metadata.resourceVersion, data: { token: 'c2VjcmV0' } },
    ]);
  });

  test('a watch of one object allowed by host RBAC for the whole kind is not filtered by access lists', async () => {
    const ns = uniq('kindwatch');
    host.addNamespace(ns);
    const t = await make('sharedsecrets', {}, { ns });
    host.put(role(ns, 'watcher', [rule(['sharedsecrets'], ['get', 'list', 'watch'])]));
    host.put(
      binding(ns, 'dave-watches', { kind: 'Role', name: 'watcher' }, [
        { kind: 'User', name: 'tr-dave', apiGroup: 'rbac.authorization.k8s.io' },
      ]),
    );
    const s = await openWatch(as.dave, `${objectPath(t)}?watch=true`);
    expect(s.status).toBe(200);
    const first = await s.nth(1);
    expect({ type: first.type, name: first.object.metadata.name }).toEqual({ type: 'ADDED', name: t.name });
  });

  test('a ClusterRoleBinding to a group grants clusters to TokenReview members of the group, and to nobody else', async () => {
    const c = await make('clusters');
    host.put(role('', 'cluster-viewer', [rule(['clusters'], ['get', 'list'])]));
    host.put(
      binding('', 'cluster-viewers', { kind: 'ClusterRole', name: 'cluster-viewer' }, [
        { kind: 'Group', name: 'cluster-viewers', apiGroup: 'rbac.authorization.k8s.io' },
      ]),
    );
    expectAllowed(await act(as.viewer, 'get', c), 'get');
    expect(names(await act(as.viewer, 'list', c))).toEqual(names(await act(admin, 'list', c)));
    expectForbidden(await act(as.viewer, 'delete', c), 'tr-viewer', 'delete', c);
    expectForbidden(await act(as.dave, 'get', c), 'tr-dave', 'get', c);
  });

  test('a certificate user is authorized by the host as well', async () => {
    const c = await make('clusters');
    host.put(role('', 'carol-clusters', [rule(['clusters'], ['get'], { resourceNames: [c.name] })]));
    host.put(
      binding('', 'carol-clusters', { kind: 'ClusterRole', name: 'carol-clusters' }, [{ kind: 'User', name: 'carol' }]),
    );
    expectAllowed(await act(carol, 'get', c), 'get');
    const other = await make('clusters');
    expectForbidden(await act(carol, 'get', other), 'carol', 'get', other);
  });

  test('the review names the user, its groups and uid, and the request attributes', async () => {
    const specs: any[] = [];
    host.onSubjectAccessReview = (spec) => {
      specs.push(spec);
      return undefined;
    };
    const t = await make('sharedsecrets');
    await act(as.alice, 'get', t, DIRECT_PREFIX);
    await act(as.alice, 'get status', t);
    expect(specs).toEqual([
      {
        user: 'tr-alice',
        uid: 'uid-tr-alice',
        groups: expect.arrayContaining(['platform:team:green', 'developers', 'system:authenticated']),
        resourceAttributes: {
          namespace: NS,
          verb: 'get',
          group: GROUP,
          version: 'v1',
          resource: 'sharedsecrets',
          name: t.name,
        },
      },
      {
        user: 'tr-alice',
        uid: 'uid-tr-alice',
        groups: expect.arrayContaining(['platform:team:green', 'developers', 'system:authenticated']),
        resourceAttributes: {
          namespace: NS,
          verb: 'get',
          group: GROUP,
          version: 'v1',
          resource: 'sharedsecrets',
          subresource: 'status',
          name: t.name,
        },
      },
    ]);
  });

  test("the host's reason for a denial ends the Forbidden message", async () => {
    host.onSubjectAccessReview = () => ({ allowed: false, denied: true, reason: 'policy forbids it' });
    const t = await make('sharedsecrets');
    expectForbidden(await act(as.alice, 'get', t), 'tr-alice', 'get', t, 'policy forbids it');
    host.onSubjectAccessReview = () => ({ allowed: false, reason: 'no RBAC policy matched' });
    expectForbidden(await act(as.alice, 'delete', t), 'tr-alice', 'delete', t, 'no RBAC policy matched');
  });

  test('a review the host fails is a 500 (429 when the host is overloaded), never a 403, and tells nothing of the host', async () => {
    const t = await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['carol'] }] });
    const c = await make('clusters');
    host.onSubjectAccessReview = () => {
      throw errors.internalError(new Error('etcdserver: request timed out'));
    };
    for (const prefix of PREFIXES) {
      expectHostFailure(await act(carol, 'get', c, prefix), `get ${prefix}`);
      expectHostFailure(await act(carol, 'delete', t, prefix), `delete ${prefix}`);
      // Her list may be of all of them: not narrowed to what her access entries grant as if she had been refused.
      expectHostFailure(await act(carol, 'list', t, prefix), `list ${prefix}`);
      // What the object grants needs no host.
      expectAllowed(await act(carol, 'get', t, prefix), 'get');
    }
    host.onSubjectAccessReview = () => {
      throw errors.tooManyRequests('the host is overloaded');
    };
    const busy = await act(carol, 'get', c);
    expect({ status: busy.status, retryAfter: busy.headers['retry-after'], body: busy.body }).toEqual({
      status: 429,
      retryAfter: '1',
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'the host cluster is too busy to review whether this request is allowed (SubjectAccessReview); please try again later',
        reason: 'TooManyRequests',
        details: { retryAfterSeconds: 1 },
        code: 429,
      },
    });
    host.onSubjectAccessReview = undefined;
    expectForbidden(await act(carol, 'get', c), 'carol', 'get', c);
  });

  test('masters and object grants decide before the host is asked', async () => {
    const t = await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['tr-alice'] }] });
    host.onSubjectAccessReview = () => ({ allowed: false, denied: true, reason: 'denied by the host' });
    host.resetCounts();
    expectAllowed(await act(admin, 'get', t), 'get');
    expectAllowed(await act(as.root, 'delete', await make('clusters')), 'delete');
    expectAllowed(await act(as.alice, 'get', t), 'get');
    expect(host.count('subjectaccessreviews')).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Host down
// ---------------------------------------------------------------------------------------------------------------

/** A namespace the host cluster has (NamespaceLifecycle refuses writes into others). */
function hostNamespace(ns: string): string {
  host.addNamespace(ns);
  return ns;
}

/**
 * Waits until the server's namespace informer has `ns` (after an earlier outage it lists again after a backoff): a
 * dry-run create there then makes no live lookup on the host, and the namespace is known while the host is down.
 */
async function namespaceCached(ns: string): Promise<void> {
  await waitFor(
    `the namespace informer to have ${ns}`,
    async () => {
      const mark = host.requests.length;
      expect((await admin.post(`${sharedSecretsPath(ns)}?dryRun=All`, secretBody('probe'))).status).toBe(201);
      return !host.requests.slice(mark).some((r) => r.path === `/api/v1/namespaces/${ns}`);
    },
    15_000,
    100,
  );
}

describe.each(['refused', 'unavailable'] as const)('host down (%s)', (mode) => {
  test('TokenReview users are 401; the admin, certificate users and object grants are unaffected; host grants are gone', async () => {
    const ns = hostNamespace(uniq(mode));
    await namespaceCached(ns);
    const t = await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['tr-alice', 'carol'] }] }, { ns });
    const c = await make('clusters');
    host.put(role('', `carol-${mode}`, [rule(['clusters'], ['get'], { resourceNames: [c.name] })]));
    host.put(
      binding('', `carol-${mode}`, { kind: 'ClusterRole', name: `carol-${mode}` }, [{ kind: 'User', name: 'carol' }]),
    );
    // Up: everyone as expected.
    expectAllowed(await act(as.alice, 'get', t), 'get');
    expectAllowed(await act(carol, 'get', c), 'get');

    await host.setDown(true, mode);
    for (const prefix of PREFIXES) {
      for (const who of [as.alice, as.root, denied]) {
        const res = await act(who, 'get', t, prefix);
        expectUnauthorized(res, `${mode} ${prefix}`);
        // Whatever the message says, it does not tell an unauthenticated caller where the host is.
        expect(res.text).not.toContain(new URL(host.url).host);
      }
      expectAllowed(await act(admin, 'get', t, prefix), 'get');
      expectAllowed(await act(admin, 'list', t, prefix), 'list');
      expectAllowed(await act(admin, 'create', t, prefix), 'create');
      expectAllowed(await act(carol, 'get', t, prefix), 'get');
      // What only the host could allow fails with its failure: never allowed, never a 403 saying carol may not,
      // and a list is not narrowed to her own objects as if she had been refused.
      expectHostFailure(await act(carol, 'get', c, prefix), 'get');
      expectHostFailure(await act(carol, 'list', t, prefix), 'list');
    }
    expect((await nobody.request('GET', '/healthz')).status).toBe(200);

    await host.setDown(false);
    expectAllowed(await act(as.alice, 'get', t), 'get');
    expectAllowed(await act(carol, 'get', c), 'get');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Secrets never leak
// ---------------------------------------------------------------------------------------------------------------

describe('secrets', () => {
  test("neither the admin token nor the host's tokens appear in any response received in this file", () => {
    expect(seen.length).toBeGreaterThan(200);
    const secrets = [
      adminToken,
      host.token,
      DENIED,
      ...Object.values(HOST_USERS).map((u) => u.token),
      CAROL.keyPem.split('\n')[1],
    ];
    const leaks = secrets.flatMap((s) =>
      seen.filter((text) => text.includes(s)).map((text) => `${s.slice(0, 8)}… in ${text.slice(0, 200)}`),
    );
    expect(leaks).toEqual([]);
  });
});
