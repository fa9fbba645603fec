/**
 * One virtual cluster is managed by one VirtualClusterInstance, even when tenants race for it: each instance holds a
 * claim on its virtual cluster in storage, written in the transaction that creates the instance and removed in the
 * one that deletes it (DELETE, the last finalizer removed, garbage collection). A claim whose instance is gone does
 * not block. And a virtual cluster is imported only by someone who has it already: permission to get its connection
 * Secret `vc-<name>` in the cluster it runs in (here the host stand-in, the local Cluster; a SubjectAccessReview as
 * the caller), for imports and creates alike.
 * Tenants are adversaries: bob and carol race for the same virtual cluster; mallory has none of the virtual clusters.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import {
  API_VERSION,
  APPLY_PATCH as APPLY,
  CLUSTERS_PATH,
  GROUP,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  clusterBody,
  uniq,
  virtualClusterInstancesPath as vcis,
} from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';
import * as errors from '../../src/apimachinery/status.js';
import { grantConnectionSecret, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import type { SarSpec } from '../support/hostcluster/rbacauthorizer.js';
import { HEALTH_INTERVAL_MS, clusterPhase, connectCluster } from '../support/connectedclusters.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

/** How many times the races run: a race that lets two through only sometimes must still be caught. */
const ROUNDS = 5;
/** Requests per tenant per round. */
const RACERS = 10;

let host: HostClusterStandIn;
let ts: TestServer;
let kv: Etcd3;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
let mallory: HttpClient;
let cluster: string;

beforeAll(async () => {
  host = await startHostCluster();
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [], mallory: [] },
    { kubeconfig: host.kubeconfigPath, clusterHealthIntervalMs: HEALTH_INTERVAL_MS },
  );
  ({ root, bob, carol, mallory } = server.as);
  ts = server;
  kv = new Etcd3({ hosts: ts.etcd.endpoint });
  // The tenants may create and delete instances (host RBAC); where they point is what the checks decide.
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'vci-writer' },
    rules: [
      {
        apiGroups: [GROUP],
        resources: ['virtualclusterinstances'],
        verbs: ['create', 'get', 'list', 'patch', 'delete'],
      },
    ],
  });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'tenants-write-vcis' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'vci-writer' },
    subjects: ['bob', 'carol', 'mallory'].map((name) => ({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'User',
      name,
    })),
  });
  // The virtual clusters are in the host stand-in: the local Cluster.
  cluster = uniq('cluster');
  await connectCluster(root, host, cluster, host, { access: [{ verbs: ['get'], users: ['bob', 'carol', 'mallory'] }] });
}, 120_000);

afterAll(async () => {
  kv?.close();
  await ts?.stop();
  await host?.stop();
}, 60_000);

interface VirtualCluster {
  namespace: string;
  name: string;
}

/** A project owned by `owner`, and its namespace in the host; the project's name. */
/** A project of `owner` allowing every Cluster. */
async function createProject(owner: string): Promise<string> {
  const name = uniq(owner);
  const res = await root.post(PROJECTS, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name },
    spec: { owner: { user: owner }, allowedClusters: [{ name: '*' }] },
  });
  expect(res.status).toBe(201);
  host.addNamespace(`p-${name}`);
  return name;
}

/** A virtual cluster running in the host, whose connection Secret `users` may get (a Role and RoleBinding there). */
function virtualCluster(users: string[]): VirtualCluster {
  const name = uniq('vc');
  const vc = { namespace: `vcluster-${name}`, name };
  host.addSecret(vc.namespace, `vc-${name}`, { config: 'a kubeconfig of the virtual cluster' });
  if (users.length) grantConnection(vc, users);
  return vc;
}

function grantConnection(vc: VirtualCluster, users: string[]): void {
  grantConnectionSecret(host, vc.namespace, vc.name, users);
}

const importInto = (client: HttpClient, project: string, vc: VirtualCluster, importName?: string, query = '') =>
  client.post(`${PROJECTS}/${project}/importvirtualcluster${query}`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { name: vc.name, namespace: vc.namespace, cluster },
    ...(importName ? { importName } : {}),
  });

