/**
 * The health of VirtualClusterInstances (src/controllers/virtualclusterhealth.ts), with real etcd, the real server,
 * the real kubectl and host stand-ins: the management host (the server's --kubeconfig, where config Secrets are), a
 * connected cluster `a` (where the virtual clusters' connection Secrets `vc-<name>` are) and a virtual cluster's API
 * of its own version. An instance is Ready when its virtual cluster answers through its Cluster, Failed when not (and
 * back), Pending while its Cluster is not Initialized; bad connections give a clear reason and nothing runs or is
 * read past the bound (an endless answer, or one that stalls); an importer who lost the virtual cluster, or the
 * Cluster here (no more get on it, or a project that no longer allows it), makes it Failed, and its Secret is not
 * read again; a cluster that cannot answer whether the importer holds it makes it Failed with none of its words.
 * Every wait is on the status the server writes, never on time.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { startHostileVirtualCluster, type HostileVirtualCluster } from '../support/hostilecluster.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import * as errors from '../../src/apimachinery/status.js';
import { createLogger } from '../../src/log.js';

const MIB = 1024 * 1024;
const WAIT_MS = 30_000;
const VC_VERSION = 'v1.31.4';
const ONLINE = 'VirtualClusterOnline';

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
/** A virtual cluster's API (its /version answers VC_VERSION). */
let vc: HostClusterStandIn;
let hostile: HostileVirtualCluster;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
let scratch: string;
/** root's kubeconfig, for kubectl. */
let rootKubeconfig: string;
const logged: string[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'vc-health-'));
  [mgmt, a, vc] = await Promise.all([
    startHostCluster(),
    startHostCluster(),
    startHostCluster({ kubernetesVersion: VC_VERSION }),
  ]);
  hostile = await startHostileVirtualCluster(vc);
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      virtualClusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
    undefined,
    createLogger((line) => logged.push(line)),
  );
  ts = server;
  ({ root, bob, carol } = server.as);
  rootKubeconfig = join(scratch, 'root.kubeconfig');
  writeFileSync(
    rootKubeconfig,
    yaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'platform',
          cluster: {
            server: root.baseUrl,
            'certificate-authority-data': Buffer.from(server.server.caPem ?? '').toString('base64'),
          },
        },
      ],
      users: [{ name: 'root', user: { token: root.token } }],
      contexts: [{ name: 'root', context: { cluster: 'platform', user: 'root' } }],
      'current-context': 'root',
    }),
  );
  await connectCluster(root, mgmt, 'conn-a', a, { access: [{ verbs: ['get'], users: ['bob'] }] });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await hostile?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), vc?.stop()]);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 60_000);

/** A project of bob's allowing every Cluster; its namespace. */
async function createProject(): Promise<string> {
  const name = uniq('proj');
  const res = await root.post(PROJECTS, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: '*' }] },
  });
  expect(res.status).toBe(201);
  mgmt.addNamespace(`p-${name}`);
  return `p-${name}`;
}

/**
 * An instance made by root of the virtual cluster `name` in namespace `vcluster-<name>` of `cluster`, whose
 * connection Secret in `a` holds `config` (none when undefined); its path.
 */
async function createInstance(name: string, config: string | undefined, cluster = 'conn-a'): Promise<string> {
  const ns = await createProject();
  if (config !== undefined) a.addSecret(`vcluster-${name}`, `vc-${name}`, { config });
  const res = await root.post(vcis(ns), {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: { owner: { user: 'bob' }, clusterRef: { cluster, namespace: `vcluster-${name}`, virtualCluster: name } },
  });
  expect(res.status).toBe(201);
  return `${vcis(ns)}/${name}`;
}

/**
 * bob imports the virtual cluster `name` of namespace `vcluster-<name>` in `a` (or the stand-in `on.host` of the
 * Cluster `on.cluster`), reached with `config`; its path.
 */
