/**
 * Server-side apply as people meet it: `kubectl apply --server-side` (which PATCHes with
 * application/apply-patch+yaml), conflicts with another manager, --force-conflicts, and fields that leave the
 * applied configuration leaving the object. Plus the request rules of apply patches at the HTTP level.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { API_VERSION, APPLY_PATCH as APPLY } from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import { kubectlOn } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';

let ts: TestServer;
let dir: string;
const { k } = kubectlOn(() => ts.kubeconfig);

function manifest(name: string, spec: object): string {
  const file = join(dir, `${name}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    yaml.dump({
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name, namespace: 'default' },
      spec,
    }),
  );
  return file;
}

async function getJson(name: string): Promise<any> {
  const res = await k('get', 'sharedsecret', name, '-n', 'default', '-o', 'json', '--show-managed-fields');
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout);
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'ssa-'));
});
afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl apply --server-side', () => {
  test('creates, records an Apply entry for kubectl, and is idempotent', async () => {
    const file = manifest('ssa-create', { displayName: 'One', data: { a: 'eA==' } });
    expect((await k('apply', '--server-side', '-f', file)).stdout).toContain(
      'sharedsecret.management.platform.sh/ssa-create serverside-applied',
    );
    const first = await getJson('ssa-create');
    expect(first.metadata.managedFields).toEqual([
      {
        apiVersion: 'management.platform.sh/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:data': { 'f:a': {} }, 'f:displayName': {} } },
        manager: 'kubectl',
        operation: 'Apply',
        time: first.metadata.creationTimestamp,
      },
    ]);
    expect((await k('apply', '--server-side', '-f', file)).code).toBe(0);
    expect((await getJson('ssa-create')).metadata.resourceVersion).toBe(first.metadata.resourceVersion);
  });

  test('a field another manager changed is a conflict that names it; --force-conflicts takes it over', async () => {
    const file = manifest('ssa-conflict', { displayName: 'One' });
    expect((await k('apply', '--server-side', '-f', file)).code).toBe(0);
    expect(
      (
        await k(
          'patch',
          'gsec',
          'ssa-conflict',
          '-n',
          'default',
          '--type=merge',
          '-p',
          '{"spec":{"displayName":"Two"}}',
        )
      ).code,
    ).toBe(0);

    const conflicted = await k('apply', '--server-side', '-f', file);
    expect(conflicted.code).toBe(1);
    expect(conflicted.stderr).toContain(
      'Apply failed with 1 conflict: conflict with "kubectl-patch" using management.platform.sh/v1: .spec.displayName',
    );
    expect((await getJson('ssa-conflict')).spec.displayName).toBe('Two');

    expect((await k('apply', '--server-side', '--force-conflicts', '-f', file)).code).toBe(0);
    const forced = await getJson('ssa-conflict');
    expect(forced.spec.displayName).toBe('One');
    const managers = forced.metadata.managedFields.map((e: any) => [e.manager, e.operation, e.fieldsV1]);
    expect(managers).toContainEqual(['kubectl', 'Apply', { 'f:spec': { 'f:displayName': {} } }]);
    expect(managers.find((m: any[]) => m[0] === 'kubectl-patch')).toBeUndefined();
  });

  test('removing a field from the applied configuration removes it from the object', async () => {
    expect(
      (
        await k(
          'apply',
          '--server-side',
          '-f',
          manifest('ssa-remove', { displayName: 'One', description: 'gone soon', data: { a: 'eA==', b: 'eQ==' } }),
        )
      ).code,
    ).toBe(0);
    expect(
      (await k('apply', '--server-side', '-f', manifest('ssa-remove', { displayName: 'One', data: { a: 'eA==' } })))
        .code,
    ).toBe(0);
    expect((await getJson('ssa-remove')).spec).toEqual({ displayName: 'One', data: { a: 'eA==' } });
  });

  test('a field someone else also set stays when the applier lets go of it', async () => {
    expect(
      (await k('apply', '--server-side', '-f', manifest('ssa-shared', { displayName: 'One', description: 'shared' })))
        .code,
    ).toBe(0);
    expect(
      (
        await k(
          'apply',
          '--server-side',
          '--field-manager=other',
          '-f',
          manifest('ssa-shared', { description: 'shared' }),
        )
      ).code,
    ).toBe(0);
    expect((await k('apply', '--server-side', '-f', manifest('ssa-shared', { displayName: 'One' }))).code).toBe(0);
    expect((await getJson('ssa-shared')).spec).toEqual({ displayName: 'One', description: 'shared' });
  });
});

describe('apply patches over HTTP', () => {
  const path = (name: string) => `${GROUP_PATH}/namespaces/default/sharedsecrets/${name}`;
  const config = (name: string, spec: object) =>
    yaml.dump({ apiVersion: 'management.platform.sh/v1', kind: 'SharedSecret', metadata: { name }, spec });

  test('fieldManager is required (422) and nothing is created', async () => {
    const res = await ts.admin.patch(path('ssa-nomgr'), config('ssa-nomgr', { displayName: 'x' }), APPLY);
    expect(res.status).toBe(422);
    expect(res.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
    expect((await ts.admin.get(path('ssa-nomgr'))).status).toBe(404);
  });

  test('creates with 201, then updates with 200', async () => {
    const created = await ts.admin.patch(
      `${path('ssa-http')}?fieldManager=ci`,
      config('ssa-http', { displayName: 'x' }),
      APPLY,
    );
    expect(created.status).toBe(201);
    expect(created.body.metadata.managedFields[0]).toMatchObject({ manager: 'ci', operation: 'Apply' });
    const updated = await ts.admin.patch(
      `${path('ssa-http')}?fieldManager=ci`,
      config('ssa-http', { displayName: 'y' }),
      APPLY,
    );
    expect(updated.status).toBe(200);
    expect(updated.body.spec.displayName).toBe('y');
  });

  test('force on a non-apply patch is 422', async () => {
    const res = await ts.admin.patch(
      `${path('ssa-http')}?force=true`,
      { spec: { displayName: 'z' } },
      'application/merge-patch+json',
    );
    expect(res.status).toBe(422);
    expect(res.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    );
  });

  test('plain writes record an Update entry named after the fieldManager or the User-Agent', async () => {
    const res = await ts.admin.post(`${GROUP_PATH}/namespaces/default/sharedsecrets?fieldManager=my-controller`, {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 'ssa-update' },
      spec: { displayName: 'x' },
    });
    expect(res.body.metadata.managedFields).toEqual([
      expect.objectContaining({
        manager: 'my-controller',
        operation: 'Update',
        fieldsV1: { 'f:spec': { '.': {}, 'f:displayName': {} } },
      }),
    ]);
    const patched = await ts.admin.patch(
      path('ssa-update'),
      { metadata: { labels: { a: 'b' } } },
      'application/merge-patch+json',
      { headers: { 'User-Agent': 'deployer/1.2 (linux)' } },
    );
    // kube sorts entries by operation, time (seconds), then manager name.
    expect(patched.body.metadata.managedFields.map((e: any) => e.manager).sort()).toEqual([
      'deployer',
      'my-controller',
    ]);
    expect(patched.body.metadata.managedFields.find((e: any) => e.manager === 'deployer').fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } },
    });
  });
});
