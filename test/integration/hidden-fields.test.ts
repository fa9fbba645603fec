/**
 * Hidden fields (Strategy.hiddenFields; for OwnedAccessKeys `spec.key`, stored as its hash, and
 * `spec.identity.connectorData`) through every kind of write: JSON patch, merge patch, server-side apply, /status
 * and dry run act on what a client may see, so no patch can read a hidden value (copy, move, test), none shows up in
 * an answer, an error or a warning, and every write carries them over as stored.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { createHash } from 'node:crypto';
import { kubectl } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { API_VERSION, APPLY_PATCH, GROUP, JSON_PATCH, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const CONNECTOR_DATA = 'c0nnect0r-s3cret';

let ts: TestServer;
let etcd: Etcd3;
let admin: HttpClient;

const hashOf = (key: string) => `sha256:${createHash('sha256').update(key).digest('hex')}`;

interface Made {
  name: string;
  key: string;
  hash: string;
}

/** A key of alice's with connectorData; what is secret about it. */
async function makeKey(): Promise<Made> {
  const name = uniq('hidden');
  const res = await admin.post(KEYS, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec: { user: 'alice', identity: { username: 'alice', connectorData: CONNECTOR_DATA } },
  });
  expect(res.status).toBe(201);
  return { name, key: res.body.spec.key, hash: hashOf(res.body.spec.key) };
}

