/**
 * Access lists become RBAC in the host cluster (the stand-in of test/support/hostcluster.ts, reached over HTTPS with
 * client-node), kept in step by the access sync controller of a real server on a real etcd:
 *
 * - the whole loop: an access entry for alice on s1 makes the host's own authorization (SubjectAccessReview, as
 *   kube-apiserver would evaluate it) allow alice to get s1 and not s2; removing the entry takes it away;
 * - what is generated (a Role/RoleBinding per distinct set of verbs and subresources and for the owner;
 *   ClusterRole/ClusterRoleBinding for Clusters), its names (also at the length limit) and labels; the finalizer and
 *   the AccessSynced condition; what a change costs the host (counted requests); the objects of earlier versions'
 *   pair per entry are replaced; an object stored above the CRDs' limits gets no more than its owner's pair;
 * - deletion removes everything generated before the object goes; drift by hand is put back; RBAC whose source is
 *   gone is swept; a host outage leaves the API serving and everything converges once the host is back;
 * - what others label costs a page of the lists at a time, and what others make at a source's names (a source that
 *   does not exist among them) costs no more than where each object is: a server with a small heap (a process of
 *   its own) stays up through 118 MiB of such Roles and sweeps them.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { desiredRbac, generatedName } from '../../src/access/rbac.js';
import { createLogger } from '../../src/log.js';
import { HostCluster } from '../../src/host/cluster.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import type { Grants } from '../support/authmatrix.js';
import {
  clusterBody,
  clusterPath,
  CLUSTERS_PATH,
  EtcdPeek,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj, type RbacResource } from '../support/hostcluster.js';
import type { HttpClient } from '../support/http.js';
import { startServerProcess } from '../support/serverprocess.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import * as errors from '../../src/apimachinery/status.js';

const FINALIZER = 'management.platform.sh/access-cleanup';
const UID_LABEL = 'management.platform.sh/source-uid';
const NS = 'team-a';

let host: HostClusterStandIn;
let hostClient: HostCluster;
let ts: TestServer;
let admin: HttpClient;
/** The server's log lines. */
const logs: string[] = [];

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(NS);
  hostClient = HostCluster.load({ kubeconfig: host.kubeconfigPath })!;
  ts = await startTestServer(
    {
      kubeconfig: host.kubeconfigPath,
      authenticationTokenWebhookCacheTtlMs: 0,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
      leaderElectLeaseDurationMs: 2000,
    },
    undefined,
    createLogger((line) => void logs.push(line)),
  );
  admin = ts.admin;
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
}, 60_000);

// ---------------------------------------------------------------------------------------------------------------

