/**
 * ProjectSecret, served like the other kinds in a project's namespace p-<project>, on a real server and etcd with
 * the host cluster stand-in (whose RBAC lets the tenants write ProjectSecrets):
 *
 * - outside an existing project's namespace it is refused (422 on metadata.namespace), for system:masters too;
 * - its data keys follow SharedSecret's rules; a reference is validated (namespace, name, keys) and needs an owner;
 * - naming a SharedSecret is a read of it: every write path (POST, PUT, JSON and merge patch, server-side apply, dry
 *   run) that sets or changes spec.sharedSecretRef is a 403 naming the SharedSecret when the caller may not get it,
 *   with nothing stored, and allowed when an access entry (or host RBAC) lets it get the SharedSecret;
 * - keys the SharedSecret does not have, and hand-written data beside a reference, are 422s naming the field.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  API_VERSION,
  APPLY_PATCH,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const SOURCE_NS = 'shared';
const PROJECT = uniq('web');
const PROJECT_NS = `p-${PROJECT}`;
const TABLE = { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };
const B64 = (s: string) => Buffer.from(s).toString('base64');

let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let alice: HttpClient;
let bob: HttpClient;

const projectSecrets = (ns = PROJECT_NS) => `${GROUP_PATH}/namespaces/${ns}/projectsecrets`;
const projectSecretPath = (name: string, ns = PROJECT_NS) => `${projectSecrets(ns)}/${name}`;

/** Lets alice and bob create and change ProjectSecrets in the project's namespace, as a platform admin would. */
function letTenantsWriteProjectSecrets(): void {
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'write-projectsecrets', namespace: PROJECT_NS },
    rules: [
      {
        apiGroups: ['management.platform.sh'],
        resources: ['projectsecrets'],
        verbs: ['create', 'get', 'list', 'update', 'patch'],
      },
    ],
  });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'tenants-write-projectsecrets', namespace: PROJECT_NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'write-projectsecrets' },
    subjects: ['alice', 'bob'].map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
  });
}

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(SOURCE_NS);
  host.addNamespace(PROJECT_NS);
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], alice: [], bob: [] },
    {
      kubeconfig: host.kubeconfigPath,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
    },
  );
  ({ root, alice, bob } = server.as);
  ts = server;
  letTenantsWriteProjectSecrets();
  expect(
    (await root.post(PROJECTS_PATH, { apiVersion: API_VERSION, kind: 'Project', metadata: { name: PROJECT } })).status,
  ).toBe(201);
  // "registry": alice may get it (an access entry), bob may not. Its keys are user and password.
  const source = await root.post(sharedSecretsPath(SOURCE_NS), {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 'registry' },
    spec: {
      data: { user: B64('robot'), password: B64('hunter2') },
      access: [{ verbs: ['get'], users: ['alice'] }],
    },
  });
  expect(source.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
}, 60_000);

function projectSecret(name: string, spec: Record<string, unknown>): Record<string, any> {
  return { apiVersion: API_VERSION, kind: 'ProjectSecret', metadata: { name }, spec };
}

const REF = { namespace: SOURCE_NS, name: 'registry' };

/** Waits until the access sync has written its finalizer and condition, after which the object stays as it is. */
async function accessSynced(path: string): Promise<void> {
  await waitFor(`${path} to be AccessSynced`, async () => {
    const obj = (await root.get(path)).body;
    return obj.status?.conditions?.some((c: any) => c.type === 'AccessSynced' && c.status === 'True');
  });
}

/** Expects a Status of `code` and `reason`, and returns its message. */
function refused(res: { status: number; body: any }, code: number, reason: string): string {
  expect({ status: res.status, kind: res.body?.kind, reason: res.body?.reason }).toEqual({
    status: code,
    kind: 'Status',
    reason,
  });
  return res.body.message;
}

