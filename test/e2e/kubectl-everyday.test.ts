/**
 * The real kubectl (v1.33) against the real server and etcd, with default flags (default validation, so kubectl
 * reads the server's OpenAPI and sends fieldValidation=Strict): the everyday commands a person types, asserting what
 * they see (stdout, stderr, exit code) and what the server then holds (`kubectl get -o json`).
 *
 * Each test works in its own namespace (SharedSecret) or with its own names (Cluster), so the tests do not see each
 * other's objects. Deleting, waiting and finalizers are in kubectl-lifecycle.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { API_VERSION } from '../support/fixtures.js';
import { flat, kubectl, kubectlOn, lines, stopBackgroundKubectls } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** A fresh object's AGE column: seconds. */
const AGE = /^\d+s$/;

let ts: TestServer;
let dir: string;
const { k, getJson, background } = kubectlOn(() => ts.kubeconfig);
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** The cells of a table line: kubectl pads columns with at least three spaces, values here hold at most one. */
const cells = (line: string) => line.trim().split(/\s{2,}/);

function secret(
  ns: string,
  name: string,
  spec: Record<string, unknown>,
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { name, namespace: ns, ...meta }, spec };
}

function cluster(
  name: string,
  spec: Record<string, unknown>,
  meta: { labels?: Record<string, string> } = {},
): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind: 'Cluster', metadata: { name, ...meta }, spec };
}

const manifest = manifestWriter(() => dir);

/** True if `kubectl get` finds the object. */
async function exists(...args: string[]): Promise<boolean> {
  const res = await k('get', ...args, '-o', 'name');
  if (res.code !== 0) expect(res.stderr).toContain('(NotFound)');
  return res.code === 0;
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-everyday-'));
});