const instance = (name: string, vc: VirtualCluster) => ({
  apiVersion: API_VERSION,
  kind: 'VirtualClusterInstance',
  metadata: { name },
  spec: { clusterRef: { cluster, namespace: vc.namespace, virtualCluster: vc.name } },
});

/** Every stored instance of the virtual cluster, in any namespace. */
async function instancesOf(vc: VirtualCluster): Promise<any[]> {
  const all = await root.get(`${GROUP_PATH}/virtualclusterinstances`);
  expect(all.status).toBe(200);
  return all.body.items.filter(
    (o: any) => o.spec.clusterRef.namespace === vc.namespace && o.spec.clusterRef.virtualCluster === vc.name,
  );
}

/** The claim of a virtual cluster in the host stand-in: its kube-system uid, namespace and name. */
const claimKey = (vc: VirtualCluster) =>
  `${ts.config.etcdPrefix}/claims/${GROUP}/virtualclusterinstances/${host.kubeSystemUid}/${vc.namespace}/${vc.name}`;

/** The claim as stored: which object holds it (its etcd key and uid), or undefined when there is none. */
async function claimOf(vc: VirtualCluster): Promise<{ key: string; uid: string } | undefined> {
  const value = await kv.get(claimKey(vc)).string();
  return value === null ? undefined : JSON.parse(value);
}

const instanceKey = (o: any) =>
  `${ts.config.etcdPrefix}/${GROUP}/virtualclusterinstances/${o.metadata.namespace}/${o.metadata.name}`;

/** How many answers had each status. */
function statuses(answers: HttpResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

function expectAlreadyImported(res: HttpResponse, vc: VirtualCluster): void {
  expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 409, reason: 'Conflict' });
  expect(res.body.message).toContain(
    `virtual cluster ${vc.namespace}/${vc.name} is already imported by another VirtualClusterInstance`,
  );
}

describe('one instance per virtual cluster, even when imports and creates race', () => {
  test(`${RACERS} imports by bob and ${RACERS} by carol at once: one 201, the others 409, one instance stored (${ROUNDS} rounds)`, async () => {
    const bobs = await createProject('bob');
    const carols = await createProject('carol');
    for (let round = 0; round < ROUNDS; round++) {
      const vc = virtualCluster(['bob', 'carol']);
      const answers = await Promise.all(
        Array.from({ length: RACERS }, (_, i) => [
          importInto(bob, bobs, vc, `${vc.name}-b${i}`),
          importInto(carol, carols, vc, `${vc.name}-c${i}`),
        ]).flat(),
      );
      expect({ round, statuses: statuses(answers) }).toEqual({ round, statuses: { 201: 1, 409: 2 * RACERS - 1 } });
      for (const res of answers.filter((a) => a.status === 409)) expectAlreadyImported(res, vc);
      const stored = await instancesOf(vc);
      expect(stored).toHaveLength(1);
      const winner = answers.find((a) => a.status === 201)!.body.status.virtualClusterInstance;
      expect(stored[0].metadata.uid).toBe(winner.uid);
      expect(await claimOf(vc)).toEqual({ key: instanceKey(stored[0]), uid: winner.uid });
    }
  });

  test(`${RACERS} plain creates by bob and ${RACERS} by carol at once: the same (${ROUNDS} rounds)`, async () => {
    const bobs = `p-${await createProject('bob')}`;
    const carols = `p-${await createProject('carol')}`;
    for (let round = 0; round < ROUNDS; round++) {
      const vc = virtualCluster(['bob', 'carol']);
      const answers = await Promise.all(
        Array.from({ length: RACERS }, (_, i) => [
          bob.post(vcis(bobs), instance(`${vc.name}-b${i}`, vc)),
          carol.post(vcis(carols), instance(`${vc.name}-c${i}`, vc)),
        ]).flat(),
      );
      expect({ round, statuses: statuses(answers) }).toEqual({ round, statuses: { 201: 1, 409: 2 * RACERS - 1 } });
      for (const res of answers.filter((a) => a.status === 409)) expectAlreadyImported(res, vc);
      const stored = await instancesOf(vc);
      expect(stored).toHaveLength(1);
      expect(await claimOf(vc)).toEqual({ key: instanceKey(stored[0]), uid: stored[0].metadata.uid });
    }
  });

  test('system:masters holds to it too: a second instance of one virtual cluster is 409 naming the first', async () => {
    const ns = `p-${await createProject('bob')}`;
    const vc = virtualCluster([]);
    const first = await root.post(vcis(ns), instance(uniq('first'), vc));
    expect(first.status).toBe(201);
    const second = await root.post(vcis(ns), instance(uniq('second'), vc));
    expect({ status: second.status, reason: second.body.reason }).toEqual({ status: 409, reason: 'Conflict' });
    expect(second.body.message).toContain(
      `virtual cluster ${vc.namespace}/${vc.name} is already imported as VirtualClusterInstance ${ns}/${first.body.metadata.name}`,
    );
    expect(await instancesOf(vc)).toHaveLength(1);
  });
});

