/**
 * VirtualClusterInstance health you can trust to be current (kinds/virtualclusterinstance/freshness.ts): an instance
 * whose checks stopped reads, after 3 --virtual-cluster-health-interval, with phase Unknown and VirtualClusterOnline
 * Unknown, reason CheckOverdue, in GET, LIST, WATCH and `kubectl get`, derived where it is read and never stored;
 * its kube configs are 503. The checker is stopped as in cluster-freshness.test.ts: the replica that checked goes,
 * and the test holds the controllers' lease, so the replica that serves then checks nothing. The Clusters are checked
 * every minute, so the instance's Cluster stays current here and the 503 is the instance's own.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { LeaderElector } from '../../src/controllers/leader.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { API_VERSION, PROJECTS_PATH, virtualClusterInstancesPath as vcis } from '../support/fixtures.js';
import { connectCluster } from '../support/connectedclusters.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const INTERVAL_MS = 1000;
const CLUSTER_INTERVAL_MS = 60_000;
const NS = 'p-web';
const NAME = 'shop';
const PATH = `${vcis(NS)}/${NAME}`;

let etcd: TestEtcd;
/** The management host, which is also the local Cluster the virtual cluster runs in. */
let mgmt: HostClusterStandIn;
/** The virtual cluster's API: it answers /version and signs the kube configs' certificates. */
let vc: HostClusterStandIn;
const prefix = `/test-${randomUUID()}`;
let checker: TestServer | undefined;
let reader: TestServer | undefined;
let lease: { storage: EtcdStorage; elector: LeaderElector } | undefined;

const serverOptions = () => ({
  kubeconfig: mgmt.kubeconfigPath,
  clusterHealthIntervalMs: CLUSTER_INTERVAL_MS,
  virtualClusterHealthIntervalMs: INTERVAL_MS,
  etcdPrefix: prefix,
});

beforeAll(async () => {
  [etcd, mgmt, vc] = await Promise.all([startTestEtcd(), startHostCluster(), startHostCluster()]);
  checker = await startTestServer(serverOptions(), etcd);
}, 60_000);

afterAll(async () => {
  await checker?.stop();
  await reader?.stop();
  await lease?.elector.stop();
  await lease?.storage.close();
  await Promise.all([mgmt?.stop(), vc?.stop()]);
  await etcd?.stop();
}, 60_000);

const online = (status: any) => status?.conditions?.find((c: any) => c.type === 'VirtualClusterOnline');

/** The instance's kube config, as the admin asks for it. */
const kubeConfig = (ts: TestServer) => ts.admin.get(`${PATH}/kubeconfig`);

