/**
 * ProjectImportVirtualCluster: POST .../projects/<project>/importvirtualcluster makes a VirtualClusterInstance in
 * p-<project>, owned as asked, pointing at the source; every refusal a Status naming what is wrong, nothing stored.
 * Each Cluster is connected to a host stand-in of its own, where bob and carol may get every virtual cluster's
 * connection Secret, which importing needs outside system:masters (that check, and imports that race, are virtualcluster-claims.test.ts's).
 * The virtual clusters the tests import run there (their connection Secret `vc-<name>` is there), unless a test says
 * otherwise: an import of one that does not run is refused, however the caller may get Secrets there.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { API_VERSION, CLUSTERS_PATH, MERGE_PATCH, PROJECTS_PATH as PROJECTS, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import * as errors from '../../src/apimachinery/status.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

/** What every import request names itself as (kube refuses a custom object's body without them). */
const IMPORT_TYPE = { apiVersion: API_VERSION, kind: 'ProjectImportVirtualCluster' };

const importPath = (project: string) => `${PROJECTS}/${project}/importvirtualcluster`;
const vcisIn = (project: string) => `${GROUP_PATH}/namespaces/p-${project}/virtualclusterinstances`;

let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;

/** The connected clusters the tests' Clusters name, one each (one physical cluster is one Cluster), by Cluster name. */
const connected = new Map<string, HostClusterStandIn>();

/** Lets bob and carol get every Secret of `cluster`: every virtual cluster's connection there. */
function letTenantsReadSecrets(cluster: HostClusterStandIn): void {
  cluster.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'read-secrets' },
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
  });
  cluster.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'tenants-read-secrets' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'read-secrets' },
    subjects: ['bob', 'carol'].map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
  });
}

beforeAll(async () => {
  host = await startHostCluster();
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: ['platform:team:dev'], carol: [] },
    {
      kubeconfig: host.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
  );
  ({ root, bob, carol } = server.as);
  ts = server;
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await Promise.all([host, ...connected.values()].map((c) => c?.stop()));
}, 60_000);

/** A project allowing every Cluster, unless `spec` says otherwise. */
async function createProject(spec: Record<string, unknown> = {}): Promise<any> {
  const res = await root.post(PROJECTS, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: uniq('proj') },
    spec: { allowedClusters: [{ name: '*' }], ...spec },
  });
  expect(res.status).toBe(201);
  // The project's namespace, which the platform makes in the host cluster.
  host.addNamespace(`p-${res.body.metadata.name}`);
  return res.body;
}

/**
 * A Cluster bob and carol may get (an access entry), unless `spec` says otherwise, connected to a cluster of its own
 * where they may get every Secret.
 */
async function createCluster(spec: Record<string, unknown> = {}): Promise<string> {
  const cluster = await startHostCluster();
  const name = uniq('cluster');
  connected.set(name, cluster);
  letTenantsReadSecrets(cluster);
  await connectCluster(root, host, name, cluster, {
    displayName: `Cluster ${name}`,
    access: [{ verbs: ['get'], users: ['bob', 'carol'] }],
    ...spec,
  });
  return name;
}

/** A virtual cluster running on the cluster of the Cluster `cluster` (its connection Secret there), as a source. */
function source(cluster: string, name = uniq('vc')) {
  const vc = { name, namespace: `vcluster-${name}`, cluster };
  connected.get(cluster)?.addSecret(vc.namespace, `vc-${name}`, { config: 'a kubeconfig of the virtual cluster' });
  return vc;
}

/** A virtual cluster that does not run there (no connection Secret), as a source. */
const notRunning = (cluster: string, name = uniq('vc')) => ({ name, namespace: `vcluster-${name}`, cluster });

async function instanceNames(project: string): Promise<string[]> {
  return (await root.get(vcisIn(project))).body.items.map((o: any) => o.metadata.name);
}

