/**
 * Delegated authentication and authorization against a stand-in host cluster: TokenReview and
 * SubjectAccessReview through @kubernetes/client-node, their caches, outages, and the stand-in's RBAC.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { ApiException, KubeConfig, RbacAuthorizationV1Api, Watch } from '@kubernetes/client-node';
import type { IncomingMessage } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SubjectAccessReviewAuthorizer } from '../../src/auth/subjectaccessreview.js';
import { TokenReviewAuthenticator } from '../../src/auth/tokenreview.js';
import type { Attributes } from '../../src/apimachinery/authorizer.js';
import { StatusError } from '../../src/apimachinery/status.js';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { AuthenticationError } from '../../src/auth/types.js';
import { HostCluster, HostClusterError } from '../../src/host/cluster.js';
import { writeKubeconfig } from '../../src/admin-kubeconfig.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';

let host: HostClusterStandIn;
let cluster: HostCluster;

beforeAll(async () => {
  host = await startHostCluster();
  cluster = HostCluster.load({ kubeconfig: host.kubeconfigPath })!;
});

afterAll(async () => {
  await host?.stop();
});

afterEach(async () => {
  await host.setDown(false);
  host.onSubjectAccessReview = undefined;
});

/** Just enough of a request for bearer-token authenticators. */
const withToken = (token?: string) =>
  ({ headers: token ? { authorization: `Bearer ${token}` } : {} }) as IncomingMessage;

function clock(start = Date.now()) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

const ALICE: UserInfo = {
  name: 'alice',
  uid: 'alice-uid',
  groups: ['dev', 'system:authenticated'],
  extra: { 'example.com/team': ['blue'] },
};

function resourceAttrs(
  user: UserInfo,
  verb: string,
  namespace: string,
  resource: string,
  name = '',
  subresource = '',
  apiGroup = 'management.platform.sh',
): Attributes {
  return {
    user,
    verb,
    isResourceRequest: true,
    path: `/apis/${apiGroup}/v1/namespaces/${namespace}/${resource}${name ? `/${name}` : ''}${subresource ? `/${subresource}` : ''}`,
    apiGroup,
    apiVersion: 'v1',
    namespace,
    resource,
    subresource,
    name,
  };
}

function pathAttrs(user: UserInfo, verb: string, path: string): Attributes {
  return {
    user,
    verb,
    isResourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  };
}

