/**
 * Clusters' connections and health (src/clusters, src/controllers/clusterhealth.ts), with real etcd, the real server,
 * real kubectl and three host stand-ins at once: the management host (the server's --kubeconfig, where the config
 * Secrets live) and two connected clusters with distinct kube-system uids and versions. Checks run every second
 * here; every wait is on the status the server writes, never on time. A Cluster records the kube-system uid of the
 * cluster it is first connected to (status.clusterUID), and one physical cluster is the Cluster's that recorded it:
 * another Cluster that existed beside that one never takes it, also once that one goes, whatever happened to its own
 * status writes, and across restarts; only a Cluster created after that deletion does.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import * as errors from '../../src/apimachinery/status.js';
import { ClusterConnections, ClusterNotReadyError } from '../../src/clusters/connections.js';
import { ClusterConnector } from '../../src/clusters/connector.js';
import { nowRFC3339 } from '../../src/apimachinery/time.js';
import { HostCluster } from '../../src/host/cluster.js';
import { API_VERSION, CLUSTERS_PATH, JSON_PATCH, MERGE_PATCH, clusterPath } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startHostileVirtualCluster } from '../support/hostilecluster.js';
import type { HttpClient } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const NS = 'platform';
const INTERVAL_MS = 1000;
const WAIT_MS = 30_000;

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let b: HostClusterStandIn;
/** A third cluster, for the tests that move a Cluster between Secrets (a and b are connected as conn-a and conn-b). */
let c: HostClusterStandIn;
let ts: TestServer;
let scratch: string;

beforeAll(async () => {
  [mgmt, a, b, c] = await Promise.all([
    startHostCluster(),
    startHostCluster({ kubernetesVersion: 'v1.33.2' }),
    startHostCluster({ kubernetesVersion: 'v1.32.7' }),
    startHostCluster({ kubernetesVersion: 'v1.31.1' }),
  ]);
  mgmt.addNamespace(NS);
  mgmt.addSecret(NS, 'a', { config: a.kubeconfigText() });
  mgmt.addSecret(NS, 'b', { config: b.kubeconfigText() });
  ts = await startTestServer({
    kubeconfig: mgmt.kubeconfigPath,
    clusterHealthIntervalMs: INTERVAL_MS,
    clusterSecretNamespace: NS,
  });
  scratch = mkdtempSync(join(tmpdir(), 'cluster-health-'));
}, 60_000);

afterAll(async () => {
  await ts?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), b?.stop(), c?.stop()]);
  rmSync(scratch, { recursive: true, force: true });
});

function cluster(name: string, spec: Record<string, unknown>) {
  return { apiVersion: API_VERSION, kind: 'Cluster', metadata: { name }, spec };
}

async function create(name: string, spec: Record<string, unknown>) {
  const res = await ts.admin.post(CLUSTERS_PATH, cluster(name, spec));
  expect(res.status).toBe(201);
  return res.body;
}

/** Where a test reads Clusters: this file's server, or another's system:masters. */
type Reader = { admin: HttpClient };

async function statusOf(name: string, client: Reader = ts): Promise<Record<string, any>> {
  return (await client.admin.get(clusterPath(name))).body.status ?? {};
}

/** Waits until the Cluster's status has `phase` (and `reason`, when given); returns that status. */
function until(name: string, phase: string, reason?: string, client: Reader = ts): Promise<Record<string, any>> {
  return waitFor(
    `Cluster ${name} to be ${phase || '""'}${reason ? `/${reason}` : ''}`,
    async () => {
      const s = await statusOf(name, client);
      return (s.phase ?? '') === phase && (reason === undefined || s.reason === reason) && s;
    },
    WAIT_MS,
  );
}

const ready = (s: Record<string, any>) => s.conditions?.find((c: any) => c.type === 'Ready');

/** What a check found: the status but the time of the check, which every check moves (about once per interval). */
const finding = ({ lastCheckTime: _at, ...found }: Record<string, any>) => found;

/** A kubeconfig text of `host` changed by `edit` (a parsed copy). */
function kubeconfigOf(host: HostClusterStandIn, edit: (doc: any) => void): string {
  const doc: any = yaml.load(host.kubeconfigText());
  edit(doc);
  return yaml.dump(doc);
}

