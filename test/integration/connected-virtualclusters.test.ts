/**
 * Virtual clusters on any connected cluster, with real etcd, the real server and three host stand-ins with distinct
 * kube-system uids: the management host (the server's --kubeconfig, where config Secrets are, the local Cluster)
 * and two connected clusters. An import asks the cluster its sourceVirtualCluster.cluster connects to whether the
 * tenant has the virtual cluster; a kube config is issued by the virtual cluster whose connection Secret is in the
 * cluster clusterRef.cluster connects to; "imported once" is per physical cluster, namespace and name; a Cluster
 * that is not Initialized is a 503 naming its reason, and nothing is stored. An instance's kube configs rest on its
 * importer's hold of the virtual cluster (status.importedBy) and of its Cluster here, asked again for each one. A cluster is a tenant's to run, so it
 * may answer another cluster's kube-system uid: it takes nothing of that cluster's, also once that cluster's Cluster
 * is deleted to be created again.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import yaml from 'js-yaml';
import { X509Certificate } from 'node:crypto';
import {
  API_VERSION,
  CLUSTERS_PATH,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  clusterPath,
  uniq,
  virtualClusterInstancesPath as vcis,
} from '../support/fixtures.js';
import { ClusterConnections, ClusterNotReadyError } from '../../src/clusters/connections.js';
import { ClusterConnector } from '../../src/clusters/connector.js';
import { HostCluster } from '../../src/host/cluster.js';
import type { HttpClient } from '../support/http.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, clusterPhase, connectCluster } from '../support/connectedclusters.js';
import { grantConnectionSecret, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startHostileVirtualCluster, type HostileVirtualCluster } from '../support/hostilecluster.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

/** What an instance records of system:masters' root as its importer. */
const ROOT_RECORD = { username: 'root', uid: 'uid-root', groups: ['system:masters', 'system:authenticated'] };
const BOB_RECORD = { username: 'bob', uid: 'uid-bob', groups: ['system:authenticated'] };

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let b: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;

beforeAll(async () => {
  [mgmt, a, b] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
  );
  ts = server;
  ({ root, bob, carol } = server.as);
  const access = { access: [{ verbs: ['get'], users: ['bob'] }] };
  await Promise.all([
    connectCluster(root, mgmt, 'home', mgmt, access),
    connectCluster(root, mgmt, 'conn-a', a, access),
    connectCluster(root, mgmt, 'conn-b', b, access),
  ]);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), b?.stop()]);
}, 60_000);

/** A project of bob's allowing every Cluster; its name. */
async function createProject(): Promise<string> {
  const name = uniq('proj');
  const res = await root.post(PROJECTS, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: '*' }] },
  });
  expect(res.status).toBe(201);
  // The project's namespace, which the platform makes in the management host.
  mgmt.addNamespace(`p-${name}`);
  return name;
}

/** A virtual cluster running on `cluster` (its connection Secret is there), which bob may get. */
function virtualCluster(cluster: HostClusterStandIn, name = uniq('vc')) {
  const vc = { namespace: `vcluster-${name}`, name };
  runs(cluster, vc);
  grantConnectionSecret(cluster, vc.namespace, vc.name, ['bob']);
  return vc;
}

/** The connection Secret of `vc` in `cluster`, where the virtual cluster is `cluster` itself (it signs). */
function runs(cluster: HostClusterStandIn, vc: { namespace: string; name: string }): void {
  cluster.addSecret(vc.namespace, `vc-${vc.name}`, { config: cluster.kubeconfigText() });
}

function importAs(client: HttpClient, project: string, cluster: string, vc: { namespace: string; name: string }) {
  return client.post(`${PROJECTS}/${project}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { ...vc, cluster },
  });
}

/** Every instance's namespace/name, for "nothing was stored". */
async function instances(): Promise<string[]> {
  const res = await root.get(`/apis/management.platform.sh/v1/virtualclusterinstances`);
  expect(res.status).toBe(200);
  return res.body.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`).sort();
}