describe('HostCluster', () => {
  test('--kubeconfig, else in-cluster config in a pod, else none', () => {
    expect(cluster.server).toBe(host.url);
    expect(HostCluster.load({}, {})).toBeUndefined();
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    try {
      expect(HostCluster.load({})?.server).toBe('https://10.96.0.1:443');
    } finally {
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(() => HostCluster.load({ kubeconfig: join(tmpdir(), 'no-such-kubeconfig') })).toThrow(/--kubeconfig/);
  });

  test('tokenReview and subjectAccessReview speak the real API', async () => {
    host.addToken('direct-token', ALICE);
    expect(await cluster.tokenReview('direct-token')).toEqual({ authenticated: true, user: ALICE, audiences: [] });
    expect(await cluster.tokenReview('nope')).toEqual({ authenticated: false, error: 'invalid bearer token' });
    expect(
      await cluster.subjectAccessReview(pathAttrs({ name: 'root', groups: ['system:masters'] }, 'get', '/healthz')),
    ).toEqual({ allowed: true, denied: false, reason: '' });
  });

  test('requests are bounded in time', async () => {
    // Accepts connections and never says a word, not even the TLS handshake.
    const silent: TcpServer = createTcpServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'silent-host-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeKubeconfig(kubeconfig, {
        server: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        caPem: host.caPem,
        token: 't',
      });
      const slow = HostCluster.load({ kubeconfig, timeoutMs: 300 })!;
      const started = Date.now();
      await expect(slow.tokenReview('x')).rejects.toThrow(/did not answer within 300ms/);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      silent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('HostClusterError carries the HTTP status when the host answered', async () => {
    await host.setDown(true, 'unavailable');
    const err = await cluster.subjectAccessReview(pathAttrs(ALICE, 'get', '/x')).catch((e) => e);
    expect(err).toBeInstanceOf(HostClusterError);
    expect(err.code).toBe(503);
  });
});

describe('TokenReviewAuthenticator', () => {
  test('a token the host accepts gives its user; one it rejects is an authentication error', async () => {
    host.addToken('alice-token', ALICE);
    const authn = new TokenReviewAuthenticator(cluster);
    expect(await authn.authenticate(withToken('alice-token'))).toEqual(ALICE);
    await expect(authn.authenticate(withToken('unknown-token'))).rejects.toThrow(AuthenticationError);
  });

  test('no bearer token: nothing to say, nothing asked', async () => {
    host.resetCounts();
    expect(await new TokenReviewAuthenticator(cluster).authenticate(withToken())).toBeUndefined();
    expect(host.count('tokenreviews')).toBe(0);
  });

  test('answers, accepted and rejected, are cached for the TTL', async () => {
    host.addToken('cached-token', ALICE);
    const c = clock();
    const authn = new TokenReviewAuthenticator(cluster, { cacheTtlMs: 10_000, now: c.now });
    host.resetCounts();
    await authn.authenticate(withToken('cached-token'));
    await authn.authenticate(withToken('cached-token'));
    await expect(authn.authenticate(withToken('bad-token'))).rejects.toThrow(AuthenticationError);
    await expect(authn.authenticate(withToken('bad-token'))).rejects.toThrow(AuthenticationError);
    expect(host.count('tokenreviews')).toBe(2);

    // Revoked at the host: still accepted until the cached answer expires.
    host.removeToken('cached-token');
    c.advance(9_000);
    expect(await authn.authenticate(withToken('cached-token'))).toMatchObject({ name: 'alice' });
    c.advance(1_001);
    await expect(authn.authenticate(withToken('cached-token'))).rejects.toThrow(AuthenticationError);
    expect(host.count('tokenreviews')).toBe(3);
  });

  test('concurrent requests with the same token ask once', async () => {
    host.addToken('busy-token', ALICE);
    const authn = new TokenReviewAuthenticator(cluster);
    host.resetCounts();
    await Promise.all(Array.from({ length: 5 }, () => authn.authenticate(withToken('busy-token'))));
    expect(host.count('tokenreviews')).toBe(1);
  });

  test('a host that cannot answer is a plain 401 for the caller, logged for the operator, not cached, and never shows the token', async () => {
    host.addToken('outage-token', ALICE);
    const logged: string[] = [];
    const authn = new TokenReviewAuthenticator(cluster, {
      log: (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields)}`),
    });
    for (const mode of ['refused', 'unavailable'] as const) {
      await host.setDown(true, mode);
      const err = await authn.authenticate(withToken('outage-token')).catch((e) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err.message).toBe('Unauthorized');
      expect(logged.pop()).toMatch(mode === 'refused' ? /cannot reach the host cluster/ : /HTTP 503/);
      await host.setDown(false);
    }
    expect(logged.join('')).not.toContain('outage-token');
    expect(await authn.authenticate(withToken('outage-token'))).toMatchObject({ name: 'alice' });
  });

  test('audiences are asked for and checked', async () => {
    host.addToken('aud-token', { ...ALICE, audiences: ['https://kubernetes.default.svc'] });
    expect(
      await new TokenReviewAuthenticator(cluster, { audiences: ['https://kubernetes.default.svc'] }).authenticate(
        withToken('aud-token'),
      ),
    ).toMatchObject({ name: 'alice' });
    await expect(
      new TokenReviewAuthenticator(cluster, { audiences: ['other'] }).authenticate(withToken('aud-token')),
    ).rejects.toThrow(AuthenticationError);
  });
});

describe('SubjectAccessReviewAuthorizer', () => {
  const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };

  beforeAll(() => {
    host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'sharedsecret-reader', namespace: 'ns1' },
      rules: [{ apiGroups: ['management.platform.sh'], resources: ['sharedsecrets'], verbs: ['get', 'list', 'watch'] }],
    });
    host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'alice-reads-sharedsecrets', namespace: 'ns1' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sharedsecret-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    });
  });

  test('a RoleBinding for alice on sharedsecrets in ns1 allows get there and not in ns2', async () => {
    const authz = new SubjectAccessReviewAuthorizer(cluster);
    expect(await authz.authorize(resourceAttrs(alice, 'get', 'ns1', 'sharedsecrets', 's1'))).toEqual({
      decision: 'allow',
    });
    expect(await authz.authorize(resourceAttrs(alice, 'get', 'ns2', 'sharedsecrets', 's1'))).toMatchObject({
      decision: 'noOpinion',
    });
    expect(await authz.authorize(resourceAttrs(alice, 'delete', 'ns1', 'sharedsecrets', 's1'))).toMatchObject({
      decision: 'noOpinion',
    });
    expect(
      await authz.authorize(resourceAttrs({ name: 'bob', groups: [] }, 'get', 'ns1', 'sharedsecrets', 's1')),
    ).toMatchObject({ decision: 'noOpinion' });
  });

  test('allowed and not-allowed answers are cached for their TTLs', async () => {
    const c = clock();
    const authz = new SubjectAccessReviewAuthorizer(cluster, { allowTtlMs: 10_000, denyTtlMs: 2_000, now: c.now });
    host.resetCounts();
    const inNs1 = resourceAttrs(alice, 'list', 'ns1', 'sharedsecrets');
    const inNs2 = resourceAttrs(alice, 'list', 'ns2', 'sharedsecrets');
    for (let i = 0; i < 3; i++) {
      expect(await authz.authorize(inNs1)).toEqual({ decision: 'allow' });
      expect((await authz.authorize(inNs2)).decision).toBe('noOpinion');
    }
    expect(host.count('subjectaccessreviews')).toBe(2);
    c.advance(2_001); // the answer for ns2 expires, the one for ns1 does not
    await authz.authorize(inNs1);
    await authz.authorize(inNs2);
    expect(host.count('subjectaccessreviews')).toBe(3);
    // Another user, another question.
    await authz.authorize(resourceAttrs({ ...alice, name: 'alice2' }, 'list', 'ns1', 'sharedsecrets'));
    expect(host.count('subjectaccessreviews')).toBe(4);
  });

  test('denied is deny with the reason; neither is no opinion with the reason', async () => {
    host.onSubjectAccessReview = (spec) =>
      spec.resourceAttributes?.verb === 'delete'
        ? { allowed: false, denied: true, reason: 'deletes are frozen' }
        : { allowed: false, reason: 'no rule says so' };
    const authz = new SubjectAccessReviewAuthorizer(cluster);
    expect(await authz.authorize(resourceAttrs(alice, 'delete', 'ns1', 'sharedsecrets', 's1'))).toEqual({
      decision: 'deny',
      reason: 'deletes are frozen',
    });
    expect(await authz.authorize(resourceAttrs(alice, 'update', 'ns1', 'sharedsecrets', 's1'))).toEqual({
      decision: 'noOpinion',
      reason: 'no rule says so',
    });
  });

  test('the review carries the user, uid, groups, extra and every attribute', async () => {
    let seen: unknown;
    host.onSubjectAccessReview = (spec) => {
      seen = spec;
      return undefined;
    };
    await new SubjectAccessReviewAuthorizer(cluster).authorize(
      resourceAttrs(ALICE, 'get', 'ns1', 'virtualclusterinstances', 'vc1', 'kubeconfig'),
    );
    expect(seen).toEqual({
      user: 'alice',
      uid: 'alice-uid',
      groups: ['dev', 'system:authenticated'],
      extra: { 'example.com/team': ['blue'] },
      resourceAttributes: {
        namespace: 'ns1',
        verb: 'get',
        group: 'management.platform.sh',
        version: 'v1',
        resource: 'virtualclusterinstances',
        subresource: 'kubeconfig',
        name: 'vc1',
      },
    });
    await new SubjectAccessReviewAuthorizer(cluster).authorize(pathAttrs(ALICE, 'get', '/openapi/v2'));
    expect(seen).toMatchObject({ nonResourceAttributes: { path: '/openapi/v2', verb: 'get' } });
  });

  test('a host that cannot answer fails the authorizer (never allow, never deny) without the host in the error, is logged, and not cached', async () => {
    const logged: string[] = [];
    const authz = new SubjectAccessReviewAuthorizer(cluster, {
      log: (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields)}`),
    });
    const attrs = resourceAttrs(alice, 'watch', 'ns1', 'sharedsecrets');
    await host.setDown(true);
    const failed = await authz.authorize(attrs).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(StatusError);
    expect((failed as StatusError).status).toMatchObject({ code: 500, reason: 'InternalError' });
    expect((failed as StatusError).message).not.toContain(new URL(host.url).host);
    expect(logged.join('')).toMatch(/host cluster/);
    await host.setDown(false);
    expect(await authz.authorize(attrs)).toEqual({ decision: 'allow' });
  });
});