describe('the claim goes with its instance', () => {
  test('DELETE frees it: create, delete, and the virtual cluster may be imported again', async () => {
    const bobs = await createProject('bob');
    const carols = await createProject('carol');
    const vc = virtualCluster(['bob', 'carol']);
    expect((await importInto(bob, bobs, vc)).status).toBe(201);
    expectAlreadyImported(await importInto(carol, carols, vc), vc);
    expect((await bob.delete(`${vcis(`p-${bobs}`)}/${vc.name}`)).status).toBe(200);
    expect(await claimOf(vc)).toBeUndefined();
    expect((await importInto(carol, carols, vc)).status).toBe(201);
    expect((await instancesOf(vc)).map((o) => o.metadata.namespace)).toEqual([`p-${carols}`]);
  });

  test('removing the last finalizer of an instance being deleted frees it', async () => {
    const bobs = await createProject('bob');
    const carols = await createProject('carol');
    const vc = virtualCluster(['bob', 'carol']);
    expect((await importInto(bob, bobs, vc)).status).toBe(201);
    const path = `${vcis(`p-${bobs}`)}/${vc.name}`;
    const hold = { metadata: { finalizers: ['example.com/hold'] } };
    expect((await root.patch(path, hold, MERGE_PATCH)).status).toBe(200);
    expect((await root.delete(path)).status).toBe(200);
    // Still there, being deleted: the virtual cluster is still its.
    expect((await root.get(path)).body.metadata.deletionTimestamp).toBeDefined();
    expectAlreadyImported(await importInto(carol, carols, vc), vc);
    expect((await root.patch(path, { metadata: { finalizers: null } }, MERGE_PATCH)).status).toBe(200);
    expect((await root.get(path)).status).toBe(404);
    expect(await claimOf(vc)).toBeUndefined();
    expect((await importInto(carol, carols, vc)).status).toBe(201);
  });

  test("deleting the project frees it (the garbage collector deletes the project's instances)", async () => {
    const bobs = await createProject('bob');
    const carols = await createProject('carol');
    const vc = virtualCluster(['bob', 'carol']);
    expect((await importInto(bob, bobs, vc)).status).toBe(201);
    expect((await root.delete(`${PROJECTS}/${bobs}`)).status).toBe(200);
    await waitFor(
      'the garbage collector to delete the instance',
      async () => (await root.get(`${vcis(`p-${bobs}`)}/${vc.name}`)).status === 404,
    );
    expect(await claimOf(vc)).toBeUndefined();
    expect((await importInto(carol, carols, vc)).status).toBe(201);
  });

  test('a claim whose instance is gone does not block: naming no object, another uid, or nothing readable', async () => {
    const bobs = await createProject('bob');
    const held = virtualCluster([]);
    const other = await root.post(vcis(`p-${bobs}`), instance(uniq('other'), held));
    expect(other.status).toBe(201);
    const stale = [
      JSON.stringify({ key: `${ts.config.etcdPrefix}/${GROUP}/virtualclusterinstances/p-gone/gone`, uid: 'gone' }),
      JSON.stringify({ key: instanceKey(other.body), uid: 'not-its-uid' }),
      'not a claim',
    ];
    for (const value of stale) {
      const vc = virtualCluster(['bob']);
      await kv.put(claimKey(vc)).value(value);
      const res = await importInto(bob, bobs, vc);
      expect({ value, status: res.status }).toEqual({ value, status: 201 });
      const uid = res.body.status.virtualClusterInstance.uid;
      expect(await claimOf(vc)).toEqual({
        key: `${ts.config.etcdPrefix}/${GROUP}/virtualclusterinstances/p-${bobs}/${vc.name}`,
        uid,
      });
    }
    // The live instance kept its own.
    expect(await claimOf(held)).toEqual({ key: instanceKey(other.body), uid: other.body.metadata.uid });
  });

  test('a dry run checks the claim but writes none', async () => {
    const ns = `p-${await createProject('bob')}`;
    const vc = virtualCluster(['bob']);
    const name = uniq('dry');
    const dry = await bob.post(`${vcis(ns)}?dryRun=All`, instance(name, vc));
    expect(dry.status).toBe(201);
    expect(await claimOf(vc)).toBeUndefined();
    expect(await instancesOf(vc)).toEqual([]);
    expect((await bob.post(vcis(ns), instance(name, vc))).status).toBe(201);
    // Held now: a dry run of another is refused by the claim (system:masters skips the list check), and changes
    // nothing.
    const before = await claimOf(vc);
    const again = await root.post(`${vcis(ns)}?dryRun=All`, instance(uniq('dry'), vc));
    expect({ status: again.status, reason: again.body.reason }).toEqual({ status: 409, reason: 'Conflict' });
    expect(again.body.message).toContain(`is already imported as VirtualClusterInstance ${ns}/${name}`);
    expect(await claimOf(vc)).toEqual(before);
  });

  test('an instance stored before claims existed (no claim) still counts: imports and tenant creates are 409', async () => {
    const bobs = await createProject('bob');
    const carols = await createProject('carol');
    const vc = virtualCluster(['carol']);
    expect((await importInto(bob, bobs, virtualCluster(['bob']))).status).toBe(201);
    expect((await root.post(vcis(`p-${bobs}`), instance(uniq('old'), vc))).status).toBe(201);
    // As data written before this server kept claims.
    await kv.delete().key(claimKey(vc));
    expectAlreadyImported(await importInto(carol, carols, vc), vc);
    expectAlreadyImported(await carol.post(vcis(`p-${carols}`), instance(uniq('vc'), vc)), vc);
    expect(await instancesOf(vc)).toHaveLength(1);
  });
});