async function createSecret(name: string, grants: Grants, ns = NS): Promise<any> {
  const body = secretBody(name);
  body.spec = { ...body.spec, ...grants };
  const res = await admin.post(sharedSecretsPath(ns), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

async function setGrants(path: string, grants: Grants): Promise<any> {
  const res = await admin.patch(path, { spec: { owner: null, access: null, ...grants } }, MERGE_PATCH);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
  return res.body;
}

/** Waits for AccessSynced=True for the object's current generation; returns the object. */
async function synced(path: string, timeoutMs = 15_000): Promise<any> {
  return waitFor(
    `${path} to be AccessSynced`,
    async () => {
      const obj = (await admin.get(path)).body;
      const c = obj?.status?.conditions?.find((x: any) => x.type === 'AccessSynced');
      return c?.status === 'True' && c.observedGeneration === obj.metadata.generation && obj;
    },
    timeoutMs,
  );
}

const generated = (uid: string, resource: RbacResource) =>
  host.list(resource).filter((o) => o.metadata.labels?.[UID_LABEL] === uid);

const secretDef = loadDefinitions().find((d) => d.kind === 'SharedSecret')!;

/** The name of the Role and RoleBinding of a SharedSecret `name` for the verbs and subresources of `entry`. */
function accessName(name: string, entry: { verbs: string[]; subresources?: string[] }): string {
  const obj = { metadata: { name, namespace: NS, uid: 'u' }, spec: { access: [{ ...entry, users: ['x'] }] } };
  return desiredRbac(secretDef, obj).objects[0].metadata.name;
}

/** The RBAC requests the host received for the objects of the source `name` since the last reset: `<method> <resource>` → count. */
function rbacCalls(name: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const r of host.requests)
    if (['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'].includes(r.resource) && r.path.includes(name))
      calls[`${r.method} ${r.resource}`] = (calls[`${r.method} ${r.resource}`] ?? 0) + 1;
  return calls;
}

/** What the host's own RBAC allows (kube-apiserver's answer, through the stand-in's SubjectAccessReview). */
async function hostAllows(
  user: string,
  groups: string[],
  verb: string,
  resource: string,
  name: string,
  namespace = '',
  subresource = '',
): Promise<boolean> {
  const review = await hostClient.subjectAccessReview({
    user: { name: user, groups: ['system:authenticated', ...groups] },
    verb,
    isResourceRequest: true,
    path: '',
    apiGroup: GROUP,
    apiVersion: 'v1',
    namespace,
    resource,
    subresource,
    name,
  });
  return review.allowed;
}

// ---------------------------------------------------------------------------------------------------------------

describe("the whole loop through the host's authorization", () => {
  test('an entry for alice on s1 lets her get s1 and not s2; removing the entry takes it away', async () => {
    const s1 = await createSecret(uniq('s1'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const s2 = await createSecret(uniq('s2'), {});
    const p1 = sharedSecretPath(NS, s1.metadata.name);
    await synced(p1);
    await synced(sharedSecretPath(NS, s2.metadata.name));

    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s1.metadata.name, NS)).toBe(true);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s2.metadata.name, NS)).toBe(false);
    expect(await hostAllows('alice', [], 'delete', 'sharedsecrets', s1.metadata.name, NS)).toBe(false);
    expect(await hostAllows('bob', [], 'get', 'sharedsecrets', s1.metadata.name, NS)).toBe(false);
    // Nothing generated for an object that grants nothing, and no finalizer on it.
    expect(generated(s2.metadata.uid, 'roles')).toEqual([]);
    expect((await admin.get(sharedSecretPath(NS, s2.metadata.name))).body.metadata.finalizers).toBeUndefined();

    await setGrants(p1, {});
    const after = await synced(p1);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s1.metadata.name, NS)).toBe(false);
    expect(generated(s1.metadata.uid, 'roles')).toEqual([]);
    expect(generated(s1.metadata.uid, 'rolebindings')).toEqual([]);
    expect(after.metadata.finalizers).toBeUndefined();
    expect(after.status.conditions).toEqual([
      expect.objectContaining({
        type: 'AccessSynced',
        status: 'True',
        reason: 'Synced',
        message: 'nothing to grant: no owner and no access entries',
      }),
    ]);
  });

  test('teams, the owner, verb * and subresource *: each grants what it says in the host', async () => {
    const s = await createSecret(uniq('teams'), {
      owner: { team: 'ops' },
      access: [
        { verbs: ['*'], subresources: ['*'], users: ['carol'] },
        { verbs: ['get', 'list'], subresources: ['status'], teams: ['green', 'blue'], users: ['dan'] },
      ],
    });
    await synced(sharedSecretPath(NS, s.metadata.name));
    const n = s.metadata.name;
    expect(await hostAllows('olga', ['platform:team:ops'], 'delete', 'sharedsecrets', n, NS)).toBe(true);
    expect(await hostAllows('olga', ['platform:team:ops'], 'update', 'sharedsecrets', n, NS, 'status')).toBe(true);
    expect(await hostAllows('carol', [], 'patch', 'sharedsecrets', n, NS, 'status')).toBe(true);
    expect(await hostAllows('gina', ['platform:team:green'], 'get', 'sharedsecrets', n, NS, 'status')).toBe(true);
    expect(await hostAllows('gina', ['platform:team:green'], 'update', 'sharedsecrets', n, NS)).toBe(false);
    expect(await hostAllows('dan', [], 'list', 'sharedsecrets', n, NS)).toBe(true);
    expect(await hostAllows('gina', ['platform:team:red'], 'get', 'sharedsecrets', n, NS)).toBe(false);
    // Another namespace's object of the same name is not covered.
    expect(await hostAllows('carol', [], 'get', 'sharedsecrets', n, 'elsewhere')).toBe(false);
  });
});

