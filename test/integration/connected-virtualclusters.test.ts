/**
 * Virtual clusters on any connected cluster, with real etcd, the real server and three host stand-ins with distinct
 * kube-system uids: the management host (the server's --kubeconfig, where config Secrets are, the local Cluster)
 * and two connected clusters. An import asks the cluster its sourceVirtualCluster.cluster connects to whether the
 * tenant has the virtual cluster; a kube config is issued by the virtual cluster whose connection Secret is in the
 * cluster clusterRef.cluster connects to; "imported once" is per physical cluster, namespace and name; a Cluster
 * that is not Initialized is a 503 naming its reason, and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
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
import type { HttpClient } from '../support/http.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, clusterPhase, connectCluster } from '../support/connectedclusters.js';
import { grantConnectionSecret, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let b: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;

beforeAll(async () => {
  [mgmt, a, b] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
  );
  ts = server;
  ({ root, bob } = server.as);
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
    expect(instance.status).toEqual({ clusterUID: a.kubeSystemUid });

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
    expect(created.body.status).toBeUndefined();
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