describe('the stand-in RBAC evaluator', () => {
  const sar = (user: UserInfo, attrs: Attributes) => cluster.subjectAccessReview({ ...attrs, user });

  test('cluster roles, groups, service accounts, subresources, resource names, non-resource URLs, aggregation', async () => {
    host.put({
      kind: 'ClusterRole',
      metadata: { name: 'kubeconfig-getter' },
      rules: [{ apiGroups: ['*'], resources: ['virtualclusterinstances/kubeconfig'], verbs: ['get'] }],
    });
    host.put({
      kind: 'ClusterRoleBinding',
      metadata: { name: 'ops-kubeconfigs' },
      roleRef: { kind: 'ClusterRole', name: 'kubeconfig-getter' },
      subjects: [{ kind: 'Group', name: 'ops' }],
    });
    const ops: UserInfo = { name: 'olga', groups: ['ops'] };
    expect(
      (await sar(ops, resourceAttrs(ops, 'get', 'any', 'virtualclusterinstances', 'vc', 'kubeconfig'))).allowed,
    ).toBe(true);
    expect((await sar(ops, resourceAttrs(ops, 'get', 'any', 'virtualclusterinstances', 'vc'))).allowed).toBe(false);

    host.put({
      kind: 'ClusterRole',
      metadata: { name: 'one-secret' },
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['s1'], verbs: ['get'] }],
    });
    host.put({
      kind: 'RoleBinding',
      metadata: { name: 'sa-one-secret', namespace: 'ns3' },
      roleRef: { kind: 'ClusterRole', name: 'one-secret' },
      subjects: [{ kind: 'ServiceAccount', name: 'robot' }],
    });
    const robot: UserInfo = { name: 'system:serviceaccount:ns3:robot', groups: ['system:serviceaccounts'] };
    const allowed = await sar(robot, resourceAttrs(robot, 'get', 'ns3', 'secrets', 's1', '', ''));
    expect(allowed).toMatchObject({
      allowed: true,
      reason:
        'RBAC: allowed by RoleBinding "sa-one-secret/ns3" of ClusterRole "one-secret" to ServiceAccount "robot/ns3"',
    });
    expect((await sar(robot, resourceAttrs(robot, 'get', 'ns3', 'secrets', 's2', '', ''))).allowed).toBe(false);
    expect((await sar(robot, resourceAttrs(robot, 'get', 'ns4', 'secrets', 's1', '', ''))).allowed).toBe(false);

    host.put({
      kind: 'ClusterRole',
      metadata: { name: 'metrics' },
      rules: [{ nonResourceURLs: ['/metrics', '/debug/*'], verbs: ['get'] }],
    });
    host.put({
      kind: 'ClusterRoleBinding',
      metadata: { name: 'metrics' },
      roleRef: { kind: 'ClusterRole', name: 'metrics' },
      subjects: [{ kind: 'User', name: 'prom' }],
    });
    const prom: UserInfo = { name: 'prom', groups: [] };
    expect((await sar(prom, pathAttrs(prom, 'get', '/metrics'))).allowed).toBe(true);
    expect((await sar(prom, pathAttrs(prom, 'get', '/debug/pprof'))).allowed).toBe(true);
    expect((await sar(prom, pathAttrs(prom, 'post', '/metrics'))).allowed).toBe(false);

    host.put({
      kind: 'ClusterRole',
      metadata: { name: 'platform-view' },
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'platform.sh/aggregate-to-view': 'true' } }] },
      rules: [],
    });
    host.put({
      kind: 'ClusterRole',
      metadata: { name: 'view-clusters', labels: { 'platform.sh/aggregate-to-view': 'true' } },
      rules: [{ apiGroups: ['management.platform.sh'], resources: ['clusters'], verbs: ['get', 'list'] }],
    });
    host.put({
      kind: 'ClusterRoleBinding',
      metadata: { name: 'viewers' },
      roleRef: { kind: 'ClusterRole', name: 'platform-view' },
      subjects: [{ kind: 'User', name: 'viv' }],
    });
    const viv: UserInfo = { name: 'viv', groups: [] };
    expect((await sar(viv, { ...resourceAttrs(viv, 'list', '', 'clusters'), namespace: '' })).allowed).toBe(true);
  });
});

