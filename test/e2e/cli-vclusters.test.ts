/**
 * The command line client's virtual cluster commands (issue 44) as a user runs them: the built `dist/cli.js` as a
 * child process, with an access key in the environment as a CI job has it, against a real server on real etcd. The
 * management host, the connected cluster `eu` and the virtual cluster `shop` running there are three stand-ins: the
 * connection Secret `vc-shop` on `eu` points at the virtual cluster's stand-in, which issues the kube config's client
 * certificate and then serves the real kubectl that uses it. bob owns the project `web`; carol has nothing there.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  symlinkSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { API_VERSION, PROJECTS_PATH, virtualClusterInstancesPath as vcis } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { openWatch, closeWatches } from '../support/watch.js';
import { type CliRun, runCli } from '../support/cli.js';

const PROJECT = 'web';
const NS = `p-${PROJECT}`;
/** The name the merged entries get. */
const MERGED = `platform_${PROJECT}_shop`;

let host: HostClusterStandIn;
let eu: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: TestServer & { as: Record<'root' | 'bob' | 'carol', HttpClient> };
let dir: string;
const keys: Record<'bob' | 'carol', string> = { bob: '', carol: '' };

/** `platform <args>` as `user` (its key in the environment, as a CI job has it), with `env` added. */
function platform(user: 'bob' | 'carol', args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {
    HOME: join(dir, 'home'),
    PLATFORM_URL: ts.server.url,
    PLATFORM_ACCESS_KEY: keys[user],
    PLATFORM_CA_DATA: ts.server.caPem!,
    ...env,
  });
}

async function createKey(client: HttpClient, name: string): Promise<string> {
  const res = await client.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec: {},
  });
  expect(res.status).toBe(201);
  return res.body.spec.key;
}

const instanceNames = async () =>
  (await ts.as.root.get(vcis(NS))).body.items.map((i: { metadata: { name: string } }) => i.metadata.name);

beforeAll(async () => {
  [host, eu, vcluster] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  ts = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [] },
    {
      kubeconfig: host.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      virtualClusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
    },
  );
  dir = mkdtempSync(join(tmpdir(), 'cli-vclusters-'));
  keys.bob = await createKey(ts.as.bob, 'bob-cli');
  keys.carol = await createKey(ts.as.carol, 'carol-cli');
  // bob may get the Cluster here, and there the virtual cluster's connection Secret: he has the virtual cluster.
  eu.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'read-secrets' },
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
  });
  eu.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'bob-reads-secrets' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'read-secrets' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
  });
  eu.addSecret('vcluster-shop', 'vc-shop', { config: vcluster.kubeconfigText() });
  await connectCluster(ts.as.root, host, 'eu', eu, { access: [{ verbs: ['get'], users: ['bob'] }] });
  const project = await ts.as.root.post(PROJECTS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: '*' }] },
  });
  expect(project.status).toBe(201);
  host.addNamespace(NS);
}, 120_000);