describe('the kind', () => {
  test('create, get, list as a Table, patch, delete in a project namespace', async () => {
    const name = uniq('own');
    const created = await root.post(
      projectSecrets(),
      projectSecret(name, { displayName: 'Own', owner: { user: 'alice' }, data: { token: B64('t0k3n') } }),
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'ProjectSecret', metadata: { name, namespace: PROJECT_NS } });
    expect((await alice.get(projectSecretPath(name))).body.spec.data).toEqual({ token: B64('t0k3n') });
    const table = await root.get(projectSecrets(), { headers: TABLE });
    expect(table.body.columnDefinitions.map((c: any) => c.name)).toEqual([
      'Name',
      'Display Name',
      'Source Namespace',
      'Source',
      'Keys',
      'Synced',
      'Delivered',
      'Targets',
      'Age',
    ]);
    const row = table.body.rows.find((r: any) => r.cells[0] === name);
    // No delivery runs here: no condition, no line.
    expect(row.cells.slice(0, 8)).toEqual([name, 'Own', null, null, 1, null, null, null]);
    const patched = await alice.patch(projectSecretPath(name), { spec: { data: { token: B64('new') } } }, MERGE_PATCH);
    expect(patched.status).toBe(200);
    expect(patched.body.spec.data.token).toBe(B64('new'));
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
  });

  test.each([
    ['a namespace that is not a project namespace', 'default', 'not the namespace of a Project'],
    ['the namespace of a project that does not exist', 'p-nosuchproject', 'no Project "nosuchproject" exists'],
  ])('%s is refused, for system:masters too', async (_what, ns, why) => {
    const name = uniq('lost');
    // The namespace exists in the host (else the host's namespace lifecycle answers 404 first).
    host.addNamespace(ns);
    const res = await root.post(projectSecrets(ns), projectSecret(name, { data: { a: B64('x') } }));
    const message = refused(res, 422, 'Invalid');
    expect(res.body.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'metadata.namespace',
        message: `Invalid value: "${ns}": ${why}: a ProjectSecret is created in the namespace p-<project> of its Project`,
      },
    ]);
    expect(message).not.toContain(B64('x'));
    expect((await root.get(projectSecretPath(name, ns))).status).toBe(404);
  });

  test('bad data keys and a bad reference are 422s naming each field', async () => {
    const name = uniq('bad');
    const res = await root.post(
      projectSecrets(),
      projectSecret(name, {
        sharedSecretRef: { namespace: 'Not_A_Namespace', keys: ['ok', 'ok', 'no/slash'] },
      }),
    );
    refused(res, 422, 'Invalid');
    expect(res.body.details.causes.map((c: any) => `${c.reason} ${c.field}`)).toEqual([
      'FieldValueInvalid spec.sharedSecretRef.namespace',
      'FieldValueRequired spec.sharedSecretRef.name',
      'FieldValueDuplicate spec.sharedSecretRef.keys[1]',
      'FieldValueInvalid spec.sharedSecretRef.keys[2]',
      'FieldValueRequired spec.owner',
    ]);
    const badKey = await root.post(projectSecrets(), projectSecret(name, { data: { 'a/b': B64('v') } }));
    refused(badKey, 422, 'Invalid');
    expect(badKey.body.details.causes.map((c: any) => c.field)).toEqual(['spec.data[a/b]']);
    expect((await root.get(projectSecretPath(name))).status).toBe(404);
  });
});