describe('connected clusters', () => {
  test('two clusters through their Secrets: Initialized, online, their versions, Ready; kubectl shows and waits', async () => {
    await create('conn-a', { config: { secretName: 'a' } });
    await create('conn-b', { config: { secretName: 'b', secretNamespace: NS } });
    const res = await kubectl(
      ['wait', '--for=jsonpath={.status.phase}=Initialized', 'cluster/conn-a', 'cluster/conn-b', '--timeout=60s'],
      { kubeconfig: ts.kubeconfig, timeoutMs: 70_000 },
    );
    expect(res.stdout).toContain('cluster.management.platform.sh/conn-a condition met');
    expect(res.stdout).toContain('cluster.management.platform.sh/conn-b condition met');
    const sa = await statusOf('conn-a');
    expect(sa).toMatchObject({ phase: 'Initialized', online: true, kubernetesVersion: 'v1.33.2' });
    expect(sa).not.toHaveProperty('reason');
    // Which cluster it is, recorded at the first check that reached it.
    expect(sa.clusterUID).toBe(a.kubeSystemUid);
    expect(sa.clusterUIDRecordedTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(ready(sa)).toMatchObject({ status: 'True', reason: 'Connected' });
    expect((await statusOf('conn-b')).kubernetesVersion).toBe('v1.32.7');

    const table = await kubectl(['get', 'clusters', 'conn-a', 'conn-b'], { kubeconfig: ts.kubeconfig });
    const rows = table.stdout.trim().split('\n');
    expect(rows[0].split(/\s{2,}/)).toEqual([
      'NAME',
      'DISPLAY NAME',
      'LOCAL',
      'UNUSABLE',
      'PHASE',
      'ONLINE',
      'LAST CHECK',
      'AGE',
    ]);
    const phaseAt = rows[0].indexOf('PHASE');
    const onlineAt = rows[0].indexOf('ONLINE');
    for (const row of rows.slice(1)) {
      expect(row.slice(phaseAt, onlineAt).trim()).toBe('Initialized');
      expect(row.slice(onlineAt).split(/\s+/)[0]).toBe('true');
    }
  }, 90_000);

  test('down: Failed, Unreachable, offline, Ready False; up again: Initialized; then only the check time is written, at most once per check', async () => {
    const before = await until('conn-a', 'Initialized');
    await a.setDown(true);
    const down = await until('conn-a', 'Failed', 'Unreachable');
    expect(down.online).toBe(false);
    expect(ready(down)).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(ready(down).lastTransitionTime >= ready(before).lastTransitionTime).toBe(true);
    // The other cluster is not concerned.
    expect((await statusOf('conn-b')).phase).toBe('Initialized');
    await a.setDown(false);
    const up = await until('conn-a', 'Initialized');
    expect(up.online).toBe(true);
    expect(ready(up).status).toBe('True');

    // More checks that find the same: the status and its condition stay as they were but for lastCheckTime, written
    // at every other check (the heartbeat: kinds/overdue.ts, RESTAMP_INTERVALS).
    const seen = a.count('namespaces', 'GET');
    const writes: string[] = [];
    const watch = await ts.admin.get(
      `${CLUSTERS_PATH}?watch=true&fieldSelector=metadata.name=conn-a&resourceVersion=${(await ts.admin.get(clusterPath('conn-a'))).body.metadata.resourceVersion}&timeoutSeconds=4`,
    );
    for (const line of String(watch.text ?? '')
      .trim()
      .split('\n')
      .filter(Boolean))
      writes.push(JSON.parse(line).object.status.lastCheckTime);
    const checks = a.count('namespaces', 'GET') - seen;
    expect(checks).toBeGreaterThanOrEqual(2);
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.length).toBeLessThanOrEqual(Math.ceil(checks / 2));
    const after = (await ts.admin.get(clusterPath('conn-a'))).body;
    expect(after.status).toMatchObject({ phase: 'Initialized', online: true });
    expect(after.status.lastCheckTime > up.lastCheckTime).toBe(true);
    expect(ready(after.status).lastTransitionTime).toBe(ready(up).lastTransitionTime);
  }, 90_000);

  test('503 from the cluster: Failed, Unavailable, online (it answered)', async () => {
    await a.setDown(true, 'unavailable');
    try {
      const s = await until('conn-a', 'Failed', 'Unavailable');
      expect(s.online).toBe(true);
      expect(s.message).toContain('HTTP 503');
    } finally {
      await a.setDown(false);
    }
    await until('conn-a', 'Initialized');
  }, 60_000);

  test('a rotated Secret counts at the next check, without a restart', async () => {
    mgmt.addSecret(NS, 'rotating', { config: c.kubeconfigText() });
    await create('rotating', { config: { secretName: 'rotating' } });
    expect((await until('rotating', 'Initialized')).kubernetesVersion).toBe('v1.31.1');
    // Now a credential the cluster does not accept...
    mgmt.addSecret(NS, 'rotating', { config: kubeconfigOf(c, (d) => (d.users[0].user.token = 'revoked-token')) });
    const refused = await until('rotating', 'Failed', 'Unauthorized');
    expect(refused.online).toBe(true);
    expect(refused.message).toContain('HTTP 401');
    expect(JSON.stringify(refused)).not.toContain('revoked-token');
    // ...then one of another cluster (which conn-b connects already): the Cluster stays the cluster it recorded...
    mgmt.addSecret(NS, 'rotating', { config: b.kubeconfigText() });
    const moved = await until('rotating', 'Failed', 'ClusterUID');
    expect(moved).toMatchObject({ online: true, kubernetesVersion: 'v1.32.7', clusterUID: c.kubeSystemUid });
    expect(moved.message).toContain('the cluster now answers as another cluster');
    expect(moved.message).not.toContain('conn-b');
    expect((await statusOf('conn-b')).phase).toBe('Initialized');
    // ...and back.
    mgmt.addSecret(NS, 'rotating', { config: c.kubeconfigText() });
    expect((await until('rotating', 'Initialized')).kubernetesVersion).toBe('v1.31.1');
    expect((await ts.admin.delete(clusterPath('rotating'))).status).toBe(200);
  }, 90_000);

  test('the same physical cluster twice: the second is Failed/ClusterUID, naming nothing, and stays so when the first goes; created again, it is the one', async () => {
    mgmt.addSecret(NS, 'a-again', { config: a.kubeconfigText() });
    await create('dup-of-a', { config: { secretName: 'a-again' } });
    const dup = await until('dup-of-a', 'Failed', 'ClusterUID');
    expect(dup.online).toBe(true);
    expect(dup.message).toContain('another Cluster connected to this cluster first');
    // Whoever may read this Cluster is not told of the other, which they may not be allowed to see.
    expect(dup.message).not.toContain('conn-a');
    expect(dup).not.toHaveProperty('clusterUID');
    expect((await statusOf('conn-a')).phase).toBe('Initialized');

    // The connection for later work is refused with that reason (503).
    const connections = clusterConnections();
    const refused = await connections.connection('dup-of-a').catch((e) => e);
    expect(refused).toBeInstanceOf(ClusterNotReadyError);
    expect(refused.reason).toBe('ClusterUID');
    expect(refused.toStatus().status).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    const good = await connections.connection('conn-a');
    expect(good.kubeSystemUid).toBe(a.kubeSystemUid);
    expect((await connections.connection('conn-b')).kubeSystemUid).toBe(b.kubeSystemUid);
    const missing = await connections.connection('no-such-cluster').catch((e) => e);
    expect(missing).toMatchObject({ reason: 'NotFound' });

    // Once conn-a is gone, its duplicate still does not record that cluster: its answer is all it has, and a
    // cluster that copies another's uid answers the same (connected-virtualclusters.test.ts). Nothing changes.
    expect((await ts.admin.delete(clusterPath('conn-a'))).status).toBe(200);
    const checksOfA = () => a.count('namespaces', 'GET');
    const seen = checksOfA();
    await waitFor('two more checks of dup-of-a', () => checksOfA() >= seen + 2, WAIT_MS);
    expect(finding(await statusOf('dup-of-a'))).toEqual(finding(dup));

    // To keep it, an administrator creates it again, after the other is gone: a new Cluster records the cluster.
    const kept = (await ts.admin.get(clusterPath('dup-of-a'))).body;
    expect((await ts.admin.delete(clusterPath('dup-of-a'))).status).toBe(200);
    expect((await ts.admin.post(CLUSTERS_PATH, cluster('dup-of-a', kept.spec))).status).toBe(201);
    const recreated = await until('dup-of-a', 'Initialized');
    expect(recreated.clusterUID).toBe(a.kubeSystemUid);

    // And the same the other way round: conn-a, now the second, is refused; deleting dup-of-a does not give it the
    // cluster, creating it again after that does.
    await create('conn-a', { config: { secretName: 'a' } });
    const newer = await until('conn-a', 'Failed', 'ClusterUID');
    expect(newer.message).toContain('another Cluster connected to this cluster first');
    expect(newer.message).not.toContain('dup-of-a');
    expect((await ts.admin.delete(clusterPath('dup-of-a'))).status).toBe(200);
    const seenAgain = checksOfA();
    await waitFor('two more checks of conn-a', () => checksOfA() >= seenAgain + 2, WAIT_MS);
    expect(await statusOf('conn-a')).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
    expect((await ts.admin.delete(clusterPath('conn-a'))).status).toBe(200);
    await create('conn-a', { config: { secretName: 'a' } });
    expect((await until('conn-a', 'Initialized')).clusterUID).toBe(a.kubeSystemUid);
  }, 120_000);

  test('a network peer is not checked: phase "", WaitingForNetworkPeer, offline, Ready Unknown', async () => {
    await create('peer', { networkPeer: true });
    const s = await until('peer', '', 'WaitingForNetworkPeer');
    expect(s.online).toBe(false);
    expect(ready(s).status).toBe('Unknown');
  }, 60_000);
});

