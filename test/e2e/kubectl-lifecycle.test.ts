/**
 * The real kubectl (v1.33) against the real server and etcd, default flags: deleting (by name, label, file, --all),
 * waiting for a deletion, and finalizers that hold an object back. Each test works in its own namespace.
 * The everyday read and write commands are in kubectl-everyday.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION } from '../support/fixtures.js';
import { kubectlOn, lines, stopBackgroundKubectls, type BackgroundKubectl } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';

const FINALIZER = 'example.com/hold';

let ts: TestServer;
let dir: string;
const { k, getJson, names, background } = kubectlOn(() => ts.kubeconfig);
const manifest = manifestWriter(() => dir);

function secret(
  ns: string,
  name: string,
  meta: { labels?: Record<string, string>; finalizers?: string[] } = {},
): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name, namespace: ns, ...meta },
    spec: { displayName: name },
  };
}

async function create(file: string, ...docs: object[]): Promise<string> {
  const path = manifest(file, ...docs);
  const res = await k('create', '-f', path);
  expect(res).toMatchObject({ code: 0, stderr: '' });
  return path;
}

/**
 * Starts `kubectl wait --for=delete` and returns once it watches (seen in its -v=6 request log), so whatever happens
 * next is something it has to notice, not something it finds already done.
 */
async function waitForDelete(ns: string, name: string): Promise<BackgroundKubectl> {
  const wait = background(['wait', '--for=delete', `gsec/${name}`, '-n', ns, '--timeout=20s', '-v=6']);
  await wait.until(
    'stderr',
    new RegExp(
      `"Response" verb="GET" url="[^"]*/namespaces/${ns}/sharedsecrets\\?[^"]*fieldSelector=metadata\\.name%3D${name}[^"]*watch=true[^"]*" status="200 OK"`,
    ),
  );
  return wait;
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-lifecycle-'));
});

afterEach(stopBackgroundKubectls);

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl wait --for=delete', () => {
  const NS = 'wait-ns';

  test('returns when another kubectl deletes the object', async () => {
    await create('wait-x', secret(NS, 'x'));
    const wait = await waitForDelete(NS, 'x');
    expect(wait.stdout).toBe('');

    const del = await k('delete', 'gsec', 'x', '-n', NS);
    expect(del).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh "x" deleted\n', stderr: '' });

    const res = await wait.exited();
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('sharedsecret.management.platform.sh/x condition met\n');
    expect(await names('gsec', '-n', NS)).toEqual([]);
  });

  test('gives up after --timeout while the object stays', async () => {
    await create('wait-stays', secret(NS, 'stays'));
    const res = await k('wait', '--for=delete', 'gsec/stays', '-n', NS, '--timeout=2s');
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('error: timed out waiting for the condition on sharedsecrets/stays\n');
    expect(await names('gsec', 'stays', '-n', NS)).toEqual(['stays']);
  });

  test('an object that is already gone: returns at once, successfully', async () => {
    const res = await k('wait', '--for=delete', 'gsec/never-was', '-n', NS, '--timeout=20s');
    expect(res).toMatchObject({ code: 0, stdout: '' });
  });
});

