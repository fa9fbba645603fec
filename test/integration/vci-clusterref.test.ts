/**
 * Where a VirtualClusterInstance points (spec.clusterRef) decides which virtual cluster signs the kube configs it
 * hands out. Tenants are adversaries here: bob and carol each have a project and a virtual cluster of their own.
 * clusterRef is fixed once created, on every update path, for everyone (`field is immutable`); and a create by
 * anyone but system:masters passes the import's checks (the project of its namespace, a Cluster the caller may
 * get, connected, a virtual cluster the caller has already (get on its connection Secret in the cluster it runs
 * in), not imported yet, whatever Cluster names its physical cluster), dry run and server-side apply included. Every refusal leaves stored data as it was.
 */
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import yaml from 'js-yaml';
import {
  API_VERSION,
  APPLY_PATCH as APPLY,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  uniq,
  virtualClusterInstancesPath as vcis,
} from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { grantConnectionSecret, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, clusterPhase, connectCluster } from '../support/connectedclusters.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';

const vciPath = (ns: string, name: string) => `${vcis(ns)}/${name}`;

// Tests that have kube configs signed (a key made, a CSR signed, on both sides) took over 30 s at a load of 25.
jest.setTimeout(120_000);

let host: HostClusterStandIn;
let bobsCluster: HostClusterStandIn;
let carolsCluster: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
let dave: HttpClient;
let mallory: HttpClient;
let erin: HttpClient;
/** The Cluster both tenants' virtual clusters run on. */
let cluster: string;

beforeAll(async () => {
  host = await startHostCluster();
  bobsCluster = await startHostCluster();
  carolsCluster = await startHostCluster();
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [], dave: [], mallory: [], erin: [] },
    {
      kubeconfig: host.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
  );
  ({ root, bob, carol, dave, mallory, erin } = server.as);
  ts = server;
  // dave may create (and apply) instances anywhere and get every Cluster, the widest grant a tenant could have: the
  // checks must hold even so.
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'vci-creator' },
    rules: [
      { apiGroups: [GROUP], resources: ['virtualclusterinstances'], verbs: ['create', 'patch', 'get', 'list'] },
      { apiGroups: [GROUP], resources: ['clusters'], verbs: ['get'] },
    ],
  });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'dave-creates-vcis' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'vci-creator' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dave' }],
  });
  // erin may create instances anywhere, but get no Cluster but those that grant it.
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'vci-creator-only' },
    rules: [{ apiGroups: [GROUP], resources: ['virtualclusterinstances'], verbs: ['create', 'patch', 'get'] }],
  });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'erin-creates-vcis' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'vci-creator-only' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'erin' }],
  });
  cluster = await createCluster({}, {}, host);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  for (const stand of [host, bobsCluster, carolsCluster, ...standIns.values()]) await stand?.stop();
}, 60_000);

/** The cluster each Cluster connects to (the host's is the local Cluster, `cluster`), where its virtual clusters are. */
const standIns = new Map<string, HostClusterStandIn>();
const standInOf = (name: string) => (name === cluster ? host : standIns.get(name)!);

/**
 * A Cluster bob and carol may get (an access entry), unless `spec` says otherwise, connected to `on` (the host:
 * a local Cluster), else to a new cluster of its own; its name.
 */
async function createCluster(
  spec: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
  on?: HostClusterStandIn,
): Promise<string> {
  const name = uniq('cluster');
  const standIn = on ?? (await startHostCluster());
  if (!on) standIns.set(name, standIn);
  await connectCluster(root, host, name, standIn, {
    access: [{ verbs: ['get'], users: ['bob', 'carol'] }],
    ...spec,
  });
  if (Object.keys(metadata).length)
    expect((await root.patch(`${CLUSTERS_PATH}/${name}`, { metadata }, MERGE_PATCH)).status).toBe(200);
  return name;
}