afterEach(stopBackgroundKubectls);

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl get', () => {
  const NS = 'get-ns';
  const OTHER = 'get-other';
  /** Display names sort the other way round from the names. */
  const fixtures = [
    secret(NS, 'a1', { displayName: 'Echo keys', data: { token: b64('t'), url: b64('u') } }, { labels: { team: 'a' } }),
    secret(NS, 'a2', { displayName: 'Delta keys', data: { token: b64('t') } }, { labels: { team: 'a', tier: 'gold' } }),
    secret(NS, 'b1', { displayName: 'Charlie keys' }, { labels: { team: 'b' } }),
    secret(NS, 'c1', { displayName: 'Bravo keys', data: { token: b64('t') } }, { labels: { team: 'c' } }),
    secret(NS, 'c2', { displayName: 'Alpha keys', data: { token: b64('t') } }),
    secret(OTHER, 'o1', { displayName: 'Other keys' }, { labels: { team: 'a' } }),
    cluster('get-local', { displayName: 'Local cluster', local: true }),
    cluster('get-remote', {
      displayName: 'Remote cluster',
      unusable: true,
      config: { secretName: 'remote-kubeconfig', secretNamespace: 'platform' },
    }),
  ];
  const rowsOf = (stdout: string) => lines(stdout).slice(1).map(cells);
  const namesOf = (stdout: string) => rowsOf(stdout).map((r) => r[0]);

  beforeAll(async () => {
    const res = await k('create', '-f', manifest('get-fixtures', ...fixtures));
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(lines(res.stdout)).toEqual([
      'sharedsecret.management.platform.sh/a1 created',
      'sharedsecret.management.platform.sh/a2 created',
      'sharedsecret.management.platform.sh/b1 created',
      'sharedsecret.management.platform.sh/c1 created',
      'sharedsecret.management.platform.sh/c2 created',
      'sharedsecret.management.platform.sh/o1 created',
      'cluster.management.platform.sh/get-local created',
      'cluster.management.platform.sh/get-remote created',
    ]);
  });

  afterAll(async () => {
    await k('delete', 'pcl', 'get-local', 'get-remote', '--wait=false');
  });

  test('a table with the printer columns: NAME, DISPLAY NAME, KEYS, AGE for sharedsecrets', async () => {
    const res = await k('get', 'sharedsecrets', '-n', NS);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const [header] = lines(res.stdout);
    expect(cells(header)).toEqual(['NAME', 'DISPLAY NAME', 'KEYS', 'AGE']);
    expect(rowsOf(res.stdout)).toEqual([
      ['a1', 'Echo keys', '2', expect.stringMatching(AGE)],
      ['a2', 'Delta keys', '1', expect.stringMatching(AGE)],
      ['b1', 'Charlie keys', '0', expect.stringMatching(AGE)],
      ['c1', 'Bravo keys', '1', expect.stringMatching(AGE)],
      ['c2', 'Alpha keys', '1', expect.stringMatching(AGE)],
    ]);
    // The short name and the singular give the same table.
    const short = await k('get', 'gsec', '-n', NS);
    expect(rowsOf(short.stdout).map((r) => r.slice(0, 3))).toEqual(rowsOf(res.stdout).map((r) => r.slice(0, 3)));
    expect(namesOf((await k('get', 'sharedsecret', '-n', NS)).stdout)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2']);
  });

  test('a table with NAME, DISPLAY NAME, LOCAL, UNUSABLE, PHASE, ONLINE, LAST CHECK, AGE for clusters; a missing value is an empty cell', async () => {
    const res = await k('get', 'clusters', 'get-local', 'get-remote');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const all = lines(res.stdout);
    // No health checks run here (the test server's --cluster-health-interval is 0): PHASE, ONLINE and LAST CHECK stay
    // empty.
    expect(cells(all[0])).toEqual([
      'NAME',
      'DISPLAY NAME',
      'LOCAL',
      'UNUSABLE',
      'PHASE',
      'ONLINE',
      'LAST CHECK',
      'AGE',
    ]);
    expect(cells(all[1])).toEqual(['get-local', 'Local cluster', 'true', expect.stringMatching(AGE)]);
    expect(cells(all[2])).toEqual(['get-remote', 'Remote cluster', 'true', expect.stringMatching(AGE)]);
    // get-local has no spec.unusable and get-remote no spec.local: the cell stays empty, under its own column.
    const unusableAt = all[0].indexOf('UNUSABLE');
    const localAt = all[0].indexOf('LOCAL');
    expect(all[1].slice(localAt, unusableAt).trim()).toBe('true');
    expect(all[1].slice(unusableAt, all[0].indexOf('PHASE')).trim()).toBe('');
    expect(all[2].slice(localAt, unusableAt).trim()).toBe('');
    expect(all[2].slice(unusableAt, all[0].indexOf('PHASE')).trim()).toBe('true');

    const listed = await k('get', 'pcl');
    expect(namesOf(listed.stdout)).toEqual(expect.arrayContaining(['get-local', 'get-remote']));
  });

  test('-o wide shows the same columns (none has a priority)', async () => {
    const res = await k('get', 'gsec', '-n', NS, '-o', 'wide');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(cells(lines(res.stdout)[0])).toEqual(['NAME', 'DISPLAY NAME', 'KEYS', 'AGE']);
    expect(namesOf(res.stdout)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2']);
    const clusters = await k('get', 'pcl', 'get-remote', '-o', 'wide');
    expect(cells(lines(clusters.stdout)[0])).toEqual([
      'NAME',
      'DISPLAY NAME',
      'LOCAL',
      'UNUSABLE',
      'PHASE',
      'ONLINE',
      'LAST CHECK',
      'AGE',
    ]);
  });

  test('-o yaml and -o json: one object, and a List of them', async () => {
    const one = await k('get', 'gsec', 'a1', '-n', NS, '-o', 'yaml');
    expect(one).toMatchObject({ code: 0, stderr: '' });
    const obj = yaml.load(one.stdout) as any;
    expect(obj).toMatchObject({
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 'a1', namespace: NS, labels: { team: 'a' }, generation: 1 },
      spec: { displayName: 'Echo keys', data: { token: b64('t'), url: b64('u') } },
    });
    expect(obj.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(obj.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(obj.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // kubectl hides managedFields unless --show-managed-fields.
    expect(obj.metadata.managedFields).toBeUndefined();

    const list = await getJson('gsec', '-n', NS);
    expect(list).toMatchObject({ apiVersion: 'v1', kind: 'List' });
    expect(list.items.map((i: any) => i.metadata.name)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2']);
    expect(list.items.every((i: any) => i.kind === 'SharedSecret' && i.apiVersion === API_VERSION)).toBe(true);
    const listYaml = yaml.load((await k('get', 'gsec', '-n', NS, '-o', 'yaml')).stdout) as any;
    expect(listYaml.items.map((i: any) => i.spec.displayName)).toEqual([
      'Echo keys',
      'Delta keys',
      'Charlie keys',
      'Bravo keys',
      'Alpha keys',
    ]);

    const c = await getJson('cluster', 'get-remote');
    expect(c).toMatchObject({
      kind: 'Cluster',
      metadata: { name: 'get-remote' },
      spec: { unusable: true, config: { secretName: 'remote-kubeconfig' } },
    });
    expect(c.metadata.namespace).toBeUndefined();
  });

  test('label selectors: -l team=a, -l "team in (a,b)", -l "!team", -l team=a,tier=gold', async () => {
    const eq = await k('get', 'gsec', '-n', NS, '-l', 'team=a');
    expect(eq).toMatchObject({ code: 0, stderr: '' });
    expect(namesOf(eq.stdout)).toEqual(['a1', 'a2']);
    expect(namesOf((await k('get', 'gsec', '-n', NS, '-l', 'team in (a,b)')).stdout)).toEqual(['a1', 'a2', 'b1']);
    expect(namesOf((await k('get', 'gsec', '-n', NS, '-l', '!team')).stdout)).toEqual(['c2']);
    expect(namesOf((await k('get', 'gsec', '-n', NS, '-l', 'team=a,tier=gold')).stdout)).toEqual(['a2']);
    const everywhere = rowsOf((await k('get', 'gsec', '-A', '-l', 'team=a')).stdout).filter(
      (r) => r[0] === NS || r[0] === OTHER,
    );
    expect(everywhere.map((r) => `${r[0]}/${r[1]}`)).toEqual([`${NS}/a1`, `${NS}/a2`, `${OTHER}/o1`]);

    const none = await k('get', 'gsec', '-n', NS, '-l', 'team=zzz');
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toBe(`No resources found in ${NS} namespace.\n`);
  });

  test('--field-selector metadata.name=b1 (and !=)', async () => {
    const res = await k('get', 'gsec', '-n', NS, '--field-selector', 'metadata.name=b1');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(namesOf(res.stdout)).toEqual(['b1']);
    expect(namesOf((await k('get', 'gsec', '-n', NS, '--field-selector', 'metadata.name!=b1')).stdout)).toEqual([
      'a1',
      'a2',
      'c1',
      'c2',
    ]);
    expect(namesOf((await k('get', 'gsec', '-A', '--field-selector', `metadata.namespace=${OTHER}`)).stdout)).toEqual([
      OTHER,
    ]);
    expect(namesOf((await k('get', 'pcl', '--field-selector', 'metadata.name=get-local')).stdout)).toEqual([
      'get-local',
    ]);
  });

  test('an unknown field selector is refused with the supported ones', async () => {
    const res = await k('get', 'gsec', '-n', NS, '--field-selector', 'spec.displayName=x');
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    // kubectl puts the selector in front of the server's 400 message. (A CRD served by kube-apiserver itself says
    // `field label not supported: spec.displayName`; an aggregated server's scheme gives the message below.)
    expect(res.stderr).toBe(
      'Error from server (BadRequest): Unable to find "management.platform.sh/v1, Resource=sharedsecrets" that match label selector "", ' +
        'field selector "spec.displayName=x": "spec.displayName" is not a known field selector: only "metadata.name", "metadata.namespace"\n',
    );
  });

  test('--chunk-size=2 pages through all 5 objects with continue tokens', async () => {
    const res = await k('get', 'gsec', '-n', NS, '--chunk-size=2', '-v=6');
    expect(res.code).toBe(0);
    expect(namesOf(res.stdout)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2']);
    // One header only, although three pages arrived.
    expect(lines(res.stdout).filter((l) => l.startsWith('NAME'))).toHaveLength(1);
    const lists = res.stderr
      .split('\n')
      .filter((l) => l.includes('"Response"') && l.includes(`/namespaces/${NS}/sharedsecrets?`));
    expect(lists).toHaveLength(3);
    expect(lists[0]).toContain('limit=2');
    expect(lists[0]).not.toContain('continue=');
    expect(lists[1]).toMatch(/continue=[^&"]+&limit=2/);
    expect(lists[2]).toMatch(/continue=[^&"]+&limit=2/);
    expect(lists.every((l) => l.includes('status="200 OK"'))).toBe(true);

    // -o name and -o json page the same way.
    const names = await k('get', 'gsec', '-n', NS, '--chunk-size=2', '-o', 'name');
    expect(lines(names.stdout)).toHaveLength(5);
    const json = JSON.parse((await k('get', 'gsec', '-n', NS, '--chunk-size=2', '-o', 'json')).stdout);
    expect(json.items).toHaveLength(5);

    // Across namespaces, and with a label selector that leaves some objects out of the pages.
    const all = await k('get', 'gsec', '-A', '-o', 'name');
    expect((await k('get', 'gsec', '-A', '--chunk-size=1', '-o', 'name')).stdout).toBe(all.stdout);
    const selected = await k('get', 'gsec', '-A', '--chunk-size=1', '-l', 'team in (a,b)');
    expect(selected.code).toBe(0);
    expect(
      rowsOf(selected.stdout)
        .filter((r) => r[0] === NS || r[0] === OTHER)
        .map((r) => `${r[0]}/${r[1]}`),
    ).toEqual([`${NS}/a1`, `${NS}/a2`, `${NS}/b1`, `${OTHER}/o1`]);
  });

  test('-A adds a NAMESPACE column and lists every namespace', async () => {
    const res = await k('get', 'gsec', '-A');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(cells(lines(res.stdout)[0])).toEqual(['NAMESPACE', 'NAME', 'DISPLAY NAME', 'KEYS', 'AGE']);
    const mine = rowsOf(res.stdout).filter((r) => r[0] === NS || r[0] === OTHER);
    expect(mine).toEqual([
      [NS, 'a1', 'Echo keys', '2', expect.stringMatching(AGE)],
      [NS, 'a2', 'Delta keys', '1', expect.stringMatching(AGE)],
      [NS, 'b1', 'Charlie keys', '0', expect.stringMatching(AGE)],
      [NS, 'c1', 'Bravo keys', '1', expect.stringMatching(AGE)],
      [NS, 'c2', 'Alpha keys', '1', expect.stringMatching(AGE)],
      [OTHER, 'o1', 'Other keys', '0', expect.stringMatching(AGE)],
    ]);
  });

  test('--show-labels adds a LABELS column', async () => {
    const res = await k('get', 'gsec', '-n', NS, '--show-labels');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(cells(lines(res.stdout)[0])).toEqual(['NAME', 'DISPLAY NAME', 'KEYS', 'AGE', 'LABELS']);
    expect(rowsOf(res.stdout).map((r) => [r[0], r[4]])).toEqual([
      ['a1', 'team=a'],
      ['a2', 'team=a,tier=gold'],
      ['b1', 'team=b'],
      ['c1', 'team=c'],
      ['c2', '<none>'],
    ]);
  });

  test('-o name, -o jsonpath, -o custom-columns', async () => {
    const names = await k('get', 'gsec', '-n', NS, '-o', 'name');
    expect(names).toMatchObject({ code: 0, stderr: '' });
    expect(names.stdout).toBe(
      ['a1', 'a2', 'b1', 'c1', 'c2'].map((n) => `sharedsecret.management.platform.sh/${n}\n`).join(''),
    );
    expect((await k('get', 'pcl', 'get-local', '-o', 'name')).stdout).toBe(
      'cluster.management.platform.sh/get-local\n',
    );

    const jp = await k('get', 'gsec', '-n', NS, '-o', 'jsonpath={.items[*].metadata.name}');
    expect(jp).toMatchObject({ code: 0, stdout: 'a1 a2 b1 c1 c2', stderr: '' });
    expect(
      (await k('get', 'gsec', 'a1', '-n', NS, '-o', 'jsonpath={.spec.displayName}/{.metadata.labels.team}')).stdout,
    ).toBe('Echo keys/a');
    expect((await k('get', 'pcl', 'get-remote', '-o', 'jsonpath={.spec.config.secretName}')).stdout).toBe(
      'remote-kubeconfig',
    );

    const cc = await k(
      'get',
      'gsec',
      '-n',
      NS,
      '-l',
      'team=a',
      '-o',
      'custom-columns=NAME:.metadata.name,TEAM:.metadata.labels.team,TOKEN:.spec.data.token',
    );
    expect(cc.code).toBe(0);
    expect(lines(cc.stdout).map(cells)).toEqual([
      ['NAME', 'TEAM', 'TOKEN'],
      ['a1', 'a', b64('t')],
      ['a2', 'a', b64('t')],
    ]);
  });

  test('--sort-by=.metadata.name and --sort-by=.spec.displayName', async () => {
    const byName = await k('get', 'gsec', '-n', NS, '--sort-by=.metadata.name');
    expect(byName).toMatchObject({ code: 0, stderr: '' });
    expect(cells(lines(byName.stdout)[0])).toEqual(['NAME', 'DISPLAY NAME', 'KEYS', 'AGE']);
    expect(namesOf(byName.stdout)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2']);

    const byDisplay = await k('get', 'gsec', '-n', NS, '--sort-by=.spec.displayName');
    expect(byDisplay).toMatchObject({ code: 0, stderr: '' });
    expect(rowsOf(byDisplay.stdout).map((r) => r.slice(0, 2))).toEqual([
      ['c2', 'Alpha keys'],
      ['c1', 'Bravo keys'],
      ['b1', 'Charlie keys'],
      ['a2', 'Delta keys'],
      ['a1', 'Echo keys'],
    ]);
    expect((await k('get', 'gsec', '-n', NS, '--sort-by=.spec.displayName', '-o', 'name')).stdout).toBe(
      ['c2', 'c1', 'b1', 'a2', 'a1'].map((n) => `sharedsecret.management.platform.sh/${n}\n`).join(''),
    );
  });

  test('a missing object: NotFound, exit 1, nothing on stdout', async () => {
    const res = await k('get', 'gsec', 'nope', '-n', 'default');
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): sharedsecrets.management.platform.sh "nope" not found\n',
    });
    const c = await k('get', 'pcl', 'nope', '-o', 'yaml');
    expect(c).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): clusters.management.platform.sh "nope" not found\n',
    });
    // One missing among found ones: the found ones print, the error follows, the exit code is 1.
    const mixed = await k('get', 'pcl', 'get-local', 'nope', '-o', 'name');
    expect(mixed).toEqual({
      code: 1,
      stdout: 'cluster.management.platform.sh/get-local\n',
      stderr: 'Error from server (NotFound): clusters.management.platform.sh "nope" not found\n',
    });
  });

  // After a NotFound in a namespace other than "default", kubectl asks GET /api/v1/namespaces/<ns> and, if that is
  // a 404 too, prints that error instead ("namespaces "x" not found" from kube-apiserver). The namespace of objects
  // that exist exists, so the person must still see the object's own NotFound.
  test("a missing object in a namespace other than default: still the object's NotFound", async () => {
    const res = await k('get', 'gsec', 'nope', '-n', NS);
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): sharedsecrets.management.platform.sh "nope" not found\n',
    });
  });

  test('an empty namespace says so', async () => {
    const res = await k('get', 'gsec', '-n', 'get-empty');
    expect(res).toEqual({ code: 0, stdout: '', stderr: 'No resources found in get-empty namespace.\n' });
  });
});

