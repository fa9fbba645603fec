/**
 * The real kubectl (v1.33) with a Global Secret reaching a project: a SharedSecret and a Project made with
 * `kubectl create -f`, a ProjectSecret synced from the SharedSecret with `kubectl apply -f`, `kubectl wait` for its
 * conditions, `kubectl get projectsecrets -n p-<project>` showing it synced and delivered, and a rotation of the
 * SharedSecret seen by `kubectl get -w` on the ProjectSecret and in the host cluster's Secret that workloads mount.
 */
import { afterAll, afterEach, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { API_VERSION } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { kubectlOn, lines, stopBackgroundKubectls } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const B64 = (s: string) => Buffer.from(s).toString('base64');

let host: HostClusterStandIn;
let ts: TestServer;
let dir: string;
const { k, background } = kubectlOn(() => ts.kubeconfig);

function file(name: string, doc: object): string {
  const path = join(dir, name);
  writeFileSync(path, yaml.dump(doc));
  return path;
}

beforeAll(async () => {
  host = await startHostCluster();
  // The namespaces exist in the host: the Global Secret's, and the project's (which the platform makes there).
  host.addNamespace('platform-secrets');
  host.addNamespace('p-web');
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, projectSecretDelivery: true });
  dir = mkdtempSync(join(tmpdir(), 'kubectl-projectsecrets-'));
}, 120_000);

afterEach(() => stopBackgroundKubectls());

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a Global Secret synced into a project, delivered to the host, and rotated', async () => {
  const globalSecret = file('global.yaml', {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 'registry', namespace: 'platform-secrets' },
    spec: {
      displayName: 'Registry',
      data: { username: B64('robot'), password: B64('first-password') },
      // The ProjectSecret's owner may read it: the sync copies only what its owner may get.
      access: [{ verbs: ['get'], users: ['web-team-lead'] }],
    },
  });
  expect(await k('create', '-f', globalSecret)).toMatchObject({
    code: 0,
    stdout: 'sharedsecret.management.platform.sh/registry created\n',
  });
  const project = file('project.yaml', { apiVersion: API_VERSION, kind: 'Project', metadata: { name: 'web' } });
  expect((await k('create', '-f', project)).code).toBe(0);
  const projectSecret = file('projectsecret.yaml', {
    apiVersion: API_VERSION,
    kind: 'ProjectSecret',
    metadata: { name: 'registry', namespace: 'p-web' },
    spec: {
      displayName: 'Registry credentials',
      owner: { user: 'web-team-lead' },
      sharedSecretRef: { namespace: 'platform-secrets', name: 'registry', keys: ['password'] },
    },
  });
  expect(await k('apply', '-f', projectSecret)).toMatchObject({
    code: 0,
    stdout: 'projectsecret.management.platform.sh/registry created\n',
  });
  for (const condition of ['Synced', 'SecretDelivered'])
    expect(
      await k('wait', '--for', `condition=${condition}`, 'projectsecret/registry', '-n', 'p-web', '--timeout=30s'),
    ).toMatchObject({ code: 0, stdout: 'projectsecret.management.platform.sh/registry condition met\n' });

  const table = await k('get', 'projectsecrets', '-n', 'p-web');
  expect(table.code).toBe(0);
  expect(lines(table.stdout).map((l) => l.split(/\s{2,}/))).toEqual([
    ['NAME', 'DISPLAY NAME', 'SOURCE NAMESPACE', 'SOURCE', 'KEYS', 'SYNCED', 'DELIVERED', 'TARGETS', 'AGE'],
    [
      'registry',
      'Registry credentials',
      'platform-secrets',
      'registry',
      '1',
      'True',
      'True',
      '1/1',
      expect.any(String),
    ],
  ]);
  expect(host.get('secrets', 'p-web', 'registry')?.data).toEqual({ password: B64('first-password') });

  // Rotate the Global Secret while a kubectl watches the ProjectSecret's synced value.
  const watch = background([
    'get',
    'projectsecret/registry',
    '-n',
    'p-web',
    '-w',
    '-o',
    'jsonpath={.spec.data.password}{"\\n"}',
  ]);
  await watch.until('stdout', new RegExp(B64('first-password')));
  const rotated = await k(
    'patch',
    'sharedsecret',
    'registry',
    '-n',
    'platform-secrets',
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { data: { password: B64('second-password') } } }),
  );
  expect(rotated).toMatchObject({ code: 0, stdout: 'sharedsecret.management.platform.sh/registry patched\n' });
  await watch.until('stdout', new RegExp(B64('second-password')));
  const hostSecret = await waitFor('the host Secret to hold the rotated password', async () => {
    const s = host.get('secrets', 'p-web', 'registry');
    return s?.data?.password === B64('second-password') ? s : undefined;
  });
  expect(hostSecret.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'platform-management-api' });
  expect(hostSecret.metadata.annotations).toEqual({
    'management.platform.sh/source': 'ProjectSecret p-web/registry',
    'management.platform.sh/shared-secret': 'platform-secrets/registry',
  });

  // Writing data by hand on a synced ProjectSecret is refused, naming the field.
  const handWritten = await k(
    'patch',
    'projectsecret',
    'registry',
    '-n',
    'p-web',
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { data: { password: B64('by-hand') } } }),
  );
  expect(handWritten.code).toBe(1);
  expect(handWritten.stderr).toContain('spec.data');
});