describe('finalizers', () => {
  const NS = 'finalizer-ns';

  test('delete --wait=false leaves a finalized object in place; removing the finalizer with patch --type=json ends it', async () => {
    await create('fin-x', secret(NS, 'x', { finalizers: [FINALIZER] }));

    const del = await k('delete', 'gsec', 'x', '-n', NS, '--wait=false');
    expect(del).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh "x" deleted\n', stderr: '' });

    // Still there, marked for deletion.
    const table = await k('get', 'gsec', '-n', NS);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(lines(table.stdout).map((l) => l.split(/\s{2,}/)[0])).toEqual(['NAME', 'x']);
    const obj = await getJson('gsec', 'x', '-n', NS);
    expect(obj.metadata.finalizers).toEqual([FINALIZER]);
    expect(obj.metadata.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(obj.metadata.deletionGracePeriodSeconds).toBe(0);

    // Deleting again changes nothing and says the same.
    const again = await k('delete', 'gsec', 'x', '-n', NS, '--wait=false');
    expect(again).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh "x" deleted\n', stderr: '' });
    expect((await getJson('gsec', 'x', '-n', NS)).metadata.deletionTimestamp).toBe(obj.metadata.deletionTimestamp);

    const wait = await waitForDelete(NS, 'x');
    // A new finalizer cannot be added to an object being deleted.
    const add = await k(
      'patch',
      'gsec',
      'x',
      '-n',
      NS,
      '--type=json',
      '-p',
      '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]',
    );
    expect(add.code).toBe(1);
    expect(add.stderr).toContain(
      'The SharedSecret "x" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted',
    );
    expect(wait.stdout).toBe('');

    const removed = await k(
      'patch',
      'gsec',
      'x',
      '-n',
      NS,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    );
    expect(removed).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/x patched\n', stderr: '' });

    const res = await wait.exited();
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('sharedsecret.management.platform.sh/x condition met\n');
    const gone = await k('get', 'gsec', 'x', '-n', NS);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('(NotFound)');
    expect(await names('gsec', '-n', NS)).toEqual([]);
  });

  test('kubectl delete (waiting, the default) waits for the finalizer: --timeout ends it with an error', async () => {
    await create('fin-y', secret(NS, 'y', { finalizers: [FINALIZER] }));
    const res = await k('delete', 'gsec', 'y', '-n', NS, '--timeout=2s');
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('sharedsecret.management.platform.sh "y" deleted\n');
    expect(res.stderr).toContain('error: timed out waiting for the condition on sharedsecrets/y\n');
    expect((await getJson('gsec', 'y', '-n', NS)).metadata.deletionTimestamp).toBeDefined();

    // A kubectl delete that waits returns once the finalizer goes.
    const deleting = background(['delete', 'gsec', 'y', '-n', NS, '--timeout=20s', '-v=6']);
    await deleting.until('stderr', /fieldSelector=metadata\.name%3Dy[^"]*watch=true[^"]*" status="200 OK"/);
    expect(
      (await k('patch', 'gsec', 'y', '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}')).code,
    ).toBe(0);
    const done = await deleting.exited();
    expect(done.code).toBe(0);
    expect(done.stdout).toBe('sharedsecret.management.platform.sh "y" deleted\n');
    expect(await names('gsec', '-n', NS)).toEqual([]);
  });

  test('a finalizer on a Cluster holds it the same way', async () => {
    await create('fin-cluster', {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'fin-eu', finalizers: [FINALIZER] },
      spec: { networkPeer: true },
    });
    expect((await k('delete', 'pcl', 'fin-eu', '--wait=false')).stdout).toBe(
      'cluster.management.platform.sh "fin-eu" deleted\n',
    );
    expect((await getJson('pcl', 'fin-eu')).metadata.deletionTimestamp).toBeDefined();
    expect(
      (await k('patch', 'pcl', 'fin-eu', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers/0"}]'))
        .code,
    ).toBe(0);
    const gone = await k('get', 'pcl', 'fin-eu');
    expect(gone).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): clusters.management.platform.sh "fin-eu" not found\n',
    });
  });
});

describe('kubectl delete', () => {
  test('-l team=a deletes exactly the labelled ones', async () => {
    const NS = 'delete-label-ns';
    await create(
      'del-label',
      secret(NS, 'a1', { labels: { team: 'a' } }),
      secret(NS, 'a2', { labels: { team: 'a', tier: 'gold' } }),
      secret(NS, 'b1', { labels: { team: 'b' } }),
      secret(NS, 'none'),
      secret('delete-label-other', 'a3', { labels: { team: 'a' } }),
    );
    const res = await k('delete', 'gsec', '-l', 'team=a', '-n', NS);
    expect(res).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh "a1" deleted\nsharedsecret.management.platform.sh "a2" deleted\n',
      stderr: '',
    });
    expect(await names('gsec', '-n', NS)).toEqual(['b1', 'none']);
    // Other namespaces are not touched.
    expect(await names('gsec', '-n', 'delete-label-other')).toEqual(['a3']);

    // Nothing left to match.
    const again = await k('delete', 'gsec', '-l', 'team=a', '-n', NS);
    expect(again).toEqual({ code: 0, stdout: 'No resources found\n', stderr: '' });
  });

  test('-f deletes what the file names; again it is NotFound, unless --ignore-not-found', async () => {
    const NS = 'delete-file-ns';
    const file = await create('del-file', secret(NS, 'f1'), secret(NS, 'f2'), {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'del-file-eu' },
      spec: { config: { secretName: 'eu' } },
    });
    await create('del-file-keep', secret(NS, 'keep'));

    const res = await k('delete', '-f', file);
    expect(res).toEqual({
      code: 0,
      stdout:
        'sharedsecret.management.platform.sh "f1" deleted\n' +
        'sharedsecret.management.platform.sh "f2" deleted\n' +
        'cluster.management.platform.sh "del-file-eu" deleted\n',
      stderr: '',
    });
    expect(await names('gsec', '-n', NS)).toEqual(['keep']);
    expect(await names('pcl', '--field-selector', 'metadata.name=del-file-eu')).toEqual([]);

    const again = await k('delete', '-f', file);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(lines(again.stderr)).toEqual([
      `Error from server (NotFound): error when deleting "${file}": sharedsecrets.management.platform.sh "f1" not found`,
      `Error from server (NotFound): error when deleting "${file}": sharedsecrets.management.platform.sh "f2" not found`,
      `Error from server (NotFound): error when deleting "${file}": clusters.management.platform.sh "del-file-eu" not found`,
    ]);
    expect(await k('delete', '-f', file, '--ignore-not-found')).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  test('--all -n ns deletes everything in that namespace and nothing elsewhere', async () => {
    await create(
      'del-all',
      secret('delete-all-ns', 'x1'),
      secret('delete-all-ns', 'x2'),
      secret('delete-all-ns', 'x3'),
      secret('delete-all-other', 'x1'),
    );
    const res = await k('delete', 'gsec', '--all', '-n', 'delete-all-ns');
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    expect(lines(res.stdout)).toEqual([
      'sharedsecret.management.platform.sh "x1" deleted',
      'sharedsecret.management.platform.sh "x2" deleted',
      'sharedsecret.management.platform.sh "x3" deleted',
    ]);
    expect(await names('gsec', '-n', 'delete-all-ns')).toEqual([]);
    expect(await names('gsec', '-n', 'delete-all-other')).toEqual(['x1']);
    expect(await k('delete', 'gsec', '--all', '-n', 'delete-all-ns')).toEqual({
      code: 0,
      stdout: 'No resources found\n',
      stderr: '',
    });
  });

  test('by name, several at once; a cluster; --dry-run=server deletes nothing', async () => {
    const NS = 'delete-name-ns';
    await create('del-name', secret(NS, 'n1'), secret(NS, 'n2'), secret(NS, 'n3'), {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'del-name-eu' },
      spec: { networkPeer: true },
    });

    const dry = await k('delete', 'gsec', 'n1', '-n', NS, '--dry-run=server');
    expect(dry).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh "n1" deleted (server dry run)\n',
      stderr: '',
    });
    expect(await names('gsec', '-n', NS)).toEqual(['n1', 'n2', 'n3']);

    const res = await k('delete', 'gsec', 'n1', 'n2', '-n', NS);
    expect(res).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh "n1" deleted\nsharedsecret.management.platform.sh "n2" deleted\n',
      stderr: '',
    });
    expect(await names('gsec', '-n', NS)).toEqual(['n3']);

    const c = await k('delete', 'cluster', 'del-name-eu');
    expect(c).toEqual({ code: 0, stdout: 'cluster.management.platform.sh "del-name-eu" deleted\n', stderr: '' });
    const missing = await k('delete', 'pcl', 'del-name-eu');
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): clusters.management.platform.sh "del-name-eu" not found\n',
    });
  });

  test("a missing object in a namespace: the object's NotFound", async () => {
    // kubectl checks GET /api/v1/namespaces/<ns> after a NotFound outside "default" (see kubectl-everyday's get).
    const res = await k('delete', 'gsec', 'nope', '-n', 'delete-name-ns');
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): sharedsecrets.management.platform.sh "nope" not found\n',
    });
  });
});