describe('what is generated', () => {
  test('one Role and RoleBinding for the owner and per set of verbs and subresources, named and labelled after the source', async () => {
    const s = await createSecret(uniq('shape'), {
      owner: { user: 'olga' },
      access: [{ verbs: ['get', 'watch'], subresources: ['status'], users: ['alice'], teams: ['green'] }],
    });
    const obj = await synced(sharedSecretPath(NS, s.metadata.name));
    expect(obj.metadata.finalizers).toEqual([FINALIZER]);
    const cond = obj.status.conditions.find((c: any) => c.type === 'AccessSynced');
    expect(cond).toEqual({
      type: 'AccessSynced',
      status: 'True',
      reason: 'Synced',
      message: '2 Role(s) and 2 RoleBinding(s) in the host cluster grant the owner and access entries',
      observedGeneration: obj.metadata.generation,
      lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });

    const n = s.metadata.name;
    const labels = {
      'app.kubernetes.io/managed-by': 'platform-management-api',
      'management.platform.sh/source-kind': 'SharedSecret',
      'management.platform.sh/source-namespace': NS,
      'management.platform.sh/source-name': n,
      [UID_LABEL]: s.metadata.uid,
    };
    const name = accessName(n, { verbs: ['get', 'watch'], subresources: ['status'] });
    expect(name).toMatch(new RegExp(`^platform-sharedsecret-${n}-access-[0-9a-f]{10}$`));
    const role = host.get('roles', NS, name)!;
    expect(role).toMatchObject({
      metadata: { labels, annotations: { 'management.platform.sh/source': `SharedSecret ${NS}/${n}` } },
      rules: [
        {
          apiGroups: [GROUP],
          resources: ['sharedsecrets', 'sharedsecrets/status'],
          resourceNames: [n],
          verbs: ['get', 'watch'],
        },
      ],
    });
    const binding = host.get('rolebindings', NS, name)!;
    expect(binding).toMatchObject({
      metadata: { labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'platform:team:green' },
      ],
    });
    expect(host.get('roles', NS, `platform-sharedsecret-${n}-owner`)!.rules).toEqual([
      { apiGroups: [GROUP], resources: ['sharedsecrets', 'sharedsecrets/status'], resourceNames: [n], verbs: ['*'] },
    ]);
    expect(host.get('rolebindings', NS, `platform-sharedsecret-${n}-owner`)!.subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'olga' },
    ]);
  });

  test('a Cluster gets a ClusterRole and ClusterRoleBinding', async () => {
    const name = uniq('eu');
    const body = clusterBody(name);
    body.spec.access = [{ verbs: ['get', 'update'], users: ['alice'] }];
    expect((await admin.post(CLUSTERS_PATH, body)).status).toBe(201);
    const obj = await synced(clusterPath(name));
    const roles = generated(obj.metadata.uid, 'clusterroles').map((o) => o.metadata.name);
    expect(roles).toEqual([expect.stringMatching(new RegExp(`^platform-cluster-${name}-access-[0-9a-f]{10}$`))]);
    expect(generated(obj.metadata.uid, 'clusterrolebindings')[0].roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: roles[0],
    });
    expect(generated(obj.metadata.uid, 'roles')).toEqual([]);
    expect(await hostAllows('alice', [], 'update', 'clusters', name)).toBe(true);
    expect(await hostAllows('alice', [], 'delete', 'clusters', name)).toBe(false);
    expect(obj.status.conditions[0].message).toBe(
      '1 ClusterRole(s) and 1 ClusterRoleBinding(s) in the host cluster grant the owner and access entries',
    );
  });

  test('names at the length limit: generated names stay within 63 characters, distinct, and still grant', async () => {
    const long = `${'l'.repeat(200)}-${randomBytes(4).toString('hex')}`;
    const s = await createSecret(long, {
      access: [
        { verbs: ['get'], users: ['alice'] },
        { verbs: ['list'], users: ['bob'] },
      ],
    });
    await synced(sharedSecretPath(NS, long));
    const roles = generated(s.metadata.uid, 'roles');
    expect(roles).toHaveLength(2);
    for (const r of roles) {
      expect(r.metadata.name.length).toBeLessThanOrEqual(63);
      expect(r.metadata.name).toMatch(/^platform-sharedsecret-l+-[0-9a-f]{16}-access-[0-9a-f]{10}$/);
      expect(r.metadata.labels['management.platform.sh/source-name'].length).toBeLessThanOrEqual(63);
      expect(r.metadata.annotations['management.platform.sh/source']).toBe(`SharedSecret ${NS}/${long}`);
    }
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', long, NS)).toBe(true);
    expect(await hostAllows('bob', [], 'get', 'sharedsecrets', long, NS)).toBe(false);
  });

  test('25 entries with two sets of verbs make two pairs; what a change costs the host is the bindings it changes', async () => {
    const access = Array.from({ length: 25 }, (_, i) => ({
      verbs: i % 2 ? ['get'] : ['update', 'get'],
      users: [`user-${i}`, `shared-${i % 3}`],
      teams: [`team-${i}`],
    }));
    const s = await createSecret(uniq('many'), { access });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    expect(generated(s.metadata.uid, 'roles')).toHaveLength(2);
    expect(
      generated(s.metadata.uid, 'rolebindings')
        .map((b) => b.subjects!.length)
        .sort(),
    ).toEqual([27, 29]);
    expect(await hostAllows('x', ['platform:team:team-24'], 'update', 'sharedsecrets', s.metadata.name, NS)).toBe(true);
    expect(await hostAllows('user-7', [], 'update', 'sharedsecrets', s.metadata.name, NS)).toBe(false);

    // A user added to an entry: one binding read and replaced, nothing else.
    host.resetCounts();
    const added = [{ op: 'add', path: '/spec/access/7/users/-', value: 'newcomer' }];
    expect((await admin.patch(path, added, JSON_PATCH)).status).toBe(200);
    await synced(path);
    expect(rbacCalls(s.metadata.name)).toEqual({ 'GET rolebindings': 1, 'PUT rolebindings': 1 });
    expect(await hostAllows('newcomer', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(true);

    // An entry added with verbs another has: the same. The order of entries is nothing to the host.
    host.resetCounts();
    const entry = { op: 'add', path: '/spec/access/0', value: { verbs: ['get'], users: ['late'] } };
    expect((await admin.patch(path, [entry], JSON_PATCH)).status).toBe(200);
    await synced(path);
    expect(rbacCalls(s.metadata.name)).toEqual({ 'GET rolebindings': 1, 'PUT rolebindings': 1 });
    host.resetCounts();
    const reversed = (await admin.get(path)).body.spec.access.reverse();
    expect((await admin.patch(path, { spec: { access: reversed } }, MERGE_PATCH)).status).toBe(200);
    await synced(path);
    expect(rbacCalls(s.metadata.name)).toEqual({});

    // An entry's verbs changed to the other set: its users move from one binding to the other.
    host.resetCounts();
    const i = reversed.findIndex((e: any) => e.users.includes('user-7'));
    const moved = [{ op: 'replace', path: `/spec/access/${i}/verbs`, value: ['get', 'update'] }];
    expect((await admin.patch(path, moved, JSON_PATCH)).status).toBe(200);
    await synced(path);
    await waitFor('user-7 to be allowed', () =>
      hostAllows('user-7', [], 'update', 'sharedsecrets', s.metadata.name, NS),
    );
    expect(rbacCalls(s.metadata.name)).toEqual({ 'GET rolebindings': 2, 'PUT rolebindings': 2 });

    // A set no entry has any more: its pair is deleted.
    await admin.patch(path, { spec: { access: access.filter((_, j) => j % 2 === 0) } }, MERGE_PATCH);
    await synced(path);
    await waitFor('one pair left', () => generated(s.metadata.uid, 'roles').length === 1);
    expect(generated(s.metadata.uid, 'rolebindings')).toHaveLength(1);
  });

  test('the RBAC of an earlier version (a pair per entry, named by its index) is deleted once its successor is made', async () => {
    const s = await createSecret(uniq('earlier'), {
      access: [
        { verbs: ['get'], users: ['alice'] },
        { verbs: ['get'], users: ['bob'] },
      ],
    });
    const path = sharedSecretPath(NS, s.metadata.name);
    const obj = await synced(path);
    const current = generated(s.metadata.uid, 'roles').map((r) => r.metadata.name);
    // What an earlier version made for this object: labelled for its uid, one pair per entry.
    const earlier = [0, 1].map((i) => `platform-sharedsecret-${s.metadata.name}-access-${i}`);
    const metadata = (name: string) => ({
      name,
      namespace: NS,
      labels: { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: obj.metadata.uid },
      annotations: { 'management.platform.sh/source': `SharedSecret ${NS}/${s.metadata.name}` },
    });
    earlier.forEach((name, i) => {
      host.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: metadata(name),
        rules: [{ apiGroups: [GROUP], resources: ['sharedsecrets'], resourceNames: [s.metadata.name], verbs: ['get'] }],
      });
      host.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: metadata(name),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: ['alice', 'bob'][i] }],
      });
    });
    await waitFor('the earlier pairs to be gone', () =>
      earlier.every((name) => !host.get('roles', NS, name) && !host.get('rolebindings', NS, name)),
    );
    expect(generated(s.metadata.uid, 'roles').map((r) => r.metadata.name)).toEqual(current);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(true);
    expect(await hostAllows('bob', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(true);
  });
});

