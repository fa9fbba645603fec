/**
 * What a tenant can do to the virtual clusters' health checks (src/controllers/virtualclusterhealth.ts), found by
 * the attack round on issue 41, with real etcd, the real server and host stand-ins: the health fields stay the
 * server's whatever text a status writer sends (validation's idea of a time and the server's are one), a
 * connection Secret of a megabyte logs a bounded line per check, and one tenant's virtual clusters that never
 * answer do not keep anyone else's instance from its checks. Every wait is on what the server does, never on time.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import yaml from 'js-yaml';
import {
  API_VERSION,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  uniq,
  virtualClusterInstancesPath as vcis,
} from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { grantConnectionSecret, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startHostileVirtualCluster, type HostileVirtualCluster } from '../support/hostilecluster.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { createLogger } from '../../src/log.js';

/** bob's virtual clusters that never answer: enough to take every worker of the check as it was (4 workers). */
const STALLING = 12;

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let vc: HostClusterStandIn;
let hostile: HostileVirtualCluster;
let ts: TestServer & { as: Record<'root' | 'bob', HttpClient> };
let root: HttpClient;
let bob: HttpClient;
const logged: string[] = [];
/** The /version requests the hostile virtual cluster got (each a check of one of bob's stalling instances). */
let stalled = 0;

beforeAll(async () => {
  [mgmt, a, vc] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  hostile = await startHostileVirtualCluster(vc);
  // Every /version: headers and a few bytes, then nothing until the check's bound cuts it.
  hostile.answer = (r) => {
    if (r.path !== '/version') return undefined;
    stalled++;
    return { announce: 64 * 1024 };
  };
  ts = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      virtualClusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
    undefined,
    createLogger((line) => logged.push(line)),
  );
  ({ root, bob } = ts.as);
  await connectCluster(root, mgmt, 'conn-a', a, { access: [{ verbs: ['get'], users: ['bob'] }] });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await hostile?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), vc?.stop()]);
}, 60_000);

/** A project of `owner`'s allowing every Cluster; its name. */
async function project(owner: string): Promise<string> {
  const name = uniq('proj');
  const res = await root.post(PROJECTS, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name },
    spec: { owner: { user: owner }, allowedClusters: [{ name: '*' }] },
  });
  expect(res.status).toBe(201);
  mgmt.addNamespace(`p-${name}`);
  return name;
}