describe('kubectl get -w', () => {
  const NS = 'watch-ns';

  beforeAll(async () => {
    const res = await k(
      'create',
      '-f',
      manifest('watch', secret(NS, 'w1', { displayName: 'Watched' }), secret(NS, 'w2', { displayName: 'Bystander' })),
    );
    expect(res.code).toBe(0);
  });

  test('get NAME -w prints the object, then a new line when kubectl label changes it (and nothing for other objects)', async () => {
    const watch = background(['get', 'gsec', 'w1', '-n', NS, '-w', '--show-labels']);
    // The initial list is printed before the watch starts; the watch starts at the list's resourceVersion, so
    // changes made from here on are seen.
    await watch.until('stdout', /\nw1 .*<none>\n/);
    expect(lines(watch.stdout).map(cells)).toEqual([
      ['NAME', 'DISPLAY NAME', 'KEYS', 'AGE', 'LABELS'],
      ['w1', 'Watched', '0', expect.stringMatching(AGE), '<none>'],
    ]);

    // A change to another object: get NAME -w watches with fieldSelector=metadata.name=w1, so no line.
    expect((await k('label', 'gsec', 'w2', '-n', NS, 'color=red')).code).toBe(0);
    const labelled = await k('label', 'gsec', 'w1', '-n', NS, 'color=blue');
    expect(labelled).toMatchObject({ code: 0, stdout: 'sharedsecret.management.platform.sh/w1 labeled\n', stderr: '' });
    await watch.until('stdout', /color=blue\n/);
    const res = await watch.stop();
    expect(res.stderr).toBe('');
    const rows = lines(res.stdout).map(cells);
    expect(rows).toEqual([
      ['NAME', 'DISPLAY NAME', 'KEYS', 'AGE', 'LABELS'],
      ['w1', 'Watched', '0', expect.stringMatching(AGE), '<none>'],
      ['w1', 'Watched', '0', expect.stringMatching(AGE), 'color=blue'],
    ]);
    expect(res.stdout).not.toContain('w2');
  });

  test('--output-watch-events adds an EVENT column: ADDED, MODIFIED, DELETED', async () => {
    expect((await k('create', '-f', manifest('watch-ev', secret(NS, 'w3', { displayName: 'Evented' })))).code).toBe(0);
    const watch = background(['get', 'gsec', 'w3', '-n', NS, '-w', '--output-watch-events']);
    await watch.until('stdout', /\nADDED\s+w3 /);

    expect((await k('label', 'gsec', 'w3', '-n', NS, 'color=green')).code).toBe(0);
    await watch.until('stdout', /\nMODIFIED\s+w3 /);
    expect((await k('annotate', 'gsec', 'w3', '-n', NS, 'note=hello')).code).toBe(0);
    await watch.until('stdout', /\nMODIFIED\s+w3 [^]*\nMODIFIED\s+w3 /);
    const del = await k('delete', 'gsec', 'w3', '-n', NS);
    expect(del).toMatchObject({ code: 0, stdout: 'sharedsecret.management.platform.sh "w3" deleted\n' });
    await watch.until('stdout', /\nDELETED\s+w3 /);

    const res = await watch.stop();
    expect(lines(res.stdout).map(cells)).toEqual([
      ['EVENT', 'NAME', 'DISPLAY NAME', 'KEYS', 'AGE'],
      ['ADDED', 'w3', 'Evented', '0', expect.stringMatching(AGE)],
      ['MODIFIED', 'w3', 'Evented', '0', expect.stringMatching(AGE)],
      ['MODIFIED', 'w3', 'Evented', '0', expect.stringMatching(AGE)],
      ['DELETED', 'w3', 'Evented', '0', expect.stringMatching(AGE)],
    ]);
  });

  test('a watch with a label selector: an object that starts matching is ADDED, one that stops matching is DELETED', async () => {
    expect((await k('create', '-f', manifest('watch-sel', secret(NS, 'w4', { displayName: 'Selected' })))).code).toBe(
      0,
    );
    const watch = background(['get', 'gsec', '-n', NS, '-l', 'shade=blue', '-w', '--output-watch-events', '-v=6']);
    // Nothing matches yet, so nothing is printed: the request log (-v=6) tells when the watch runs.
    await watch.until('stderr', /labelSelector=shade%3Dblue[^"]*watch=true[^"]*" status="200 OK"/);
    expect(watch.stdout).toBe('');

    expect((await k('label', 'gsec', 'w4', '-n', NS, 'shade=blue')).code).toBe(0);
    await watch.until('stdout', /\nADDED\s+w4 /);
    expect((await k('annotate', 'gsec', 'w4', '-n', NS, 'still=matching')).code).toBe(0);
    await watch.until('stdout', /\nMODIFIED\s+w4 /);
    expect((await k('label', 'gsec', 'w4', '-n', NS, 'shade=red', '--overwrite')).code).toBe(0);
    await watch.until('stdout', /\nDELETED\s+w4 /);
    // Changes to an object that does not match are not shown.
    expect((await k('annotate', 'gsec', 'w4', '-n', NS, 'unseen=yes')).code).toBe(0);
    expect((await k('label', 'gsec', 'w4', '-n', NS, 'shade=blue', '--overwrite')).code).toBe(0);
    await watch.until('stdout', /\nDELETED\s+w4 [^]*\nADDED\s+w4 /);

    const res = await watch.stop();
    expect(lines(res.stdout).map((l) => cells(l).slice(0, 2))).toEqual([
      ['EVENT', 'NAME'],
      ['ADDED', 'w4'],
      ['MODIFIED', 'w4'],
      ['DELETED', 'w4'],
      ['ADDED', 'w4'],
    ]);
    expect((await k('delete', 'gsec', 'w4', '-n', NS)).code).toBe(0);
  });

  test('get -w over the namespace with -o name sees every object, then the changed one again', async () => {
    const watch = background(['get', 'gsec', '-n', NS, '-w', '-o', 'name']);
    await watch.until('stdout', /sharedsecret\.management\.platform\.sh\/w2\n/);
    expect(
      (await k('patch', 'gsec', 'w2', '-n', NS, '--type=merge', '-p', '{"spec":{"description":"changed"}}')).code,
    ).toBe(0);
    await watch.until('stdout', /w2\n[^]*w2\n/);
    const res = await watch.stop();
    expect(lines(res.stdout)).toEqual([
      'sharedsecret.management.platform.sh/w1',
      'sharedsecret.management.platform.sh/w2',
      'sharedsecret.management.platform.sh/w2',
    ]);
  });
});

describe('kubectl apply', () => {
  const NS = 'apply-ns';

  test('creates, reports unchanged, updates (configured), and keeps the last applied configuration', async () => {
    const doc = secret(NS, 'deploy-keys', {
      displayName: 'Deploy keys',
      data: { token: b64('hunter2') },
      access: [{ verbs: ['get'], users: ['alice'] }],
    });
    const file = manifest('apply-deploy-keys', doc);

    const created = await k('apply', '-f', file);
    expect(created).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/deploy-keys created\n',
      stderr: '',
    });
    let obj = await getJson('gsec', 'deploy-keys', '-n', NS);
    expect(obj.spec).toEqual(doc.spec);
    expect(obj.metadata.generation).toBe(1);
    expect(JSON.parse(obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'])).toEqual({
      ...doc,
      metadata: { annotations: {}, name: 'deploy-keys', namespace: NS },
    });
    const rv = obj.metadata.resourceVersion;

    const same = await k('apply', '-f', file);
    expect(same).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/deploy-keys unchanged\n',
      stderr: '',
    });
    expect((await getJson('gsec', 'deploy-keys', '-n', NS)).metadata.resourceVersion).toBe(rv);

    const changed = { ...doc, spec: { displayName: 'Deploy keys v2', data: { token: b64('hunter3') } } };
    manifest('apply-deploy-keys', changed);
    const configured = await k('apply', '-f', file);
    expect(configured).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/deploy-keys configured\n',
      stderr: '',
    });
    obj = await getJson('gsec', 'deploy-keys', '-n', NS);
    // The three-way merge removed spec.access, which the last applied configuration had and the manifest drops.
    expect(obj.spec).toEqual({ displayName: 'Deploy keys v2', data: { token: b64('hunter3') } });
    expect(obj.metadata.generation).toBe(2);
    expect(JSON.parse(obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).spec).toEqual(
      changed.spec,
    );

    expect((await k('apply', '-f', file)).stdout).toBe('sharedsecret.management.platform.sh/deploy-keys unchanged\n');
  });

  test('a Cluster and a SharedSecret from one file', async () => {
    const file = manifest(
      'apply-both',
      cluster('apply-eu', { displayName: 'EU', config: { secretName: 'eu-kubeconfig', secretNamespace: 'platform' } }),
      secret(NS, 'eu-keys', { displayName: 'EU keys' }),
    );
    const res = await k('apply', '-f', file);
    expect(res).toEqual({
      code: 0,
      stdout: 'cluster.management.platform.sh/apply-eu created\nsharedsecret.management.platform.sh/eu-keys created\n',
      stderr: '',
    });
    expect((await k('apply', '-f', file)).stdout).toBe(
      'cluster.management.platform.sh/apply-eu unchanged\nsharedsecret.management.platform.sh/eu-keys unchanged\n',
    );
    expect((await getJson('pcl', 'apply-eu')).spec.config).toEqual({
      secretName: 'eu-kubeconfig',
      secretNamespace: 'platform',
    });
    expect((await k('delete', '-f', file)).code).toBe(0);
  });

  test('an unknown field: default validation refuses the manifest (strict decoding error), on create and on update', async () => {
    const typo = secret(NS, 'typo', { displayName: 'Typo', bogus: true });
    const res = await k('apply', '-f', manifest('apply-typo', typo));
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('Error from server (BadRequest): error when creating');
    expect(res.stderr).toContain('strict decoding error: unknown field "spec.bogus"');
    expect(await exists('gsec', 'typo', '-n', NS)).toBe(false);

    // The same for an object that exists: the merge patch is sent with fieldValidation=Strict.
    const good = secret(NS, 'typo2', { displayName: 'Fine' });
    const file = manifest('apply-typo2', good);
    expect((await k('apply', '-f', file)).code).toBe(0);
    const before = await getJson('gsec', 'typo2', '-n', NS);
    manifest('apply-typo2', secret(NS, 'typo2', { displayName: 'Changed', bogus: true }));
    const upd = await k('apply', '-f', file);
    expect(upd.code).toBe(1);
    expect(upd.stdout).toBe('');
    expect(upd.stderr).toContain('Error from server (BadRequest)');
    expect(upd.stderr).toContain('strict decoding error: unknown field "spec.bogus"');
    const after = await getJson('gsec', 'typo2', '-n', NS);
    expect(after.spec).toEqual({ displayName: 'Fine' });
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  test('--dry-run=server reports what would happen and stores nothing', async () => {
    const doc = secret(NS, 'dry', { displayName: 'Dry' });
    const file = manifest('apply-dry', doc);
    const res = await k('apply', '-f', file, '--dry-run=server');
    expect(res).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/dry created (server dry run)\n',
      stderr: '',
    });
    expect(await exists('gsec', 'dry', '-n', NS)).toBe(false);

    expect((await k('apply', '-f', file)).code).toBe(0);
    const stored = await getJson('gsec', 'dry', '-n', NS);
    manifest('apply-dry', secret(NS, 'dry', { displayName: 'Wet' }));
    const upd = await k('apply', '-f', file, '--dry-run=server', '-o', 'json');
    expect(upd.code).toBe(0);
    // -o prints the object the server would store.
    const wouldBe = JSON.parse(upd.stdout);
    expect(wouldBe.spec.displayName).toBe('Wet');
    expect(wouldBe.metadata.generation).toBe(2);
    const after = await getJson('gsec', 'dry', '-n', NS);
    expect(after.spec.displayName).toBe('Dry');
    expect(after.metadata.resourceVersion).toBe(stored.metadata.resourceVersion);
    expect((await k('apply', '-f', file, '--dry-run=server')).stdout).toBe(
      'sharedsecret.management.platform.sh/dry configured (server dry run)\n',
    );
    expect((await getJson('gsec', 'dry', '-n', NS)).spec.displayName).toBe('Dry');
  });

  test('a data value that is not base64: refused naming the field and base64, without echoing the value', async () => {
    const file = manifest('bad-b64', secret('apply-ns', 'plain-text', { data: { token: 'hunter2 in clear!' } }));
    const res = await k('apply', '-f', file);
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'The SharedSecret "plain-text" is invalid: spec.data[token]: Invalid value: "string": spec.data[token] in body must be of type byte: ' +
        'a base64 string (RFC 4648, padded), e.g. "aGVsbG8=" for "hello"\n',
    });
    expect(await exists('gsec', 'plain-text', '-n', 'apply-ns')).toBe(false);
  });

  test('an unknown verb in an access entry: stored, with a warning naming the field and the known verbs', async () => {
    const warning =
      'Warning: spec.access[0].verbs[1]: unknown verb "reed" grants nothing; known verbs: get, list, watch, create, update, patch, delete, deletecollection, \'*\' for all\n';
    const doc = secret('apply-ns', 'typo', { access: [{ verbs: ['get', 'reed'], users: ['bob'] }] });
    const res = await k('apply', '-f', manifest('typo', doc));
    expect(res).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/typo created\n', stderr: warning });
    expect((await getJson('gsec', 'typo', '-n', 'apply-ns')).spec.access).toEqual([
      { verbs: ['get', 'reed'], users: ['bob'] },
    ]);

    // On update too; a fixed entry gets no warning.
    const updated = await k(
      'apply',
      '-f',
      manifest('typo', { ...doc, spec: { displayName: 'Typo', access: [{ verbs: ['get', 'reed'], users: ['bob'] }] } }),
    );
    expect(updated).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/typo configured\n',
      stderr: warning,
    });
    const fixed = await k(
      'apply',
      '-f',
      manifest('typo', {
        ...doc,
        spec: {
          access: [
            { verbs: ['get', 'list'], users: ['bob'] },
            { verbs: ['*'], users: ['ann'] },
          ],
        },
      }),
    );
    expect(fixed).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/typo configured\n', stderr: '' });
  });

  test('create of an existing object: AlreadyExists', async () => {
    const file = manifest('apply-exists', secret(NS, 'exists', {}));
    expect((await k('create', '-f', file)).code).toBe(0);
    const res = await k('create', '-f', file);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `Error from server (AlreadyExists): error when creating "${file}": sharedsecrets.management.platform.sh "exists" already exists\n`,
    );
  });
});