describe("the CRDs' limits bound what one object makes in the host", () => {
  test("the review's PATCH (2,000 entries, about 73 kB) is refused and costs the host nothing", async () => {
    const s = await createSecret(uniq('flood'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    host.resetCounts();
    const flood = Array.from({ length: 2000 }, (_, i) => ({ verbs: ['get'], users: [`u-${i}`] }));
    const res = await admin.patch(path, { spec: { access: flood } }, MERGE_PATCH);
    expect({ status: res.status, reason: res.body.reason, causes: res.body.details?.causes?.[0] }).toEqual({
      status: 422,
      reason: 'Invalid',
      causes: {
        reason: 'FieldValueTooMany',
        message: 'Too many: 2000: must have at most 64 items',
        field: 'spec.access',
      },
    });
    // The next change of spec is synced, and finds nothing of the refused one to write.
    expect((await admin.patch(path, { spec: { displayName: 'after the flood' } }, MERGE_PATCH)).status).toBe(200);
    await synced(path);
    expect(rbacCalls(s.metadata.name)).toEqual({});
    expect(generated(s.metadata.uid, 'roles')).toHaveLength(1);
  });

  test('an object stored above the limits before they existed: only its owner pair, its other RBAC deleted, and AccessSynced says why', async () => {
    const s = await createSecret(uniq('stored-above'), {
      owner: { user: 'olga' },
      access: [{ verbs: ['get'], users: ['alice'] }],
    });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    // 100 entries, each with its own set of verbs, written to etcd behind the server's back.
    const verbs = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
    const access = Array.from({ length: 100 }, (_, i) => ({
      verbs: verbs.filter((_, b) => (i + 1) & (1 << b)),
      users: [`user-${i}`],
    }));
    const peek = new EtcdPeek(ts);
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const key = peek.sharedSecretKey(NS, s.metadata.name);
      const stored = await peek.value(key);
      stored.spec.access = access;
      host.resetCounts();
      await kv.put(key).value(JSON.stringify(stored));
    } finally {
      kv.close();
      peek.close();
    }
    const c = await failed(path);
    expect({ reason: c.reason, message: c.message }).toEqual({
      reason: 'AccessListTooLarge',
      message:
        'spec.access asks for 100 Roles (one per distinct set of verbs and subresources), more than the 64 an object may have: none of its entries is granted in the host cluster until spec.access is within its limits (64 entries of at most 32 users and 32 teams)',
    });
    // Nothing written; the pair of the entry granted before is deleted; the owner's stays.
    expect(rbacCalls(s.metadata.name)).toEqual({ 'DELETE roles': 1, 'DELETE rolebindings': 1 });
    expect(generated(s.metadata.uid, 'roles').map((r) => r.metadata.name)).toEqual([
      `platform-sharedsecret-${s.metadata.name}-owner`,
    ]);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(false);
    expect(await hostAllows('olga', [], 'delete', 'sharedsecrets', s.metadata.name, NS)).toBe(true);
    const logged = logs
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'access sync: the access entries of an object are not granted in the host cluster');
    expect(logged).toMatchObject({
      kind: 'SharedSecret',
      namespace: NS,
      name: s.metadata.name,
      reason: 'AccessListTooLarge',
    });

    // Brought within the limits (as any change of the list must), it is granted again.
    const within = access.slice(0, 64);
    expect((await admin.patch(path, { spec: { access: within } }, MERGE_PATCH)).status).toBe(200);
    await synced(path, 30_000);
    expect(generated(s.metadata.uid, 'roles')).toHaveLength(65);
    expect(await hostAllows('user-0', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(true);
  }, 60_000);
});

describe('deletion', () => {
  test('deleting an object removes its RBAC first, then the object', async () => {
    const s = await createSecret(uniq('del'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    const res = await admin.delete(path);
    expect(res.status).toBe(200);
    await waitFor('the object to be gone', async () => (await admin.get(path)).status === 404);
    expect(generated(s.metadata.uid, 'roles')).toEqual([]);
    expect(generated(s.metadata.uid, 'rolebindings')).toEqual([]);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(false);

    // The same name again is a new object with its own RBAC.
    const again = await createSecret(s.metadata.name, { access: [{ verbs: ['list'], users: ['alice'] }] });
    await synced(path);
    expect(generated(again.metadata.uid, 'roles')[0].rules[0].verbs).toEqual(['list']);
  });

  test('generated RBAC whose source no longer exists is swept', async () => {
    const ghostUid = '11111111-2222-3333-4444-555555555555';
    host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: {
        name: 'platform-sharedsecret-ghost-access-0',
        namespace: NS,
        labels: { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: ghostUid },
        annotations: { 'management.platform.sh/source': `SharedSecret ${NS}/ghost` },
      },
      rules: [{ apiGroups: [GROUP], resources: ['sharedsecrets'], resourceNames: ['ghost'], verbs: ['*'] }],
    });
    await waitFor('the orphan to be swept', () => !host.get('roles', NS, 'platform-sharedsecret-ghost-access-0'));
  });
});

describe('labels are no proof of what the server made', () => {
  test("a host object labelled for a source, not at a name the server gives that source's RBAC, is never deleted", async () => {
    const s = await createSecret(uniq('lbl'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    const labels = { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: s.metadata.uid };
    const annotations = { 'management.platform.sh/source': `SharedSecret ${NS}/${s.metadata.name}` };
    // Someone who may label RBAC objects (but not delete them) labels theirs: a Role elsewhere, a ClusterRole.
    const decoys = [
      host.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'tenant-role', namespace: NS, labels, annotations },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      }),
      host.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: `platform-sharedsecret-${s.metadata.name}-owner`, labels, annotations },
        rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
      }),
    ];
    // A change of the access list reconciles the source (its unwanted RBAC is deleted), and so does its deletion.
    expect(
      (await admin.patch(path, { spec: { access: [{ verbs: ['list'], users: ['alice'] }] } }, MERGE_PATCH)).status,
    ).toBe(200);
    await synced(path);
    expect((await admin.delete(path)).status).toBe(200);
    await waitFor('the object to be gone', async () => (await admin.get(path)).status === 404);
    expect(generated(s.metadata.uid, 'roles').map((r) => r.metadata.name)).toEqual(['tenant-role']);
    expect(host.get('roles', NS, 'tenant-role')).toEqual(decoys[0]);
    expect(host.get('clusterroles', '', decoys[1].metadata.name)).toEqual(decoys[1]);
  });

  test("another source's Role whose name starts like this one's (foo-bar's owner Role, for foo), labelled for foo, is not deleted by foo's sync", async () => {
    const foo = await createSecret(uniq('foo'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const fooBar = await createSecret(`${foo.metadata.name}-bar`, { owner: { user: 'olga' } });
    await synced(sharedSecretPath(NS, foo.metadata.name));
    await synced(sharedSecretPath(NS, fooBar.metadata.name));
    const ownerRole = `platform-sharedsecret-${fooBar.metadata.name}-owner`;
    // Someone who may label Roles (but not delete them) labels foo-bar's owner Role as foo's.
    const relabelled: KubeObj = structuredClone(host.get('roles', NS, ownerRole)!);
    relabelled.metadata.labels = { ...relabelled.metadata.labels, [UID_LABEL]: foo.metadata.uid };
    relabelled.metadata.annotations = { 'management.platform.sh/source': `SharedSecret ${NS}/${foo.metadata.name}` };
    const labelled = host.put(relabelled);
    // foo's own Role deleted by hand comes back through the same watch, after the relabelling: foo has reconciled
    // with it seen.
    const fooRole = accessName(foo.metadata.name, { verbs: ['get'] });
    host.remove('roles', NS, fooRole);
    await waitFor("foo's Role to be back", () => host.get('roles', NS, fooRole));
    expect(host.get('roles', NS, ownerRole)).toEqual(labelled);
    expect(await hostAllows('olga', [], 'delete', 'sharedsecrets', fooBar.metadata.name, NS)).toBe(true);
  });

  test("an annotation naming a source no object could be (a name of 300 characters) makes nothing the server's, whatever the name and label say", async () => {
    const s = await createSecret(uniq('long'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    await synced(sharedSecretPath(NS, s.metadata.name));
    // At the name generatedName gives a source of that name with this one's uid, and labelled for this one. No
    // SharedSecret has such a name (253 characters at most): the Role is not the server's, and what would be kept of
    // it (its annotation, which anyone may make 256 kB long) is not the server's to keep.
    const unnamable = { name: 'n'.repeat(300), uid: s.metadata.uid };
    const forged = host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: {
        name: generatedName(secretDef, unnamable, 'owner'),
        namespace: NS,
        labels: { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: s.metadata.uid },
        annotations: { 'management.platform.sh/source': `SharedSecret ${NS}/${unnamable.name}` },
      },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    // The source's own Role deleted by hand comes back through the same watch, after the forged Role: the source
    // has reconciled with it seen.
    const own = accessName(s.metadata.name, { verbs: ['get'] });
    host.remove('roles', NS, own);
    await waitFor('the Role to be back', () => host.get('roles', NS, own));
    expect(host.get('roles', NS, forged.metadata.name)).toEqual(forged);
  });
});

describe('what others label costs the lists no more than a page', () => {
  test("the lists before each watch come a page at a time; 600 Roles labelled for a source (not at its names) stay, and the source's own, on a later page, are still known", async () => {
    const s = await createSecret(uniq('paged'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    const path = sharedSecretPath(NS, s.metadata.name);
    await synced(path);
    const labels = { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: s.metadata.uid };
    const annotations = { 'management.platform.sh/source': `SharedSecret ${NS}/${s.metadata.name}` };
    // Listed before the source's own Roles (kube lists by namespace, then name): in another namespace and in its own.
    const foreign = Array.from({ length: 600 }, (_, i) =>
      host.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: `aaa-tenant-role-${i}`, namespace: i % 2 ? NS : 'a-tenant', labels, annotations },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: [`cm-${i}`] }],
      }),
    );
    const watching = (resource: string) =>
      host.requests.some((r) => r.resource === resource && new URLSearchParams(r.query).get('watch') === 'true');
    try {
      host.resetCounts();
      // The watches end (as kube's timeout ends them): the sync lists each kind again and watches from there.
      host.endWatches();
      await waitFor('the Roles to be watched again', () => watching('roles'));
      const lists = host.requests
        .filter((r) => r.resource === 'roles' && r.method === 'GET' && r.query.includes('labelSelector'))
        .map((r) => Object.fromEntries(new URLSearchParams(r.query)))
        .filter((q) => q.watch !== 'true');
      const selector = 'app.kubernetes.io/managed-by=platform-management-api';
      expect(lists.length).toBeGreaterThanOrEqual(2);
      expect(lists).toEqual([
        { labelSelector: selector, limit: '500' },
        ...lists.slice(1).map(() => ({ labelSelector: selector, limit: '500', continue: expect.any(String) })),
      ]);

      // Its Role deleted by hand is put back: the relist and the watch after it have been seen, and the source
      // reconciled after both. That cost the put-back's read (and its POST, at the collection's path) alone: its
      // objects on the later page were known, else each would have been read and replaced.
      const name = accessName(s.metadata.name, { verbs: ['get'] });
      expect(host.remove('roles', NS, name)).toBe(true);
      await waitFor('the Role to be back', () => host.get('roles', NS, name));
      expect(rbacCalls(s.metadata.name)).toEqual({ 'GET roles': 1 });
      // None of the others' Roles was taken for the source's: all are as they were.
      for (const f of foreign) expect(host.get('roles', f.metadata.namespace!, f.metadata.name)).toEqual(f);
    } finally {
      for (const f of foreign) host.remove('roles', f.metadata.namespace!, f.metadata.name);
    }
  }, 60_000);
});