afterAll(async () => {
  closeWatches();
  await ts?.stop();
  await Promise.all([host, eu, vcluster].map((c) => c?.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('import, list and connect a virtual cluster', () => {
  let kubeconfigFile: string;

  test('import vcluster: the instance in p-<project>, owned by whoever imported it', async () => {
    const ready = await openWatch(ts.as.root, `${vcis(NS)}?fieldSelector=metadata.name%3Dshop`);
    const run = await platform('bob', [
      'import',
      'vcluster',
      'shop',
      '--cluster',
      'eu',
      '--namespace',
      'vcluster-shop',
      '--project',
      PROJECT,
    ]);
    expect(run).toEqual({
      code: 0,
      stdout: `virtualclusterinstance/shop imported into project ${PROJECT}\n`,
      stderr: '',
    });
    const instance = (await ts.as.root.get(`${vcis(NS)}/shop`)).body;
    expect(instance.spec).toMatchObject({
      owner: { user: 'bob' },
      clusterRef: { cluster: 'eu', namespace: 'vcluster-shop', virtualCluster: 'shop' },
    });
    // The health check reaches the virtual cluster through vc-shop on eu.
    await ready.find((e) => e.object?.status?.phase === 'Ready', 'the instance Ready', 30_000);
    // Its ingress is the virtual cluster's stand-in: where the kube config points (an operator's setting).
    const patched = await ts.as.root.patch(
      `${vcis(NS)}/shop`,
      { spec: { ingressEndpoint: vcluster.url } },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(200);
  });

  test('import vcluster --import-name -o yaml: the answer; the same virtual cluster again: the 409 on one line', async () => {
    const ready = await openWatch(ts.as.root, `${vcis(NS)}?fieldSelector=metadata.name%3Dcart-2`);
    eu.addSecret('vcluster-cart', 'vc-cart', { config: vcluster.kubeconfigText() });
    const importCart = ['import', 'vcluster', 'cart', '--cluster', 'eu', '--namespace', 'vcluster-cart'];
    const run = await platform('bob', [...importCart, '--project', PROJECT, '--import-name', 'cart-2', '-o', 'yaml']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(yaml.load(run.stdout)).toMatchObject({
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: { name: 'cart', namespace: 'vcluster-cart', cluster: 'eu' },
      importName: 'cart-2',
      owner: { user: 'bob' },
      status: { virtualClusterInstance: { namespace: NS, name: 'cart-2' } },
    });
    await ready.find((e) => e.object?.status?.phase === 'Ready', 'cart-2 Ready', 30_000);

    const again = await platform('bob', [...importCart, '--project', PROJECT, '--import-name', 'cart-3']);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(again.stderr).toMatch(/^error: .*already/);
    expect(await instanceNames()).toEqual(['cart-2', 'shop']);
  });

  test('list vclusters: PROJECT, NAME, CLUSTER, PHASE, AGE; every project or one; json', async () => {
    for (const args of [[], ['--project', PROJECT]]) {
      const run = await platform('bob', ['list', 'vclusters', ...args]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const [header, ...rows] = run.stdout.trimEnd().split('\n');
      expect(header.split(/\s{2,}/)).toEqual(['PROJECT', 'NAME', 'CLUSTER', 'PHASE', 'AGE']);
      expect(rows.map((r) => r.split(/\s+/).slice(0, 4))).toEqual([
        [PROJECT, 'cart-2', 'eu', 'Ready'],
        [PROJECT, 'shop', 'eu', 'Ready'],
      ]);
    }
    const json = await platform('bob', ['list', 'vclusters', '--project', PROJECT, '-o', 'json']);
    expect(JSON.parse(json.stdout).map((i: any) => [i.metadata.name, i.status.phase])).toEqual([
      ['cart-2', 'Ready'],
      ['shop', 'Ready'],
    ]);
    const none = await platform('bob', ['list', 'vclusters', '--project', 'nothing-here']);
    expect(none).toEqual({ code: 0, stdout: 'No virtual clusters found\n', stderr: '' });
  });

  test('connect vcluster --output-file: a 0600 kube config the real kubectl uses against the virtual cluster', async () => {
    kubeconfigFile = join(dir, 'shop.kubeconfig');
    const run = await platform('bob', [
      'connect',
      'vcluster',
      'shop',
      '--project',
      PROJECT,
      '--output-file',
      kubeconfigFile,
    ]);
    expect(run).toEqual({
      code: 0,
      stdout: '',
      stderr: `kube config of virtualclusterinstance/shop written to ${kubeconfigFile}\n`,
    });
    expect(statSync(kubeconfigFile).mode & 0o777).toBe(0o600);
    const version = await kubectl(['get', '--raw', '/version'], { kubeconfig: kubeconfigFile });
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout).gitVersion).toBe('v1.33.0');
    // The certificate names bob inside the virtual cluster.
    const whoami = await kubectl(['auth', 'whoami', '-o', 'json'], { kubeconfig: kubeconfigFile });
    expect(whoami.code).toBe(0);
    expect(JSON.parse(whoami.stdout).status.userInfo.username).toBe('bob');
  });

  test('connect vcluster without a file: the kube config on stdout', async () => {
    const run = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const config = yaml.load(run.stdout) as any;
    expect(config.clusters[0].cluster.server).toBe(vcluster.url);
    expect(config.users[0].user['client-key-data']).toBeTruthy();
  });

  test('connect vcluster --merge: added to $KUBECONFIG as the current context, its other contexts kept, made 0600', async () => {
    const file = join(dir, 'merged.kubeconfig');
    // An existing kubeconfig: a context for the management host, which stays as it was.
    const before = yaml.load(readFileSync(host.kubeconfigPath, 'utf8')) as any;
    const existing = { ...before, preferences: { colors: true } };
    writeFileSync(file, yaml.dump(existing), { mode: 0o640 });
    const [original] = existing.contexts.map((c: any) => c.name);

    const run = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT, '--merge'], {
      KUBECONFIG: file,
    });
    expect(run).toEqual({ code: 0, stdout: '', stderr: `merged into ${file}; current context is now ${MERGED}\n` });
    // It holds a private key now: group and others may no longer read it.
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const contexts = await kubectl(['config', 'get-contexts', '-o', 'name'], { kubeconfig: file });
    expect(contexts.stdout.trim().split('\n').sort()).toEqual([original, MERGED].sort());
    expect((await kubectl(['config', 'current-context'], { kubeconfig: file })).stdout.trim()).toBe(MERGED);
    const whoami = await kubectl(['auth', 'whoami', '-o', 'json'], { kubeconfig: file });
    expect(JSON.parse(whoami.stdout).status.userInfo.username).toBe('bob');
    // The other context still reaches its cluster, with its own credential.
    const other = await kubectl(['--context', original, 'get', '--raw', '/version'], { kubeconfig: file });
    expect(other.code).toBe(0);
    const after = yaml.load(readFileSync(file, 'utf8')) as any;
    expect(after.preferences).toEqual({ colors: true });
    for (const list of ['clusters', 'users', 'contexts'])
      expect(after[list].find((e: any) => e.name === before[list][0].name)).toEqual(before[list][0]);

    // Connecting again replaces the entries of that name, and says so.
    const again = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT, '--merge'], {
      KUBECONFIG: file,
    });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(`replaced the existing cluster "${MERGED}" in ${file}\n`);
    expect((yaml.load(readFileSync(file, 'utf8')) as any).contexts).toHaveLength(2);
  });

  test('connect vcluster --merge into a linked kubeconfig: the link kept, its target merged into', async () => {
    const target = join(dir, 'dotfiles-kubeconfig');
    const link = join(dir, 'linked.kubeconfig');
    copyFileSync(host.kubeconfigPath, target);
    symlinkSync(target, link);
    const run = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT, '--merge'], {
      KUBECONFIG: link,
    });
    expect(run.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect((await kubectl(['config', 'current-context'], { kubeconfig: target })).stdout.trim()).toBe(MERGED);
  });

  test('connect vcluster --merge without a kubeconfig: ~/.kube/config made, mode 0600', async () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const run = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT, '--merge'], { HOME: home });
    expect(run.code).toBe(0);
    const file = join(home, '.kube', 'config');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const version = await kubectl(['get', '--raw', '/version'], { kubeconfig: file });
    expect(version.code).toBe(0);
  });
});