describe('kubectl diff', () => {
  const NS = 'diff-ns';

  test('exits 1 and shows the change; exits 0 with no output when the manifest matches', async () => {
    const doc = secret(NS, 'diffed', { displayName: 'Before', data: { token: b64('x') } });
    const file = manifest('diff', doc);

    // Not there yet: the whole object is new.
    const fresh = await k('diff', '-f', file);
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toBe('');
    expect(fresh.stdout).toMatch(/^diff -u -N \S+\/management\.platform\.sh\.v1\.SharedSecret\.diff-ns\.diffed \S+\n/);
    expect(fresh.stdout).toContain('\n+kind: SharedSecret\n');
    expect(fresh.stdout).toContain('\n+  displayName: Before\n');
    expect(await exists('gsec', 'diffed', '-n', NS)).toBe(false);

    expect((await k('apply', '-f', file)).code).toBe(0);
    const same = await k('diff', '-f', file);
    expect(same).toEqual({ code: 0, stdout: '', stderr: '' });

    manifest('diff', { ...doc, spec: { displayName: 'After', data: { token: b64('x') } } });
    const changed = await k('diff', '-f', file);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toBe('');
    const body = lines(changed.stdout);
    expect(body).toContain('-  displayName: Before');
    expect(body).toContain('+  displayName: After');
    // The server's dry run bumped the generation: that shows too.
    expect(body).toContain('-  generation: 1');
    expect(body).toContain('+  generation: 2');
    // Nothing changed on the server.
    const live = await getJson('gsec', 'diffed', '-n', NS);
    expect(live.spec.displayName).toBe('Before');
    expect(live.metadata.generation).toBe(1);
  });

  test('an object without annotations shows no diff: no "annotations: {}" (an empty map is not stored, as kube)', async () => {
    // kubectl create stores no last-applied annotation; kubectl diff then patches with "annotations: {}".
    const file = manifest('diff-created', secret(NS, 'created', { displayName: 'Created' }));
    expect((await k('create', '-f', file)).code).toBe(0);
    expect(await k('diff', '-f', file)).toEqual({ code: 0, stdout: '', stderr: '' });

    // An explicit empty map or list in metadata is dropped as well, on create and on update.
    const empty = manifest(
      'diff-empty',
      secret(NS, 'empty', { displayName: 'Empty' }, { labels: {}, annotations: {} }),
    );
    expect((await k('create', '-f', empty)).code).toBe(0);
    const created = await getJson('gsec', 'empty', '-n', NS);
    expect(created.metadata).not.toHaveProperty('labels');
    expect(created.metadata).not.toHaveProperty('annotations');
    expect(await k('diff', '-f', empty)).toEqual({ code: 0, stdout: '', stderr: '' });
    const patched = await k(
      'patch',
      'gsec',
      'empty',
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{},"finalizers":[]}}',
    );
    expect(patched).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/empty patched (no change)\n',
      stderr: '',
    });
    const after = await getJson('gsec', 'empty', '-n', NS);
    expect(after.metadata).not.toHaveProperty('labels');
    expect(after.metadata).not.toHaveProperty('finalizers');
    expect(after.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  });
});