describe("what is kept of RBAC at a source's names is the same few hundred bytes, whatever its rules", () => {
  /** Twice what the server's own objects need (about 55 MiB after GC, more while a page is read). */
  const HEAP_MIB = 128;
  /** 0.63 MiB of JSON each, 0.98 MiB of heap once parsed: 118 MiB kept whole, more than the heap has left. */
  const FORGED = 120;

  test('120 Roles at the owner names of SharedSecrets that do not exist, 0.63 MiB of rules each: a server with a 128 MiB heap keeps none of their rules, stays up and sweeps them', async () => {
    // Anyone who may create Roles can label and annotate them as made for any source, at that source's names. The
    // server takes them for RBAC of a source deleted while it was away and sweeps them, as it should; until then it
    // kept each one whole, and its first list kept all of them at once. A server whose heap cannot hold them shows
    // what it keeps: before, it died out of memory in that list; now it keeps where each Role is, the source it
    // names and a digest of its content, and sweeps them all.
    const forgedHost = await startHostCluster();
    const resourceNames = Array.from({ length: 16_000 }, (_, i) => `configmap-with-a-fairly-long-name-${i}`);
    for (let i = 0; i < FORGED; i++)
      forgedHost.put({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: {
          name: `platform-sharedsecret-s${i}-owner`,
          namespace: NS,
          labels: { 'app.kubernetes.io/managed-by': 'platform-management-api', [UID_LABEL]: randomUUID() },
          annotations: { 'management.platform.sh/source': `SharedSecret ${NS}/s${i}` },
        },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames }],
      });
    const ROOT = `root-${randomBytes(16).toString('hex')}`;
    const dir = mkdtempSync(join(tmpdir(), 'forged-'));
    writeFileSync(join(dir, 'tokens.csv'), `${ROOT},root,uid-root,"system:masters"\n`);
    const p = await startServerProcess({
      etcdEndpoint: ts.etcd.endpoint,
      etcdPrefix: `/forged-${randomBytes(4).toString('hex')}`,
      tokenAuthFile: join(dir, 'tokens.csv'),
      nodeArgs: [`--max-old-space-size=${HEAP_MIB}`],
      args: [`--kubeconfig=${forgedHost.kubeconfigPath}`],
    });
    // The sources swept, each once at least (a relist while a sweep runs would sweep it again).
    const swept = () =>
      new Set(p.logs.filter((l) => l.msg === 'access sync: swept RBAC whose source is gone').map((l) => l.source)).size;
    try {
      const exitedFirst = await Promise.race([
        p.exited.then((code) => `the server exited (code ${code}) before the sweeps:\n${p.stderr().slice(-1500)}`),
        waitFor('a sweep of each forged Role', () => swept() === FORGED, 240_000, 200).then(() => undefined),
      ]);
      expect(exitedFirst).toBeUndefined();
      expect(forgedHost.list('roles', NS)).toEqual([]);
      expect((await p.client(ROOT).get('/readyz')).status).toBe(200);
    } finally {
      await p.stop();
      await forgedHost.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('drift', () => {
  test('a generated Role deleted by hand, a binding edited by hand, a roleRef changed: all put back', async () => {
    const s = await createSecret(uniq('drift'), { access: [{ verbs: ['get'], users: ['alice'] }] });
    await synced(sharedSecretPath(NS, s.metadata.name));
    const name = accessName(s.metadata.name, { verbs: ['get'] });
    const original = { role: host.get('roles', NS, name)!, binding: host.get('rolebindings', NS, name)! };

    expect(host.remove('roles', NS, name)).toBe(true);
    await waitFor('the Role to be back', () => host.get('roles', NS, name));
    expect(host.get('roles', NS, name)!.rules).toEqual(original.role.rules);

    const edited: KubeObj = structuredClone(host.get('rolebindings', NS, name)!);
    edited.subjects = [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'mallory' }];
    host.put(edited);
    await waitFor('the subjects to be back', () => host.get('rolebindings', NS, name)!.subjects?.[0]?.name === 'alice');
    expect(await hostAllows('mallory', [], 'get', 'sharedsecrets', s.metadata.name, NS)).toBe(false);

    const widened: KubeObj = structuredClone(host.get('roles', NS, name)!);
    widened.rules = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];
    host.put(widened);
    await waitFor('the rules to be back', () => host.get('roles', NS, name)!.rules?.[0]?.apiGroups?.[0] === GROUP);

    // A binding pointing at another role (roleRef cannot change in kube: it is deleted and created again).
    host.remove('rolebindings', NS, name);
    host.put({
      ...structuredClone(original.binding),
      metadata: { ...structuredClone(original.binding.metadata), resourceVersion: undefined },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    });
    await waitFor('the roleRef to be back', () => host.get('rolebindings', NS, name)?.roleRef?.kind === 'Role');
  });
});

/** Waits for AccessSynced=False for the object's current generation; returns the condition. */
async function failed(path: string, timeoutMs = 15_000): Promise<any> {
  return waitFor(
    `${path} to be AccessSynced=False`,
    async () => {
      const obj = (await admin.get(path)).body;
      const c = obj?.status?.conditions?.find((x: any) => x.type === 'AccessSynced');
      return c?.status === 'False' && c.observedGeneration === obj.metadata.generation && c;
    },
    timeoutMs,
  );
}

describe('objects the server did not make', () => {
  test("a host Role or RoleBinding that has a generated name but is not this source's own is never overwritten, and the condition says so", async () => {
    const name = uniq('taken');
    const roleName = accessName(name, { verbs: ['get'] });
    const ownerName = `platform-sharedsecret-${name}-owner`;
    // Made by hand, before the source exists: a Role granting something else entirely.
    const foreign = host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: roleName, namespace: NS, labels: { team: 'ops' } },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
    });
    // Labelled as managed by this server, but without a source uid.
    const otherSource = host.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: {
        name: ownerName,
        namespace: NS,
        labels: { 'app.kubernetes.io/managed-by': 'platform-management-api' },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'elsewhere' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'olga' }],
    });
    const s = await createSecret(name, { owner: { user: 'alice' }, access: [{ verbs: ['get'], users: ['mallory'] }] });
    const path = sharedSecretPath(NS, name);
    const c = await failed(path);
    expect({ reason: c.reason, message: c.message }).toEqual({
      reason: 'NameTaken',
      message:
        `the host cluster already has RoleBinding ${JSON.stringify(ownerName)} in the namespace ${JSON.stringify(NS)}, Role ${JSON.stringify(roleName)} in the namespace ${JSON.stringify(NS)}, ` +
        'not made by this server for this object; this server leaves such objects alone, and what they would grant is not in effect until they are removed or renamed',
    });
    // Both are exactly as they were; no binding was made to the foreign Role (it would have granted its rules to mallory).
    expect(host.get('roles', NS, roleName)).toEqual(foreign);
    expect(host.get('rolebindings', NS, ownerName)).toEqual(otherSource);
    expect(host.get('rolebindings', NS, roleName)).toBeUndefined();
    expect(await hostAllows('mallory', [], 'get', 'secrets', 'x', NS)).toBe(false);
    // What is not taken is made: the owner's Role.
    expect(generated(s.metadata.uid, 'roles').map((r) => r.metadata.name)).toEqual([ownerName]);

    // Once the foreign objects are gone, everything is made.
    host.remove('roles', NS, roleName);
    host.remove('rolebindings', NS, ownerName);
    await synced(path, 20_000);
    expect(await hostAllows('mallory', [], 'get', 'sharedsecrets', name, NS)).toBe(true);
    expect(await hostAllows('alice', [], 'delete', 'sharedsecrets', name, NS)).toBe(true);
  }, 40_000);

  test("the host's refusal reaches tenants as what failed on which object, never the host's own words", async () => {
    const hostWords =
      'user "system:serviceaccount:platform:management-api" (groups=["system:serviceaccounts" "system:masters-lookalike"]) is attempting to grant RBAC permissions not currently held';
    const name = uniq('refused');
    host.onRbacWrite = (obj) => {
      if (obj.metadata.name === accessName(name, { verbs: ['get'] }))
        throw errors.forbidden({ group: 'rbac.authorization.k8s.io', resource: 'roles' }, obj.metadata.name, hostWords);
    };
    try {
      await createSecret(name, { access: [{ verbs: ['get'], users: ['alice'] }] });
      const c = await failed(sharedSecretPath(NS, name));
      expect({ reason: c.reason, message: c.message }).toEqual({
        reason: 'HostRejected',
        message: `could not create Role ${JSON.stringify(accessName(name, { verbs: ['get'] }))} in the namespace ${JSON.stringify(NS)}: the host cluster answered HTTP 403 (the server's log has the details)`,
      });
      expect(JSON.stringify((await admin.get(sharedSecretPath(NS, name))).body)).not.toContain('system:serviceaccount');
    } finally {
      host.onRbacWrite = undefined;
    }
    await synced(sharedSecretPath(NS, name), 20_000);
  }, 40_000);
});