describe('importing needs the virtual cluster already: get on its connection Secret in its cluster', () => {
  test('without it: 403 naming the Secret, for an import, a create, a dry run and an apply; nothing stored, no claim', async () => {
    const project = await createProject('mallory');
    const ns = `p-${project}`;
    const vc = virtualCluster([]);
    const reviews: SarSpec[] = [];
    host.onSubjectAccessReview = (spec) => {
      if (spec.resourceAttributes?.resource === 'secrets') reviews.push(spec);
      return undefined;
    };
    try {
      const name = uniq('vc');
      const answers = [
        [await importInto(mallory, project, vc), `projects.management.platform.sh "${project}"`],
        [await mallory.post(vcis(ns), instance(name, vc)), `virtualclusterinstances.management.platform.sh "${name}"`],
        [
          await mallory.post(`${vcis(ns)}?dryRun=All`, instance(name, vc)),
          `virtualclusterinstances.management.platform.sh "${name}"`,
        ],
        [
          await mallory.patch(`${vcis(ns)}/${name}?fieldManager=mallory`, instance(name, vc), APPLY),
          `virtualclusterinstances.management.platform.sh "${name}"`,
        ],
      ] as const;
      for (const [res, subject] of answers) {
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
        expect(res.body.message).toBe(
          `${subject} is forbidden: User "mallory" cannot import virtual cluster ${vc.namespace}/${vc.name}: it may not get its connection Secret ${vc.namespace}/vc-${vc.name} in Cluster "${cluster}", and a virtual cluster is imported only by someone who has it already`,
        );
      }
      // Asked as mallory: her name, uid and groups.
      expect(reviews.length).toBeGreaterThanOrEqual(answers.length);
      for (const spec of reviews) {
        expect(spec).toMatchObject({
          user: 'mallory',
          uid: 'uid-mallory',
          groups: expect.arrayContaining(['system:authenticated']),
          resourceAttributes: {
            namespace: vc.namespace,
            verb: 'get',
            version: 'v1',
            resource: 'secrets',
            name: `vc-${vc.name}`,
          },
        });
        expect(spec.resourceAttributes?.group ?? '').toBe('');
      }
    } finally {
      host.onSubjectAccessReview = undefined;
    }
    expect(await instancesOf(vc)).toEqual([]);
    expect(await claimOf(vc)).toBeUndefined();

    // A RoleBinding in the host granting get on the Secret: the same import goes through.
    grantConnection(vc, ['mallory']);
    expect((await importInto(mallory, project, vc)).status).toBe(201);
    expect(await instancesOf(vc)).toHaveLength(1);
  });

  test('someone without it learns nothing of whether it is imported: 403, not 409', async () => {
    const vc = virtualCluster(['carol']);
    expect((await importInto(carol, await createProject('carol'), vc)).status).toBe(201);
    const mallorys = await createProject('mallory');
    for (const res of [
      await importInto(mallory, mallorys, vc),
      await mallory.post(vcis(`p-${mallorys}`), instance(uniq('vc'), vc)),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).not.toContain('already imported');
    }
  });

  test('a host cluster that cannot answer the review: 503, nothing stored', async () => {
    const project = await createProject('mallory');
    const vc = virtualCluster(['mallory']);
    // Only the reviews fail: a whole host down would also fail the Cluster's health check, whose 'not ready' comes
    // first when it lands in the outage.
    host.onRequest = (_method, path) => {
      if (path.endsWith('/subjectaccessreviews')) throw errors.serviceUnavailable('the host is overloaded');
    };
    let res: HttpResponse;
    try {
      res = await importInto(mallory, project, vc);
    } finally {
      host.onRequest = undefined;
    }
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
    expect(res.body.message).toContain(
      `cannot tell whether User "mallory" may get Secret ${vc.namespace}/vc-${vc.name}`,
    );
    expect(await instancesOf(vc)).toEqual([]);
    expect(await claimOf(vc)).toBeUndefined();
    expect((await importInto(mallory, project, vc)).status).toBe(201);
  });

  test('system:masters needs no review', async () => {
    const vc = virtualCluster([]);
    expect((await importInto(root, await createProject('bob'), vc)).status).toBe(201);
  });

  test('without a host cluster no Cluster is connected: 503 naming the reason, for system:masters too', async () => {
    const noHost = await startTestServerWithUsers(
      { root: ['system:masters'], bob: [] },
      { clusterHealthIntervalMs: HEALTH_INTERVAL_MS },
      ts.etcd,
    );
    try {
      const project = uniq('bob');
      expect(
        (
          await noHost.as.root.post(PROJECTS, {
            apiVersion: API_VERSION,
            kind: 'Project',
            metadata: { name: project },
            spec: { owner: { user: 'bob' }, allowedClusters: [{ name: '*' }] },
          })
        ).status,
      ).toBe(201);
      const body = clusterBody(uniq('cluster'));
      body.spec = { ...body.spec, access: [{ verbs: ['get'], users: ['bob'] }] };
      expect((await noHost.as.root.post(CLUSTERS_PATH, body)).status).toBe(201);
      await clusterPhase(noHost.as.root, body.metadata.name, 'Failed', 'NoHostCluster');
      const vc = virtualCluster([]);
      const source = { name: vc.name, namespace: vc.namespace, cluster: body.metadata.name };
      const path = `${PROJECTS}/${project}/importvirtualcluster`;
      for (const client of [noHost.as.bob, noHost.as.root]) {
        const res = await client.post(path, {
          apiVersion: API_VERSION,
          kind: 'ProjectImportVirtualCluster',
          sourceVirtualCluster: source,
        });
        expect({ status: res.status, reason: res.body.reason }).toEqual({
          status: 503,
          reason: 'ServiceUnavailable',
        });
        expect(res.body.message).toContain(`Cluster "${body.metadata.name}" is not ready (NoHostCluster): `);
      }
      expect((await noHost.as.root.get(vcis(`p-${project}`))).body.items).toEqual([]);
    } finally {
      await noHost.stop();
    }
  });
});