describe('kubectl patch', () => {
  const NS = 'patch-ns';

  beforeAll(async () => {
    const res = await k(
      'create',
      '-f',
      manifest(
        'patch',
        secret(
          NS,
          'deploy-keys',
          { displayName: 'Deploy keys', data: { token: b64('hunter2') } },
          { annotations: { contact: 'ops' } },
        ),
      ),
    );
    expect(res.code).toBe(0);
  });

  test('--type=json adds an annotation (a one-element add under /metadata/annotations)', async () => {
    const res = await k(
      'patch',
      'gsec',
      'deploy-keys',
      '-n',
      NS,
      '--type=json',
      '-p',
      '[{"op":"add","path":"/metadata/annotations/owner","value":"team-a"}]',
    );
    expect(res).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/deploy-keys patched\n', stderr: '' });
    const obj = await getJson('gsec', 'deploy-keys', '-n', NS);
    expect(obj.metadata.annotations).toEqual({ contact: 'ops', owner: 'team-a' });
    expect(obj.spec).toEqual({ displayName: 'Deploy keys', data: { token: b64('hunter2') } });
    // Metadata only: the generation stays.
    expect(obj.metadata.generation).toBe(1);
  });

  test('--type=merge changes the spec; the same patch again is "patched (no change)"', async () => {
    const before = await getJson('gsec', 'deploy-keys', '-n', NS);
    const patch = '{"spec":{"description":"keys for the deploy job"}}';
    const res = await k('patch', 'gsec', 'deploy-keys', '-n', NS, '--type=merge', '-p', patch);
    expect(res).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/deploy-keys patched\n', stderr: '' });
    const obj = await getJson('gsec', 'deploy-keys', '-n', NS);
    expect(obj.spec).toEqual({
      displayName: 'Deploy keys',
      description: 'keys for the deploy job',
      data: { token: b64('hunter2') },
    });
    expect(obj.metadata.generation).toBe(before.metadata.generation + 1);

    const again = await k('patch', 'gsec', 'deploy-keys', '-n', NS, '--type=merge', '-p', patch);
    expect(again).toEqual({
      code: 0,
      stdout: 'sharedsecret.management.platform.sh/deploy-keys patched (no change)\n',
      stderr: '',
    });
    expect((await getJson('gsec', 'deploy-keys', '-n', NS)).metadata.resourceVersion).toBe(
      obj.metadata.resourceVersion,
    );

    // null removes a field.
    expect(
      (await k('patch', 'gsec', 'deploy-keys', '-n', NS, '--type=merge', '-p', '{"spec":{"description":null}}')).code,
    ).toBe(0);
    expect((await getJson('gsec', 'deploy-keys', '-n', NS)).spec.description).toBeUndefined();
  });

  test('a cluster: merge patch on a cluster-scoped object by short name', async () => {
    expect(
      (await k('create', '-f', manifest('patch-cluster', cluster('patch-eu', { config: { secretName: 'eu' } })))).code,
    ).toBe(0);
    const res = await k('patch', 'pcl', 'patch-eu', '--type=merge', '-p', '{"spec":{"unusable":true}}');
    expect(res).toEqual({ code: 0, stdout: 'cluster.management.platform.sh/patch-eu patched\n', stderr: '' });
    expect((await getJson('pcl', 'patch-eu')).spec).toEqual({ config: { secretName: 'eu' }, unusable: true });
    // A patch that breaks validation is refused with the field at fault.
    const bad = await k('patch', 'pcl', 'patch-eu', '--type=json', '-p', '[{"op":"remove","path":"/spec/config"}]');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('The Cluster "patch-eu" is invalid: spec.config.secretName: Required value');
    expect((await getJson('pcl', 'patch-eu')).spec.config).toEqual({ secretName: 'eu' });
    expect((await k('delete', 'pcl', 'patch-eu')).code).toBe(0);
  });

  test('a failing json-patch test op is an error and changes nothing', async () => {
    const before = await getJson('gsec', 'deploy-keys', '-n', NS);
    const res = await k(
      'patch',
      'gsec',
      'deploy-keys',
      '-n',
      NS,
      '--type=json',
      '-p',
      '[{"op":"test","path":"/spec/displayName","value":"Not it"},{"op":"replace","path":"/spec/displayName","value":"Hijacked"}]',
    );
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    // 422 Invalid without a kind or name, as kube; the cause names the patch and which operation failed, not the value.
    expect(res.stderr).toBe(
      'The request is invalid: patch: test operation 0 failed: the value at "/spec/displayName" is not the one the test expects, so nothing was changed\n',
    );
    const after = await getJson('gsec', 'deploy-keys', '-n', NS);
    expect(after.spec.displayName).toBe('Deploy keys');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    // The same test with the right value passes and the replace applies.
    const ok = await k(
      'patch',
      'gsec',
      'deploy-keys',
      '-n',
      NS,
      '--type=json',
      '-p',
      '[{"op":"test","path":"/spec/displayName","value":"Deploy keys"},{"op":"replace","path":"/spec/displayName","value":"Deploy keys (tested)"}]',
    );
    expect(ok).toMatchObject({ code: 0, stdout: 'sharedsecret.management.platform.sh/deploy-keys patched\n' });
    expect((await getJson('gsec', 'deploy-keys', '-n', NS)).spec.displayName).toBe('Deploy keys (tested)');
  });

  test('a missing object: NotFound', async () => {
    const inDefault = await k('patch', 'gsec', 'nope', '-n', 'default', '--type=merge', '-p', '{"spec":{}}');
    expect(inDefault).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): sharedsecrets.management.platform.sh "nope" not found\n',
    });
    const cl = await k('patch', 'pcl', 'nope', '--type=merge', '-p', '{"spec":{}}');
    expect(cl).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): clusters.management.platform.sh "nope" not found\n',
    });
    // In another namespace kubectl checks the namespace first (see kubectl get): the object's NotFound all the same.
    const res = await k('patch', 'gsec', 'nope', '-n', NS, '--type=merge', '-p', '{"spec":{}}');
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): sharedsecrets.management.platform.sh "nope" not found\n',
    });
  });
});