describe("the record of a Cluster's cluster is the server's", () => {
  test('status writes by system:masters (merge, JSON patch, PUT) and writes of the Cluster keep it; none adds one', async () => {
    const recorded = await until('conn-b', 'Initialized');
    const record = { clusterUID: recorded.clusterUID, clusterUIDRecordedTime: recorded.clusterUIDRecordedTime };
    expect(record.clusterUID).toBe(b.kubeSystemUid);
    const status = `${clusterPath('conn-b')}/status`;
    const forged = { clusterUID: a.kubeSystemUid, clusterUIDRecordedTime: '2000-01-01T00:00:00.000000Z' };
    const writes = [
      () => ts.admin.patch(status, { status: forged }, MERGE_PATCH),
      () => ts.admin.patch(status, { status: { clusterUID: null, clusterUIDRecordedTime: null } }, MERGE_PATCH),
      () => ts.admin.patch(status, [{ op: 'remove', path: '/status/clusterUID' }], JSON_PATCH),
      async () => {
        const current = (await ts.admin.get(clusterPath('conn-b'))).body;
        return ts.admin.put(status, { ...current, status: { phase: 'Initialized', ...forged } });
      },
      () => ts.admin.patch(clusterPath('conn-b'), { spec: { displayName: 'B' }, status: forged }, MERGE_PATCH),
    ];
    for (const write of writes) {
      const res = await write();
      expect(res.status).toBe(200);
      expect(res.body.status).toMatchObject(record);
    }
    expect(await statusOf('conn-b')).toMatchObject(record);

    // A Cluster without one (a network peer is never reached) gets none from a status write.
    await until('peer', '', 'WaitingForNetworkPeer');
    const peerStatus = `${clusterPath('peer')}/status`;
    const added = await ts.admin.patch(peerStatus, { status: forged }, MERGE_PATCH);
    expect(added.status).toBe(200);
    expect(added.body.status).not.toHaveProperty('clusterUID');
    expect(added.body.status).not.toHaveProperty('clusterUIDRecordedTime');
  }, 60_000);
});