/** A project of `owner` allowing every Cluster, unless `spec` says otherwise. */
async function createProject(owner: string, spec: Record<string, unknown> = {}): Promise<string> {
  const name = uniq(owner);
  expect(
    (
      await root.post(PROJECTS, {
        apiVersion: API_VERSION,
        kind: 'Project',
        metadata: { name },
        spec: { owner: { user: owner }, allowedClusters: [{ name: '*' }], ...spec },
      })
    ).status,
  ).toBe(201);
  // The project's namespace, which the platform makes in the host cluster.
  host.addNamespace(`p-${name}`);
  return name;
}

/** A namespace the host cluster has (NamespaceLifecycle refuses writes into others). */
function hostNamespace(ns: string): string {
  host.addNamespace(ns);
  return ns;
}

/** A tenant's virtual cluster imported into the tenant's project: its instance's namespace and name. */
async function importOwn(
  owner: 'bob' | 'carol',
  client: HttpClient,
  on = cluster,
): Promise<{ ns: string; name: string; ref: Record<string, string> }> {
  const project = await createProject(owner);
  const name = uniq('vc');
  const ref = { cluster: on, namespace: `vcluster-${name}`, virtualCluster: name };
  standInOf(on).addSecret(ref.namespace, `vc-${name}`, {
    config: (owner === 'bob' ? bobsCluster : carolsCluster).kubeconfigText(),
  });
  grantConnectionSecret(standInOf(on), ref.namespace, name, [owner]);
  const res = await client.post(`${PROJECTS}/${project}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { name, namespace: ref.namespace, cluster: on },
  });
  expect(res.status).toBe(201);
  const ns = `p-${project}`;
  expect(
    (await root.patch(vciPath(ns, name), { spec: { ingressEndpoint: `https://${name}.example.com` } }, MERGE_PATCH))
      .status,
  ).toBe(200);
  return { ns, name, ref };
}

function expectImmutable(res: { status: number; body: any }): void {
  expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 422, reason: 'Invalid' });
  expect(res.body.details.causes).toEqual([
    expect.objectContaining({ field: 'spec.clusterRef', reason: 'FieldValueInvalid' }),
  ]);
  expect(res.body.message).toContain('spec.clusterRef: Invalid value: ');
  expect(res.body.message).toMatch(/: field is immutable$/);
}