describe('importing a virtual cluster', () => {
  let cluster: string;
  beforeAll(async () => {
    cluster = await createCluster();
  });

  test('top-level fields: 201 with the import, and the instance in p-<project> owned as asked', async () => {
    const project = (await createProject()).metadata.name;
    const src = source(cluster);
    const res = await root.post(importPath(project), {
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: src,
      owner: { team: 'ops' },
      importName: 'imported',
      upgradeToPro: true,
      skipHelmDeploy: true,
    });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      metadata: { name: project },
      sourceVirtualCluster: src,
      owner: { team: 'ops' },
      importName: 'imported',
      upgradeToPro: true,
      skipHelmDeploy: true,
      status: { virtualClusterInstance: { namespace: `p-${project}`, name: 'imported' } },
    });

    const vci = await root.get(`${vcisIn(project)}/imported`);
    expect(vci.status).toBe(200);
    expect(vci.body.metadata.uid).toBe(res.body.status.virtualClusterInstance.uid);
    expect(vci.body.spec).toEqual({
      owner: { team: 'ops' },
      clusterRef: { cluster, namespace: src.namespace, virtualCluster: src.name },
      upgradeToPro: true,
      skipHelmDeploy: true,
    });
    expect(vci.body.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Project', name: project })]);
  });

  test('fields inside sourceVirtualCluster count the same; without importName the source name is used; owner defaults to the caller', async () => {
    const project = (await createProject()).metadata.name;
    const src = source(cluster);
    const res = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: { ...src, upgradeToPro: true },
    });
    expect(res.status).toBe(201);
    const vci = (await root.get(`${vcisIn(project)}/${src.name}`)).body;
    expect(vci.spec).toMatchObject({
      owner: { user: 'root' },
      upgradeToPro: true,
      skipHelmDeploy: false,
      clusterRef: { virtualCluster: src.name },
    });

    const p2 = (await createProject()).metadata.name;
    const nested = await root.post(importPath(p2), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: { ...source(cluster), owner: { user: 'dave' }, importName: 'named-inside' },
    });
    expect(nested.status).toBe(201);
    expect((await root.get(`${vcisIn(p2)}/named-inside`)).body.spec.owner).toEqual({ user: 'dave' });
  });

  test('the same field in both places must agree', async () => {
    const project = (await createProject()).metadata.name;
    const same = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: { ...source(cluster), importName: 'x1' },
      importName: 'x1',
    });
    expect(same.status).toBe(201);
    const differ = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: { ...source(cluster), importName: 'a' },
      importName: 'b',
    });
    expect(differ.status).toBe(422);
    expect(differ.body.reason).toBe('Invalid');
    expect(differ.body.details.causes).toEqual([
      expect.objectContaining({ field: 'sourceVirtualCluster.importName', reason: 'FieldValueInvalid' }),
    ]);
    expect(await instanceNames(project)).toEqual(['x1']);
  });

  test('deleting the project deletes its imported instances', async () => {
    const project = (await createProject()).metadata.name;
    expect(
      (
        await root.post(importPath(project), {
          ...IMPORT_TYPE,
          sourceVirtualCluster: source(cluster),
          importName: 'goes',
        })
      ).status,
    ).toBe(201);
    expect((await root.delete(`${PROJECTS}/${project}`)).status).toBe(200);
    await waitFor(
      'the garbage collector to delete the instance',
      async () => (await root.get(`${vcisIn(project)}/goes`)).status === 404,
    );
  });

  test('discovery lists projects/importvirtualcluster as create-only', async () => {
    const res = await root.get(GROUP_PATH);
    expect(res.body.resources).toContainEqual({
      name: 'projects/importvirtualcluster',
      singularName: '',
      namespaced: false,
      kind: 'ProjectImportVirtualCluster',
      verbs: ['create'],
    });
  });
});