describe('host outages', () => {
  test('while the host is down the API keeps serving and reports it; once back, everything converges', async () => {
    await host.setDown(true, 'unavailable');
    try {
      const s = await createSecret(uniq('down'), { access: [{ verbs: ['get'], users: ['alice'] }] });
      const path = sharedSecretPath(NS, s.metadata.name);
      const failing = await waitFor('AccessSynced=False', async () => {
        const obj = (await admin.get(path)).body;
        const c = obj.status?.conditions?.find((x: any) => x.type === 'AccessSynced');
        return c?.status === 'False' && c;
      });
      expect(failing.reason).toBe('HostUnavailable');
      expect(failing.message).toContain('the host cluster answered HTTP 503');
      // Reads and writes of our API go on.
      expect((await admin.get(path)).status).toBe(200);
      expect((await admin.patch(path, { metadata: { labels: { during: 'outage' } } }, MERGE_PATCH)).status).toBe(200);

      // No tight loop: over three seconds, retries stay few (backoff per object and per watch).
      host.resetCounts();
      await new Promise((r) => setTimeout(r, 3000));
      expect(host.requests.length).toBeLessThan(40);
    } finally {
      await host.setDown(false);
    }
    const rows = (await admin.get(`${sharedSecretsPath(NS)}?labelSelector=during=outage`)).body.items;
    expect(rows).toHaveLength(1);
    const back = await synced(sharedSecretPath(NS, rows[0].metadata.name), 45_000);
    expect(generated(back.metadata.uid, 'roles')).toHaveLength(1);
    expect(await hostAllows('alice', [], 'get', 'sharedsecrets', back.metadata.name, NS)).toBe(true);
  }, 90_000);
});