describe('kubectl label and annotate', () => {
  const NS = 'label-ns';

  beforeAll(async () => {
    const res = await k(
      'create',
      '-f',
      manifest(
        'label',
        secret(NS, 'l1', {}),
        secret(NS, 'l2', {}, { labels: { team: 'a' } }),
        cluster('label-eu', { networkPeer: true }),
      ),
    );
    expect(res.code).toBe(0);
  });

  afterAll(async () => {
    await k('delete', 'pcl', 'label-eu', '--wait=false');
  });

  test('label: add, overwrite (only with --overwrite), remove with key-', async () => {
    const added = await k('label', 'gsec', 'l1', '-n', NS, 'team=a', 'tier=gold');
    expect(added).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l1 labeled\n', stderr: '' });
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels).toEqual({ team: 'a', tier: 'gold' });

    const refused = await k('label', 'gsec', 'l1', '-n', NS, 'team=b');
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr: "error: 'team' already has a value (a), and --overwrite is false\n",
    });
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels.team).toBe('a');

    const overwritten = await k('label', 'gsec', 'l1', '-n', NS, 'team=b', '--overwrite');
    expect(overwritten).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l1 labeled\n', stderr: '' });
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels).toEqual({ team: 'b', tier: 'gold' });

    const removed = await k('label', 'gsec', 'l1', '-n', NS, 'tier-');
    expect(removed).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l1 unlabeled\n', stderr: '' });
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels).toEqual({ team: 'b' });

    // The selector sees the labels as they are now.
    expect(lines((await k('get', 'gsec', '-n', NS, '-l', 'team=b', '-o', 'name')).stdout)).toEqual([
      'sharedsecret.management.platform.sh/l1',
    ]);
    // Labels never change the generation.
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.generation).toBe(1);
  });

  test('label many at once with -l, and a cluster', async () => {
    const res = await k('label', 'gsec', '-n', NS, '--all', 'reviewed=yes');
    expect(res.code).toBe(0);
    expect(lines(res.stdout)).toEqual([
      'sharedsecret.management.platform.sh/l1 labeled',
      'sharedsecret.management.platform.sh/l2 labeled',
    ]);
    const sel = await k('label', 'gsec', '-n', NS, '-l', 'team=a', 'picked=yes');
    expect(lines(sel.stdout)).toEqual(['sharedsecret.management.platform.sh/l2 labeled']);
    const list = await getJson('gsec', '-n', NS);
    expect(list.items.map((i: any) => [i.metadata.name, i.metadata.labels])).toEqual([
      ['l1', { team: 'b', reviewed: 'yes' }],
      ['l2', { team: 'a', reviewed: 'yes', picked: 'yes' }],
    ]);

    const c = await k('label', 'pcl', 'label-eu', 'region=eu');
    expect(c).toEqual({ code: 0, stdout: 'cluster.management.platform.sh/label-eu labeled\n', stderr: '' });
    expect((await getJson('pcl', 'label-eu')).metadata.labels).toEqual({ region: 'eu' });
  });

  test('annotate: add, overwrite (only with --overwrite), remove with key-', async () => {
    const added = await k('annotate', 'gsec', 'l2', '-n', NS, 'owner=team-a', 'note=first');
    expect(added).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l2 annotated\n', stderr: '' });
    expect((await getJson('gsec', 'l2', '-n', NS)).metadata.annotations).toEqual({ owner: 'team-a', note: 'first' });

    const refused = await k('annotate', 'gsec', 'l2', '-n', NS, 'owner=team-b');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "error: --overwrite is false but found the following declared annotation(s): 'owner' already has a value (team-a)\n",
    );

    const overwritten = await k('annotate', 'gsec', 'l2', '-n', NS, 'owner=team-b', '--overwrite');
    expect(overwritten).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l2 annotated\n', stderr: '' });
    expect((await getJson('gsec', 'l2', '-n', NS)).metadata.annotations).toEqual({ owner: 'team-b', note: 'first' });

    const removed = await k('annotate', 'gsec', 'l2', '-n', NS, 'note-');
    expect(removed).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/l2 annotated\n', stderr: '' });
    expect((await getJson('gsec', 'l2', '-n', NS)).metadata.annotations).toEqual({ owner: 'team-b' });

    const c = await k('annotate', 'pcl', 'label-eu', 'owner=platform');
    expect(c).toEqual({ code: 0, stdout: 'cluster.management.platform.sh/label-eu annotated\n', stderr: '' });
    expect((await getJson('pcl', 'label-eu')).metadata.annotations).toEqual({ owner: 'platform' });
  });

  test('--resource-version makes the change conditional: a stale one is a Conflict', async () => {
    const obj = await getJson('gsec', 'l1', '-n', NS);
    const stale = String(Number(obj.metadata.resourceVersion) - 1);
    const res = await k('label', 'gsec', 'l1', '-n', NS, 'stale=yes', `--resource-version=${stale}`);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      'Error from server (Conflict): Operation cannot be fulfilled on sharedsecrets.management.platform.sh "l1": ' +
        'the object has been modified; please apply your changes to the latest version and try again\n',
    );
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels.stale).toBeUndefined();
    const ok = await k(
      'label',
      'gsec',
      'l1',
      '-n',
      NS,
      'fresh=yes',
      `--resource-version=${obj.metadata.resourceVersion}`,
    );
    expect(ok.code).toBe(0);
    expect((await getJson('gsec', 'l1', '-n', NS)).metadata.labels.fresh).toBe('yes');
  });
});