async function importAsBob(
  name: string,
  config: string,
  on: { cluster: string; host: HostClusterStandIn } = { cluster: 'conn-a', host: a },
): Promise<string> {
  const vcNs = `vcluster-${name}`;
  on.host.addSecret(vcNs, `vc-${name}`, { config });
  grantConnectionSecret(on.host, vcNs, name, ['bob']);
  const ns = await createProject();
  const imported = await bob.post(`${PROJECTS}/${ns.slice(2)}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { cluster: on.cluster, namespace: vcNs, name },
  });
  expect(imported.status).toBe(201);
  return `${vcis(ns)}/${name}`;
}

/** Waits until the instance's status.phase is `phase` (and its reason `reason`, when given); returns the status. */
function until(path: string, phase: string, reason?: string): Promise<Record<string, any>> {
  return waitFor(
    `${path} to be ${phase}${reason ? `/${reason}` : ''}`,
    async () => {
      const s = (await root.get(path)).body.status ?? {};
      return s.phase === phase && (reason === undefined || s.reason === reason) && s;
    },
    WAIT_MS,
  );
}

const online = (s: Record<string, any>) => s.conditions?.find((c: any) => c.type === ONLINE);

/** Waits until the instance's lastCheckTime moved `n` times: that many more checks found what it says. */
async function moreChecks(path: string, n: number): Promise<void> {
  const stamps = new Set([(await root.get(path)).body.status?.lastCheckTime]);
  await waitFor(
    `${n} more checks of ${path}`,
    async () => stamps.add((await root.get(path)).body.status?.lastCheckTime).size > n,
    WAIT_MS,
  );
}

/** The GETs of /version `host` answered. */
const versionReads = (host: HostClusterStandIn) =>
  host.requests.filter((r) => r.method === 'GET' && r.path === '/version').length;

/** What `host` was asked of the virtual cluster `name`: GETs of its connection Secret, and SubjectAccessReviews. */
function askedOf(host: HostClusterStandIn, name: string) {
  const secret = `/api/v1/namespaces/vcluster-${name}/secrets/vc-${name}`;
  return {
    secretReads: host.requests.filter((r) => r.method === 'GET' && r.path === secret).length,
    reviews: host.requests.filter((r) => r.resource === 'subjectaccessreviews').length,
  };
}

/** The kubeconfig `text` with `edit` applied. */
function kubeconfigOf(text: string, edit: (doc: any) => void): string {
  const doc = yaml.load(text) as any;
  edit(doc);
  return yaml.dump(doc);
}

/** The log lines of the health check about the instance `name`, as "msg: reason". */
const loggedAbout = (name: string) =>
  logged
    .map((line) => JSON.parse(line))
    .filter((l) => `${l.instance}`.endsWith(`/${name}`))
    .map((l) => `${l.msg}: ${l.reason}`)
    .join('\n');

describe('virtual cluster health', () => {
  test('Ready: online, its version, VirtualClusterOnline True, lastCheckTime; kubectl waits and shows it', async () => {
    const name = uniq('vc');
    const path = await createInstance(name, vc.kubeconfigText());
    const ns = path.split('/')[5];
    const res = await kubectl(
      ['wait', '--for=jsonpath={.status.phase}=Ready', `vci/${name}`, '-n', ns, '--timeout=60s'],
      { kubeconfig: rootKubeconfig, timeoutMs: 70_000 },
    );
    expect(res.stdout).toContain(`virtualclusterinstance.management.platform.sh/${name} condition met`);
    const s = (await root.get(path)).body.status;
    expect(s).toMatchObject({
      phase: 'Ready',
      online: true,
      kubernetesVersion: VC_VERSION,
      clusterUID: a.kubeSystemUid,
    });
    expect(s).not.toHaveProperty('reason');
    expect(s).not.toHaveProperty('message');
    expect(s.lastCheckTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(online(s)).toMatchObject({ status: 'True', reason: 'Online' });

    const table = await kubectl(['get', 'vci', name, '-n', ns], { kubeconfig: rootKubeconfig });
    const [header, row] = table.stdout.trim().split('\n');
    expect(header.split(/\s{2,}/)).toEqual([
      'NAME',
      'DISPLAY NAME',
      'CLUSTER',
      'HOST NAMESPACE',
      'VIRTUAL CLUSTER',
      'PHASE',
      'ONLINE',
      'VERSION',
      'LAST CHECK',
      'AGE',
    ]);
    const at = (column: string) => row.slice(header.indexOf(column)).split(/\s+/)[0];
    expect([at('PHASE'), at('ONLINE'), at('VERSION')]).toEqual(['Ready', 'true', VC_VERSION]);

    // Checks that find the same write only lastCheckTime, and that at most about once per interval.
    const stamps: string[] = [];
    await waitFor(
      'three more stamps of lastCheckTime',
      async () => {
        const now = (await root.get(path)).body;
        const { lastCheckTime, ...rest } = now.status;
        expect(rest).toEqual((({ lastCheckTime: _, ...r }) => r)(s));
        if (stamps.at(-1) !== lastCheckTime) stamps.push(lastCheckTime);
        return stamps.length >= 4;
      },
      WAIT_MS,
    );
    for (let i = 1; i < stamps.length; i++)
      expect(Date.parse(stamps[i]) - Date.parse(stamps[i - 1])).toBeGreaterThanOrEqual(HEALTH_INTERVAL_MS);
  }, 90_000);

  test('a virtual cluster that stops answering is Failed, offline, its version kept; answering again, Ready; answering 503, Failed and online', async () => {
    const other = await startHostCluster({ kubernetesVersion: 'v1.30.9' });
    try {
      const name = uniq('vc');
      const path = await createInstance(name, other.kubeconfigText());
      const up = await until(path, 'Ready');
      await other.setDown(true);
      const down = await until(path, 'Failed', 'VirtualClusterUnreachable');
      expect(down).toMatchObject({ online: false, kubernetesVersion: 'v1.30.9' });
      expect(down.message).toContain("the virtual cluster's API did not answer GET /version");
      expect(online(down)).toMatchObject({ status: 'False', reason: 'VirtualClusterUnreachable' });
      expect(online(down).lastTransitionTime >= online(up).lastTransitionTime).toBe(true);
      expect(loggedAbout(name)).toContain('virtual cluster health: not reached');
      await other.setDown(false);
      const again = await until(path, 'Ready');
      expect(again).toMatchObject({ online: true, kubernetesVersion: 'v1.30.9' });
      expect(again).not.toHaveProperty('reason');
      expect(online(again).status).toBe('True');
      // Answering, but not as it should (503): Failed, and online.
      await other.setDown(true, 'unavailable');
      const unavailable = await until(path, 'Failed', 'VirtualClusterUnavailable');
      expect(unavailable.online).toBe(true);
      expect(unavailable.message).toContain('HTTP 503');
      await other.setDown(false);
      await until(path, 'Ready');
    } finally {
      await other.stop();
    }
  }, 90_000);

  test('on a Cluster that is not Initialized: Pending/ClusterNotReady with its reason, naming nothing of the host', async () => {
    const res = await root.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'vch-no-secret' },
      spec: { config: { secretName: 'vch-does-not-exist' } },
    });
    expect(res.status).toBe(201);
    await clusterPhase(root, 'vch-no-secret', 'Failed', 'ConfigSecretNotFound');
    const name = uniq('vc');
    const path = await createInstance(name, vc.kubeconfigText(), 'vch-no-secret');
    const s = await until(path, 'Pending', 'ClusterNotReady');
    expect(s.online).toBe(false);
    expect(s.message).toContain(
      'Cluster "vch-no-secret", where the virtual cluster runs, is not ready (ConfigSecretNotFound)',
    );
    expect(s.message).not.toContain('vch-does-not-exist');
    expect(online(s)).toMatchObject({ status: 'Unknown', reason: 'ClusterNotReady' });

    // The Cluster's status changes (a is conn-a's cluster, so it is Failed/ClusterUID now): the instance follows.
    mgmt.addSecret(CLUSTER_SECRETS, 'vch-does-not-exist', { config: a.kubeconfigText() });
    await clusterPhase(root, 'vch-no-secret', 'Failed', 'ClusterUID');
    await waitFor(
      'the instance to name the new reason',
      async () => (await root.get(path)).body.status?.message?.includes('(ClusterUID)'),
      WAIT_MS,
    );
    expect((await root.get(path)).body.status).toMatchObject({ phase: 'Pending', reason: 'ClusterNotReady' });
  }, 90_000);

  test('a missing connection Secret, one that is not a kubeconfig, one with an exec plugin: a clear reason, nothing run', async () => {
    const missing = await createInstance(uniq('vc'), undefined);
    expect((await until(missing, 'Failed', 'ConnectionNotFound')).message).toContain(
      'does not exist; is the virtual cluster running?',
    );

    const garbageName = uniq('vc');
    const garbage = await createInstance(garbageName, 'this is: [not a kubeconfig');
    const g = await until(garbage, 'Failed', 'InvalidConnection');
    expect(g.message).toContain(`Secret vcluster-${garbageName}/vc-${garbageName} in Cluster "conn-a"`);
    expect(g.message).not.toContain('not a kubeconfig');

    const execName = uniq('vc');
    const marker = join(scratch, `${execName}-ran`);
    const exec = kubeconfigOf(vc.kubeconfigText(), (doc) => {
      delete doc.users[0].user.token;
      doc.users[0].user.exec = {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: '/bin/sh',
        args: ['-c', `touch '${marker}'`],
        interactiveMode: 'Never',
      };
    });
    const withExec = await createInstance(execName, exec);
    await until(withExec, 'Failed', 'InvalidConnection');
    expect(loggedAbout(execName)).toContain('users[0].user.exec (it runs a command)');
    expect(existsSync(marker)).toBe(false);
  }, 90_000);

  test('a virtual cluster whose /version is endless: Failed, the connection cut soon after the bound', async () => {
    const total = 64 * MIB;
    const started = hostile.outcomes.length;
    hostile.answer = (r) => (r.path === '/version' ? { stream: total } : undefined);
    try {
      const name = uniq('vc');
      const path = await createInstance(name, hostile.kubeconfigText());
      const s = await until(path, 'Failed', 'VirtualClusterUnreachable');
      expect(s.online).toBe(false);
      // The size bound cuts it, or on a machine too busy to read a MiB in the check's second, the time bound: either
      // way the connection is cut long before the answer's end (what is written below says which bound held).
      expect(loggedAbout(name)).toMatch(/the answer is larger than|did not answer within/);
      const outcome = await hostile.outcomes[started];
      expect(outcome).toMatchObject({ total, cutShort: true });
      expect(outcome.written).toBeLessThan(total / 4);
    } finally {
      hostile.answer = undefined;
    }
  }, 90_000);

  test('a virtual cluster whose /version answers 200 and then stalls its body: Unreachable, offline, the connection cut at the bound', async () => {
    const started = hostile.outcomes.length;
    // Under the 1 MiB bound, so the length it announces is taken: the time bound is what must end it.
    hostile.answer = (r) => (r.path === '/version' ? { announce: 64 * 1024 } : undefined);
    try {
      const name = uniq('vc');
      const path = await createInstance(name, hostile.kubeconfigText());
      const s = await until(path, 'Failed', 'VirtualClusterUnreachable');
      expect(s.online).toBe(false);
      expect(s.message).toContain('did not answer GET /version within the bounds of a check');
      expect(loggedAbout(name)).toContain('did not answer within');
      expect(await hostile.outcomes[started]).toMatchObject({ cutShort: true });
    } finally {
      hostile.answer = undefined;
    }
  }, 90_000);

  test('a virtual cluster whose /version names no version (escape sequences, a newline): Ready, with no version recorded', async () => {
    hostile.answer = (r) =>
      r.path === '/version' ? { change: (v: any) => ({ ...v, gitVersion: 'v1.30.0\u001b[2J\nrm -rf /' }) } : undefined;
    try {
      const name = uniq('vc');
      const path = await createInstance(name, hostile.kubeconfigText());
      const s = await until(path, 'Ready');
      expect(s.online).toBe(true);
      expect(s).not.toHaveProperty('kubernetesVersion');
      expect(JSON.stringify(s)).not.toContain('\\u001b');
    } finally {
      hostile.answer = undefined;
    }
  }, 90_000);

  test("a virtual cluster answering with a huge Status message: Failed, and the server's log quotes a bounded part of it", async () => {
    const message = 'x'.repeat(900 * 1024);
    hostile.answer = (r) => (r.path === '/version' ? { refuse: 500, message } : undefined);
    try {
      const name = uniq('vc');
      const path = await createInstance(name, hostile.kubeconfigText());
      const s = await until(path, 'Failed', 'VirtualClusterUnavailable');
      expect(s.message).not.toContain('xxxx');
      const lines = logged.filter((line) => line.includes(`/${name}"`));
      expect(lines.length).toBeGreaterThan(0);
      // The text is the virtual cluster's to choose (a tenant's server): every check would log it whole.
      for (const line of lines) expect(line.length).toBeLessThan(4096);
      expect(loggedAbout(name)).toContain('more characters');
    } finally {
      hostile.answer = undefined;
    }
  }, 90_000);

  test('an importer who lost the virtual cluster: Failed/ImporterLostAccess, and its Secret is not read again', async () => {
    const name = uniq('vc');
    const vcNs = `vcluster-${name}`;
    const path = await importAsBob(name, vc.kubeconfigText());
    await until(path, 'Ready');

    expect(a.remove('rolebindings', vcNs, `get-vc-${name}`)).toBe(true);
    const lost = await until(path, 'Failed', 'ImporterLostAccess');
    expect(lost.message).toContain('User "bob"');
    expect(online(lost)).toMatchObject({ status: 'False', reason: 'ImporterLostAccess' });
    // Two more checks (each asks a again whether bob holds it): the Secret is not read by any of them.
    const secretReads = () =>
      a.requests.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${vcNs}/secrets/vc-${name}`).length;
    const reviews = () => a.requests.filter((r) => r.resource === 'subjectaccessreviews').length;
    const [reads, asked] = [secretReads(), reviews()];
    await waitFor('two more checks', () => reviews() >= asked + 2, WAIT_MS);
    expect(secretReads()).toBe(reads);

    // Granted again: Ready again.
    grantConnectionSecret(a, vcNs, name, ['bob']);
    await until(path, 'Ready');
  }, 90_000);

  test('an importer who may no longer get the Cluster: Failed/ImporterLostAccess, nothing asked of its cluster; allowed again, Ready', async () => {
    // A Cluster of its own, whose access entries this test changes, and a virtual cluster whose /version is counted.
    const [b, own] = await Promise.all([startHostCluster(), startHostCluster()]);
    try {
      const cluster = uniq('conn-b');
      const bobMayGet = { access: [{ verbs: ['get'], users: ['bob'] }] };
      await connectCluster(root, mgmt, cluster, b, bobMayGet);
      const name = uniq('vc');
      const path = await importAsBob(name, own.kubeconfigText(), { cluster, host: b });
      await until(path, 'Ready');

      const revoked = await root.patch(clusterPath(cluster), { spec: { access: [] } }, MERGE_PATCH);
      expect(revoked.status).toBe(200);
      const lost = await until(path, 'Failed', 'ImporterLostAccess');
      expect(lost.message).toContain(
        `the instance's importer (status.importedBy, User "bob") may no longer get Cluster "${cluster}"`,
      );
      expect(lost.online).toBe(false);
      expect(online(lost)).toMatchObject({ status: 'False', reason: 'ImporterLostAccess' });
      // Two more checks: neither reads the Secret, asks b about bob, or calls the virtual cluster.
      const [asked, versions] = [askedOf(b, name), versionReads(own)];
      await moreChecks(path, 2);
      expect(askedOf(b, name)).toEqual(asked);
      expect(versionReads(own)).toBe(versions);

      expect((await root.patch(clusterPath(cluster), { spec: bobMayGet }, MERGE_PATCH)).status).toBe(200);
      await until(path, 'Ready');
    } finally {
      await Promise.all([b.stop(), own.stop()]);
    }
  }, 90_000);

  test('a project that no longer allows the Cluster: Failed/ImporterLostAccess naming it, nothing asked of the cluster; allowed again, Ready', async () => {
    const own = await startHostCluster();
    try {
      const name = uniq('vc');
      const path = await importAsBob(name, own.kubeconfigText());
      await until(path, 'Ready');
      const project = path.split('/')[5].slice(2);

      const narrowed = { spec: { allowedClusters: [{ name: 'elsewhere' }] } };
      expect((await root.patch(`${PROJECTS}/${project}`, narrowed, MERGE_PATCH)).status).toBe(200);
      const lost = await until(path, 'Failed', 'ImporterLostAccess');
      expect(lost.message).toContain(
        `the instance's project "${project}" no longer allows Cluster "conn-a" (spec.allowedClusters)`,
      );
      // The clusters it does allow are the project's to show, not the instance's.
      expect(lost.message).not.toContain('elsewhere');
      const [asked, versions] = [askedOf(a, name), versionReads(own)];
      await moreChecks(path, 2);
      expect(askedOf(a, name).secretReads).toBe(asked.secretReads);
      expect(versionReads(own)).toBe(versions);

      const everywhere = { spec: { allowedClusters: [{ name: '*' }] } };
      expect((await root.patch(`${PROJECTS}/${project}`, everywhere, MERGE_PATCH)).status).toBe(200);
      await until(path, 'Ready');
    } finally {
      await own.stop();
    }
  }, 90_000);

  test("a cluster that fails the review of the importer's hold: ImporterAccessUnknown, the status quoting none of its answer, the log all of it", async () => {
    const name = uniq('vc');
    const path = await importAsBob(name, vc.kubeconfigText());
    await until(path, 'Ready');
    const marker = `sa-${uniq('marker')}`;
    a.onRequest = (_method, reqPath, body) => {
      if (reqPath.endsWith('/subjectaccessreviews') && body?.spec?.resourceAttributes?.name === `vc-${name}`)
        throw errors.internalError(new Error(`system:serviceaccount:kube-system:${marker} at 10.0.0.7 failed`));
    };
    try {
      const unknown = await until(path, 'Failed', 'ImporterAccessUnknown');
      expect(unknown.message).toContain(`Cluster "conn-a" could not tell whether the instance's importer`);
      expect(unknown.message).toContain('it is asked again at the next check');
      expect(JSON.stringify(unknown)).not.toContain(marker);
      expect(JSON.stringify(unknown)).not.toContain('10.0.0.7');
      expect(loggedAbout(name)).toContain(marker);
    } finally {
      a.onRequest = undefined;
    }
    await until(path, 'Ready');
  }, 90_000);

  test('kube configs: 503 naming the reason for an instance that is not Ready, after the checks a caller must pass', async () => {
    const signer = await startHostCluster();
    try {
      const name = uniq('vc');
      const path = await importAsBob(name, signer.kubeconfigText());
      const patched = await root.patch(path, { spec: { ingressEndpoint: 'https://vc.example.com' } }, MERGE_PATCH);
      expect(patched.status).toBe(200);
      await until(path, 'Ready');
      expect((await bob.get(`${path}/kubeconfig`)).status).toBe(200);

      await signer.setDown(true);
      await until(path, 'Failed', 'VirtualClusterUnreachable');
      const refused = await bob.get(`${path}/kubeconfig`);
      expect({ status: refused.status, reason: refused.body.reason }).toEqual({
        status: 503,
        reason: 'ServiceUnavailable',
      });
      expect(refused.body.message).toContain(`is not ready (VirtualClusterUnreachable)`);
      // Its message (which names the Secret) stays on the instance.
      expect(refused.body.message).not.toContain(`vc-${name}`);
      // Someone who may not get a kube config learns nothing of its health.
      const outsider = await carol.get(`${path}/kubeconfig`);
      expect(outsider.status).toBe(403);
      expect(outsider.body.message).not.toContain('not ready');

      // Neither does anyone once the importer lost the virtual cluster: that is the 403 it was.
      expect(a.remove('rolebindings', `vcluster-${name}`, `get-vc-${name}`)).toBe(true);
      await until(path, 'Failed', 'ImporterLostAccess');
      const lost = await bob.get(`${path}/kubeconfig`);
      expect(lost.status).toBe(403);
      expect(lost.body.message).toContain("its importer's hold of the virtual cluster");

      grantConnectionSecret(a, `vcluster-${name}`, name, ['bob']);
      await signer.setDown(false);
      await until(path, 'Ready');
      expect((await bob.get(`${path}/kubeconfig`)).status).toBe(200);
    } finally {
      await signer.stop();
    }
  }, 90_000);

  test("the health fields are the server's: a client status write does not set them", async () => {
    const path = await createInstance(uniq('vc'), undefined);
    const s = await until(path, 'Failed', 'ConnectionNotFound');
    const current = (await root.get(path)).body;
    const put = await root.put(`${path}/status`, {
      ...current,
      status: { ...current.status, phase: 'Ready', online: true, kubernetesVersion: 'v9.9.9', reason: 'Fine' },
    });
    expect(put.status).toBe(200);
    expect(put.body.status).toMatchObject({
      phase: 'Failed',
      online: false,
      reason: 'ConnectionNotFound',
      message: s.message,
    });
    expect(put.body.status).not.toHaveProperty('kubernetesVersion');
  }, 60_000);
});
