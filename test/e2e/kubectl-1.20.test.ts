/**
 * Debian's kubectl 1.20 (the kubernetes-client package) against the server, with validation on as it is by
 * default: this kubectl reads the schemas only from /openapi/v2 in protobuf (gnostic's openapi_v2.Document), for
 * explain and to validate every manifest itself before sending it. get, create, apply, diff and explain must work,
 * and a manifest the schema refuses must be refused by kubectl before any write.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION } from '../support/fixtures.js';
import { flat, kubectlOn, oldKubectlPath } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { TOKEN_SHOWN_ONCE_WARNING } from '../../src/actions/directclusterendpointtoken.js';

let ts: TestServer;
let dir: string;
const { k, getJson } = kubectlOn(() => ts.kubeconfig, oldKubectlPath);
const manifest = manifestWriter(() => dir);

/** The -v=6 log line (1.20's format: `GET https://... 200 OK in 3 milliseconds`) of a request kubectl made. */
function requestLine(stderr: string, method: string, pathPart: string): string | undefined {
  return stderr.split('\n').find((l) => l.includes(`] ${method} https://`) && l.includes(pathPart));
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-1.20-'));
});

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('this is kubectl 1.20', async () => {
  const res = await k('version', '--client', '--short');
  expect(res.stdout).toContain('Client Version: v1.20.');
});

describe('kubectl 1.20 explain', () => {
  test('a field of a kind, from the v2 document in protobuf', async () => {
    const res = await k('explain', 'sharedsecret.spec.access', '-v=6');
    expect(res.code).toBe(0);
    expect(requestLine(res.stderr, 'GET', '/openapi/v2')).toContain('200 OK');
    const out = flat(res.stdout);
    expect(out).toContain('KIND: SharedSecret VERSION: management.platform.sh/v1');
    expect(out).toContain('RESOURCE: access <[]Object>');
    expect(out).toContain(
      'DESCRIPTION: Access rights for users and teams. They are transformed into Roles and RoleBindings.',
    );
    expect(out).toContain('users <[]string> Users that are granted the verbs.');
  });

  test('a cluster-scoped kind by its plural, metadata from ObjectMeta, maps and an unknown field', async () => {
    const top = await k('explain', 'clusters');
    expect(top.code).toBe(0);
    expect(flat(top.stdout)).toContain('KIND: Cluster VERSION: management.platform.sh/v1');
    expect(flat(top.stdout)).toContain('metadata <Object>');
    const labels = await k('explain', 'clusters.metadata.labels');
    expect(labels.code).toBe(0);
    expect(flat(labels.stdout)).toContain('FIELD: labels <map[string]string>');
    const missing = await k('explain', 'clusters.spec.nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('field "nope" does not exist');
  });
});

describe('kubectl 1.20 with validation on', () => {
  test('create -f validates against the v2 document, then creates; get shows it', async () => {
    const file = manifest('s1', {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 's1', namespace: 'default' },
      spec: { displayName: 'Deploy keys', data: { id: 'c2VjcmV0' }, access: [{ verbs: ['get'], users: ['alice'] }] },
    });
    const res = await k('create', '-f', file, '-v=6');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('sharedsecret.management.platform.sh/s1 created');
    expect(requestLine(res.stderr, 'GET', '/openapi/v2')).toContain('200 OK');

    const listed = await k('get', 'sharedsecrets', '-n', 'default');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^NAME\s+DISPLAY NAME\s+KEYS\s+AGE\n/);
    expect(listed.stdout).toMatch(/\ns1\s+Deploy keys\s+1\s+\d+s/);
    const obj = await getJson('gsec', 's1', '-n', 'default');
    expect(obj.spec).toMatchObject({ displayName: 'Deploy keys', data: { id: 'c2VjcmV0' } });
  });

  test('a manifest the schema refuses is refused by kubectl itself, naming the field; nothing is written', async () => {
    const file = manifest('bad', {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 'bad', namespace: 'default' },
      spec: { displayName: 'Bad', bogus: true },
    });
    for (const verb of ['create', 'apply']) {
      const res = await k(verb, '-f', file, '-v=6');
      // 1, or 255 when logging verbosely (kubectl then exits through klog's fatal path).
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain(
        'error validating data: ValidationError(SharedSecret.spec): unknown field "bogus" in sh.platform.management.v1.SharedSecret.spec',
      );
      expect(requestLine(res.stderr, 'POST', '/sharedsecrets')).toBeUndefined();
    }
    expect((await k('get', 'gsec', 'bad', '-n', 'default')).stderr).toContain('NotFound');
  });

  test('apply creates, reports unchanged, updates with a JSON merge patch; diff shows a change to come', async () => {
    const doc = {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'eu-1' },
      spec: { displayName: 'EU 1', networkPeer: true },
    };
    const file = manifest('cluster', doc);
    const created = await k('apply', '-f', file);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toContain('cluster.management.platform.sh/eu-1 created');
    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/eu-1 unchanged');

    manifest('cluster', { ...doc, spec: { ...doc.spec, displayName: 'EU one' } });
    // -v=8 shows the request headers, on the lines after the request's.
    const updated = await k('apply', '-f', file, '-v=8');
    expect(updated.code).toBe(0);
    expect(updated.stdout).toContain('cluster.management.platform.sh/eu-1 configured');
    const lines = updated.stderr.split('\n');
    const patch = lines.findIndex((l) => l.includes('] PATCH https://') && l.includes('/clusters/eu-1?'));
    expect(patch).toBeGreaterThan(-1);
    const requestHeaders = lines
      .slice(patch + 1)
      .join('\n')
      .split('Response Status')[0];
    expect(requestHeaders).toContain('Content-Type: application/merge-patch+json');
    expect((await getJson('cluster', 'eu-1')).spec).toEqual({ displayName: 'EU one', networkPeer: true });

    // diff shows what apply would change (exit code 1: there are differences) and changes nothing.
    manifest('cluster', { ...doc, spec: { ...doc.spec, displayName: 'EU uno' } });
    const diff = await k('diff', '-f', file);
    expect(diff.code).toBe(1);
    expect(diff.stdout).toMatch(/^-\s+displayName: EU one$/m);
    expect(diff.stdout).toMatch(/^\+\s+displayName: EU uno$/m);
    expect((await getJson('cluster', 'eu-1')).spec.displayName).toBe('EU one');
  });

  test('create -f a DirectClusterEndpointToken (create-only) gives a token', async () => {
    const file = manifest('token', { apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec: { ttl: 600 } });
    const res = await k('create', '-f', file, '-o', 'jsonpath={.status.token}');
    expect(res).toMatchObject({ code: 0, stderr: `Warning: ${TOKEN_SHOWN_ONCE_WARNING}\n` });
    expect(res.stdout.split('.')).toHaveLength(3);
  });
});