describe('spec.clusterRef is immutable', () => {
  test("bob cannot point his instance at carol's virtual cluster: 422 on PUT, and his kube config is still signed by his own", async () => {
    const bobs = await importOwn('bob', bob);
    const carols = await importOwn('carol', carol);
    const before = (await bob.get(vciPath(bobs.ns, bobs.name))).body;
    const res = await bob.put(vciPath(bobs.ns, bobs.name), {
      ...before,
      spec: { ...before.spec, clusterRef: carols.ref },
    });
    expectImmutable(res);
    expect((await root.get(vciPath(bobs.ns, bobs.name))).body).toEqual(before);

    carolsCluster.resetCounts();
    const got = await bob.get(`${vciPath(bobs.ns, bobs.name)}/kubeconfig`);
    expect(got.status).toBe(200);
    const config = yaml.load(got.body.status.kubeConfig) as any;
    const cert = new X509Certificate(Buffer.from(config.users[0].user['client-certificate-data'], 'base64'));
    expect(cert.checkIssued(new X509Certificate(bobsCluster.caPem))).toBe(true);
    expect(carolsCluster.count('certificatesigningrequests')).toBe(0);
  });

  test.each([
    [
      'a JSON patch of the namespace',
      (ref: any) => [{ op: 'replace', path: '/spec/clusterRef/namespace', value: ref.namespace }],
      JSON_PATCH,
    ],
    [
      'a JSON patch of the whole reference',
      (ref: any) => [{ op: 'replace', path: '/spec/clusterRef', value: ref }],
      JSON_PATCH,
    ],
    ['a merge patch', (ref: any) => ({ spec: { clusterRef: ref } }), MERGE_PATCH],
    ['a JSON patch removing the namespace', () => [{ op: 'remove', path: '/spec/clusterRef/namespace' }], JSON_PATCH],
  ])('%s: 422, nothing changed', async (_what, patch, contentType) => {
    const bobs = await importOwn('bob', bob);
    const carols = await importOwn('carol', carol);
    const before = (await root.get(vciPath(bobs.ns, bobs.name))).body;
    expectImmutable(await bob.patch(vciPath(bobs.ns, bobs.name), patch(carols.ref), contentType));
    expect((await root.get(vciPath(bobs.ns, bobs.name))).body).toEqual(before);
  });

  test('server-side apply, even forced: 422, nothing changed', async () => {
    const bobs = await importOwn('bob', bob);
    const carols = await importOwn('carol', carol);
    const before = (await root.get(vciPath(bobs.ns, bobs.name))).body;
    const config = {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name: bobs.name },
      spec: { clusterRef: carols.ref },
    };
    expectImmutable(await bob.patch(`${vciPath(bobs.ns, bobs.name)}?fieldManager=bob&force=true`, config, APPLY));
    expect((await root.get(vciPath(bobs.ns, bobs.name))).body).toEqual(before);
  });

  test('a dry run is refused the same', async () => {
    const bobs = await importOwn('bob', bob);
    const carols = await importOwn('carol', carol);
    expectImmutable(
      await bob.patch(`${vciPath(bobs.ns, bobs.name)}?dryRun=All`, { spec: { clusterRef: carols.ref } }, MERGE_PATCH),
    );
  });

  test('someone granted update by an access entry cannot change it either, nor can system:masters', async () => {
    const carols = await importOwn('carol', carol);
    const bobs = await importOwn('bob', bob);
    expect(
      (
        await root.patch(
          vciPath(carols.ns, carols.name),
          { spec: { access: [{ verbs: ['get', 'update', 'patch'], users: ['bob'] }] } },
          MERGE_PATCH,
        )
      ).status,
    ).toBe(200);
    expectImmutable(await bob.patch(vciPath(carols.ns, carols.name), { spec: { clusterRef: bobs.ref } }, MERGE_PATCH));
    expectImmutable(
      await root.patch(
        vciPath(carols.ns, carols.name),
        { spec: { clusterRef: { ...carols.ref, namespace: 'elsewhere' } } },
        MERGE_PATCH,
      ),
    );
  });

  test('an instance created without a namespace or virtual cluster name cannot have one filled in later', async () => {
    const project = await createProject('bob');
    const ns = `p-${project}`;
    const name = uniq('vc');
    expect(
      (
        await root.post(vcis(ns), {
          apiVersion: API_VERSION,
          kind: 'VirtualClusterInstance',
          metadata: { name },
          spec: { clusterRef: { cluster } },
        })
      ).status,
    ).toBe(201);
    expectImmutable(
      await root.patch(
        vciPath(ns, name),
        [{ op: 'add', path: '/spec/clusterRef/namespace', value: 'vcluster-x' }],
        JSON_PATCH,
      ),
    );
    expectImmutable(
      await root.patch(vciPath(ns, name), { spec: { clusterRef: { virtualCluster: name } } }, MERGE_PATCH),
    );
  });

  test('every other field may still change, and the same clusterRef may be sent back', async () => {
    const bobs = await importOwn('bob', bob);
    const current = (await bob.get(vciPath(bobs.ns, bobs.name))).body;
    const res = await bob.put(vciPath(bobs.ns, bobs.name), {
      ...current,
      spec: { ...current.spec, displayName: 'mine', ingressEndpoint: 'https://new.example.com' },
    });
    expect(res.status).toBe(200);
    expect(res.body.spec).toMatchObject({
      displayName: 'mine',
      ingressEndpoint: 'https://new.example.com',
      clusterRef: bobs.ref,
    });
  });
});