/** bob imports the virtual cluster `name` into `projectName`, its Secret in `a` holding `config`; its path. */
async function importAsBob(projectName: string, name: string, config: string): Promise<string> {
  const vcNs = `vcluster-${name}`;
  a.addSecret(vcNs, `vc-${name}`, { config });
  grantConnectionSecret(a, vcNs, name, ['bob']);
  const imported = await bob.post(`${PROJECTS}/${projectName}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { cluster: 'conn-a', namespace: vcNs, name },
  });
  expect(imported.status).toBe(201);
  return `${vcis(`p-${projectName}`)}/${name}`;
}

const statusOf = async (path: string) => (await root.get(path)).body.status ?? {};
const until = (path: string, phase: string) =>
  waitFor(`${path} to be ${phase}`, async () => (await statusOf(path)).phase === phase, 30_000);
const versionReads = () => vc.requests.filter((r) => r.method === 'GET' && r.path === '/version').length;

describe("the health fields are the server's, whatever text is written", () => {
  // Times validation takes as date-time and Go's RFC 3339 parser does not: they counted as written wrong, were left
  // for validation to refuse, and validation stored them (one in 2999 was then never written again, nor read overdue).
  test.each(['2999-12-31 23:59:59Z', '2999-12-31t23:59:59z', '2016-12-31T23:59:60Z'])(
    'lastCheckTime %j written by a status writer is not stored',
    async (forged) => {
      const path = await importAsBob(await project('bob'), uniq('vc'), vc.kubeconfigText());
      await until(path, 'Ready');
      expect((await bob.patch(`${path}/status`, { status: { lastCheckTime: forged } }, MERGE_PATCH)).status).toBe(403);
      const res = await root.patch(`${path}/status`, { status: { lastCheckTime: forged } }, MERGE_PATCH);
      expect(res.status).toBe(200);
      expect(res.body.status.lastCheckTime).not.toBe(forged);
      expect((await statusOf(path)).lastCheckTime).not.toBe(forged);
    },
    60_000,
  );

  test('a condition whose lastTransitionTime is such a time is not stored either', async () => {
    const path = await importAsBob(await project('bob'), uniq('vc'), vc.kubeconfigText());
    await until(path, 'Ready');
    const forged = [
      {
        type: 'VirtualClusterOnline',
        status: 'False',
        reason: 'ForgedByWriter',
        message: 'forged',
        lastTransitionTime: '2999-12-31t23:59:59z',
      },
    ];
    const res = await root.patch(`${path}/status`, { status: { conditions: forged } }, MERGE_PATCH);
    expect(res.status).toBe(200);
    expect(JSON.stringify((await statusOf(path)).conditions)).not.toContain('ForgedByWriter');
  }, 60_000);

  test('a stamp from the future is written again by the next check', async () => {
    const path = await importAsBob(await project('bob'), uniq('vc'), vc.kubeconfigText());
    await until(path, 'Ready');
    // The server's own write (a replica whose clock ran ahead): through etcd, as no client may write it.
    const [namespace, name] = [path.split('/')[5], path.split('/')[7]];
    const key = `${ts.config.etcdPrefix}/management.platform.sh/virtualclusterinstances/${namespace}/${name}`;
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const stored = JSON.parse((await kv.get(key).string())!);
      stored.status.lastCheckTime = '2999-01-01T00:00:00.000000Z';
      await kv.put(key).value(JSON.stringify(stored));
    } finally {
      kv.close();
    }
    await waitFor('the watch to bring it', async () => (await statusOf(path)).lastCheckTime?.startsWith('2999'));
    const reads = versionReads();
    await waitFor(
      'a check to stamp it again',
      async () => versionReads() > reads + 1 && !(await statusOf(path)).lastCheckTime.startsWith('2999'),
      30_000,
    );
  }, 60_000);
});

describe('a tenant filling the log from its connection Secret', () => {
  /** The log lines about the instance `name` saying it has no connection, once there are `checks` of them. */
  async function linesAbout(name: string, checks: number): Promise<string[]> {
    const about = () => logged.filter((line) => line.includes(`/${name}"`) && line.includes('no connection'));
    await waitFor(`${checks} checks of ${name}`, () => about().length >= checks, 30_000);
    return about();
  }

  test('a current-context of 600 KiB: each check logs a bounded line', async () => {
    const name = uniq('vc');
    const doc = yaml.load(vc.kubeconfigText()) as any;
    doc['current-context'] = 'c'.repeat(600 * 1024);
    await importAsBob(await project('bob'), name, yaml.dump(doc, { lineWidth: -1 }));
    const lines = await linesAbout(name, 2);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(4096);
    expect(lines[0]).toContain('current-context');
  }, 60_000);

  test('20,000 fields a stored kubeconfig may not use: each check logs a bounded line naming some', async () => {
    const name = uniq('vc');
    const doc = yaml.load(vc.kubeconfigText()) as any;
    for (let i = 0; i < 20_000; i++) doc.users[0].user[`f${i}`] = 'x';
    await importAsBob(await project('bob'), name, yaml.dump(doc, { lineWidth: -1 }));
    const lines = await linesAbout(name, 2);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(4096);
    expect(lines[0]).toContain('users[0].user.f0');
    expect(lines[0]).toContain('and 19990 more');
  }, 60_000);
});

// Last: bob's stalling instances keep his share of the workers busy for as long as they exist.
describe("one tenant's virtual clusters that never answer", () => {
  test("do not keep another's healthy instance from its checks: never overdue, kube configs served", async () => {
    const victimProject = await project('root');
    const victimName = uniq('victim');
    a.addSecret(`vcluster-${victimName}`, `vc-${victimName}`, { config: vc.kubeconfigText() });
    const created = await root.post(vcis(`p-${victimProject}`), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name: victimName },
      spec: {
        clusterRef: { cluster: 'conn-a', namespace: `vcluster-${victimName}`, virtualCluster: victimName },
        ingressEndpoint: `https://${victimName}.vc.example.com`,
      },
    });
    expect(created.status).toBe(201);
    const victim = `${vcis(`p-${victimProject}`)}/${victimName}`;
    await until(victim, 'Ready');

    const attackerProject = await project('bob');
    for (let i = 0; i < STALLING; i++) await importAsBob(attackerProject, uniq('stall'), hostile.kubeconfigText());
    // Until bob's instances have been checked three times each, the victim is never anything but Ready.
    const from = stalled;
    const seen = new Set<string>();
    await waitFor(
      'three checks of each stalling instance',
      async () => {
        const v = await statusOf(victim);
        seen.add(`${v.phase}/${v.reason ?? ''}`);
        return stalled - from >= 3 * STALLING;
      },
      180_000,
    );
    expect([...seen]).toEqual(['Ready/']);
    expect((await root.get(`${victim}/kubeconfig`)).status).toBe(200);
  }, 240_000);
});