describe('a refused Cluster on another replica (the checks moved, or the server restarted)', () => {
  test('stays refused once the Cluster that held its cluster is gone: who held it is stored, not remembered', async () => {
    const d = await startHostCluster();
    const etcdPrefix = `/test-${randomUUID()}`;
    const servers = { kubeconfig: mgmt.kubeconfigPath, clusterSecretNamespace: NS, etcdPrefix };
    mgmt.addSecret(NS, 'd', { config: d.kubeconfigText() });
    try {
      const first = await startTestServer({ ...servers, clusterHealthIntervalMs: INTERVAL_MS }, ts.etcd);
      let refused: Record<string, any>;
      try {
        expect(
          (await first.admin.post(CLUSTERS_PATH, cluster('d-first', { config: { secretName: 'd' } }))).status,
        ).toBe(201);
        await until('d-first', 'Initialized', undefined, first);
        expect(
          (await first.admin.post(CLUSTERS_PATH, cluster('d-second', { config: { secretName: 'd' } }))).status,
        ).toBe(201);
        refused = await until('d-second', 'Failed', 'ClusterUID', first);
      } finally {
        await first.stop();
      }
      // Deleted through a server that does not check Clusters: the one that checks next never saw d-first.
      const between = await startTestServer({ ...servers, clusterHealthIntervalMs: 0 }, ts.etcd);
      try {
        expect((await between.admin.delete(clusterPath('d-first'))).status).toBe(200);
        await waitFor(
          'd-first to be gone',
          async () => (await between.admin.get(clusterPath('d-first'))).status === 404,
        );
      } finally {
        await between.stop();
      }
      const after = await startTestServer({ ...servers, clusterHealthIntervalMs: INTERVAL_MS }, ts.etcd);
      try {
        const checks = () => d.count('namespaces', 'GET');
        const seen = checks();
        await waitFor('two checks of d-second', () => checks() >= seen + 2, WAIT_MS);
        expect(finding(await statusOf('d-second', after))).toEqual(finding(refused));
      } finally {
        await after.stop();
      }
    } finally {
      await d.stop();
    }
  }, 90_000);
});