describe('refusals leave nothing behind', () => {
  let cluster: string;
  let project: string;
  beforeAll(async () => {
    cluster = await createCluster();
    project = (await createProject()).metadata.name;
  });

  test('an unknown project: 404 NotFound', async () => {
    const res = await root.post(importPath('no-such-project'), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
    });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      details: { name: 'no-such-project', kind: 'projects' },
    });
  });

  test.each([
    ['no sourceVirtualCluster', {}, [['sourceVirtualCluster', 'FieldValueRequired']]],
    [
      'a source without its fields',
      { sourceVirtualCluster: {} },
      [
        ['sourceVirtualCluster.name', 'FieldValueRequired'],
        ['sourceVirtualCluster.namespace', 'FieldValueRequired'],
        ['sourceVirtualCluster.cluster', 'FieldValueRequired'],
      ],
    ],
    [
      'a source namespace that is no namespace name',
      { sourceVirtualCluster: { name: 'vc', namespace: 'Not_A_Namespace', cluster: 'c' } },
      [['sourceVirtualCluster.namespace', 'FieldValueInvalid']],
    ],
    [
      'an importName that is no object name',
      { sourceVirtualCluster: { name: 'vc', namespace: 'ns', cluster: 'c' }, importName: 'Bad Name' },
      [['importName', 'FieldValueInvalid']],
    ],
    [
      'an owner that is both user and team',
      { sourceVirtualCluster: { name: 'vc', namespace: 'ns', cluster: 'c' }, owner: { user: 'a', team: 'b' } },
      [['owner.team', 'FieldValueForbidden']],
    ],
    [
      'a wrongly typed field',
      { sourceVirtualCluster: { name: 'vc', namespace: 'ns', cluster: 'c' }, upgradeToPro: 'yes' },
      [['upgradeToPro', 'FieldValueTypeInvalid']],
    ],
  ])('%s: 422 naming each field', async (_what, body, causes) => {
    const res = await root.post(importPath(project), { ...IMPORT_TYPE, ...body });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Invalid',
      details: { kind: 'ProjectImportVirtualCluster', group: 'management.platform.sh' },
    });
    expect(res.body.details.causes.map((c: any) => [c.field, c.reason])).toEqual(causes);
    expect(await instanceNames(project)).toEqual([]);
  });

  test('an unknown cluster: 422 NotFound on sourceVirtualCluster.cluster', async () => {
    const res = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source('no-such-cluster'),
    });
    expect(res.status).toBe(422);
    expect(res.body.details.causes).toEqual([
      { reason: 'FieldValueNotFound', message: 'Not found: "no-such-cluster"', field: 'sourceVirtualCluster.cluster' },
    ]);
    expect(await instanceNames(project)).toEqual([]);
  });

  test('an unusable cluster accepts no new virtual clusters', async () => {
    const unusable = await createCluster({ unusable: true });
    const res = await root.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: source(unusable) });
    expect(res.status).toBe(422);
    expect(res.body.message).toContain(
      `Cluster "${unusable}" is marked unusable (spec.unusable: true) and accepts no new virtual clusters`,
    );
    expect(res.body.details.causes[0]).toMatchObject({
      field: 'sourceVirtualCluster.cluster',
      reason: 'FieldValueForbidden',
    });
    expect(await instanceNames(project)).toEqual([]);

    // Usable again: the import goes through.
    expect((await root.patch(`${CLUSTERS_PATH}/${unusable}`, { spec: { unusable: false } }, MERGE_PATCH)).status).toBe(
      200,
    );
    expect(
      (
        await root.post(importPath(project), {
          ...IMPORT_TYPE,
          sourceVirtualCluster: source(unusable),
          importName: 'after-fix',
        })
      ).status,
    ).toBe(201);
    await root.delete(`${vcisIn(project)}/after-fix`);
  });

  test('a cluster the project does not allow is refused', async () => {
    const allowed = await createCluster();
    const limited = (await createProject({ allowedClusters: [{ name: allowed }] })).metadata.name;
    const res = await root.post(importPath(limited), { ...IMPORT_TYPE, sourceVirtualCluster: source(cluster) });
    expect(res.status).toBe(422);
    expect(res.body.message).toContain(`project "${limited}" allows only the clusters "${allowed}"`);
    expect(
      (await root.post(importPath(limited), { ...IMPORT_TYPE, sourceVirtualCluster: source(allowed) })).status,
    ).toBe(201);
  });

  test('a project listing no cluster allows none, system:masters included; the message says how to allow one', async () => {
    for (const spec of [{ allowedClusters: undefined }, { allowedClusters: [] }]) {
      const none = (await createProject(spec)).metadata.name;
      const res = await root.post(importPath(none), { ...IMPORT_TYPE, sourceVirtualCluster: source(cluster) });
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details.causes).toEqual([
        {
          field: 'sourceVirtualCluster.cluster',
          reason: 'FieldValueForbidden',
          message: `Forbidden: project "${none}" allows no cluster: its spec.allowedClusters is empty (a member of system:masters may list the Cluster there, or {name: "*"} for every cluster)`,
        },
      ]);
      expect((await root.get(vcisIn(none))).body.items).toEqual([]);
    }
  });

  test('a taken name: 409 AlreadyExists, the existing instance unchanged', async () => {
    const first = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
      importName: 'taken',
    });
    expect(first.status).toBe(201);
    const before = (await root.get(`${vcisIn(project)}/taken`)).body;
    const res = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
      importName: 'taken',
    });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      reason: 'AlreadyExists',
      details: { name: 'taken', kind: 'virtualclusterinstances' },
    });
    expect((await root.get(`${vcisIn(project)}/taken`)).body).toEqual(before);
    await root.delete(`${vcisIn(project)}/taken`);
  });

  test('a virtual cluster already imported (anywhere): 409 naming the instance to system:masters', async () => {
    const src = source(cluster);
    expect(
      (await root.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: src, importName: 'once' })).status,
    ).toBe(201);
    const other = (await createProject()).metadata.name;
    const res = await root.post(importPath(other), { ...IMPORT_TYPE, sourceVirtualCluster: src });
    expect(res.status).toBe(409);
    expect(res.body.reason).toBe('Conflict');
    expect(res.body.message).toContain(`is already imported as VirtualClusterInstance p-${project}/once`);
    expect(await instanceNames(other)).toEqual([]);
    await root.delete(`${vcisIn(project)}/once`);
  });

  test('a virtual cluster already imported in a project the caller cannot see: 409 naming nothing of it', async () => {
    const src = source(cluster);
    const hidden = (await createProject()).metadata.name;
    expect(
      (await root.post(importPath(hidden), { ...IMPORT_TYPE, sourceVirtualCluster: src, importName: 'secret-name' }))
        .status,
    ).toBe(201);
    const bobs = (await createProject({ owner: { user: 'bob' } })).metadata.name;
    const res = await bob.post(importPath(bobs), { ...IMPORT_TYPE, sourceVirtualCluster: src });
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 409, reason: 'Conflict' });
    expect(res.body.message).toBe(
      `Operation cannot be fulfilled on projects/importvirtualcluster.management.platform.sh "${src.name}": virtual cluster ${src.namespace}/${src.name} is already imported by another VirtualClusterInstance`,
    );
    for (const secret of [hidden, 'secret-name']) expect(res.body.message).not.toContain(secret);
    expect(await instanceNames(bobs)).toEqual([]);
  });

  test('bad bodies and options: 400; other verbs: 405', async () => {
    const broken = await root.request('POST', importPath(project), {
      body: '{"sourceVirtualCluster": ',
      contentType: 'application/json',
    });
    expect(broken.status).toBe(400);
    const strict = await root.post(`${importPath(project)}?fieldValidation=Strict`, {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
      colour: 'blue',
    });
    expect(strict.status).toBe(400);
    expect(strict.body.message).toContain('strict decoding error: unknown field "colour"');
    const dry = await root.post(`${importPath(project)}?dryRun=All`, {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
    });
    expect(dry.status).toBe(400);
    const wrongKind = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      kind: 'Project',
      sourceVirtualCluster: source(cluster),
    });
    expect(wrongKind.status).toBe(422);
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const res = await root.request(method, importPath(project), {
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
        contentType: method === 'PATCH' ? MERGE_PATCH : undefined,
      });
      expect({ method, status: res.status, reason: res.body?.reason }).toEqual({
        method,
        status: 405,
        reason: 'MethodNotAllowed',
      });
    }
    expect(await instanceNames(project)).toEqual([]);
  });

  test('unknown fields are dropped with a warning by default', async () => {
    const res = await root.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
      importName: 'warned',
      colour: 'blue',
    });
    expect(res.status).toBe(201);
    expect(res.headers.warning).toBe('299 - "unknown field \\"colour\\""');
    await root.delete(`${vcisIn(project)}/warned`);
  });
});

