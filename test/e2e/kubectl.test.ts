/**
 * The real kubectl (v1.33) against the real server and etcd: what a person does first with sharedsecrets and
 * clusters, with kubectl's default validation.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { kubectlOn } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';

let ts: TestServer;
let dir: string;
const { k } = kubectlOn(() => ts.kubeconfig);
const manifest = manifestWriter(() => dir);

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-e2e-'));
});

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl', () => {
  test('create -f, get, get -o yaml, delete a SharedSecret', async () => {
    const file = manifest('s1', {
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 's1', namespace: 'default' },
      spec: {
        displayName: 'Deploy keys',
        data: { token: Buffer.from('hunter2').toString('base64') },
        access: [{ verbs: ['get'], users: ['alice'] }],
      },
    });
    const created = await k('create', '-f', file);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain('sharedsecret.management.platform.sh/s1 created');

    const listed = await k('get', 'sharedsecrets', '-n', 'default');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^NAME\s+DISPLAY NAME\s+KEYS\s+AGE\n/);
    expect(listed.stdout).toMatch(/\ns1\s+Deploy keys\s+1\s+\d+s/);

    const all = await k('get', 'sharedsecrets', '-A');
    expect(all.stdout).toMatch(/default\s+s1/);

    const got = await k('get', 'sharedsecret', 's1', '-n', 'default', '-o', 'yaml');
    expect(got.code).toBe(0);
    const obj = yaml.load(got.stdout) as any;
    expect(obj).toMatchObject({
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 's1', namespace: 'default', generation: 1 },
    });
    expect(obj.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(obj.spec.data.token).toBe(Buffer.from('hunter2').toString('base64'));

    const deleted = await k('delete', '-f', file);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain('sharedsecret.management.platform.sh "s1" deleted');
    const gone = await k('get', 'sharedsecret', 's1', '-n', 'default');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('Error from server (NotFound): sharedsecrets.management.platform.sh "s1" not found');
  });

  test('apply creates, updates and leaves unchanged; patch and short names work', async () => {
    const doc = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'Cluster',
      metadata: { name: 'prod-eu' },
      spec: { displayName: 'Production EU', config: { secretName: 'prod-eu-kubeconfig', secretNamespace: 'platform' } },
    };
    const file = manifest('cluster', doc);
    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/prod-eu created');
    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/prod-eu unchanged');

    manifest('cluster', { ...doc, spec: { ...doc.spec, unusable: true } });
    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/prod-eu configured');

    const patched = await k(
      'patch',
      'pcl',
      'prod-eu',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/metadata/annotations","value":{"owner":"team-a"}}]',
    );
    expect(patched).toMatchObject({ code: 0 });
    expect(patched.stdout).toContain('cluster.management.platform.sh/prod-eu patched');

    const obj = JSON.parse((await k('get', 'clusters.management.platform.sh', 'prod-eu', '-o', 'json')).stdout);
    expect(obj.spec.unusable).toBe(true);
    expect(obj.metadata.annotations.owner).toBe('team-a');
    expect(obj.metadata.generation).toBe(2);

    expect((await k('delete', 'cluster.management.platform.sh', 'prod-eu')).code).toBe(0);
  });

  test('a refused object shows the field at fault', async () => {
    const file = manifest('bad', {
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 'bad', namespace: 'default' },
      spec: { data: { 'bad key': 'not base64!' } },
    });
    const res = await k('create', '-f', file);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('The SharedSecret "bad" is invalid');
    expect(res.stderr).toContain('spec.data[bad key]');
    expect((await k('get', 'sharedsecret', 'bad', '-n', 'default')).code).toBe(1);
  });

  test('api-resources lists both kinds from discovery', async () => {
    const res = await k('api-resources', '--api-group=management.platform.sh');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/clusters\s+pcl\s+management.platform.sh\/v1\s+false\s+Cluster/);
    expect(res.stdout).toMatch(/sharedsecrets\s+gsec\s+management.platform.sh\/v1\s+true\s+SharedSecret/);
  });
});