describe('kubectl edit', () => {
  const NS = 'edit-ns';

  /** An editor: a shell script that runs `sed -i <expr>` on the file kubectl hands it. */
  function editor(name: string, sedExpr: string): string {
    const file = join(dir, `${name}.sh`);
    writeFileSync(file, `#!/bin/sh\nset -e\nsed -i '${sedExpr}' "$1"\n`);
    chmodSync(file, 0o755);
    return file;
  }
  const edit = (editorPath: string, ...args: string[]) =>
    kubectl(['edit', ...args], { kubeconfig: ts.kubeconfig, env: { KUBE_EDITOR: editorPath } });

  beforeAll(async () => {
    expect(
      (
        await k(
          'create',
          '-f',
          manifest('edit', secret(NS, 'x', { displayName: 'Before edit', data: { token: b64('t') } })),
        )
      ).code,
    ).toBe(0);
  });

  test('a scripted editor changes displayName; the change is stored', async () => {
    const res = await edit(
      editor('edit-display', 's/displayName: .*/displayName: Edited by script/'),
      'gsec',
      'x',
      '-n',
      NS,
    );
    expect(res).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/x edited\n', stderr: '' });
    const obj = await getJson('gsec', 'x', '-n', NS);
    expect(obj.spec).toEqual({ displayName: 'Edited by script', data: { token: b64('t') } });
    expect(obj.metadata.generation).toBe(2);
    const table = await k('get', 'gsec', 'x', '-n', NS);
    expect(cells(lines(table.stdout)[1]).slice(0, 3)).toEqual(['x', 'Edited by script', '1']);
  });

  test('an editor that changes nothing: "Edit cancelled"', async () => {
    const before = await getJson('gsec', 'x', '-n', NS);
    const res = await edit('true', 'gsec', 'x', '-n', NS);
    expect(res).toEqual({ code: 0, stdout: '', stderr: 'Edit cancelled, no changes made.\n' });
    expect((await getJson('gsec', 'x', '-n', NS)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  test('an edit that adds an unknown field is refused by the server and stores nothing', async () => {
    const before = await getJson('gsec', 'x', '-n', NS);
    const res = await edit(editor('edit-bogus', 's/displayName: .*/bogusField: oops/'), 'gsec', 'x', '-n', NS);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('error: sharedsecrets.management.platform.sh "x" could not be patched:');
    expect(res.stderr).toContain('strict decoding error: unknown field "spec.bogusField"');
    expect(res.stderr).toMatch(/You can run `kubectl replace -f \S+` to try this update again\./);
    const after = await getJson('gsec', 'x', '-n', NS);
    expect(after.spec.displayName).toBe('Edited by script');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });
});

describe('kubectl replace and describe', () => {
  const NS = 'replace-ns';

  test('replace -f with the object as read succeeds; replaying the same (now stale) file is a Conflict', async () => {
    expect((await k('create', '-f', manifest('replace', secret(NS, 'r1', { displayName: 'Original' })))).code).toBe(0);
    const live = await k('get', 'gsec', 'r1', '-n', NS, '-o', 'yaml');
    const doc = yaml.load(live.stdout) as any;
    doc.spec.displayName = 'Replaced';
    const file = manifest('replace-live', doc);

    const res = await k('replace', '-f', file);
    expect(res).toEqual({ code: 0, stdout: 'sharedsecret.management.platform.sh/r1 replaced\n', stderr: '' });
    const obj = await getJson('gsec', 'r1', '-n', NS);
    expect(obj.spec).toEqual({ displayName: 'Replaced' });
    expect(obj.metadata.uid).toBe(doc.metadata.uid);
    expect(obj.metadata.generation).toBe(2);

    const stale = await k('replace', '-f', file);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toBe(
      `Error from server (Conflict): error when replacing "${file}": Operation cannot be fulfilled on sharedsecrets.management.platform.sh "r1": ` +
        'the object has been modified; please apply your changes to the latest version and try again\n',
    );
    expect((await getJson('gsec', 'r1', '-n', NS)).metadata.resourceVersion).toBe(obj.metadata.resourceVersion);
  });

  test('describe prints the object', async () => {
    expect(
      (
        await k(
          'create',
          '-f',
          manifest(
            'describe',
            secret(NS, 'd1', { displayName: 'Described', data: { token: b64('t') } }, { labels: { team: 'a' } }),
          ),
        )
      ).code,
    ).toBe(0);
    const res = await k('describe', 'gsec', 'd1', '-n', NS);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const out = lines(res.stdout);
    expect(out).toEqual(
      expect.arrayContaining([
        'Name:         d1',
        `Namespace:    ${NS}`,
        'Labels:       team=a',
        `API Version:  ${API_VERSION}`,
        'Kind:         SharedSecret',
        '  Display Name:  Described',
      ]),
    );
    expect(out[out.length - 1]).toMatch(/^Events:\s+<none>$/);
  });
});

describe('kubectl explain', () => {
  test('sharedsecrets.spec.data prints its description', async () => {
    const res = await k('explain', 'sharedsecrets.spec.data');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const out = flat(res.stdout);
    expect(out).toContain('GROUP: management.platform.sh KIND: SharedSecret VERSION: v1');
    expect(out).toContain('FIELD: data <map[string]string>');
    expect(out).toContain(
      "DESCRIPTION: Secret data. Each key consists of alphanumeric characters, '-', '_' or '.'. Each value is a base64 string (RFC 4648 section 4) that stands for arbitrary data.",
    );
  });

  test('clusters.spec.unusable prints its description', async () => {
    const res = await k('explain', 'clusters.spec.unusable');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const out = flat(res.stdout);
    expect(out).toContain('GROUP: management.platform.sh KIND: Cluster VERSION: v1');
    expect(out).toContain('FIELD: unusable <boolean>');
    expect(out).toContain(
      'DESCRIPTION: When true, no spaces or virtual clusters can be scheduled on the cluster. Default false.',
    );
  });
});

describe('bad input through kubectl', () => {
  const NS = 'bad-ns';

  test('an invalid data key: The SharedSecret "x" is invalid: spec.data[bad key]: ...', async () => {
    const file = manifest('bad-key', secret(NS, 'x', { data: { 'bad key': b64('v'), good: b64('v') } }));
    const res = await k('apply', '-f', file);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe(
      'The SharedSecret "x" is invalid: spec.data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric ' +
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')\n",
    );
    expect(await exists('gsec', 'x', '-n', NS)).toBe(false);
    // create says the same.
    const created = await k('create', '-f', file);
    expect(created.code).toBe(1);
    expect(created.stderr).toContain('The SharedSecret "x" is invalid: spec.data[bad key]: Invalid value: "bad key"');
  });

  test('a Cluster without spec.config.secretName: Required', async () => {
    const res = await k('apply', '-f', manifest('bad-cluster', cluster('bad-cluster', { displayName: 'No config' })));
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe(
      'The Cluster "bad-cluster" is invalid: spec.config.secretName: Required value: the secret holding the connection config is required ' +
        'unless spec.local or spec.networkPeer is true\n',
    );
    expect(await exists('pcl', 'bad-cluster')).toBe(false);
  });

  test('several errors at once are listed one per line', async () => {
    const res = await k(
      'apply',
      '-f',
      manifest('bad-many', cluster('bad-many', { config: { secretNamespace: 'Not_A_Label' } })),
    );
    expect(res.code).toBe(1);
    const [first, ...rest] = res.stderr.trimEnd().split('\n');
    expect(first).toBe('The Cluster "bad-many" is invalid: ');
    expect(rest).toEqual([
      expect.stringMatching(/^\* spec\.config\.secretName: Required value: /),
      expect.stringMatching(/^\* spec\.config\.secretNamespace: Invalid value: "Not_A_Label": /),
    ]);
  });
});