describe('a virtual cluster that does not run is not imported', () => {
  let cluster: string;
  beforeAll(async () => {
    cluster = await createCluster();
  });

  test('by system:masters, or by a tenant who may get every Secret there: 422 on sourceVirtualCluster.name naming it, nothing stored or claimed', async () => {
    const project = (await createProject({ owner: { user: 'bob' } })).metadata.name;
    const src = notRunning(cluster);
    for (const client of [root, bob]) {
      const res = await client.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: src });
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details).toMatchObject({ kind: 'ProjectImportVirtualCluster', group: 'management.platform.sh' });
      expect(res.body.details.causes).toEqual([
        {
          field: 'sourceVirtualCluster.name',
          reason: 'FieldValueNotFound',
          message: `Not found: "${src.name}": there is no virtual cluster "${src.name}" in namespace "${src.namespace}" of Cluster "${cluster}": its connection Secret ${src.namespace}/vc-${src.name} does not exist there; import a virtual cluster that runs`,
        },
      ]);
      expect(await instanceNames(project)).toEqual([]);
    }
    // Nothing was claimed: once it runs, the same import goes through.
    connected.get(cluster)!.addSecret(src.namespace, `vc-${src.name}`, { config: 'a kubeconfig' });
    expect((await bob.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: src })).status).toBe(201);
    expect(await instanceNames(project)).toEqual([src.name]);
  });

  test("a cluster that does not say whether it runs: 503 without the cluster's words, nothing stored", async () => {
    const project = (await createProject({ owner: { user: 'bob' } })).metadata.name;
    const src = source(cluster);
    const standIn = connected.get(cluster)!;
    standIn.onRequest = (method, path) => {
      if (method === 'GET' && path === `/api/v1/namespaces/${src.namespace}/secrets/vc-${src.name}`)
        throw errors.forbidden(
          { group: '', resource: 'secrets' },
          `vc-${src.name}`,
          'User "system:serviceaccount:platform:platform-server" cannot get resource "secrets"',
        );
    };
    try {
      for (const client of [root, bob]) {
        const res = await client.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: src });
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
        expect(res.body.message).toBe(
          `Cluster "${cluster}" did not say whether virtual cluster ${src.name} runs in its namespace "${src.namespace}" (reading its connection Secret ${src.namespace}/vc-${src.name}: HTTP 403); this server's credential for the Cluster may not get that Secret (for the local Cluster: the Helm chart's rbac.virtualClusterNamespaces) (the server's log has the details)`,
        );
      }
    } finally {
      standIn.onRequest = undefined;
    }
    expect(await instanceNames(project)).toEqual([]);
  });
});