describe('a create by anyone but system:masters passes the import checks', () => {
  const instance = (name: string, ref: Record<string, unknown>) => ({
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: { clusterRef: ref, ingressEndpoint: `https://${name}.example.com` },
  });

  test("dave cannot create an instance pointing at carol's imported virtual cluster: 403 without her Secret, 409 with it, naming nothing of hers", async () => {
    const carols = await importOwn('carol', carol);
    const project = await createProject('dave');
    const ns = `p-${project}`;
    const name = uniq('steal');
    carolsCluster.resetCounts();
    const attempts = async () => [
      await dave.post(vcis(ns), instance(name, carols.ref)),
      await dave.post(`${vcis(ns)}?dryRun=All`, instance(name, carols.ref)),
      await dave.patch(`${vciPath(ns, name)}?fieldManager=dave`, instance(name, carols.ref), APPLY),
    ];
    for (const res of await attempts()) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).toBe(
        `virtualclusterinstances.management.platform.sh "${name}" is forbidden: User "dave" cannot import virtual cluster ${carols.ref.namespace}/${carols.name}: it may not get its connection Secret ${carols.ref.namespace}/vc-${carols.name} in Cluster "${cluster}", and a virtual cluster is imported only by someone who has it already`,
      );
    }
    // Even someone who may get it makes no second instance of it.
    grantConnectionSecret(host, carols.ref.namespace, carols.name, ['carol', 'dave']);
    for (const res of await attempts()) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 409, reason: 'Conflict' });
      expect(res.body.message).toBe(
        `Operation cannot be fulfilled on virtualclusterinstances.management.platform.sh "${name}": virtual cluster ${carols.ref.namespace}/${carols.name} is already imported by another VirtualClusterInstance`,
      );
      expect(res.body.message).not.toContain(carols.ns);
    }
    expect((await root.get(vciPath(ns, name))).status).toBe(404);
    expect(carolsCluster.count('certificatesigningrequests')).toBe(0);
  });

  test.each([
    [
      'a namespace of no project',
      async () => ({ ns: hostNamespace(uniq('team')), ref: { cluster } }),
      'metadata.namespace',
      'not the namespace of a Project',
    ],
    [
      'the namespace of a project that does not exist',
      async () => ({ ns: hostNamespace('p-no-such-project'), ref: { cluster } }),
      'metadata.namespace',
      'no Project "no-such-project" exists',
    ],
    [
      'an unknown Cluster',
      async () => ({ ns: `p-${await createProject('dave')}`, ref: { cluster: 'no-such-cluster' } }),
      'spec.clusterRef.cluster',
      'Not found: "no-such-cluster"',
    ],
    [
      'an unusable Cluster',
      async () => ({
        ns: `p-${await createProject('dave')}`,
        ref: { cluster: await createCluster({ unusable: true }) },
      }),
      'spec.clusterRef.cluster',
      'is marked unusable (spec.unusable: true) and accepts no new virtual clusters',
    ],
    [
      'a Cluster the project does not allow',
      async () => ({
        ns: `p-${await createProject('dave', { allowedClusters: [{ name: cluster }] })}`,
        ref: { cluster: await createCluster() },
      }),
      'spec.clusterRef.cluster',
      'allows only the clusters',
    ],
    [
      'a Cluster being deleted',
      async () => {
        const going = await createCluster({}, { finalizers: ['example.com/hold'] });
        expect((await root.delete(`${CLUSTERS_PATH}/${going}`)).status).toBe(200);
        return { ns: `p-${await createProject('dave')}`, ref: { cluster: going } };
      },
      'spec.clusterRef.cluster',
      'is being deleted',
    ],
  ])('%s: 422 on the field, also on dry run and apply; nothing stored', async (_what, setup, field, message) => {
    const { ns, ref } = await setup();
    const name = uniq('vc');
    for (const res of [
      await dave.post(vcis(ns), instance(name, ref)),
      await dave.post(`${vcis(ns)}?dryRun=All`, instance(name, ref)),
      await dave.patch(`${vciPath(ns, name)}?fieldManager=dave`, instance(name, ref), APPLY),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details).toMatchObject({ kind: 'VirtualClusterInstance', name });
      expect(res.body.details.causes).toEqual([expect.objectContaining({ field })]);
      expect(res.body.message).toContain(message);
    }
    expect((await root.get(vciPath(ns, name))).status).toBe(404);
  });

  test('a virtual cluster nobody imported yet, on a Cluster the project allows: 201 (dry run stores nothing)', async () => {
    const ns = `p-${await createProject('dave', { allowedClusters: [{ name: cluster }] })}`;
    const name = uniq('vc');
    const ref = { cluster, namespace: `vcluster-${name}`, virtualCluster: name };
    grantConnectionSecret(host, ref.namespace, name, ['dave']);
    const dry = await dave.post(`${vcis(ns)}?dryRun=All`, instance(name, ref));
    expect(dry.status).toBe(201);
    expect((await root.get(vciPath(ns, name))).status).toBe(404);
    expect((await dave.post(vcis(ns), instance(name, ref))).status).toBe(201);
    // The same again under another name is a second import.
    expect((await dave.post(vcis(ns), instance(uniq('vc'), ref))).status).toBe(409);
  });

  test('system:masters may create any instance (the operator sets up what imports cannot)', async () => {
    const ns = hostNamespace(uniq('anywhere'));
    const res = await root.post(
      vcis(ns),
      instance(uniq('vc'), { cluster: 'not-yet-registered', namespace: 'vcluster-x' }),
    );
    expect(res.status).toBe(201);
  });
});