describe("a tenant's Cluster that existed beside the one holding a cluster never takes it, also once that one is deleted", () => {
  const KUBE_SYSTEM = '/api/v1/namespaces/kube-system';
  let etcdPrefix: string;
  let victim: HostClusterStandIn;
  /** Mallory's cluster: it refuses the server's credential (401) until it copies the victim's (it forwards to it). */
  let copy: Awaited<ReturnType<typeof startHostileVirtualCluster>>;
  let copying: boolean;
  const copyChecks = () => copy.received.filter((r) => r.path === KUBE_SYSTEM).length;

  beforeEach(async () => {
    etcdPrefix = `/test-${randomUUID()}`;
    victim = await startHostCluster();
    copy = await startHostileVirtualCluster(victim);
    copying = false;
    copy.answer = () => (copying ? undefined : { refuse: 401 });
    mgmt.addSecret(NS, 'victim', { config: victim.kubeconfigText() });
    mgmt.addSecret(NS, 'copy', { config: copy.kubeconfigText() });
  });

  afterEach(async () => {
    await copy.stop();
    await victim.stop();
  });

  /** A server on this test's prefix; one that does not check Clusters is, for them, a server that is down. */
  function serve(checks: boolean) {
    const config = { kubeconfig: mgmt.kubeconfigPath, clusterSecretNamespace: NS, etcdPrefix };
    return startTestServerWithUsers(
      { root: ['system:masters'], mallory: [] },
      { ...config, clusterHealthIntervalMs: checks ? INTERVAL_MS : 0 },
      ts.etcd,
    );
  }
  type Server = Awaited<ReturnType<typeof serve>>;
  const on = (srv: Server): Reader => ({ admin: srv.as.root });

  async function createIn(srv: Server, name: string, secretName: string, owner?: string) {
    const spec = { config: { secretName }, ...(owner ? { owner: { user: owner } } : {}) };
    expect((await srv.as.root.post(CLUSTERS_PATH, cluster(name, spec))).status).toBe(201);
  }

  async function deleteIn(srv: Server, name: string) {
    expect((await srv.as.root.delete(clusterPath(name))).status).toBe(200);
    await waitFor(`${name} to be gone`, async () => (await srv.as.root.get(clusterPath(name))).status === 404);
  }

  /** The victim's Cluster, and mallory's, created while it exists: her cluster refuses, so it records nothing. */
  async function victimAndCopy(srv: Server) {
    await createIn(srv, 'victim', 'victim');
    expect((await until('victim', 'Initialized', undefined, on(srv))).clusterUID).toBe(victim.kubeSystemUid);
    await createIn(srv, 'copy', 'copy', 'mallory');
    await until('copy', 'Failed', 'Unauthorized', on(srv));
  }

  /** Waits until the check of mallory's Cluster has decided on the uid her cluster answers now. */
  function decided(srv: Server, name = 'copy') {
    return waitFor(
      `${name} to be decided`,
      async () => {
        const s = await statusOf(name, on(srv));
        return s.reason !== 'Unauthorized' && s.phase && s;
      },
      WAIT_MS,
    );
  }

  /** The victim's Cluster, created again (a new Cluster, as an administrator connects a cluster again), records it. */
  async function victimAgain(srv: Server) {
    await createIn(srv, 'victim', 'victim');
    expect(await decided(srv, 'victim')).toMatchObject({ phase: 'Initialized', clusterUID: victim.kubeSystemUid });
  }

  test("one that never reached the cluster while the holder existed (its cluster refused the server until then) does not take it once the holder is deleted; the victim's, created again, does", async () => {
    const srv = await serve(true);
    try {
      await victimAndCopy(srv);
      await deleteIn(srv, 'victim');
      copying = true;
      const copied = await decided(srv);
      expect(copied).toMatchObject({ phase: 'Failed', reason: 'ClusterUID', online: true });
      expect(copied).not.toHaveProperty('clusterUID');
      expect(copied.message).toContain('another Cluster connected to this cluster first');
      await victimAgain(srv);
      expect(await statusOf('copy', on(srv))).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
    } finally {
      await srv.stop();
    }
  }, 90_000);

  test('one being deleted (a finalizer holds it) is gone: a Cluster created after its deletion was asked for records its cluster, one that existed before does not', async () => {
    const srv = await serve(true);
    try {
      await victimAndCopy(srv);
      const held = { metadata: { finalizers: ['example.com/hold'] } };
      expect((await srv.as.root.patch(clusterPath('victim'), held, MERGE_PATCH)).status).toBe(200);
      expect((await srv.as.root.delete(clusterPath('victim'))).status).toBe(200);
      copying = true;
      expect(await decided(srv)).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      await createIn(srv, 'replacement', 'victim');
      const replaced = await decided(srv, 'replacement');
      expect(replaced).toMatchObject({ phase: 'Initialized', clusterUID: victim.kubeSystemUid });
      const old = await srv.as.root.get(clusterPath('victim'));
      expect(old.body.metadata.deletionTimestamp).toBeDefined();
      const released = { metadata: { finalizers: null } };
      expect((await srv.as.root.patch(clusterPath('victim'), released, MERGE_PATCH)).status).toBe(200);
      await waitFor('victim to be gone', async () => (await srv.as.root.get(clusterPath('victim'))).status === 404);
      const seen = copyChecks();
      await waitFor('two checks of the copy', () => copyChecks() >= seen + 2, WAIT_MS);
      expect(await statusOf('copy', on(srv))).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      expect(await statusOf('replacement', on(srv))).toMatchObject({ phase: 'Initialized' });
    } finally {
      await srv.stop();
    }
  }, 90_000);

  test("one whose refusal etcd would not take (its owner grew it to etcd's limit) does not take it after a restart; the victim's, created again, does", async () => {
    let srv = await serve(true);
    try {
      await victimAndCopy(srv);
      // Mallory grows her Cluster to the most etcd takes: a status write that adds to it is refused.
      await padToTheLimit(srv.as.mallory, clusterPath('copy'));
      copying = true;
      const seen = copyChecks();
      await waitFor('two checks of the copy', () => copyChecks() >= seen + 2, WAIT_MS);
      // Its refusal never reached etcd.
      expect(await statusOf('copy', on(srv))).toMatchObject({ phase: 'Failed', reason: 'Unauthorized' });
      await deleteIn(srv, 'victim');
    } finally {
      await srv.stop();
    }
    srv = await serve(true);
    try {
      const trimmed = await srv.as.mallory.patch(clusterPath('copy'), { spec: { description: 'mine' } }, MERGE_PATCH);
      expect(trimmed.status).toBe(200);
      const copied = await decided(srv);
      expect(copied).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      expect(copied).not.toHaveProperty('clusterUID');
      await victimAgain(srv);
    } finally {
      await srv.stop();
    }
  }, 120_000);

  test('deleted while no server checked: neither one that existed beside it nor one created before a server found it gone takes its cluster; one created after does', async () => {
    let srv = await serve(true);
    try {
      await victimAndCopy(srv);
    } finally {
      await srv.stop();
    }
    // Its deletion is never seen: the next server finds it gone, when it does not know.
    srv = await serve(false);
    try {
      await deleteIn(srv, 'victim');
      await createIn(srv, 'meanwhile', 'victim');
    } finally {
      await srv.stop();
    }
    copying = true;
    srv = await serve(true);
    try {
      const copied = await decided(srv);
      expect(copied).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      expect(copied).not.toHaveProperty('clusterUID');
      expect(await decided(srv, 'meanwhile')).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      await deleteIn(srv, 'meanwhile');
      await victimAgain(srv);
      expect(await statusOf('copy', on(srv))).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
    } finally {
      await srv.stop();
    }
  }, 120_000);

  test('recorded by the last release, which kept no holders: the next server holds what is recorded, so a deletion it sees frees the cluster for new Clusters only', async () => {
    let srv = await serve(true);
    try {
      await victimAndCopy(srv);
    } finally {
      await srv.stop();
    }
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      await kv.delete().prefix(`${etcdPrefix}/clusteruids/`);
    } finally {
      kv.close();
    }
    srv = await serve(true);
    try {
      // Checks have begun: what was recorded is held.
      const seen = copy.received.length;
      await waitFor('two checks of the copy', () => copy.received.length >= seen + 2, WAIT_MS);
      await deleteIn(srv, 'victim');
      copying = true;
      const copied = await decided(srv);
      expect(copied).toMatchObject({ phase: 'Failed', reason: 'ClusterUID' });
      expect(copied).not.toHaveProperty('clusterUID');
      await victimAgain(srv);
    } finally {
      await srv.stop();
    }
  }, 120_000);
});