describe('bad input: the exit code, one line saying what is wrong, nothing changed', () => {
  test('a missing --project: exit 2, nothing imported or written', async () => {
    const imported = await platform('bob', ['import', 'vcluster', 'other', '--cluster', 'eu', '--namespace', 'x']);
    expect(imported).toEqual({
      code: 2,
      stdout: '',
      stderr: "error: required option '--project <project>' not specified\n",
    });
    expect(await instanceNames()).toEqual(['cart-2', 'shop']);
    const file = join(dir, 'never.kubeconfig');
    const connected = await platform('bob', ['connect', 'vcluster', 'shop', '--output-file', file]);
    expect(connected.code).toBe(2);
    expect(connected.stderr).toBe("error: required option '--project <project>' not specified\n");
    expect(existsSync(file)).toBe(false);
  });

  test('an instance that does not exist: exit 1 with the server message and what to check; the kubeconfig untouched', async () => {
    const file = join(dir, 'untouched.kubeconfig');
    const text = readFileSync(host.kubeconfigPath, 'utf8');
    writeFileSync(file, text);
    const run = await platform('bob', ['connect', 'vcluster', 'nope', '--project', PROJECT, '--merge'], {
      KUBECONFIG: file,
    });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      // The server tells nothing of instances one may not use: a name that is not there is a 403 as well.
      stderr:
        'error: virtualclusterinstances.management.platform.sh "nope" is forbidden: User "bob" cannot create resource "virtualclusterinstances/kubeconfig" in API group "management.platform.sh" in the namespace "p-web"; ' +
        'is the name right? `platform list vclusters --project web` lists those you may see\n',
    });
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  test('--merge into a file that is not a kubeconfig: exit 1 saying so, the file as it was, no kube config asked', async () => {
    const file = join(dir, 'not-a.kubeconfig');
    writeFileSync(file, 'clusters: {oops: 1}\n');
    const issued = vcluster.csrs().length;
    const run = await platform('bob', ['connect', 'vcluster', 'shop', '--project', PROJECT, '--merge'], {
      KUBECONFIG: file,
    });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: ${file} is not a kubeconfig (YAML with lists of clusters, users and contexts); nothing was changed\n`,
    });
    expect(readFileSync(file, 'utf8')).toBe('clusters: {oops: 1}\n');
    expect(vcluster.csrs()).toHaveLength(issued);
  });

  test('a project the user may not use: the 403 on one line, nothing imported, no kube config', async () => {
    const imported = await platform('carol', [
      'import',
      'vcluster',
      'shop',
      '--cluster',
      'eu',
      '--namespace',
      'vcluster-shop',
      '--project',
      PROJECT,
      '--import-name',
      'carols',
    ]);
    expect(imported.code).toBe(1);
    expect(imported.stdout).toBe('');
    expect(imported.stderr).toBe(
      'error: projects.management.platform.sh "web" is forbidden: User "carol" cannot create resource "projects/importvirtualcluster" in API group "management.platform.sh" at the cluster scope\n',
    );
    expect(imported.stderr).not.toContain(keys.carol);
    expect(await instanceNames()).toEqual(['cart-2', 'shop']);

    const file = join(dir, 'carol.kubeconfig');
    const connected = await platform('carol', [
      'connect',
      'vcluster',
      'shop',
      '--project',
      PROJECT,
      '--output-file',
      file,
    ]);
    expect(connected.code).toBe(1);
    expect(connected.stderr).toBe(
      'error: virtualclusterinstances.management.platform.sh "shop" is forbidden: User "carol" cannot create resource "virtualclusterinstances/kubeconfig" in API group "management.platform.sh" in the namespace "p-web"; ' +
        'is the name right? `platform list vclusters --project web` lists those you may see\n',
    );
    expect(connected.stdout).toBe('');
    expect(existsSync(file)).toBe(false);
  });

  test('--owner-user with --owner-team, or a format that is not one: exit 2', async () => {
    const base = ['import', 'vcluster', 'x', '--cluster', 'eu', '--namespace', 'x', '--project', PROJECT];
    const both = await platform('bob', [...base, '--owner-user', 'bob', '--owner-team', 'dev']);
    expect(both).toEqual({ code: 2, stdout: '', stderr: 'error: one owner: --owner-user or --owner-team, not both\n' });
    const format = await platform('bob', ['list', 'vclusters', '-o', 'wide']);
    expect(format.code).toBe(2);
    expect(format.stderr).toBe('error: -o wide is not a format here; use one of table, json, yaml\n');
    expect(await instanceNames()).toEqual(['cart-2', 'shop']);
  });
});