describe('without a host cluster', () => {
  test('the controller is off and says so once at start; objects get no finalizer', async () => {
    const ROOT = `root-${randomBytes(16).toString('hex')}`;
    const dir = mkdtempSync(join(tmpdir(), 'no-host-'));
    writeFileSync(join(dir, 'tokens.csv'), `${ROOT},root,uid-root,"system:masters"\n`);
    const p = await startServerProcess({
      etcdEndpoint: ts.etcd.endpoint,
      etcdPrefix: `/no-host-${randomBytes(4).toString('hex')}`,
      tokenAuthFile: join(dir, 'tokens.csv'),
    });
    try {
      const off = p.logs.filter((l) =>
        /the access sync to host RBAC and connected Clusters .* are off, and with them imports of virtual clusters and their kube configs/.test(
          l.msg,
        ),
      );
      expect(off).toHaveLength(1);
      const c = p.client(ROOT);
      const body = secretBody('plain');
      body.spec.access = [{ verbs: ['get'], users: ['alice'] }];
      expect((await c.post(sharedSecretsPath(NS), body)).status).toBe(201);
      await p.waitForLog('leader election: started leading');
      await new Promise((r) => setTimeout(r, 500));
      const got = (await c.get(sharedSecretPath(NS, 'plain'))).body;
      expect(got.metadata.finalizers).toBeUndefined();
      // The garbage collector, the Clusters' health checks and the ProjectSecret sync run; the access sync does not.
      const started = p.logs.filter((l) => l.msg === 'controller starting').map((l) => l.controller);
      expect(started.sort()).toEqual(['cluster-health', 'garbage-collector', 'projectsecret-sync']);
    } finally {
      await p.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