describe('virtual clusters on connected clusters', () => {
  test('import on a connected cluster: asked of that cluster, the instance records its uid; its kube config is issued there', async () => {
    const project = await createProject();
    // The virtual cluster is the stand-in a itself: its connection Secret is in a, and a signs the certificate.
    const vc = virtualCluster(a);
    const res = await importAs(bob, project, 'conn-a', vc);
    expect(res.status).toBe(201);
    const instancePath = `${vcis(`p-${project}`)}/${vc.name}`;
    const instance = (await bob.get(instancePath)).body;
    // Where it runs, and who imported it: its kube configs rest on bob's hold of the virtual cluster.
    expect(instance.status).toEqual({
      clusterUID: a.kubeSystemUid,
      importedBy: BOB_RECORD,
    });

    // The ingress endpoint is the platform admin's to set; then bob gets a kube config, signed by a.
    const patch = await root.patch(instancePath, { spec: { ingressEndpoint: 'https://vc.example.com' } }, MERGE_PATCH);
    expect(patch.status).toBe(200);
    const csrsBefore = a.csrs().length;
    const kc = await bob.get(`${instancePath}/kubeconfig`);
    expect(kc.status).toBe(200);
    const doc: any = yaml.load(kc.body.status.kubeConfig);
    const cert = new X509Certificate(Buffer.from(doc.users[0].user['client-certificate-data'], 'base64'));
    expect(cert.verify(new X509Certificate(a.caPem).publicKey)).toBe(true);
    expect(a.csrs().length).toBe(csrsBefore + 1);
    expect(mgmt.csrs()).toHaveLength(0);
  });

  test('whether the tenant has the virtual cluster is asked of its cluster, not of the management host', async () => {
    const project = await createProject();
    const vc = virtualCluster(mgmt); // a grant in the wrong cluster
    const before = await instances();
    const res = await importAs(bob, project, 'conn-a', vc);
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(
      `may not get its connection Secret ${vc.namespace}/vc-${vc.name} in Cluster "conn-a"`,
    );
    expect(await instances()).toEqual(before);
    grantConnectionSecret(a, vc.namespace, vc.name, ['bob']);
    runs(a, vc);
    expect((await importAs(bob, project, 'conn-a', vc)).status).toBe(201);
  });

  test('the same namespace and name on two clusters are two virtual clusters: both imported', async () => {
    const project = await createProject();
    const name = uniq('vc');
    const onA = virtualCluster(a, name);
    const onB = virtualCluster(b, name);
    expect((await importAs(bob, project, 'conn-a', onA)).status).toBe(201);
    const other = await createProject();
    expect((await importAs(bob, other, 'conn-b', onB)).status).toBe(201);
    // The same one again, on a: 409.
    const third = await createProject();
    const again = await importAs(bob, third, 'conn-a', onA);
    expect(again.status).toBe(409);
    expect(again.body.message).toContain(`virtual cluster ${onA.namespace}/${onA.name} is already imported`);
  });

  test('concurrent imports of one virtual cluster: one 201, one 409, one instance', async () => {
    const vc = virtualCluster(a);
    const [p1, p2] = await Promise.all([createProject(), createProject()]);
    const results = await Promise.all([importAs(bob, p1, 'conn-a', vc), importAs(bob, p2, 'conn-a', vc)]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    const holding = (await instances()).filter((n) => n.endsWith(`/${vc.name}`));
    expect(holding).toHaveLength(1);
  });

  test('a second Cluster for the same physical cluster is Failed/ClusterUID: importing through it is 503, nothing stored', async () => {
    const res = await root.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'dup-a' },
      spec: { config: { secretName: 'conn-a' }, access: [{ verbs: ['get'], users: ['bob'] }] },
    });
    expect(res.status).toBe(201);
    await clusterPhase(root, 'dup-a', 'Failed', 'ClusterUID');
    const project = await createProject();
    const vc = virtualCluster(a);
    const before = await instances();
    for (const client of [bob, root]) {
      const refused = await importAs(client, project, 'dup-a', vc);
      expect(refused.status).toBe(503);
      expect(refused.body.reason).toBe('ServiceUnavailable');
      expect(refused.body.message).toContain('Cluster "dup-a" is not ready (ClusterUID)');
    }
    expect(await instances()).toEqual(before);
    expect((await root.delete(clusterPath('dup-a'))).status).toBe(200);
  });

  test('a physical cluster registered again under another name: what is imported there stays imported (409)', async () => {
    const c = await startHostCluster();
    try {
      await connectCluster(root, mgmt, 'conn-c', c, { access: [{ verbs: ['get'], users: ['bob'] }] });
      const vc = virtualCluster(c);
      expect((await importAs(bob, await createProject(), 'conn-c', vc)).status).toBe(201);
      expect((await root.delete(clusterPath('conn-c'))).status).toBe(200);
      await connectCluster(root, mgmt, 'conn-c-again', c, { access: [{ verbs: ['get'], users: ['bob'] }] });
      const again = await importAs(bob, await createProject(), 'conn-c-again', vc);
      expect(again.status).toBe(409);
      expect(again.body.message).toContain(`virtual cluster ${vc.namespace}/${vc.name} is already imported`);
    } finally {
      await c.stop();
    }
  });

  test('a Cluster that is not Initialized: import and kube config are 503 with its reason, nothing stored', async () => {
    const res = await root.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'no-secret' },
      spec: { config: { secretName: 'does-not-exist' }, access: [{ verbs: ['get'], users: ['bob'] }] },
    });
    expect(res.status).toBe(201);
    await clusterPhase(root, 'no-secret', 'Failed', 'ConfigSecretNotFound');
    const project = await createProject();
    const vc = virtualCluster(a);
    const before = await instances();
    const refused = await importAs(bob, project, 'no-secret', vc);
    expect(refused.status).toBe(503);
    expect(refused.body.message).toContain('Cluster "no-secret" is not ready (ConfigSecretNotFound)');
    expect(await instances()).toEqual(before);

    // system:masters may store an instance there: unbound (no status.clusterUID). Its kube config is 503, with the
    // reason only (the Cluster's message names a Secret of the management host).
    const name = uniq('vc');
    const created = await root.post(vcis(`p-${project}`), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name },
      spec: {
        owner: { user: 'bob' },
        clusterRef: { cluster: 'no-secret', namespace: `vcluster-${name}`, virtualCluster: name },
        ingressEndpoint: 'https://vc.example.com',
      },
    });
    expect(created.status).toBe(201);
    // Unbound (no clusterUID): only who made it is recorded.
    expect(created.body.status).toEqual({ importedBy: ROOT_RECORD });
    const kc = await bob.get(`${vcis(`p-${project}`)}/${name}/kubeconfig`);
    expect(kc.status).toBe(503);
    expect(kc.body.message).toContain(
      'Cluster "no-secret", where the virtual cluster runs, is not ready (ConfigSecretNotFound)',
    );
    expect(kc.body.message).not.toContain('does-not-exist');
    // Unbound, it is taken to be that virtual cluster on every cluster: the same on a is refused.
    const onA = virtualCluster(a, name);
    const same = await importAs(bob, await createProject(), 'conn-a', onA);
    expect(same.status).toBe(409);
  });

  test('a Cluster that now reaches another physical cluster: no kube config for what was imported before (503)', async () => {
    const [c, d] = await Promise.all([startHostCluster(), startHostCluster()]);
    try {
      await connectCluster(root, mgmt, 'moving', c, { access: [{ verbs: ['get'], users: ['bob'] }] });
      const project = await createProject();
      const vc = virtualCluster(c);
      expect((await importAs(bob, project, 'moving', vc)).status).toBe(201);
      const instancePath = `${vcis(`p-${project}`)}/${vc.name}`;
      expect(
        (await root.patch(instancePath, { spec: { ingressEndpoint: 'https://vc.example.com' } }, MERGE_PATCH)).status,
      ).toBe(200);
      // The Cluster is deleted and created again under its name for d, which has a virtual cluster of the same
      // namespace and name that is not bob's.
      d.addSecret(vc.namespace, `vc-${vc.name}`, { config: d.kubeconfigText() });
      expect((await root.delete(clusterPath('moving'))).status).toBe(200);
      await waitFor('Cluster moving to be gone', async () => (await root.get(clusterPath('moving'))).status === 404);
      await connectCluster(root, mgmt, 'moving', d, { access: [{ verbs: ['get'], users: ['bob'] }] });
      const kc = await bob.get(`${instancePath}/kubeconfig`);
      expect(kc.status).toBe(503);
      expect(kc.body.message).toContain('now connects to another physical cluster');
      expect(d.csrs()).toHaveLength(0);
    } finally {
      await Promise.all([c.stop(), d.stop()]);
    }
  });
});