/** What etcd takes in one request (its --max-request-bytes default, 1.5 MiB), the key and the rest included. */
const ETCD_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

/**
 * Pads the Cluster's spec.description as `client` to within 128 bytes of the most etcd takes (more is 413 and
 * stores nothing), so that a status write adding more than that fails.
 */
async function padToTheLimit(client: HttpClient, path: string): Promise<void> {
  const pad = (bytes: number) => client.patch(path, { spec: { description: 'x'.repeat(bytes) } }, MERGE_PATCH);
  const small = await pad(1);
  expect(small.status).toBe(200);
  // The object as served is within a few bytes of its stored value; the request around it adds a little more.
  const atTheLimit = ETCD_MAX_REQUEST_BYTES - JSON.stringify(small.body).length + 1;
  let fits = atTheLimit - 1024;
  let tooLarge = atTheLimit + 64;
  while (tooLarge - fits > 128) {
    const bytes = Math.floor((fits + tooLarge) / 2);
    const res = await pad(bytes);
    if (res.status === 200) fits = bytes;
    else {
      expect(res.body).toMatchObject({ code: 413, reason: 'RequestEntityTooLarge' });
      tooLarge = bytes;
    }
  }
  expect((await pad(fits)).status).toBe(200);
}

describe('Clusters without a record (stored before records existed)', () => {
  test('of two that reach one cluster the older records it, whichever is checked first; the newer is Failed/ClusterUID', async () => {
    const etcdPrefix = `/test-${randomUUID()}`;
    const servers = { kubeconfig: mgmt.kubeconfigPath, clusterSecretNamespace: NS, etcdPrefix };
    // Stored by a server that does not check Clusters: no status, no record. The newer sorts first by name (the
    // order of the first checks), and is created a second later (the resolution of creationTimestamp).
    const before = await startTestServer({ ...servers, clusterHealthIntervalMs: 0 }, ts.etcd);
    try {
      const older = await before.admin.post(CLUSTERS_PATH, cluster('z-older', { config: { secretName: 'a' } }));
      expect(older.status).toBe(201);
      await waitFor('the next second', () => nowRFC3339() > older.body.metadata.creationTimestamp, WAIT_MS);
      expect((await before.admin.post(CLUSTERS_PATH, cluster('a-newer', { config: { secretName: 'a' } }))).status).toBe(
        201,
      );
    } finally {
      await before.stop();
    }
    const after = await startTestServer({ ...servers, clusterHealthIntervalMs: INTERVAL_MS }, ts.etcd);
    try {
      expect((await until('z-older', 'Initialized', undefined, after)).clusterUID).toBe(a.kubeSystemUid);
      const newer = await until('a-newer', 'Failed', 'ClusterUID', after);
      expect(newer).not.toHaveProperty('clusterUID');
    } finally {
      await after.stop();
    }
  }, 90_000);
});

