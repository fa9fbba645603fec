/**
 * Cluster health you can trust to be current (kinds/cluster/freshness.ts): every check stamps status.lastCheckTime,
 * and a Cluster whose checks stopped reads, after 3 intervals, with Ready Unknown/CheckOverdue in GET, LIST, WATCH
 * and the Table, derived where it is read and never stored; imports through it are 503. The checker is stopped as a
 * stuck leader would stop it: the replica that checked goes, and the test holds the controllers' lease, so the replica
 * that serves then (with the same --cluster-health-interval) checks nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { LeaderElector } from '../../src/controllers/leader.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { API_VERSION, CLUSTERS_PATH, MERGE_PATCH, PROJECTS_PATH, clusterPath } from '../support/fixtures.js';
import { CLUSTER_SECRETS, connectCluster } from '../support/connectedclusters.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const INTERVAL_MS = 1000;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

let etcd: TestEtcd;
let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
const prefix = `/test-${randomUUID()}`;
let checker: TestServer | undefined;
let reader: TestServer | undefined;
let lease: { storage: EtcdStorage; elector: LeaderElector } | undefined;

const serverOptions = () => ({
  kubeconfig: mgmt.kubeconfigPath,
  clusterHealthIntervalMs: INTERVAL_MS,
  clusterSecretNamespace: CLUSTER_SECRETS,
  etcdPrefix: prefix,
});

beforeAll(async () => {
  [etcd, mgmt, a] = await Promise.all([startTestEtcd(), startHostCluster(), startHostCluster()]);
  checker = await startTestServer(serverOptions(), etcd);
}, 60_000);

afterAll(async () => {
  await checker?.stop();
  await reader?.stop();
  await lease?.elector.stop();
  await lease?.storage.close();
  await Promise.all([mgmt?.stop(), a?.stop()]);
  await etcd?.stop();
}, 60_000);

const ready = (status: any) => status?.conditions?.find((c: any) => c.type === 'Ready');

describe('a Cluster whose checks stop', () => {
  test('is stamped at every check, and after 3 intervals without one reads as CheckOverdue, nowhere stored; imports are 503', async () => {
    const ts = checker!;
    await connectCluster(ts.admin, mgmt, 'fresh', a);
    const first = (await ts.admin.get(clusterPath('fresh'))).body.status;
    expect(first.lastCheckTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(ready(first)).toMatchObject({ status: 'True', reason: 'Connected' });
    // The stamp moves with the checks; a client's status write does not move it.
    const moved = await waitFor(
      'a later check',
      async () => {
        const s = (await ts.admin.get(clusterPath('fresh'))).body.status;
        return s.lastCheckTime > first.lastCheckTime && s;
      },
      10_000,
    );
    const forged = await ts.admin.patch(
      `${clusterPath('fresh')}/status`,
      { status: { lastCheckTime: '2000-01-01T00:00:00.000000Z' } },
      MERGE_PATCH,
    );
    expect(forged.status).toBe(200);
    expect(forged.body.status.lastCheckTime >= moved.lastCheckTime).toBe(true);
    // The Table's Last Check column.
    const table = (await ts.admin.get(CLUSTERS_PATH, { headers: { accept: TABLE } })).body;
    expect(table.columnDefinitions.map((c: any) => c.name)).toContain('Last Check');

    // The checker stops: its replica goes, and the lease stays held by one that checks nothing.
    await ts.stop();
    checker = undefined;
    const storage = new EtcdStorage({ endpoints: [etcd.endpoint], callTimeoutMs: 2000 });
    const elector = new LeaderElector({
      lock: storage.leaseLock(`${prefix}/leases/controllers`),
      identity: 'stuck',
      leaseTtlSeconds: 60,
      onStartedLeading: () => {},
      onStoppedLeading: () => {},
    });
    lease = { storage, elector };
    elector.start();
    await waitFor('the stuck leader to lead', () => elector.isLeader(), 10_000);
    reader = await startTestServer(serverOptions(), etcd);
    const r = reader;

    const overdue = await waitFor(
      'Cluster fresh to read as CheckOverdue',
      async () => {
        const s = (await r.admin.get(clusterPath('fresh'))).body.status;
        return ready(s)?.reason === 'CheckOverdue' && s;
      },
      15_000,
    );
    const last = Date.parse(overdue.lastCheckTime);
    expect(Date.now() - last).toBeGreaterThanOrEqual(3 * INTERVAL_MS);
    expect(ready(overdue)).toMatchObject({ type: 'Ready', status: 'Unknown', reason: 'CheckOverdue' });
    expect(ready(overdue).message).toContain(overdue.lastCheckTime);
    // What the last check found is still there: only the condition says it is not current.
    expect(overdue).toMatchObject({ phase: 'Initialized', online: true });
    expect(overdue.conditions.filter((c: any) => c.type === 'Ready')).toHaveLength(1);

    // LIST, the Table and a WATCH's events say the same, at the stored resourceVersion.
    const got = (await r.admin.get(clusterPath('fresh'))).body;
    const list = (await r.admin.get(CLUSTERS_PATH)).body;
    const listed = list.items.find((i: any) => i.metadata.name === 'fresh');
    expect(ready(listed.status)).toEqual(ready(overdue));
    expect(listed.metadata.resourceVersion).toBe(got.metadata.resourceVersion);
    const rows = (await r.admin.get(`${CLUSTERS_PATH}?includeObject=Object`, { headers: { accept: TABLE } })).body;
    const row = rows.rows.find((x: any) => x.object.metadata.name === 'fresh');
    expect(ready(row.object.status)).toEqual(ready(overdue));
    const lastCheckAt = rows.columnDefinitions.findIndex((c: any) => c.name === 'Last Check');
    expect(row.cells[lastCheckAt]).toMatch(/^\d+s$/);
    const watch = await r.admin.get(`${CLUSTERS_PATH}?watch=true&resourceVersion=0&timeoutSeconds=1`);
    const events = watch.text
      .trim()
      .split('\n')
      .map((l: string) => JSON.parse(l));
    const event = events.find((e: any) => e.object.metadata.name === 'fresh');
    expect(event.type).toBe('ADDED');
    expect(ready(event.object.status)).toEqual(ready(overdue));
    expect(event.object.metadata.resourceVersion).toBe(got.metadata.resourceVersion);

    // An import through it is 503, naming the reason.
    const project = await r.admin.post(PROJECTS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: 'proj' },
      spec: { allowedClusters: [{ name: '*' }] },
    });
    expect(project.status).toBe(201);
    mgmt.addNamespace('p-proj');
    a.addSecret('vcluster-vc', 'vc-vc', { config: 'a kubeconfig of the virtual cluster' });
    const imported = await r.admin.post(`${PROJECTS_PATH}/proj/importvirtualcluster`, {
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: { name: 'vc', namespace: 'vcluster-vc', cluster: 'fresh' },
    });
    expect(imported.status).toBe(503);
    expect(imported.body.message).toContain('is not ready (CheckOverdue)');

    // Never stored: etcd has the last check's condition, and a client writing back what it read stores that one.
    const operator = new Etcd3({ hosts: etcd.endpoint });
    try {
      const key = `${prefix}/management.platform.sh/clusters/fresh`;
      const storedReady = async () => ready(JSON.parse((await operator.get(key).string())!).status);
      expect(await storedReady()).toMatchObject({ status: 'True', reason: 'Connected' });
      const put = await r.admin.put(`${clusterPath('fresh')}/status`, got);
      expect(put.status).toBe(200);
      expect(ready(put.body.status).reason).toBe('CheckOverdue');
      expect(await storedReady()).toMatchObject({ status: 'True', reason: 'Connected' });
    } finally {
      operator.close();
    }
  }, 90_000);
});