describe('naming a SharedSecret is a read of it', () => {
  test('alice, who may get it, creates a ProjectSecret synced from it', async () => {
    const name = uniq('synced');
    const res = await alice.post(
      projectSecrets(),
      projectSecret(name, { owner: { user: 'alice' }, sharedSecretRef: { ...REF, keys: ['user'] } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.spec.sharedSecretRef).toEqual({ ...REF, keys: ['user'] });
  });

  test('bob, who may not, gets a 403 naming it on create, and a dry run checks the same', async () => {
    for (const query of ['', '?dryRun=All']) {
      const name = uniq('stolen');
      const res = await bob.post(
        `${projectSecrets()}${query}`,
        projectSecret(name, { owner: { user: 'bob' }, sharedSecretRef: REF }),
      );
      const message = refused(res, 403, 'Forbidden');
      expect(message).toBe(
        `projectsecrets.management.platform.sh "${name}" is forbidden: User "bob" cannot get SharedSecret shared/registry named in spec.sharedSecretRef: naming a SharedSecret is a read of it, allowed to its owner, an access entry granting get, or RBAC`,
      );
      expect((await root.get(projectSecretPath(name))).status).toBe(404);
    }
  });

  test('a SharedSecret that does not exist is answered as one bob may not get: he learns nothing of it', async () => {
    const res = await bob.post(
      projectSecrets(),
      projectSecret(uniq('guess'), { owner: { user: 'bob' }, sharedSecretRef: { namespace: SOURCE_NS, name: 'nope' } }),
    );
    expect(refused(res, 403, 'Forbidden')).toContain('cannot get SharedSecret shared/nope');
  });

  test('bob cannot point his own ProjectSecret at it by any update: PUT, JSON patch, merge patch, apply, dry run', async () => {
    const name = uniq('bobs');
    const created = await bob.post(
      projectSecrets(),
      projectSecret(name, { owner: { user: 'bob' }, data: { mine: B64('x') } }),
    );
    expect(created.status).toBe(201);
    const path = projectSecretPath(name);
    await accessSynced(path);
    // The object as read just now (the access sync writes its finalizer and status meanwhile), pointed at "registry".
    const pointed = async () => {
      const put = (await bob.get(path)).body;
      delete put.spec.data;
      put.spec.sharedSecretRef = REF;
      return put;
    };
    const attempts = [
      async () => bob.put(path, await pointed()),
      async () => bob.put(`${path}?dryRun=All`, await pointed()),
      () =>
        bob.patch(
          path,
          [
            { op: 'remove', path: '/spec/data' },
            { op: 'add', path: '/spec/sharedSecretRef', value: REF },
          ],
          JSON_PATCH,
        ),
      () => bob.patch(path, { spec: { data: null, sharedSecretRef: REF } }, MERGE_PATCH),
      () => bob.patch(`${path}?dryRun=All`, { spec: { data: null, sharedSecretRef: REF } }, MERGE_PATCH),
      () =>
        bob.patch(
          `${path}?fieldManager=bob`,
          {
            apiVersion: API_VERSION,
            kind: 'ProjectSecret',
            metadata: { name },
            spec: { owner: { user: 'bob' }, sharedSecretRef: REF },
          },
          APPLY_PATCH,
        ),
    ];
    for (const attempt of attempts) {
      expect(refused(await attempt(), 403, 'Forbidden')).toContain(
        'User "bob" cannot get SharedSecret shared/registry',
      );
    }
    const stored = (await root.get(path)).body;
    expect(stored.spec).toEqual({ owner: { user: 'bob' }, data: { mine: B64('x') } });
    expect(stored.metadata.generation).toBe(1);
  });

  test('an apply that creates is checked as a create', async () => {
    const name = uniq('applied');
    const res = await bob.patch(
      `${projectSecretPath(name)}?fieldManager=bob`,
      {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name },
        spec: { owner: { user: 'bob' }, sharedSecretRef: REF },
      },
      APPLY_PATCH,
    );
    expect(refused(res, 403, 'Forbidden')).toContain('User "bob" cannot get SharedSecret shared/registry');
    expect((await root.get(projectSecretPath(name))).status).toBe(404);
  });

  test('an update that keeps the reference needs no new check; changing it does', async () => {
    const name = uniq('kept');
    // root makes one synced from "registry" and owned by bob: bob may change its description...
    expect(
      (await root.post(projectSecrets(), projectSecret(name, { owner: { user: 'bob' }, sharedSecretRef: REF }))).status,
    ).toBe(201);
    const path = projectSecretPath(name);
    expect((await bob.patch(path, { spec: { description: 'ours' } }, MERGE_PATCH)).status).toBe(200);
    // ...but not point it at another key list of the same SharedSecret, which is a new read of it.
    const res = await bob.patch(path, { spec: { sharedSecretRef: { ...REF, keys: ['password'] } } }, MERGE_PATCH);
    expect(refused(res, 403, 'Forbidden')).toContain('User "bob" cannot get SharedSecret shared/registry');
    expect((await root.get(path)).body.spec.sharedSecretRef).toEqual(REF);
  });
});

describe('bad input beside a reference', () => {
  test('keys the SharedSecret does not have are a 422 naming each', async () => {
    const name = uniq('keys');
    const res = await alice.post(
      projectSecrets(),
      projectSecret(name, { owner: { user: 'alice' }, sharedSecretRef: { ...REF, keys: ['user', 'token', 'cert'] } }),
    );
    refused(res, 422, 'Invalid');
    expect(res.body.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'spec.sharedSecretRef.keys[1]',
        message: 'Invalid value: "token": SharedSecret shared/registry has no such key (its keys: password, user)',
      },
      {
        reason: 'FieldValueInvalid',
        field: 'spec.sharedSecretRef.keys[2]',
        message: 'Invalid value: "cert": SharedSecret shared/registry has no such key (its keys: password, user)',
      },
    ]);
    expect((await root.get(projectSecretPath(name))).status).toBe(404);
  });

  test('hand-written data together with a reference is a 422 on spec.data, its value never in the answer', async () => {
    const name = uniq('both');
    const res = await alice.post(
      projectSecrets(),
      projectSecret(name, { owner: { user: 'alice' }, sharedSecretRef: REF, data: { user: B64('s3cr3t-value') } }),
    );
    refused(res, 422, 'Invalid');
    expect(res.body.details.causes.map((c: any) => `${c.reason} ${c.field}`)).toEqual([
      'FieldValueForbidden spec.data',
    ]);
    expect(JSON.stringify(res.body)).not.toContain(B64('s3cr3t-value'));
    expect((await root.get(projectSecretPath(name))).status).toBe(404);
  });

  test('data of a synced ProjectSecret cannot be changed by hand, by system:masters either', async () => {
    const name = uniq('handwrite');
    expect(
      (await alice.post(projectSecrets(), projectSecret(name, { owner: { user: 'alice' }, sharedSecretRef: REF })))
        .status,
    ).toBe(201);
    const path = projectSecretPath(name);
    // Once the sync has filled it, nothing changes it by hand.
    const synced = await waitFor(`${path} to be Synced`, async () => {
      const obj = (await root.get(path)).body;
      return obj.status?.conditions?.some((c: any) => c.type === 'Synced' && c.status === 'True') && obj;
    });
    expect(synced.spec.data).toEqual({ user: B64('robot'), password: B64('hunter2') });
    for (const client of [alice, root]) {
      const res = await client.patch(path, { spec: { data: { user: B64('mine') } } }, MERGE_PATCH);
      refused(res, 422, 'Invalid');
      expect(res.body.details.causes[0]).toMatchObject({ reason: 'FieldValueForbidden', field: 'spec.data' });
    }
    const stored = (await root.get(path)).body;
    expect({ data: stored.spec.data, generation: stored.metadata.generation }).toEqual({
      data: synced.spec.data,
      generation: synced.metadata.generation,
    });
  });
});