async function stored(name: string): Promise<{ value: any; modRevision: string }> {
  const res = await etcd.get(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`).exec();
  const kv = res.kvs[0];
  return { value: JSON.parse(kv.value.toString()), modRevision: String(kv.mod_revision) };
}

/** Neither the key, nor its hash (or any part of it long enough to matter), nor connectorData, in body or headers. */
function expectNoSecret(res: HttpResponse, made: Made): void {
  const text = `${res.text}\n${JSON.stringify(res.headers)}`;
  expect(text).not.toContain(made.key);
  expect(text).not.toContain(made.hash.slice('sha256:'.length, 'sha256:'.length + 16));
  expect(text).not.toContain(CONNECTOR_DATA);
}

/** A write that fails must leave the stored object as it was. */
async function expectRefused(made: Made, send: () => Promise<HttpResponse>, code = 422): Promise<HttpResponse> {
  const before = await stored(made.name);
  const res = await send();
  expectNoSecret(res, made);
  expect(res.status).toBe(code);
  expect(res.body).toMatchObject({ kind: 'Status', status: 'Failure', code });
  const after = await stored(made.name);
  expect(after.modRevision).toBe(before.modRevision);
  return res;
}

async function expectHiddenKept(made: Made): Promise<any> {
  const { value } = await stored(made.name);
  expect(value.spec.key).toBe(made.hash);
  expect(value.spec.identity.connectorData).toBe(CONNECTOR_DATA);
  return value;
}

const keyPath = (name: string) => `${KEYS}/${name}`;
/** The keys are made without annotations: a patch that copies into one makes the map first. */
const ANNOTATIONS = { op: 'add', path: '/metadata/annotations', value: {} };

beforeAll(async () => {
  ts = await startTestServer();
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  admin = ts.admin;
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
}, 60_000);

describe('JSON patch acts on what the caller may see', () => {
  test.each([
    [
      'copy of the key hash into an annotation',
      () => [ANNOTATIONS, { op: 'copy', from: '/spec/key', path: '/metadata/annotations/leak' }],
    ],
    [
      'copy of connectorData into an annotation',
      () => [ANNOTATIONS, { op: 'copy', from: '/spec/identity/connectorData', path: '/metadata/annotations/leak' }],
    ],
    [
      'move of connectorData into displayName',
      () => [{ op: 'move', from: '/spec/identity/connectorData', path: '/spec/displayName' }],
    ],
    ['copy of the key hash into a field of another type', () => [{ op: 'copy', from: '/spec/key', path: '/spec/ttl' }]],
    [
      'test of the right hash (an oracle for the stored value)',
      (m: Made) => [{ op: 'test', path: '/spec/key', value: m.hash }],
    ],
    [
      'test of the right connectorData',
      () => [{ op: 'test', path: '/spec/identity/connectorData', value: CONNECTOR_DATA }],
    ],
    ['remove of the key', () => [{ op: 'remove', path: '/spec/key' }]],
    [
      'replace of the key (there is none to replace)',
      () => [{ op: 'replace', path: '/spec/key', value: 'pak_another-key-0123456789' }],
    ],
  ])('%s is 422, echoes nothing secret and changes nothing', async (_what, ops) => {
    const made = await makeKey();
    const res = await expectRefused(made, () => admin.patch(keyPath(made.name), ops(made), JSON_PATCH));
    expect(res.body.reason).toBe('Invalid');
    expect(res.text).not.toContain('pak_another-key');
    await expectHiddenKept(made);
  });

  test('on /status: copying the key hash into status is 422 and changes nothing', async () => {
    const made = await makeKey();
    const ops = [
      { op: 'add', path: '/status', value: {} },
      { op: 'copy', from: '/spec/key', path: '/status/lastActivity' },
    ];
    await expectRefused(made, () => admin.patch(`${keyPath(made.name)}/status`, ops, JSON_PATCH));
    await expectHiddenKept(made);
  });

  test('with dryRun=All: a copy of a hidden field is refused as without it', async () => {
    const made = await makeKey();
    await expectRefused(made, () =>
      admin.patch(
        `${keyPath(made.name)}?dryRun=All`,
        [ANNOTATIONS, { op: 'copy', from: '/spec/identity/connectorData', path: '/metadata/annotations/leak' }],
        JSON_PATCH,
      ),
    );
  });

  test('an ordinary patch keeps both hidden fields, and its answer shows neither', async () => {
    const made = await makeKey();
    const res = await admin.patch(
      keyPath(made.name),
      [
        { op: 'add', path: '/spec/displayName', value: 'CI' },
        { op: 'add', path: '/spec/identity/email', value: 'a@example.com' },
      ],
      JSON_PATCH,
    );
    expect(res.status).toBe(200);
    expectNoSecret(res, made);
    expect(res.body.spec).not.toHaveProperty('key');
    expect(res.body.spec.identity).toEqual({ username: 'alice', email: 'a@example.com' });
    const value = await expectHiddenKept(made);
    expect(value.spec.displayName).toBe('CI');
  });

  test('add of spec.key behaves as a PUT sending it: the same key is fine, another is 422 with the value redacted', async () => {
    const made = await makeKey();
    const same = await admin.patch(keyPath(made.name), [{ op: 'add', path: '/spec/key', value: made.key }], JSON_PATCH);
    expect(same.status).toBe(200);
    expectNoSecret(same, made);
    await expectHiddenKept(made);
    const other = await expectRefused(made, () =>
      admin.patch(
        keyPath(made.name),
        [{ op: 'add', path: '/spec/key', value: 'pak_another-key-0123456789' }],
        JSON_PATCH,
      ),
    );
    expect(other.body.message).toBe(
      `OwnedAccessKey.${GROUP} "${made.name}" is invalid: spec.key: Invalid value: "<redacted>": field is immutable`,
    );
    expect(other.text).not.toContain('pak_another-key');
  });

  test('add of connectorData behaves as a PUT sending it: it is stored as sent and not shown', async () => {
    const made = await makeKey();
    const res = await admin.patch(
      keyPath(made.name),
      [{ op: 'add', path: '/spec/identity/connectorData', value: 'new-connector-data' }],
      JSON_PATCH,
    );
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('new-connector-data');
    expect((await stored(made.name)).value.spec.identity.connectorData).toBe('new-connector-data');
  });
});

describe('merge patch', () => {
  test('keeps both hidden fields; null for one of them removes nothing the caller cannot see', async () => {
    const made = await makeKey();
    const res = await admin.patch(
      keyPath(made.name),
      { spec: { description: 'patched', key: null, identity: { email: 'a@example.com', connectorData: null } } },
      MERGE_PATCH,
    );
    expect(res.status).toBe(200);
    expectNoSecret(res, made);
    expect(res.body.spec.identity).toEqual({ username: 'alice', email: 'a@example.com' });
    await expectHiddenKept(made);
  });
});

describe('server-side apply', () => {
  const config = (name: string, spec: Record<string, unknown>) =>
    JSON.stringify({ apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name }, spec });

  test('merges into the object the caller may see: hidden fields are kept, answered by neither, owned as before', async () => {
    const made = await makeKey();
    const res = await admin.patch(
      `${keyPath(made.name)}?fieldManager=applier`,
      config(made.name, { user: 'alice', displayName: 'applied', identity: { username: 'alice' } }),
      APPLY_PATCH,
    );
    expect(res.status).toBe(200);
    expectNoSecret(res, made);
    expect(res.body.spec).toMatchObject({ user: 'alice', displayName: 'applied', identity: { username: 'alice' } });
    expect(res.body.spec).not.toHaveProperty('key');
    await expectHiddenKept(made);
    const entries = res.body.metadata.managedFields as any[];
    const applier = entries.find((e) => e.manager === 'applier');
    expect(applier).toMatchObject({ operation: 'Apply' });
    expect(applier.fieldsV1).toEqual({
      'f:spec': { 'f:user': {}, 'f:displayName': {}, 'f:identity': { 'f:username': {} } },
    });
    // The creator still owns the hidden fields it set: they are still there.
    const creator = entries.find((e) => e.operation === 'Update');
    expect(creator.fieldsV1['f:spec']).toMatchObject({ 'f:key': {}, 'f:identity': { 'f:connectorData': {} } });

    // The same apply again changes nothing, so nothing is written (the hidden fields do not count as a change).
    const before = await stored(made.name);
    const same = await admin.patch(
      `${keyPath(made.name)}?fieldManager=applier`,
      config(made.name, { user: 'alice', displayName: 'applied', identity: { username: 'alice' } }),
      APPLY_PATCH,
    );
    expect(same.status).toBe(200);
    expect((await stored(made.name)).modRevision).toBe(before.modRevision);

    // Applying again without identity's username prunes what this manager applied, and connectorData goes with
    // identity only if nothing is left of it: here the creator still owns identity, so it stays.
    const again = await admin.patch(
      `${keyPath(made.name)}?fieldManager=applier`,
      config(made.name, { user: 'alice', displayName: 'applied' }),
      APPLY_PATCH,
    );
    expect(again.status).toBe(200);
    expectNoSecret(again, made);
    await expectHiddenKept(made);
  });

  test('an apply of spec.key: 409 while its creator owns it; forced, another key is 422 with the value redacted and the same key is accepted', async () => {
    const made = await makeKey();
    // The applier sees no key, so setting one changes a field another manager owns (kube's rule; no value shown).
    const conflict = await expectRefused(
      made,
      () =>
        admin.patch(
          `${keyPath(made.name)}?fieldManager=applier`,
          config(made.name, { user: 'alice', key: made.key }),
          APPLY_PATCH,
        ),
      409,
    );
    expect(conflict.body.reason).toBe('Conflict');
    expect(conflict.body.message).toContain('.spec.key');
    const other = await expectRefused(made, () =>
      admin.patch(
        `${keyPath(made.name)}?fieldManager=applier&force=true`,
        config(made.name, { user: 'alice', key: 'pak_another-key-0123456789' }),
        APPLY_PATCH,
      ),
    );
    expect(other.body.message).toContain('spec.key: Invalid value: "<redacted>": field is immutable');
    expect(other.text).not.toContain('pak_another-key');
    const same = await admin.patch(
      `${keyPath(made.name)}?fieldManager=applier&force=true`,
      config(made.name, { user: 'alice', key: made.key }),
      APPLY_PATCH,
    );
    expect(same.status).toBe(200);
    expectNoSecret(same, made);
    await expectHiddenKept(made);
  });

  test('with dryRun=All the answer shows no hidden field and nothing is written', async () => {
    const made = await makeKey();
    const before = await stored(made.name);
    const res = await admin.patch(
      `${keyPath(made.name)}?fieldManager=applier&dryRun=All`,
      config(made.name, { user: 'alice', displayName: 'dry' }),
      APPLY_PATCH,
    );
    expect(res.status).toBe(200);
    expectNoSecret(res, made);
    expect(res.body.spec.displayName).toBe('dry');
    expect((await stored(made.name)).modRevision).toBe(before.modRevision);
  });
});

describe('kubectl', () => {
  const k = (args: string[], stdin?: string) => kubectl(args, { kubeconfig: ts.kubeconfig, stdin });
  const manifest = (name: string, displayName: string) =>
    JSON.stringify({
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name },
      spec: {
        user: 'alice',
        key: 'pak_kubectl-key-0123456789',
        displayName,
        identity: { username: 'alice', connectorData: CONNECTOR_DATA },
      },
    });

  test('apply twice keeps both hidden fields; a json patch copying one fails without showing it', async () => {
    const name = uniq('kubectl');
    const made = { name, key: 'pak_kubectl-key-0123456789', hash: hashOf('pak_kubectl-key-0123456789') };
    expect(await k(['apply', '-f', '-'], manifest(name, 'one'))).toMatchObject({
      code: 0,
      stdout: `ownedaccesskey.${GROUP}/${name} created\n`,
    });
    expect(await k(['apply', '-f', '-'], manifest(name, 'two'))).toMatchObject({
      code: 0,
      stdout: `ownedaccesskey.${GROUP}/${name} configured\n`,
    });
    const value = await expectHiddenKept(made);
    expect(value.spec.displayName).toBe('two');
    expect(value.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).not.toContain(made.key);

    const before = await stored(name);
    const copy = await k([
      'patch',
      'ownedaccesskey',
      name,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'copy', from: '/spec/identity/connectorData', path: '/spec/displayName' }]),
    ]);
    expect(copy.code).toBe(1);
    expect(copy.stderr).toContain('The request is invalid');
    for (const text of [copy.stdout, copy.stderr]) {
      expect(text).not.toContain(CONNECTOR_DATA);
      expect(text).not.toContain(made.key);
    }
    expect((await stored(name)).modRevision).toBe(before.modRevision);
    const shown = await k(['get', 'ownedaccesskey', name, '-o', 'json']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain(CONNECTOR_DATA);
    expect(shown.stdout).not.toContain(made.hash);
  });
});
