/**
 * The real kubectl (v1.33) connected directly to the server, with no kube-apiserver in front: the four everyday
 * commands that need an API group this server does not serve fail with the messages docs/kubectl.md quotes, and
 * the replacements it gives instead do what it says. Each message is checked against kubectl's output and against
 * docs/kubectl.md, so the documentation stays true to what a user sees.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_VERSION } from '../support/fixtures.js';
import { kubectl, kubectlOn } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { KEY_SHOWN_ONCE_WARNING } from '../../src/kinds/ownedaccesskey/strategy.js';

const KUBECTL_DOC = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/kubectl.md'), 'utf8');
/** docs/kubectl.md's section on these commands (its table), whitespace collapsed as a person reads it. */
const section = (() => {
  const start = KUBECTL_DOC.indexOf('## Commands that need kube-apiserver');
  expect(start).toBeGreaterThan(-1);
  const end = KUBECTL_DOC.indexOf('\n## ', start + 1);
  return KUBECTL_DOC.slice(start, end === -1 ? undefined : end).replace(/\s+/g, ' ');
})();

let ts: TestServer;
let dir: string;
/** bob's access key: a user without any grant. */
let bobKey: string;
const { k: admin } = kubectlOn(() => ts.kubeconfig);
const bob = (...args: string[]) => kubectl(['--token', bobKey, ...args], { kubeconfig: ts.kubeconfig });
const manifest = manifestWriter(() => dir);

const secret = (ns: string, name: string) => ({
  apiVersion: API_VERSION,
  kind: 'SharedSecret',
  metadata: { name, namespace: ns, labels: { team: 'ci' } },
  spec: { displayName: name },
});

/** kubectl's output contains the message, and docs/kubectl.md quotes it. */
function expectQuoted(output: string, message: string) {
  expect(output).toContain(message);
  expect(section).toContain(message);
}

async function names(ns: string): Promise<string[]> {
  const res = await admin('get', 'gsec', '-n', ns, '-o', 'name');
  expect(res.code).toBe(0);
  return res.stdout.split('\n').filter((l) => l !== '');
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-direct-'));
  const key = { apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name: 'bob-key' }, spec: { user: 'bob' } };
  const res = await admin('create', '-f', manifest('bob-key', key), '-o', 'jsonpath={.spec.key}');
  expect(res).toMatchObject({ code: 0, stderr: `Warning: ${KEY_SHOWN_ONCE_WARNING}\n` });
  bobKey = res.stdout;
  expect(bobKey).toMatch(/^pak_/);
});

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl auth can-i', () => {
  test('is not served: NotFound for system:masters, Forbidden for anyone else', async () => {
    const asAdmin = await admin('auth', 'can-i', 'get', 'gsec');
    expect(asAdmin.code).not.toBe(0);
    expectQuoted(asAdmin.stderr, 'Error from server (NotFound): the server could not find the requested resource');

    const asBob = await bob('auth', 'can-i', 'get', 'gsec');
    expect(asBob.code).not.toBe(0);
    expectQuoted(
      asBob.stderr,
      'Error from server (Forbidden): selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "bob" cannot create resource "selfsubjectaccessreviews"',
    );
  });

  test('instead, a server-side dry run answers Forbidden to whoever may not, and stores nothing', async () => {
    const file = manifest('can-i', secret('can-i', 'deploy-keys'));
    const refused = await bob('create', '-f', file, '--dry-run=server');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Error from server (Forbidden)');
    expect(refused.stderr).toContain(
      'User "bob" cannot create resource "sharedsecrets" in API group "management.platform.sh" in the namespace "can-i"',
    );
    expect(section).toContain('User "bob" cannot create resource "sharedsecrets"');

    const allowed = await admin('create', '-f', file, '--dry-run=server');
    expect(allowed).toMatchObject({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/deploy-keys created (server dry run)\n',
    });
    expect(await names('can-i')).toEqual([]);
  });
});

describe('kubectl get ns', () => {
  test('is not served: namespaces are in the core API', async () => {
    const res = await admin('get', 'ns');
    expect(res.code).not.toBe(0);
    expectQuoted(res.stderr, 'error: the server doesn\'t have a resource type "ns"');
  });

  test('instead, get -A shows the namespaces that hold objects, and api-resources what is served', async () => {
    const created = await admin('create', '-f', manifest('ns', secret('team-a', 's1'), secret('team-b', 's2')));
    expect(created.code).toBe(0);
    const all = await admin('get', 'gsec', '-A', '-o', 'custom-columns=NAMESPACE:.metadata.namespace', '--no-headers');
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n')).toEqual(expect.arrayContaining(['team-a', 'team-b']));
    const resources = await admin('api-resources', '-o', 'name');
    expect(resources.code).toBe(0);
    expect(resources.stdout).toContain('sharedsecrets.management.platform.sh');
    expect(section).toContain('`kubectl get gsec -A`');
  });
});

describe('kubectl auth whoami', () => {
  test('is served: the user this server sees, for the admin and for bob', async () => {
    const asAdmin = await admin('auth', 'whoami');
    expect(asAdmin.code).toBe(0);
    expect(asAdmin.stdout).toMatch(/^ATTRIBUTE\s+VALUE\n/);
    expect(asAdmin.stdout).toMatch(/Groups\s+\[.*system:masters.*\]/);
    expect(section).toContain('`authentication.k8s.io` only SelfSubjectReviews, so `kubectl auth whoami` works');
    const asBob = await bob('auth', 'whoami');
    expect(asBob.code).toBe(0);
    expect(asBob.stdout).toMatch(/Username\s+bob\n/);
  });
});

describe('kubectl apply --prune', () => {
  test('without --prune-allowlist fails on its built-in core kinds; with one it prunes what left the file', async () => {
    const both = manifest('prune-both', secret('prune', 'kept'), secret('prune', 'dropped'));
    expect((await admin('apply', '-f', both)).code).toBe(0);
    const one = manifest('prune-one', secret('prune', 'kept'));

    const noList = await admin('apply', '--prune', '-l', 'team=ci', '-n', 'prune', '-f', one);
    expect(noList.code).not.toBe(0);
    expectQuoted(
      noList.stderr,
      'error: error retrieving RESTMappings to prune: invalid resource /v1, Kind=ConfigMap, Namespaced=true: no matches for kind "ConfigMap" in version "v1"',
    );
    expect(await names('prune')).toEqual([
      'sharedsecret.management.platform.sh/dropped',
      'sharedsecret.management.platform.sh/kept',
    ]);

    const allowlist = '--prune-allowlist=management.platform.sh/v1/SharedSecret';
    expect(section).toContain(`kubectl apply --prune -l team=ci ${allowlist} -f`);
    const res = await admin('apply', '--prune', '-l', 'team=ci', allowlist, '-n', 'prune', '-f', one);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('sharedsecret.management.platform.sh/kept unchanged');
    expect(res.stdout).toContain('sharedsecret.management.platform.sh/dropped pruned');
    expect(await names('prune')).toEqual(['sharedsecret.management.platform.sh/kept']);
  });
});