describe("an instance's kube configs rest on its importer's hold of the virtual cluster", () => {
  /** bob's import of a virtual cluster on conn-a, reachable by an ingress, whose kube configs carol may get. */
  async function sharedImport() {
    const project = await createProject();
    const vc = virtualCluster(a);
    expect((await importAs(bob, project, 'conn-a', vc)).status).toBe(201);
    const namespace = `p-${project}`;
    const path = `${vcis(namespace)}/${vc.name}`;
    const shared = {
      spec: {
        ingressEndpoint: 'https://vc.example.com',
        access: [{ verbs: ['get'], subresources: ['kubeconfig'], users: ['carol'] }],
      },
    };
    expect((await root.patch(path, shared, MERGE_PATCH)).status).toBe(200);
    return { vc, path, namespace, revoke: () => a.remove('rolebindings', vc.namespace, `get-vc-${vc.name}`) };
  }

  test('while bob has it, carol gets one through the instance; once he has it no more, nobody does but system:masters', async () => {
    const { vc, path, revoke } = await sharedImport();
    // carol may not get the virtual cluster's Secret in conn-a herself: the instance shares bob's hold.
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(200);
    expect(revoke()).toBe(true);
    const csrs = a.csrs().length;
    for (const client of [carol, bob]) {
      const res = await client.get(`${path}/kubeconfig`);
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).toContain(
        `its kube configs rest on its importer's hold of the virtual cluster (status.importedBy, User "bob"), and that user may no longer get its connection Secret ${vc.namespace}/vc-${vc.name} in Cluster "conn-a"`,
      );
    }
    // Nothing was asked of the virtual cluster for them.
    expect(a.csrs().length).toBe(csrs);
    expect((await root.get(`${path}/kubeconfig`)).status).toBe(200);
    // bob has it again: so do those he shares it with.
    grantConnectionSecret(a, vc.namespace, vc.name, ['bob']);
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(200);
  });

  test("the importer's own next kube config asks about them as they are now: a team they left keeps nothing going", async () => {
    // erin authenticates through the management host (TokenReview), in team ops; conn-a lets team ops get the Secret.
    const asErin = (groups: string[]) => {
      const token = `erin-${uniq('t')}`;
      mgmt.addToken(token, { name: 'erin', uid: 'uid-erin', groups });
      return ts.client(token);
    };
    const project = uniq('proj');
    const created = await root.post(PROJECTS, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: project },
      spec: { owner: { user: 'erin' }, allowedClusters: [{ name: '*' }] },
    });
    expect(created.status).toBe(201);
    mgmt.addNamespace(`p-${project}`);
    const vc = { namespace: `vcluster-${uniq('ops')}`, name: uniq('vc') };
    runs(a, vc);
    const rules = [{ apiGroups: [''], resources: ['secrets'], resourceNames: [`vc-${vc.name}`], verbs: ['get'] }];
    a.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'ops-vc', namespace: vc.namespace },
      rules,
    });
    a.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'ops-vc', namespace: vc.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ops-vc' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'platform:team:ops' }],
    });
    // erin may get Cluster conn-a (an import needs it).
    const cluster = (await root.get(clusterPath('conn-a'))).body;
    const access = [...(cluster.spec.access ?? []), { verbs: ['get'], users: ['erin'] }];
    expect((await root.patch(clusterPath('conn-a'), { spec: { access } }, MERGE_PATCH)).status).toBe(200);
    const inOps = asErin(['platform:team:ops']);
    expect((await importAs(inOps, project, 'conn-a', vc)).status).toBe(201);
    const path = `${vcis(`p-${project}`)}/${vc.name}`;
    const shared = {
      spec: {
        ingressEndpoint: 'https://vc.example.com',
        access: [{ verbs: ['get'], subresources: ['kubeconfig'], users: ['carol'] }],
      },
    };
    expect((await root.patch(path, shared, MERGE_PATCH)).status).toBe(200);
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(200);
    // erin leaves team ops, and asks again: refused, and recorded as she is now, so carol is refused too.
    const left = asErin([]);
    const res = await left.get(`${path}/kubeconfig`);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect((await root.get(path)).body.status.importedBy).toEqual({
      username: 'erin',
      uid: 'uid-erin',
      groups: ['system:authenticated'],
    });
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(403);
  });

  test('once the importer may no longer get the Cluster here, or the project no longer allows it: nobody gets one but system:masters; allowed again, they do', async () => {
    const { vc, path, namespace } = await sharedImport();
    const project = namespace.slice(2);
    const where = `VirtualClusterInstance ${namespace}/${vc.name}`;
    const refusedToAll = async (lost: string) => {
      for (const client of [carol, bob]) {
        const res = await client.get(`${path}/kubeconfig`);
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
        expect(res.body.message).toContain(
          `no kube config is issued through ${where}: its kube configs rest on what its import checked, and ${lost}`,
        );
      }
    };
    const csrs = a.csrs().length;

    const narrowed = { spec: { allowedClusters: [{ name: 'conn-b' }] } };
    expect((await root.patch(`${PROJECTS}/${project}`, narrowed, MERGE_PATCH)).status).toBe(200);
    await refusedToAll(`the instance's project "${project}" no longer allows Cluster "conn-a" (spec.allowedClusters)`);
    const everywhere = { spec: { allowedClusters: [{ name: '*' }] } };
    expect((await root.patch(`${PROJECTS}/${project}`, everywhere, MERGE_PATCH)).status).toBe(200);
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(200);

    // conn-a's access entries are every test's: bob's is taken away for this one only.
    const access = (await root.get(clusterPath('conn-a'))).body.spec.access;
    const withoutBob = access.filter((entry: any) => !entry.users?.includes('bob'));
    expect((await root.patch(clusterPath('conn-a'), { spec: { access: withoutBob } }, MERGE_PATCH)).status).toBe(200);
    try {
      await refusedToAll(`the instance's importer (status.importedBy, User "bob") may no longer get Cluster "conn-a"`);
      expect((await root.get(`${path}/kubeconfig`)).status).toBe(200);
    } finally {
      expect((await root.patch(clusterPath('conn-a'), { spec: { access } }, MERGE_PATCH)).status).toBe(200);
    }
    // Nothing was asked of the virtual cluster for those refused: carol's and root's certificates only.
    expect(a.csrs().length).toBe(csrs + 2);
    expect((await carol.get(`${path}/kubeconfig`)).status).toBe(200);
  });

  test('no write moves the record: not a status write by system:masters, not an update of the instance', async () => {
    const { path } = await sharedImport();
    const forged = { username: 'root', groups: ['system:masters'] };
    expect((await root.patch(`${path}/status`, { status: { importedBy: forged } }, MERGE_PATCH)).status).toBe(200);
    expect((await bob.patch(path, { status: { importedBy: forged } }, MERGE_PATCH)).status).toBe(200);
    expect((await bob.patch(`${path}/status`, { status: { importedBy: forged } }, MERGE_PATCH)).status).toBe(403);
    expect((await root.get(path)).body.status.importedBy).toEqual(BOB_RECORD);
  });

  test('one stored before importers were recorded gives kube configs only to a caller who has the virtual cluster', async () => {
    const { vc, path, namespace } = await sharedImport();
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const key = `${ts.config.etcdPrefix}/management.platform.sh/virtualclusterinstances/${namespace}/${vc.name}`;
      const stored = JSON.parse((await kv.get(key).string())!);
      delete stored.status.importedBy;
      await kv.put(key).value(JSON.stringify(stored));
    } finally {
      kv.close();
    }
    await waitFor(
      'the instance to be read without its record',
      async () => !(await root.get(path)).body.status.importedBy,
    );
    const res = await carol.get(`${path}/kubeconfig`);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect(res.body.message).toContain(
      `User "carol" cannot get a kube config through VirtualClusterInstance ${namespace}/${vc.name}: it was stored before importers were recorded (status.importedBy)`,
    );
    expect((await bob.get(`${path}/kubeconfig`)).status).toBe(200);
  });
});