describe('the local cluster', () => {
  test('is the host cluster; a second one is 422 on spec.local naming it, also when two are created at once', async () => {
    const [first, second] = await Promise.all([
      ts.admin.post(CLUSTERS_PATH, cluster('local-1', { local: true })),
      ts.admin.post(CLUSTERS_PATH, cluster('local-2', { local: true })),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([201, 422]);
    const [won, lost] = first.status === 201 ? ['local-1', second] : ['local-2', first];
    expect(lost.body).toMatchObject({ kind: 'Status', code: 422, reason: 'Invalid' });
    expect(lost.body.details.causes).toEqual([
      expect.objectContaining({
        field: 'spec.local',
        message: expect.stringContaining(`Cluster "${won}" is the local cluster already`),
      }),
    ]);
    expect((await ts.admin.get(clusterPath(first.status === 201 ? 'local-2' : 'local-1'))).status).toBe(404);

    const s = await until(won, 'Initialized');
    expect(s).toMatchObject({ online: true, kubernetesVersion: 'v1.33.0' });

    // Later as well, and an update cannot make another Cluster local (spec.local is fixed at create).
    const again = await ts.admin.post(CLUSTERS_PATH, cluster('local-3', { local: true }));
    expect(again.status).toBe(422);
    expect(again.body.message).toContain(`Cluster "${won}" is the local cluster already`);
    const patched = await ts.admin.patch(clusterPath('conn-b'), { spec: { local: true } }, MERGE_PATCH);
    expect(patched.status).toBe(422);
    expect(patched.body.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.local', message: expect.stringContaining('field is immutable') }),
    ]);
    expect((await ts.admin.get(clusterPath('conn-b'))).body.spec.local).toBeUndefined();

    // The host connected a second time through a Secret is the same physical cluster.
    mgmt.addSecret(NS, 'mgmt', { config: mgmt.kubeconfigText() });
    await create('mgmt-by-secret', { config: { secretName: 'mgmt' } });
    const dup = await until('mgmt-by-secret', 'Failed', 'ClusterUID');
    expect(dup.message).toContain('another Cluster connected to this cluster first');
    expect(dup.message).not.toContain(won);
    expect((await ts.admin.delete(clusterPath('mgmt-by-secret'))).status).toBe(200);

    // Once deleted, another may be local.
    expect((await ts.admin.delete(clusterPath(won))).status).toBe(200);
    await waitFor('the local Cluster to be gone', async () => (await ts.admin.get(clusterPath(won))).status === 404);
    expect((await ts.admin.post(CLUSTERS_PATH, cluster('local-3', { local: true }))).status).toBe(201);
    expect((await ts.admin.delete(clusterPath('local-3'))).status).toBe(200);
  }, 90_000);
});

describe('what cannot connect says why, naming the field, and the controller goes on', () => {
  const marker = () => join(scratch, 'exec-ran');

  test.each<[string, string, Record<string, string> | undefined, Record<string, unknown>, string, RegExp]>([
    [
      'a Secret that does not exist',
      'bad-missing',
      undefined,
      {},
      'ConfigSecretNotFound',
      /bad-missing .*does not exist/,
    ],
    [
      'a Secret without the key',
      'bad-nokey',
      { other: 'x' },
      {},
      'InvalidConfig',
      /has no key "config" \(spec\.config\.key/,
    ],
    [
      'a custom key it lacks',
      'bad-customkey',
      { config: 'x' },
      { key: 'kubeconfig' },
      'InvalidConfig',
      /no key "kubeconfig"/,
    ],
    [
      'text that is not YAML',
      'bad-notyaml',
      { config: '{{{ not: yaml' },
      {},
      'InvalidConfig',
      /key "config" \(spec\.config\.key\)/,
    ],
    [
      'a current-context that does not exist',
      'bad-context',
      { config: 'current-context: nowhere\ncontexts: []\n' },
      {},
      'InvalidConfig',
      /no context "nowhere"/,
    ],
  ])(
    '%s: Failed',
    async (_what, name, data, config, reason, message) => {
      if (data) mgmt.addSecret(NS, name, data);
      await create(name, { config: { secretName: name, ...config } });
      const s = await until(name, 'Failed', reason);
      expect(s.online).toBe(false);
      expect(s.message).toMatch(message);
      expect(ready(s)).toMatchObject({ status: 'False', reason });
    },
    60_000,
  );

  test('an http:// server: InvalidConfig naming clusters[0].cluster.server', async () => {
    mgmt.addSecret(NS, 'plain-http', {
      config: kubeconfigOf(a, (d) => (d.clusters[0].cluster.server = a.url.replace('https:', 'http:'))),
    });
    await create('plain-http', { config: { secretName: 'plain-http' } });
    const s = await until('plain-http', 'Failed', 'InvalidConfig');
    expect(s.message).toContain('clusters[0].cluster.server must be an https URL');
  }, 60_000);

  test('a kubeconfig with an exec plugin: refused by field, and nothing runs', async () => {
    const config = kubeconfigOf(a, (d) => {
      delete d.users[0].user.token;
      d.users[0].user.exec = {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: '/bin/sh',
        args: [
          '-c',
          `touch ${marker()}; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x"}}'`,
        ],
        interactiveMode: 'Never',
      };
    });
    mgmt.addSecret(NS, 'with-exec', { config });
    await create('with-exec', { config: { secretName: 'with-exec' } });
    const s = await until('with-exec', 'Failed', 'InvalidConfig');
    expect(s.message).toContain('users[0].user.exec (it runs a command)');
    expect(existsSync(marker())).toBe(false);
  }, 60_000);

  // In another namespace than --cluster-secret-namespace, whose Secrets the server watches where it may list them
  // (clusters/configsecrets.ts): a Secret there is read by name at each check.
  test("a Secret the server may not read: ConfigSecretForbidden, without the host's words", async () => {
    mgmt.addNamespace('guarded-ns');
    mgmt.addSecret('guarded-ns', 'guarded', { config: c.kubeconfigText() });
    mgmt.onRequest = (_method, path) => {
      if (path === `/api/v1/namespaces/guarded-ns/secrets/guarded`)
        throw errors.forbidden(
          { group: '', resource: 'secrets' },
          'guarded',
          'User "system:serviceaccount:x:server-sa" cannot get',
        );
    };
    try {
      await create('guarded', { config: { secretNamespace: 'guarded-ns', secretName: 'guarded' } });
      const s = await until('guarded', 'Failed', 'ConfigSecretForbidden');
      expect(s.message).toContain('grant it get on that Secret');
      expect(JSON.stringify(s)).not.toContain('server-sa');
    } finally {
      mgmt.onRequest = undefined;
    }
    await until('guarded', 'Initialized');
    expect((await ts.admin.delete(clusterPath('guarded'))).status).toBe(200);
  }, 60_000);

  test('a credential without rights in the cluster: Forbidden, online; granted: Initialized', async () => {
    b.onRequest = (_method, path) => {
      if (path === '/api/v1/namespaces/kube-system')
        throw errors.forbidden({ group: '', resource: 'namespaces' }, 'kube-system', 'User "someone" cannot get');
    };
    try {
      const s = await until('conn-b', 'Failed', 'Forbidden');
      expect(s.online).toBe(true);
      expect(s.message).toContain('HTTP 403');
      expect(s.message).not.toContain('someone');
    } finally {
      b.onRequest = undefined;
    }
    await until('conn-b', 'Initialized');
  }, 60_000);

  test('a Secret created after the Cluster, and a fixed one, count at the next check; no credential is ever shown', async () => {
    // bad-missing waited for a Secret that did not exist. Its cluster is one no other Cluster held meanwhile: c was
    // guarded's while bad-missing existed, so bad-missing never takes it, also now that guarded is gone.
    const e = await startHostCluster();
    try {
      mgmt.addSecret(NS, 'bad-missing', { config: e.kubeconfigText() });
      await until('bad-missing', 'Initialized');
      const all = (await ts.admin.get(CLUSTERS_PATH)).body.items.map((c: any) => JSON.stringify(c.status ?? {}));
      for (const text of all)
        for (const token of [mgmt.token, a.token, b.token, c.token, e.token]) expect(text).not.toContain(token);
    } finally {
      expect((await ts.admin.delete(clusterPath('bad-missing'))).status).toBe(200);
      await e.stop();
    }
  }, 60_000);
});

describe('without a host cluster (the embedded default)', () => {
  test('a local Cluster and one with a config Secret are Failed/NoHostCluster, saying how to add one', async () => {
    const bare = await startTestServer({ clusterHealthIntervalMs: INTERVAL_MS }, ts.etcd);
    try {
      expect((await bare.admin.post(CLUSTERS_PATH, cluster('here', { local: true }))).status).toBe(201);
      expect((await bare.admin.post(CLUSTERS_PATH, cluster('there', { config: { secretName: 's' } }))).status).toBe(
        201,
      );
      const local = await until('here', 'Failed', 'NoHostCluster', bare);
      expect(local.message).toContain('--kubeconfig');
      const other = await until('there', 'Failed', 'NoHostCluster', bare);
      expect(other.message).toContain('the Secret default/s');
    } finally {
      await bare.stop();
    }
  }, 60_000);
});

/** ClusterConnections as later work uses it, over this server's Clusters (read through its API) and the same host. */
function clusterConnections(): ClusterConnections {
  const host = HostCluster.load({ kubeconfig: mgmt.kubeconfigPath });
  const connector = new ClusterConnector({ host, secretNamespace: NS });
  return new ClusterConnections(
    {
      async get(_namespace, name) {
        const res = await ts.admin.get(clusterPath(name));
        if (res.status === 404) throw errors.notFound({ group: 'management.platform.sh', resource: 'clusters' }, name);
        return res.body;
      },
      list: () => Promise.reject(new Error('not used')),
    },
    connector,
  );
}