describe('kubectl delete --cascade', () => {
  const NS = 'cascade-ns';

  /** A owns B owns C, the way a controller would set it up (uids of the owners, blocking the owner's deletion). */
  async function chain(tag: string): Promise<string[]> {
    const names = [`${tag}-a`, `${tag}-b`, `${tag}-c`];
    let owner: any;
    for (const name of names) {
      const meta = owner
        ? {
            ownerReferences: [
              {
                apiVersion: API_VERSION,
                kind: 'SharedSecret',
                name: owner.metadata.name,
                uid: owner.metadata.uid,
                blockOwnerDeletion: true,
              },
            ],
          }
        : {};
      await create(name, { ...secret(NS, name), metadata: { name, namespace: NS, ...meta } });
      owner = await getJson('gsec', name, '-n', NS);
    }
    return names;
  }

  test('foreground: kubectl returns once the owner is gone, and by then its blocking dependents are gone too', async () => {
    const [a] = await chain('fg');
    const res = await k('delete', 'gsec', a, '-n', NS, '--cascade=foreground', '--timeout=30s');
    expect(res).toEqual({ code: 0, stdout: `sharedsecret.management.platform.sh "${a}" deleted\n`, stderr: '' });
    expect((await names('gsec', '-n', NS)).filter((n) => n.startsWith('fg-'))).toEqual([]);
  });

  test('orphan: the owner goes, its dependent stays without the reference, the grandchild keeps its owner', async () => {
    const [a, b, c] = await chain('orphan');
    const res = await k('delete', 'gsec', a, '-n', NS, '--cascade=orphan', '--timeout=30s');
    expect(res).toEqual({ code: 0, stdout: `sharedsecret.management.platform.sh "${a}" deleted\n`, stderr: '' });
    expect((await names('gsec', '-n', NS)).filter((n) => n.startsWith('orphan-'))).toEqual([b, c]);
    expect((await getJson('gsec', b, '-n', NS)).metadata.ownerReferences).toBeUndefined();
    expect((await getJson('gsec', c, '-n', NS)).metadata.ownerReferences).toEqual([
      expect.objectContaining({ name: b }),
    ]);
  });

  test('background (the default): the owner goes at once, the garbage collector takes the rest', async () => {
    const [a] = await chain('bg');
    const res = await k('delete', 'gsec', a, '-n', NS);
    expect(res).toEqual({ code: 0, stdout: `sharedsecret.management.platform.sh "${a}" deleted\n`, stderr: '' });
    const wait = await k('wait', '--for=delete', 'gsec/bg-b', 'gsec/bg-c', '-n', NS, '--timeout=20s');
    expect(wait.code).toBe(0);
    expect((await names('gsec', '-n', NS)).filter((n) => n.startsWith('bg-'))).toEqual([]);
  });
});