describe('who may import', () => {
  test("the project's owner may; someone without access gets 403", async () => {
    const cluster = await createCluster();
    const project = (await createProject({ owner: { user: 'bob' } })).metadata.name;
    const denied = await carol.post(importPath(project), { ...IMPORT_TYPE, sourceVirtualCluster: source(cluster) });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('cannot create resource "projects/importvirtualcluster"');
    const ok = await bob.post(importPath(project), {
      ...IMPORT_TYPE,
      sourceVirtualCluster: source(cluster),
      importName: 'bobs',
    });
    expect(ok.status).toBe(201);
    expect((await root.get(`${vcisIn(project)}/bobs`)).body.spec.owner).toEqual({ user: 'bob' });
  });

  test('the caller owns what it imports: another user or a team it is not in is 403 naming the field, nothing stored', async () => {
    const cluster = await createCluster();
    const project = (await createProject({ owner: { user: 'bob' } })).metadata.name;
    const tail =
      'a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner';
    for (const [body, message] of [
      [{ owner: { user: 'carol' } }, `owner.user: may not be "carol": ${tail}`],
      [{ owner: { team: 'ops' } }, `owner.team: may not be "ops", a team the caller is not in: ${tail}`],
      [
        { sourceVirtualCluster: { owner: { user: 'carol' } } },
        `sourceVirtualCluster.owner.user: may not be "carol": ${tail}`,
      ],
    ] as const) {
      const src = source(cluster);
      const nested = 'sourceVirtualCluster' in body ? { ...src, ...body.sourceVirtualCluster } : src;
      const res = await bob.post(importPath(project), { ...IMPORT_TYPE, ...body, sourceVirtualCluster: nested });
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).toBe(
        `projects.management.platform.sh "${project}" is forbidden: User "bob" cannot import a virtual cluster for someone else: ${message}`,
      );
    }
    expect(await instanceNames(project)).toEqual([]);
    // Himself, or a team he is in: fine; system:masters may name anyone.
    expect(
      (
        await bob.post(importPath(project), {
          ...IMPORT_TYPE,
          sourceVirtualCluster: source(cluster),
          owner: { team: 'dev' },
          importName: 'teams',
        })
      ).status,
    ).toBe(201);
    expect((await root.get(`${vcisIn(project)}/teams`)).body.spec.owner).toEqual({ team: 'dev' });
    expect(
      (
        await root.post(importPath(project), {
          ...IMPORT_TYPE,
          sourceVirtualCluster: source(cluster),
          owner: { user: 'carol' },
          importName: 'carols',
        })
      ).status,
    ).toBe(201);
  });
});