describe('a VirtualClusterInstance whose checks stop', () => {
  test('after 3 intervals without one reads as Unknown/CheckOverdue, nowhere stored; its kube configs are 503', async () => {
    const ts = checker!;
    await connectCluster(ts.admin, mgmt, 'eu-1', mgmt);
    const project = await ts.admin.post(PROJECTS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: 'web' },
      spec: { allowedClusters: [{ name: '*' }] },
    });
    expect(project.status).toBe(201);
    mgmt.addNamespace(NS);
    mgmt.addSecret(`vcluster-${NAME}`, `vc-${NAME}`, { config: vc.kubeconfigText() });
    const created = await ts.admin.post(vcis(NS), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name: NAME },
      spec: {
        clusterRef: { cluster: 'eu-1', namespace: `vcluster-${NAME}`, virtualCluster: NAME },
        ingressEndpoint: `https://${NAME}.vc.example.com`,
      },
    });
    expect(created.status).toBe(201);
    const checked = await waitFor(
      'the instance to be Ready',
      async () => {
        const s = (await ts.admin.get(PATH)).body.status;
        return s?.phase === 'Ready' && s;
      },
      30_000,
    );
    expect(online(checked)).toMatchObject({ status: 'True', reason: 'Online' });
    expect(checked.kubernetesVersion).toMatch(/^v1\./);
    expect((await kubeConfig(ts)).status).toBe(200);

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
      'the instance to read as CheckOverdue',
      async () => {
        const s = (await r.admin.get(PATH)).body.status;
        return online(s)?.reason === 'CheckOverdue' && s;
      },
      15_000,
    );
    expect(Date.now() - Date.parse(overdue.lastCheckTime)).toBeGreaterThanOrEqual(3 * INTERVAL_MS);
    expect(online(overdue)).toMatchObject({ status: 'Unknown', reason: 'CheckOverdue' });
    expect(online(overdue).message).toContain(`since ${overdue.lastCheckTime}`);
    expect(online(overdue).message).toContain('the last check found it Ready');
    // Not known to be ready: the phase says so too; what the last check found of the virtual cluster stays.
    expect(overdue).toMatchObject({
      phase: 'Unknown',
      reason: 'CheckOverdue',
      message: online(overdue).message,
      online: true,
      kubernetesVersion: checked.kubernetesVersion,
    });
    expect(overdue.conditions.filter((c: any) => c.type === 'VirtualClusterOnline')).toHaveLength(1);

    // LIST and a WATCH's events say the same, at the stored resourceVersion.
    const got = (await r.admin.get(PATH)).body;
    const listed = (await r.admin.get(vcis(NS))).body.items.find((i: any) => i.metadata.name === NAME);
    expect(listed.status).toEqual(overdue);
    expect(listed.metadata.resourceVersion).toBe(got.metadata.resourceVersion);
    const watch = await r.admin.get(`${vcis(NS)}?watch=true&resourceVersion=0&timeoutSeconds=1`);
    const events = watch.text
      .trim()
      .split('\n')
      .map((l: string) => JSON.parse(l));
    const event = events.find((e: any) => e.object.metadata.name === NAME);
    expect(event.type).toBe('ADDED');
    expect(event.object.status).toEqual(overdue);
    expect(event.object.metadata.resourceVersion).toBe(got.metadata.resourceVersion);

    // kubectl shows it as Unknown, and a wait for Ready does not end.
    const table = await kubectl(['get', 'vci', NAME, '-n', NS], { kubeconfig: r.kubeconfig });
    const [header, row] = table.stdout.trim().split('\n');
    // By where each column starts: DISPLAY NAME is empty.
    const cell = (column: string) => row.slice(header.indexOf(column)).split(/\s+/)[0];
    expect([cell('NAME'), cell('PHASE'), cell('ONLINE')]).toEqual([NAME, 'Unknown', 'true']);
    expect(cell('LAST CHECK')).toMatch(/^\d+s$/);
    const wait = await kubectl(
      ['wait', '--for=jsonpath={.status.phase}=Ready', `vci/${NAME}`, '-n', NS, '--timeout=1s'],
      {
        kubeconfig: r.kubeconfig,
      },
    );
    expect(wait.code).not.toBe(0);
    expect(wait.stderr).toContain('timed out');

    // A kube config is 503, naming the reason.
    const refused = await kubeConfig(r);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
    expect(refused.body.message).toContain(`VirtualClusterInstance ${NS}/${NAME} is not ready (CheckOverdue)`);
    expect(refused.body.message).toContain(
      `has not completed a check of this virtual cluster since ${overdue.lastCheckTime}`,
    );
    expect(vc.csrs()).toHaveLength(1);

    // Never stored: etcd has the last check's status, and a client writing back what it read stores that one.
    const operator = new Etcd3({ hosts: etcd.endpoint });
    try {
      const key = `${prefix}/management.platform.sh/virtualclusterinstances/${NS}/${NAME}`;
      const storedStatus = async () => JSON.parse((await operator.get(key).string())!).status;
      const before = await storedStatus();
      expect(before).toMatchObject({ phase: 'Ready', online: true });
      expect(before).not.toHaveProperty('reason');
      expect(online(before)).toMatchObject({ status: 'True', reason: 'Online' });
      const put = await r.admin.put(`${PATH}/status`, got);
      expect(put.status).toBe(200);
      expect(put.body.status).toMatchObject({ phase: 'Unknown', reason: 'CheckOverdue' });
      expect(await storedStatus()).toEqual(before);
    } finally {
      operator.close();
    }
  }, 90_000);
});