describe('the stand-in RBAC API through client-node', () => {
  const kubeConfig = () => {
    const kc = new KubeConfig();
    kc.loadFromFile(host.kubeconfigPath);
    return kc;
  };
  const rbac = () => kubeConfig().makeApiClient(RbacAuthorizationV1Api);
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 0,
      (e) => (e instanceof ApiException ? e.code : -1),
    );

  test('create, get, list by label, update with resourceVersion, conflicts, delete', async () => {
    const api = rbac();
    const created = await api.createNamespacedRole({
      namespace: 'crud',
      body: {
        metadata: { name: 'r1', labels: { app: 'platform' } },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      },
    });
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(await code(api.createNamespacedRole({ namespace: 'crud', body: { metadata: { name: 'r1' } } }))).toBe(409);
    await api.createNamespacedRole({
      namespace: 'crud',
      body: { metadata: { name: 'r2', labels: { app: 'other' } }, rules: [] },
    });

    const listed = await api.listNamespacedRole({ namespace: 'crud', labelSelector: 'app=platform' });
    expect(listed.items.map((r) => r.metadata?.name)).toEqual(['r1']);
    expect(Number(listed.metadata?.resourceVersion)).toBeGreaterThanOrEqual(Number(created.metadata?.resourceVersion));
    expect(
      (await api.listRoleForAllNamespaces({ fieldSelector: 'metadata.name=r2' })).items.map(
        (r) => r.metadata?.namespace,
      ),
    ).toEqual(['crud']);

    const updated = await api.replaceNamespacedRole({
      namespace: 'crud',
      name: 'r1',
      body: { ...created, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(created.metadata?.resourceVersion));
    expect(updated.metadata?.uid).toBe(created.metadata?.uid);
    const stale = code(api.replaceNamespacedRole({ namespace: 'crud', name: 'r1', body: created }));
    expect(await stale).toBe(409);

    const patched = await api.patchNamespacedRole({
      namespace: 'crud',
      name: 'r1',
      body: [{ op: 'add', path: '/metadata/labels/extra', value: 'yes' }],
    });
    expect(patched.metadata?.labels).toEqual({ app: 'platform', extra: 'yes' });

    await api.deleteNamespacedRole({ namespace: 'crud', name: 'r1' });
    expect(await code(api.readNamespacedRole({ namespace: 'crud', name: 'r1' }))).toBe(404);
    expect(await code(api.deleteNamespacedRole({ namespace: 'crud', name: 'r1' }))).toBe(404);
  });

  test('404 and 409 bodies are kube Status objects', async () => {
    const res = await fetchJson(`/apis/rbac.authorization.k8s.io/v1/clusterroles/missing`);
    expect(res).toEqual({
      status: 404,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'clusterroles.rbac.authorization.k8s.io "missing" not found',
        reason: 'NotFound',
        details: { name: 'missing', group: 'rbac.authorization.k8s.io', kind: 'clusterroles' },
        code: 404,
      },
    });
    host.put({ kind: 'ClusterRole', metadata: { name: 'taken' }, rules: [] });
    const conflict = await fetchJson(`/apis/rbac.authorization.k8s.io/v1/clusterroles`, 'POST', {
      metadata: { name: 'taken' },
    });
    expect(conflict).toMatchObject({
      status: 409,
      body: { reason: 'AlreadyExists', message: 'clusterroles.rbac.authorization.k8s.io "taken" already exists' },
    });
    const unauthenticated = await fetchJson(
      `/apis/rbac.authorization.k8s.io/v1/clusterroles`,
      'GET',
      undefined,
      'wrong-token',
    );
    expect(unauthenticated).toMatchObject({ status: 401, body: { reason: 'Unauthorized' } });
  });

  test('roleRef cannot change', async () => {
    host.put({
      kind: 'ClusterRoleBinding',
      metadata: { name: 'fixed' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'a' },
      subjects: [],
    });
    const api = rbac();
    const current = await api.readClusterRoleBinding({ name: 'fixed' });
    expect(
      await code(
        api.replaceClusterRoleBinding({
          name: 'fixed',
          body: { ...current, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'b' } },
        }),
      ),
    ).toBe(422);
  });

  test('watch from a resourceVersion sees adds, changes, label moves and deletes', async () => {
    const api = rbac();
    const start = await api.listClusterRoleBinding({ labelSelector: 'sync=yes' });
    const events: Array<[string, string]> = [];
    const watch = new Watch(kubeConfig());
    let ended: unknown = 'open';
    const controller = await watch.watch(
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      { labelSelector: 'sync=yes', resourceVersion: start.metadata?.resourceVersion },
      (type, obj) => events.push([type, obj.metadata.name]),
      (err) => (ended = err),
    );
    try {
      const body = (labels: Record<string, string>, user: string) => ({
        metadata: { name: 'w1', labels },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'User', name: user }],
      });
      const c = await api.createClusterRoleBinding({ body: body({ sync: 'yes' }, 'u1') });
      const m = await api.replaceClusterRoleBinding({
        name: 'w1',
        body: { ...body({ sync: 'yes' }, 'u2'), metadata: { ...c.metadata } },
      });
      // The same write again changes nothing: no event, same resourceVersion.
      const same = await api.replaceClusterRoleBinding({
        name: 'w1',
        body: { ...body({ sync: 'yes' }, 'u2'), metadata: { ...m.metadata } },
      });
      expect(same.metadata?.resourceVersion).toBe(m.metadata?.resourceVersion);
      await api.replaceClusterRoleBinding({
        name: 'w1',
        body: { ...body({ sync: 'no' }, 'u2'), metadata: { ...same.metadata, labels: { sync: 'no' } } },
      });
      await api.patchClusterRoleBinding({
        name: 'w1',
        body: [{ op: 'replace', path: '/metadata/labels/sync', value: 'yes' }],
      });
      await api.deleteClusterRoleBinding({ name: 'w1' });
      await waitFor(() => events.length >= 5);
      expect(events).toEqual([
        ['ADDED', 'w1'],
        ['MODIFIED', 'w1'],
        ['DELETED', 'w1'], // left the selector
        ['ADDED', 'w1'], // came back
        ['DELETED', 'w1'],
      ]);
      expect(ended).toBe('open');
    } finally {
      controller.abort();
    }

    // Without a resourceVersion a watch starts with the current objects.
    host.put({
      kind: 'ClusterRoleBinding',
      metadata: { name: 'w2', labels: { sync: 'yes' } },
      roleRef: { kind: 'ClusterRole', name: 'view' },
      subjects: [],
    });
    const initial: string[] = [];
    const c2 = await watch.watch(
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      { labelSelector: 'sync=yes' },
      (type, obj) => initial.push(`${type} ${obj.metadata.name}`),
      () => {},
    );
    try {
      await waitFor(() => initial.length >= 1);
      expect(initial).toEqual(['ADDED w2']);
    } finally {
      c2.abort();
    }
  });

  test('namespaces and secrets can be seeded', async () => {
    host.addNamespace('team-a');
    host.addSecret('team-a', 'creds', { password: 's3cret' });
    expect(await fetchJson('/api/v1/namespaces/team-a')).toMatchObject({
      status: 200,
      body: { kind: 'Namespace', metadata: { name: 'team-a' }, status: { phase: 'Active' } },
    });
    expect(await fetchJson('/api/v1/namespaces/team-b')).toMatchObject({
      status: 404,
      body: { message: 'namespaces "team-b" not found' },
    });
    const secret = await fetchJson('/api/v1/namespaces/team-a/secrets/creds');
    expect(Buffer.from(secret.body.data.password, 'base64').toString()).toBe('s3cret');
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function fetchJson(
  path: string,
  method = 'GET',
  body?: unknown,
  token = host.token,
): Promise<{ status: number; body: any }> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${host.url}${path}`,
      {
        method,
        ca: host.caPem,
        agent: false,
        headers: { Authorization: `Bearer ${token}`, ...(payload ? { 'Content-Type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