describe("a tenant's cluster that answers another cluster's kube-system uid", () => {
  const KUBE_SYSTEM = '/api/v1/namespaces/kube-system';
  /** The tenant's cluster, and the victim's. */
  let t: HostClusterStandIn;
  let v: HostClusterStandIn;
  /** The tenant's front of t, which the tenant's Cluster connects to: it answers what the tenant likes. */
  let liar: HostileVirtualCluster;
  /** The uid its kube-system Namespace is said to have; undefined: its own. */
  let lie: string | undefined;
  /** The victim's project, and its virtual cluster imported there. */
  let victims: string;
  let victimsVc: { namespace: string; name: string };

  beforeAll(async () => {
    [t, v] = await Promise.all([startHostCluster(), startHostCluster()]);
    liar = await startHostileVirtualCluster(t);
    liar.answer = (req) =>
      lie && req.method === 'GET' && req.path === KUBE_SYSTEM
        ? { change: (ns) => ({ ...ns, metadata: { ...ns.metadata, uid: lie } }) }
        : undefined;
  }, 60_000);

  afterAll(async () => {
    await liar?.stop();
    await Promise.all([t?.stop(), v?.stop()]);
  });

  const statusOf = async (client: HttpClient, name: string) => (await client.get(clusterPath(name))).body.status;
  /** What a check found: the status but the time of the check, which every check moves (about once per interval). */
  const finding = ({ lastCheckTime: _at, ...found }: Record<string, any>) => found;

  /** Waits until `count` (of requests a check makes) has grown by two: what a check decides has been decided. */
  async function twoMoreChecks(what: string, count: () => number): Promise<void> {
    const seen = count();
    await waitFor(`two more checks of ${what}`, () => count() >= seen + 2, 30_000);
  }
  const victimChecks = () => v.count('namespaces', 'GET');
  const liarChecks = () => liar.received.filter((r) => r.method === 'GET' && r.path === KUBE_SYSTEM).length;

  /** The victim's Cluster is as it was: Initialized, its record its own cluster's; its kube config and imports work. */
  async function victimUnharmed(): Promise<void> {
    await Promise.all([twoMoreChecks('victim-b', victimChecks), twoMoreChecks('tenant-a', liarChecks)]);
    expect(await statusOf(root, 'victim-b')).toMatchObject({ phase: 'Initialized', clusterUID: v.kubeSystemUid });
    expect((await root.get(`${vcis(`p-${victims}`)}/${victimsVc.name}/kubeconfig`)).status).toBe(200);
    const another = await importAs(root, victims, 'victim-b', virtualCluster(v));
    expect(another.status).toBe(201);
    expect(another.body.status.virtualClusterInstance).toBeDefined();
  }

  test('older and without a record: Failed/ClusterUID naming nothing it may not see; the newer Cluster keeps its cluster, and nothing is imported through the liar', async () => {
    // The tenant's Cluster, older than the victim's; its cluster does not answer yet, so it records nothing.
    await t.setDown(true, 'unavailable');
    mgmt.addSecret(CLUSTER_SECRETS, 'tenant-a', { config: liar.kubeconfigText() });
    const created = await root.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'tenant-a' },
      spec: { owner: { user: 'bob' }, config: { secretName: 'tenant-a' } },
    });
    expect(created.status).toBe(201);
    await clusterPhase(root, 'tenant-a', 'Failed', 'Unavailable');
    // The victim's, which bob may not get, records its cluster; a virtual cluster of it is imported.
    await connectCluster(root, mgmt, 'victim-b', v);
    expect((await statusOf(root, 'victim-b')).clusterUID).toBe(v.kubeSystemUid);
    victims = await createProject();
    victimsVc = virtualCluster(v);
    expect((await importAs(root, victims, 'victim-b', victimsVc)).status).toBe(201);
    const instancePath = `${vcis(`p-${victims}`)}/${victimsVc.name}`;
    expect((await root.get(instancePath)).body.status).toEqual({
      clusterUID: v.kubeSystemUid,
      importedBy: ROOT_RECORD,
    });
    const endpoint = { spec: { ingressEndpoint: 'https://victim.example.com' } };
    expect((await root.patch(instancePath, endpoint, MERGE_PATCH)).status).toBe(200);

    // The tenant's cluster comes up saying it is the victim's.
    lie = v.kubeSystemUid;
    await t.setDown(false);
    await clusterPhase(root, 'tenant-a', 'Failed', 'ClusterUID');
    const seen = await waitFor('bob to see his Cluster', async () => {
      const res = await bob.get(clusterPath('tenant-a'));
      return res.status === 200 && res.body.status;
    });
    expect(seen).toMatchObject({ phase: 'Failed', reason: 'ClusterUID', online: true });
    expect(seen.message).toContain('another Cluster connected to this cluster first');
    expect(seen.message).not.toContain('victim-b');
    expect(seen.clusterUID).toBeUndefined();
    await victimUnharmed();
    expect((await statusOf(root, 'tenant-a')).phase).toBe('Failed');

    // Through the liar nothing is imported: neither the victim's virtual cluster nor another of its names there.
    const bobs = await createProject();
    const before = await instances();
    for (const vc of [victimsVc, virtualCluster(t)])
      for (const client of [bob, root]) {
        const res = await importAs(client, bobs, 'tenant-a', vc);
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
        expect(res.body.message).toContain('Cluster "tenant-a" is not ready (ClusterUID)');
      }
    expect(await instances()).toEqual(before);
  });

  test('with a record: answering another uid it is Failed/ClusterUID at once, its record kept, its imports and kube configs refused; honest again, it works again', async () => {
    lie = undefined;
    expect((await clusterPhase(root, 'tenant-a', 'Initialized')).clusterUID).toBe(t.kubeSystemUid);
    const project = await createProject();
    const own = virtualCluster(t);
    expect((await importAs(bob, project, 'tenant-a', own)).status).toBe(201);
    const instancePath = `${vcis(`p-${project}`)}/${own.name}`;
    expect((await root.get(instancePath)).body.status).toEqual({ clusterUID: t.kubeSystemUid, importedBy: BOB_RECORD });
    const endpoint = { spec: { ingressEndpoint: 'https://tenant.example.com' } };
    expect((await root.patch(instancePath, endpoint, MERGE_PATCH)).status).toBe(200);
    expect((await bob.get(`${instancePath}/kubeconfig`)).status).toBe(200);
    const initialized = (await root.get(clusterPath('tenant-a'))).body;

    lie = v.kubeSystemUid;
    // A connection made now, with the Cluster still Initialized as stored, is refused: not only at the next check.
    const connections = new ClusterConnections(
      { get: async () => initialized, list: () => Promise.reject(new Error('not used')) },
      new ClusterConnector({
        host: HostCluster.load({ kubeconfig: mgmt.kubeconfigPath }),
        secretNamespace: CLUSTER_SECRETS,
      }),
    );
    const refusedNow = await connections.connection('tenant-a').catch((e) => e);
    expect(refusedNow).toBeInstanceOf(ClusterNotReadyError);
    expect(refusedNow.reason).toBe('ClusterUID');

    const failed = await clusterPhase(root, 'tenant-a', 'Failed', 'ClusterUID');
    expect(failed.clusterUID).toBe(t.kubeSystemUid);
    expect(failed.message).toContain('the cluster now answers as another cluster');
    expect(failed.message).not.toContain('victim-b');
    const before = await instances();
    for (const vc of [victimsVc, virtualCluster(t)]) {
      const res = await importAs(bob, project, 'tenant-a', vc);
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
    }
    const kc = await bob.get(`${instancePath}/kubeconfig`);
    expect({ status: kc.status, reason: kc.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
    expect(kc.body.message).toContain('Cluster "tenant-a", where the virtual cluster runs, is not ready (ClusterUID)');
    expect(await instances()).toEqual(before);
    await victimUnharmed();

    lie = undefined;
    expect((await clusterPhase(root, 'tenant-a', 'Initialized')).clusterUID).toBe(t.kubeSystemUid);
    expect((await bob.get(`${instancePath}/kubeconfig`)).status).toBe(200);
  });

  test("refused the victim's uid, it never takes it: not when the victim's Cluster is deleted, nor once it is created again, which gets its cluster back", async () => {
    // A new tenant's Cluster behind a liar of its own (so that its checks can be counted), saying it is the victim's.
    const liar2 = await startHostileVirtualCluster(t);
    try {
      liar2.answer = liar.answer;
      lie = v.kubeSystemUid;
      mgmt.addSecret(CLUSTER_SECRETS, 'tenant-c', { config: liar2.kubeconfigText() });
      const created = await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'tenant-c' },
        spec: { owner: { user: 'bob' }, config: { secretName: 'tenant-c' } },
      });
      expect(created.status).toBe(201);
      const refused = await clusterPhase(root, 'tenant-c', 'Failed', 'ClusterUID');
      expect(refused).not.toHaveProperty('clusterUID');
      const tenantChecks = () => liar2.received.filter((r) => r.method === 'GET' && r.path === KUBE_SYSTEM).length;

      // The victim deletes its Cluster to create it again (a new name, a rotated Secret): the liar takes nothing,
      // and its status says the same as before, so it does not learn that the victim's Cluster went.
      const victim = (await root.get(clusterPath('victim-b'))).body;
      expect((await root.delete(clusterPath('victim-b'))).status).toBe(200);
      await twoMoreChecks('tenant-c', tenantChecks);
      expect(finding(await statusOf(root, 'tenant-c'))).toEqual(finding(refused));
      const bobs = await createProject();
      const before = await instances();
      for (const vc of [victimsVc, virtualCluster(t)]) {
        const res = await importAs(bob, bobs, 'tenant-c', vc);
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
        expect(res.body.message).toContain('Cluster "tenant-c" is not ready (ClusterUID)');
      }
      expect(await instances()).toEqual(before);

      // Created again, the victim's Cluster records its cluster (the refused Cluster is older, and does not count),
      // and what was imported there is the victim's again.
      const again = await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'victim-b' },
        spec: victim.spec,
      });
      expect(again.status).toBe(201);
      const decided = await waitFor('the victim-b created again to be checked', async () => {
        const s = await statusOf(root, 'victim-b');
        return s?.phase && s;
      });
      expect(decided).toMatchObject({ phase: 'Initialized', clusterUID: v.kubeSystemUid });
      expect((await root.get(`${vcis(`p-${victims}`)}/${victimsVc.name}/kubeconfig`)).status).toBe(200);
      await victimUnharmed();
      expect(await statusOf(root, 'tenant-c')).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
    } finally {
      await root.delete(clusterPath('tenant-c'));
      await liar2.stop();
    }
  });

  test("one that never reached its cluster while the victim's Cluster existed (it answered 401) does not take the victim's cluster once that Cluster is deleted; the victim's, created again, has its virtual clusters back", async () => {
    const liar3 = await startHostileVirtualCluster(t);
    let refusing = true;
    try {
      liar3.answer = (req) => (refusing ? { refuse: 401 } : liar.answer!(req));
      lie = v.kubeSystemUid;
      mgmt.addSecret(CLUSTER_SECRETS, 'tenant-x', { config: liar3.kubeconfigText() });
      const created = await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'tenant-x' },
        spec: { owner: { user: 'bob' }, config: { secretName: 'tenant-x' } },
      });
      expect(created.status).toBe(201);
      await clusterPhase(root, 'tenant-x', 'Failed', 'Unauthorized');

      // The victim deletes its Cluster to create it again; meanwhile the tenant's cluster answers, as the victim's.
      const victim = (await root.get(clusterPath('victim-b'))).body;
      expect(victim.status).toMatchObject({ phase: 'Initialized', clusterUID: v.kubeSystemUid });
      expect((await root.delete(clusterPath('victim-b'))).status).toBe(200);
      await waitFor('victim-b to be gone', async () => (await root.get(clusterPath('victim-b'))).status === 404);
      refusing = false;
      const decided = await waitFor('tenant-x to be decided', async () => {
        const s = await statusOf(root, 'tenant-x');
        return s?.reason !== 'Unauthorized' && s;
      });
      expect(decided).toMatchObject({ phase: 'Failed', reason: 'ClusterUID', online: true });
      expect(decided).not.toHaveProperty('clusterUID');
      expect(decided.message).not.toContain('victim-b');
      const bobs = await createProject();
      const before = await instances();
      for (const vc of [victimsVc, virtualCluster(t)]) {
        const res = await importAs(bob, bobs, 'tenant-x', vc);
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
        expect(res.body.message).toContain('Cluster "tenant-x" is not ready (ClusterUID)');
      }
      expect(await instances()).toEqual(before);

      const again = await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'victim-b' },
        spec: victim.spec,
      });
      expect(again.status).toBe(201);
      expect(await clusterPhase(root, 'victim-b', 'Initialized')).toMatchObject({ clusterUID: v.kubeSystemUid });
      expect((await root.get(`${vcis(`p-${victims}`)}/${victimsVc.name}/kubeconfig`)).status).toBe(200);
      await victimUnharmed();
      expect(await statusOf(root, 'tenant-x')).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
    } finally {
      await root.delete(clusterPath('tenant-x'));
      await liar3.stop();
    }
  });
});