describe('one virtual cluster, whatever Cluster names it; and only from a Cluster the caller may get', () => {
  const instance = (name: string, ref: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: { clusterRef: ref, ingressEndpoint: `https://${name}.example.com`, ...spec },
  });
  const importInto = (
    client: HttpClient,
    project: string,
    source: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) =>
    client.post(`${PROJECTS}/${project}/importvirtualcluster`, {
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: source,
      ...extra,
    });

  test("mallory cannot import carol's virtual cluster by naming another Cluster for its physical cluster: 503, nothing stored, nothing signed", async () => {
    const c2 = await createCluster();
    const carols = await importOwn('carol', carol, c2);
    // Even were mallory and dave allowed to get its connection Secret (without it they get 403:
    // virtualcluster-claims.test.ts), it stays one virtual cluster with one instance.
    grantConnectionSecret(standInOf(c2), carols.ref.namespace, carols.name, ['carol', 'mallory', 'dave']);
    // A second Cluster for the same physical cluster is never Initialized (Failed/ClusterUID, naming the first).
    const c1 = uniq('cluster');
    const dup = await root.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: c1 },
      spec: { owner: { user: 'mallory' }, config: { secretName: c2 } },
    });
    expect(dup.status).toBe(201);
    await clusterPhase(root, c1, 'Failed', 'ClusterUID');
    const project = await createProject('mallory', { allowedClusters: [{ name: c1 }] });
    carolsCluster.resetCounts();
    const res = await importInto(mallory, project, { name: carols.name, namespace: carols.ref.namespace, cluster: c1 });
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
    expect(res.body.message).toContain(`Cluster "${c1}" is not ready (ClusterUID)`);
    // A create naming c1 is refused the same (dave may create instances and get every Cluster).
    const daves = `p-${await createProject('dave', { allowedClusters: [{ name: c1 }] })}`;
    const ref = { ...carols.ref, cluster: c1 };
    for (const created of [
      await dave.post(vcis(daves), instance(carols.name, ref)),
      await dave.patch(`${vciPath(daves, carols.name)}?fieldManager=dave`, instance(carols.name, ref), APPLY),
    ]) {
      expect({ status: created.status, reason: created.body.reason }).toEqual({
        status: 503,
        reason: 'ServiceUnavailable',
      });
    }
    expect((await root.get(vcis(`p-${project}`))).body.items).toEqual([]);
    expect((await root.get(vcis(daves))).body.items).toEqual([]);
    expect(carolsCluster.count('certificatesigningrequests')).toBe(0);
  });

  test('a virtual cluster nobody imported is not up for grabs: a Cluster the caller may not get is 422 on the field, whether or not it exists', async () => {
    const nobodys = await createCluster({ access: [] });
    // allowedClusters '*': the project allows every Cluster, the widest a project can be.
    const project = await createProject('mallory');
    const name = uniq('vc');
    const source = { name, namespace: `vcluster-${name}`, cluster: nobodys };
    for (const [cluster, res] of [
      [nobodys, await importInto(mallory, project, source)],
      ['no-such-cluster', await importInto(mallory, project, { ...source, cluster: 'no-such-cluster' })],
    ] as const) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details.causes).toEqual([
        {
          field: 'sourceVirtualCluster.cluster',
          reason: 'FieldValueForbidden',
          message: `Forbidden: User "mallory" cannot get Cluster "${cluster}": a virtual cluster is imported only from a Cluster its importer may get (its owner, or an access entry granting get)`,
        },
      ]);
    }
    // The same for a create, dry run and apply included, by someone who may create instances but not get the Cluster.
    const erins = `p-${await createProject('erin')}`;
    const ref = { cluster: nobodys, namespace: source.namespace, virtualCluster: name };
    for (const res of [
      await erin.post(vcis(erins), instance(name, ref)),
      await erin.post(`${vcis(erins)}?dryRun=All`, instance(name, ref)),
      await erin.patch(`${vciPath(erins, name)}?fieldManager=erin`, instance(name, ref), APPLY),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details.causes).toEqual([
        expect.objectContaining({ field: 'spec.clusterRef.cluster', reason: 'FieldValueForbidden' }),
      ]);
      expect(res.body.message).toContain(`User "erin" cannot get Cluster "${nobodys}"`);
    }
    expect((await root.get(vcis(`p-${project}`))).body.items).toEqual([]);
    expect((await root.get(vcis(erins))).body.items).toEqual([]);

    // An access entry granting get on the Cluster, or owning it, lets them import from it (a virtual cluster they have).
    const grant = { spec: { access: [{ verbs: ['get'], users: ['mallory', 'erin'] }] } };
    expect((await root.patch(`${CLUSTERS_PATH}/${nobodys}`, grant, MERGE_PATCH)).status).toBe(200);
    grantConnectionSecret(standInOf(nobodys), source.namespace, name, ['mallory']);
    standInOf(nobodys).addSecret(source.namespace, `vc-${name}`, { config: carolsCluster.kubeconfigText() });
    expect((await importInto(mallory, project, source)).status).toBe(201);
    const owned = await createCluster({ owner: { user: 'erin' }, access: [] });
    const erinsVc = uniq('vc');
    grantConnectionSecret(standInOf(owned), ref.namespace, erinsVc, ['erin']);
    expect(
      (await erin.post(vcis(erins), instance(name, { ...ref, cluster: owned, virtualCluster: erinsVc }))).status,
    ).toBe(201);
  });

  test('an instance is created for its creator: another owner is 403 naming the field; oneself is fine', async () => {
    const ns = `p-${await createProject('dave')}`;
    const name = uniq('vc');
    const ref = { cluster, namespace: `vcluster-${name}`, virtualCluster: name };
    for (const [owner, field] of [
      [{ user: 'carol' }, 'spec.owner.user: may not be "carol"'],
      [{ team: 'ops' }, 'spec.owner.team: may not be "ops", a team the caller is not in'],
    ] as const) {
      const res = await dave.post(vcis(ns), instance(name, ref, { owner }));
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).toBe(
        `virtualclusterinstances.management.platform.sh "${name}" is forbidden: User "dave" cannot create this VirtualClusterInstance: ${field}: a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner`,
      );
    }
    expect((await root.get(vciPath(ns, name))).status).toBe(404);
    grantConnectionSecret(host, ref.namespace, name, ['dave']);
    expect((await dave.post(vcis(ns), instance(name, ref, { owner: { user: 'dave' } }))).status).toBe(201);
  });
});
