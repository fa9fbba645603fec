/**
 * Kubernetes object rules a client relies on: server-owned metadata (uid, creationTimestamp, generation,
 * resourceVersion, selfLink), optimistic concurrency, generateName, immutable fields, the status subresource,
 * patch failures and dryRun. Stored state is checked through the API and directly in etcd.
 */
import { describe, test, expect } from '@jest/globals';
import type { TestServer } from '../support/server.js';
import type { HttpResponse } from '../support/http.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  clusterPath,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
  type EtcdPeek,
} from '../support/fixtures.js';

const NS = 'rules';
const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

let ts: TestServer;
let peek: EtcdPeek;

useServerWithPeek((env) => ({ ts, peek } = env));

const secrets = (ns = NS) => sharedSecretsPath(ns);
const secret = (name: string, ns = NS) => sharedSecretPath(ns, name);

function expectStatus(res: HttpResponse, code: number, reason: string, message?: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: code,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason },
  });
  if (message !== undefined) expect(res.body.message).toContain(message);
}

function causes(res: HttpResponse): { reason: string; field: string; message: string }[] {
  return res.body?.details?.causes ?? [];
}

function secretBody(name: string, extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name },
    spec: { displayName: name, data: { key: 'dmFsdWU=' } },
    ...extra,
  };
}

async function createSecret(name: string, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await ts.admin.post(secrets(), secretBody(name, extra));
  expect(res.status).toBe(201);
  return res.body;
}

async function getSecret(name: string): Promise<any> {
  const res = await ts.admin.get(secret(name));
  expect(res.status).toBe(200);
  return res.body;
}

/** The stored object is exactly as before: same API answer and same etcd revision. */
async function expectUnchanged(name: string, before: any): Promise<void> {
  expect(await getSecret(name)).toEqual(before);
  expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.modRevision).toBe(before.metadata.resourceVersion);
}

describe('uid and creationTimestamp', () => {
  test('are set by the server on create; client-sent values are ignored', async () => {
    const name = uniq('sysfields');
    const res = await ts.admin.post(
      secrets(),
      secretBody(name, { metadata: { name, uid: 'client-chosen-uid', creationTimestamp: '2001-01-01T00:00:00Z' } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.metadata.uid).not.toBe('client-chosen-uid');
    expect(res.body.metadata.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(res.body.metadata.creationTimestamp).not.toBe('2001-01-01T00:00:00Z');
    expect(res.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const stored = await peek.entry(peek.sharedSecretKey(NS, name));
    expect(stored?.value.metadata.uid).toBe(res.body.metadata.uid);
    expect(stored?.value.metadata.creationTimestamp).toBe(res.body.metadata.creationTimestamp);
  });

  test('two objects get different uids', async () => {
    const a = await createSecret(uniq('uid-a'));
    const b = await createSecret(uniq('uid-b'));
    expect(a.metadata.uid).not.toBe(b.metadata.uid);
  });

  test('are never changed by PUT (even when left out of the body) or by patches', async () => {
    const name = uniq('keep-sys');
    const created = await createSecret(name);
    const { uid, creationTimestamp } = created.metadata;

    const body = structuredClone(created);
    delete body.metadata.uid;
    delete body.metadata.creationTimestamp;
    body.spec.displayName = 'put without uid';
    const put = await ts.admin.put(secret(name), body);
    expect(put.status).toBe(200);
    expect(put.body.metadata).toMatchObject({ uid, creationTimestamp });

    const merge = await ts.admin.patch(secret(name), { spec: { displayName: 'merge' } }, MERGE_PATCH);
    expect(merge.status).toBe(200);
    expect(merge.body.metadata).toMatchObject({ uid, creationTimestamp });

    const json = await ts.admin.patch(
      secret(name),
      [{ op: 'replace', path: '/spec/displayName', value: 'json' }],
      JSON_PATCH,
    );
    expect(json.status).toBe(200);
    expect(json.body.metadata).toMatchObject({ uid, creationTimestamp });

    expect((await getSecret(name)).metadata).toMatchObject({ uid, creationTimestamp });
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value.metadata).toMatchObject({
      uid,
      creationTimestamp,
    });
  });

  test('a PUT with a different uid is 409 Conflict and changes nothing', async () => {
    const name = uniq('put-uid');
    const created = await createSecret(name);
    const res = await ts.admin.put(secret(name), {
      ...created,
      metadata: { ...created.metadata, uid: '00000000-0000-0000-0000-000000000000' },
      spec: { displayName: 'x' },
    });
    expectStatus(
      res,
      409,
      'Conflict',
      `Operation cannot be fulfilled on sharedsecrets.management.platform.sh "${name}"`,
    );
    await expectUnchanged(name, created);
  });

  test('changing uid via patch is 422 "field is immutable" and changes nothing', async () => {
    const name = uniq('patch-uid');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      secret(name),
      { metadata: { uid: '00000000-0000-0000-0000-000000000000' } },
      MERGE_PATCH,
    );
    expectStatus(res, 422, 'Invalid', 'field is immutable');
    expect(causes(res)).toContainEqual(
      expect.objectContaining({
        field: 'metadata.uid',
        reason: 'FieldValueInvalid',
        message: expect.stringContaining('field is immutable'),
      }),
    );
    await expectUnchanged(name, created);
  });

  test('changing creationTimestamp via patch is 422 "field is immutable" and changes nothing', async () => {
    const name = uniq('patch-ctime');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      secret(name),
      [{ op: 'replace', path: '/metadata/creationTimestamp', value: '2001-01-01T00:00:00Z' }],
      JSON_PATCH,
    );
    expectStatus(res, 422, 'Invalid', 'field is immutable');
    expect(causes(res)).toContainEqual(
      expect.objectContaining({
        field: 'metadata.creationTimestamp',
        reason: 'FieldValueInvalid',
        message: expect.stringContaining('field is immutable'),
      }),
    );
    await expectUnchanged(name, created);
  });
});

describe('selfLink', () => {
  test('is never returned (create, get, list, update, patch) nor stored, even when the client sends one', async () => {
    const name = uniq('selflink');
    const link = `/apis/${API_VERSION}/namespaces/${NS}/sharedsecrets/${name}`;
    const created = await ts.admin.post(secrets(), secretBody(name, { metadata: { name, selfLink: link } }));
    expect(created.status).toBe(201);
    expect(created.body.metadata).not.toHaveProperty('selfLink');
    expect((await getSecret(name)).metadata).not.toHaveProperty('selfLink');

    const list = await ts.admin.get(secrets());
    expect(list.body.metadata).not.toHaveProperty('selfLink');
    for (const item of list.body.items) expect(item.metadata).not.toHaveProperty('selfLink');

    const put = await ts.admin.put(secret(name), {
      ...created.body,
      metadata: { ...created.body.metadata, selfLink: link },
    });
    expect(put.status).toBe(200);
    expect(put.body.metadata).not.toHaveProperty('selfLink');

    const patch = await ts.admin.patch(secret(name), { metadata: { selfLink: link, labels: { a: 'b' } } }, MERGE_PATCH);
    expect(patch.status).toBe(200);
    expect(patch.body.metadata).not.toHaveProperty('selfLink');

    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value.metadata).not.toHaveProperty('selfLink');
  });
});

describe('resourceVersion', () => {
  test("equals the etcd key's mod revision and is not stored in the value (create, update, get, list)", async () => {
    const name = uniq('rv');
    const created = await createSecret(name);
    let entry = await peek.entry(peek.sharedSecretKey(NS, name));
    expect(created.metadata.resourceVersion).toBe(entry?.modRevision);
    expect(entry?.value.metadata).not.toHaveProperty('resourceVersion');

    const updated = await ts.admin.patch(secret(name), { spec: { displayName: 'changed' } }, MERGE_PATCH);
    expect(updated.status).toBe(200);
    entry = await peek.entry(peek.sharedSecretKey(NS, name));
    expect(updated.body.metadata.resourceVersion).toBe(entry?.modRevision);
    expect(Number(updated.body.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    expect(entry?.value.metadata).not.toHaveProperty('resourceVersion');

    expect((await getSecret(name)).metadata.resourceVersion).toBe(entry?.modRevision);
    const list = await ts.admin.get(secrets());
    const item = list.body.items.find((i: any) => i.metadata.name === name);
    expect(item.metadata.resourceVersion).toBe(entry?.modRevision);
  });

  test('a cluster resourceVersion also equals its key mod revision', async () => {
    const name = uniq('rv-cl');
    const res = await ts.admin.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name },
      spec: { networkPeer: true },
    });
    expect(res.status).toBe(201);
    const entry = await peek.entry(peek.clusterKey(name));
    expect(res.body.metadata.resourceVersion).toBe(entry?.modRevision);
    expect(entry?.value.metadata).not.toHaveProperty('resourceVersion');
  });

  test("PUT with a stale resourceVersion is 409 Conflict with kube's message and changes nothing", async () => {
    const name = uniq('stale');
    const created = await createSecret(name);
    const first = await ts.admin.put(secret(name), { ...created, spec: { displayName: 'first writer' } });
    expect(first.status).toBe(200);
    const res = await ts.admin.put(secret(name), { ...created, spec: { displayName: 'second writer' } });
    expectStatus(res, 409, 'Conflict');
    expect(res.body.message).toBe(
      `Operation cannot be fulfilled on sharedsecrets.management.platform.sh "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
    expect(res.body.details).toMatchObject({ name, group: GROUP, kind: 'sharedsecrets' });
    await expectUnchanged(name, first.body);
  });

  test('a resourceVersion inside a merge patch is a precondition: stale is 409 and changes nothing', async () => {
    const name = uniq('stale-patch');
    const created = await createSecret(name);
    const current = (await ts.admin.patch(secret(name), { spec: { displayName: 'moved on' } }, MERGE_PATCH)).body;
    const res = await ts.admin.patch(
      secret(name),
      { metadata: { resourceVersion: created.metadata.resourceVersion }, spec: { displayName: 'late' } },
      MERGE_PATCH,
    );
    expectStatus(res, 409, 'Conflict', 'the object has been modified');
    await expectUnchanged(name, current);
  });

  test('PUT without resourceVersion is 422 "must be specified for an update" and changes nothing', async () => {
    const name = uniq('no-rv');
    const created = await createSecret(name);
    const body = structuredClone(created);
    delete body.metadata.resourceVersion;
    body.spec.displayName = 'unconditional';
    const res = await ts.admin.put(secret(name), body);
    expectStatus(res, 422, 'Invalid', 'must be specified for an update');
    expect(res.body.message).toBe(
      `sharedsecrets.management.platform.sh "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
    );
    expect(causes(res)).toContainEqual(
      expect.objectContaining({
        field: 'metadata.resourceVersion',
        message: expect.stringContaining('must be specified for an update'),
      }),
    );
    await expectUnchanged(name, created);
  });

  test('an update that changes nothing keeps the resourceVersion and does not write to etcd', async () => {
    const name = uniq('noop');
    const created = await createSecret(name, { metadata: { name, labels: { a: 'b' } } });
    const put = await ts.admin.put(secret(name), created);
    expect(put.status).toBe(200);
    expect(put.body).toEqual(created);
    const patch = await ts.admin.patch(
      secret(name),
      { metadata: { labels: { a: 'b' } }, spec: { displayName: created.spec.displayName } },
      MERGE_PATCH,
    );
    expect(patch.status).toBe(200);
    expect(patch.body.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    const jsonTest = await ts.admin.patch(
      secret(name),
      [{ op: 'test', path: '/metadata/labels/a', value: 'b' }],
      JSON_PATCH,
    );
    expect(jsonTest.status).toBe(200);
    expect(jsonTest.body.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    await expectUnchanged(name, created);
  });
});

describe('generateName', () => {
  test('the returned name is the prefix plus 5 random characters, and the object is stored under it', async () => {
    const prefix = `${uniq('gen')}-`;
    const res = await ts.admin.post(secrets(), { ...secretBody(''), metadata: { generateName: prefix } });
    expect(res.status).toBe(201);
    const name: string = res.body.metadata.name;
    expect(name).not.toBe(prefix);
    expect(name.startsWith(prefix)).toBe(true);
    expect(name).toHaveLength(prefix.length + 5);
    for (const ch of name.slice(prefix.length)) expect(NAME_CHARS).toContain(ch);
    expect(res.body.metadata.generateName).toBe(prefix);
    expect((await getSecret(name)).metadata.uid).toBe(res.body.metadata.uid);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeDefined();
  });

  test('two creates with the same generateName get different names', async () => {
    const prefix = `${uniq('gen-twice')}-`;
    const a = await ts.admin.post(secrets(), { ...secretBody(''), metadata: { generateName: prefix } });
    const b = await ts.admin.post(secrets(), { ...secretBody(''), metadata: { generateName: prefix } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.metadata.name).not.toBe(b.body.metadata.name);
  });

  test('a long prefix is cut to 58 characters before the suffix', async () => {
    const prefix = `long-${'a'.repeat(70)}-`;
    const res = await ts.admin.post(secrets(), { ...secretBody(''), metadata: { generateName: prefix } });
    expect(res.status).toBe(201);
    const name: string = res.body.metadata.name;
    expect(name).toHaveLength(63);
    expect(name.slice(0, 58)).toBe(prefix.slice(0, 58));
    for (const ch of name.slice(58)) expect(NAME_CHARS).toContain(ch);
    expect((await getSecret(name)).metadata.name).toBe(name);
  });

  test('generateName works for clusters too', async () => {
    const prefix = `${uniq('gen-cl')}-`;
    const res = await ts.admin.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { generateName: prefix },
      spec: { networkPeer: true },
    });
    expect(res.status).toBe(201);
    expect(res.body.metadata.name).toMatch(new RegExp(`^${prefix}[${NAME_CHARS}]{5}$`));
    expect((await ts.admin.get(clusterPath(res.body.metadata.name))).status).toBe(200);
  });
});

describe('generation', () => {
  test('is 1 on create, +1 per spec change, unchanged by label changes and status writes', async () => {
    const name = uniq('gen-count');
    const created = await createSecret(name);
    expect(created.metadata.generation).toBe(1);

    const put = await ts.admin.put(secret(name), { ...created, spec: { ...created.spec, displayName: 'v2' } });
    expect(put.status).toBe(200);
    expect(put.body.metadata.generation).toBe(2);

    const labels = await ts.admin.patch(secret(name), { metadata: { labels: { env: 'prod' } } }, MERGE_PATCH);
    expect(labels.status).toBe(200);
    expect(labels.body.metadata.generation).toBe(2);
    expect(labels.body.metadata.resourceVersion).not.toBe(put.body.metadata.resourceVersion);

    const status = await ts.admin.patch(
      `${secret(name)}/status`,
      { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      MERGE_PATCH,
    );
    expect(status.status).toBe(200);
    expect(status.body.metadata.generation).toBe(2);

    const spec = await ts.admin.patch(
      secret(name),
      [{ op: 'add', path: '/spec/description', value: 'v3' }],
      JSON_PATCH,
    );
    expect(spec.status).toBe(200);
    expect(spec.body.metadata.generation).toBe(3);

    expect((await getSecret(name)).metadata.generation).toBe(3);
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value.metadata.generation).toBe(3);
  });

  test('a generation sent by the client is ignored on create and update', async () => {
    const name = uniq('gen-client');
    const created = await createSecret(name, { metadata: { name, generation: 42 } });
    expect(created.metadata.generation).toBe(1);
    const put = await ts.admin.put(secret(name), { ...created, metadata: { ...created.metadata, generation: 99 } });
    expect(put.status).toBe(200);
    expect(put.body.metadata.generation).toBe(1);
  });
});

describe('immutable name and namespace', () => {
  test('a PUT whose body name differs from the URL is 400 and changes nothing', async () => {
    const name = uniq('rename');
    const created = await createSecret(name);
    const other = uniq('renamed');
    const res = await ts.admin.put(secret(name), { ...created, metadata: { ...created.metadata, name: other } });
    expectStatus(res, 400, 'BadRequest');
    expect(res.body.message).toBe(`the name of the object (${other}) does not match the name on the URL (${name})`);
    await expectUnchanged(name, created);
    expect((await ts.admin.get(secret(other))).status).toBe(404);
  });

  test('changing the name via merge patch is 400 and changes nothing', async () => {
    const name = uniq('rename-patch');
    const created = await createSecret(name);
    const other = uniq('renamed-patch');
    const res = await ts.admin.patch(secret(name), { metadata: { name: other } }, MERGE_PATCH);
    expectStatus(
      res,
      400,
      'BadRequest',
      `the name of the object (${other}) does not match the name on the URL (${name})`,
    );
    await expectUnchanged(name, created);
    expect((await ts.admin.get(secret(other))).status).toBe(404);
  });

  test('changing the namespace (PUT or patch) is 400 and changes nothing', async () => {
    const name = uniq('move-ns');
    const created = await createSecret(name);
    const put = await ts.admin.put(secret(name), {
      ...created,
      metadata: { ...created.metadata, namespace: 'elsewhere' },
    });
    expectStatus(
      put,
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
    const patch = await ts.admin.patch(secret(name), { metadata: { namespace: 'elsewhere' } }, MERGE_PATCH);
    expectStatus(
      patch,
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
    await expectUnchanged(name, created);
    expect((await ts.admin.get(secret(name, 'elsewhere'))).status).toBe(404);
  });

  test('a create whose body namespace differs from the URL is 400 and stores nothing', async () => {
    const name = uniq('create-ns');
    const res = await ts.admin.post(secrets(), secretBody(name, { metadata: { name, namespace: 'elsewhere' } }));
    expectStatus(
      res,
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
    expect((await ts.admin.get(secret(name))).status).toBe(404);
    expect((await ts.admin.get(secret(name, 'elsewhere'))).status).toBe(404);
  });
});

describe('status subresource', () => {
  const ready = { conditions: [{ type: 'Ready', status: 'True', reason: 'Synced' }] };

  test('status sent on create is dropped', async () => {
    const name = uniq('st-create');
    const created = await createSecret(name, { status: ready });
    expect(created).not.toHaveProperty('status');
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value).not.toHaveProperty('status');
  });

  test('PUT to /status changes only status; spec and label changes in the body are ignored', async () => {
    const name = uniq('st-put');
    const created = await createSecret(name);
    const res = await ts.admin.put(`${secret(name)}/status`, {
      ...created,
      metadata: { ...created.metadata, labels: { sneaky: 'yes' } },
      spec: { displayName: 'sneaky' },
      status: ready,
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toEqual(ready);
    expect(res.body.spec).toEqual(created.spec);
    expect(res.body.metadata.labels).toBeUndefined();
    expect(res.body.metadata.generation).toBe(1);
    const got = await getSecret(name);
    expect(got.status).toEqual(ready);
    expect(got.spec).toEqual(created.spec);
    expect(got.metadata.labels).toBeUndefined();
  });

  test('PATCH to /status changes only status', async () => {
    const name = uniq('st-patch');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      `${secret(name)}/status`,
      { spec: { displayName: 'sneaky' }, status: ready },
      MERGE_PATCH,
    );
    expect(res.status).toBe(200);
    expect(res.body.status).toEqual(ready);
    expect(res.body.spec).toEqual(created.spec);
    const json = await ts.admin.patch(
      `${secret(name)}/status`,
      [
        { op: 'replace', path: '/spec/displayName', value: 'sneaky' },
        { op: 'replace', path: '/status/conditions/0/status', value: 'False' },
      ],
      JSON_PATCH,
    );
    expect(json.status).toBe(200);
    expect(json.body.status.conditions[0].status).toBe('False');
    expect(json.body.spec).toEqual(created.spec);
    const got = await getSecret(name);
    expect(got.spec).toEqual(created.spec);
    expect(got.status.conditions[0].status).toBe('False');
  });

  test('writes to the main resource keep the stored status', async () => {
    const name = uniq('st-main');
    await createSecret(name);
    const withStatus = await ts.admin.patch(`${secret(name)}/status`, { status: ready }, MERGE_PATCH);
    expect(withStatus.status).toBe(200);

    const put = await ts.admin.put(secret(name), {
      ...withStatus.body,
      spec: { displayName: 'new spec' },
      status: { conditions: [{ type: 'Ready', status: 'False' }] },
    });
    expect(put.status).toBe(200);
    expect(put.body.spec).toEqual({ displayName: 'new spec' });
    expect(put.body.status).toEqual(ready);

    const dropped = structuredClone(put.body);
    delete dropped.status;
    const put2 = await ts.admin.put(secret(name), dropped);
    expect(put2.status).toBe(200);
    expect(put2.body.status).toEqual(ready);

    const patch = await ts.admin.patch(secret(name), { status: null, spec: { description: 'd' } }, MERGE_PATCH);
    expect(patch.status).toBe(200);
    expect(patch.body.status).toEqual(ready);
    expect(patch.body.spec.description).toBe('d');

    expect((await getSecret(name)).status).toEqual(ready);
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value.status).toEqual(ready);
  });

  test('cluster status: /status writes only status, main writes keep it', async () => {
    const name = uniq('st-cl');
    const created = (
      await ts.admin.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name },
        spec: { networkPeer: true },
      })
    ).body;
    const st = await ts.admin.patch(
      `${clusterPath(name)}/status`,
      { spec: { unusable: true }, status: { phase: 'Ready', nodes: 3 } },
      MERGE_PATCH,
    );
    expect(st.status).toBe(200);
    expect(st.body.status).toEqual({ phase: 'Ready', nodes: 3 });
    expect(st.body.spec).toEqual(created.spec);
    const main = await ts.admin.patch(
      clusterPath(name),
      { spec: { unusable: true }, status: { phase: 'Gone' } },
      MERGE_PATCH,
    );
    expect(main.status).toBe(200);
    expect(main.body.spec.unusable).toBe(true);
    expect(main.body.status).toEqual({ phase: 'Ready', nodes: 3 });
  });

  test('a status write with an invalid status is 422 and changes nothing', async () => {
    const name = uniq('st-invalid');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      `${secret(name)}/status`,
      { status: { conditions: [{ reason: 'NoType' }] } },
      MERGE_PATCH,
    );
    expectStatus(res, 422, 'Invalid');
    expect(causes(res).map((c) => c.field)).toEqual(
      expect.arrayContaining(['status.conditions[0].type', 'status.conditions[0].status']),
    );
    await expectUnchanged(name, created);
  });
});

describe('patch failures', () => {
  test('a JSON patch whose test op fails is 422 and no earlier op is applied', async () => {
    const name = uniq('jp-test');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      secret(name),
      [
        { op: 'replace', path: '/spec/displayName', value: 'applied?' },
        { op: 'test', path: '/spec/displayName', value: 'something else' },
      ],
      JSON_PATCH,
    );
    expectStatus(res, 422, 'Invalid', 'the server rejected our request due to an error in our request');
    await expectUnchanged(name, created);
  });

  test('a JSON patch with a path that does not exist is 422 and changes nothing', async () => {
    const name = uniq('jp-path');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      secret(name),
      [{ op: 'replace', path: '/spec/nothing/here', value: 'x' }],
      JSON_PATCH,
    );
    expectStatus(res, 422, 'Invalid', 'the server rejected our request due to an error in our request');
    const remove = await ts.admin.patch(secret(name), [{ op: 'remove', path: '/metadata/labels/absent' }], JSON_PATCH);
    expectStatus(remove, 422, 'Invalid');
    await expectUnchanged(name, created);
  });

  test('a JSON patch that is not an array is 400 and changes nothing', async () => {
    const name = uniq('jp-shape');
    const created = await createSecret(name);
    const res = await ts.admin.patch(secret(name), { op: 'add', path: '/spec/description', value: 'x' }, JSON_PATCH);
    expectStatus(res, 400, 'BadRequest');
    await expectUnchanged(name, created);
  });

  test('a merge patch whose result is invalid is 422 with the bad field, and changes nothing', async () => {
    const name = uniq('mp-invalid');
    const created = await createSecret(name);
    const res = await ts.admin.patch(secret(name), { spec: { data: { 'bad key': 'dmFsdWU=' } } }, MERGE_PATCH);
    expectStatus(res, 422, 'Invalid', `SharedSecret.management.platform.sh "${name}" is invalid`);
    expect(causes(res)).toContainEqual(
      expect.objectContaining({ field: 'spec.data[bad key]', reason: 'FieldValueInvalid' }),
    );
    await expectUnchanged(name, created);
  });

  test('a JSON patch whose result is invalid is 422 and changes nothing', async () => {
    const name = uniq('jp-invalid');
    const created = await createSecret(name);
    const res = await ts.admin.patch(
      secret(name),
      [{ op: 'add', path: '/metadata/labels', value: { 'bad key!': 'v' } }],
      JSON_PATCH,
    );
    expectStatus(res, 422, 'Invalid');
    expect(causes(res)).toContainEqual(
      expect.objectContaining({ field: 'metadata.labels', reason: 'FieldValueInvalid' }),
    );
    await expectUnchanged(name, created);
  });

  test('force on a non-apply patch is 422 and changes nothing', async () => {
    const name = uniq('force');
    const created = await createSecret(name);
    const res = await ts.admin.patch(`${secret(name)}?force=true`, { spec: { displayName: 'forced' } }, MERGE_PATCH);
    expectStatus(res, 422, 'Invalid', 'force: Forbidden: may not be specified for non-apply patch');
    await expectUnchanged(name, created);
  });
});

describe('dryRun', () => {
  test('dryRun=All on create answers 201 with the object but stores nothing and returns no resourceVersion', async () => {
    const name = uniq('dry-create');
    const res = await ts.admin.post(`${secrets()}?dryRun=All`, secretBody(name));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      kind: 'SharedSecret',
      metadata: { name, namespace: NS, generation: 1 },
      spec: secretBody(name).spec,
    });
    expect(res.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.metadata.creationTimestamp).toBeDefined();
    expect(res.body.metadata.resourceVersion).toBeUndefined();
    expect((await ts.admin.get(secret(name))).status).toBe(404);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeUndefined();
  });

  test('a dry-run create of a taken name is still 409 AlreadyExists', async () => {
    const name = uniq('dry-taken');
    const created = await createSecret(name);
    const res = await ts.admin.post(`${secrets()}?dryRun=All`, secretBody(name));
    expectStatus(res, 409, 'AlreadyExists', `sharedsecrets.management.platform.sh "${name}" already exists`);
    await expectUnchanged(name, created);
  });

  test('dryRun=All on PUT answers the would-be object and stores nothing', async () => {
    const name = uniq('dry-put');
    const created = await createSecret(name);
    const res = await ts.admin.put(`${secret(name)}?dryRun=All`, { ...created, spec: { displayName: 'dry' } });
    expect(res.status).toBe(200);
    expect(res.body.spec).toEqual({ displayName: 'dry' });
    expect(res.body.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    await expectUnchanged(name, created);
  });

  test('dryRun=All on PATCH (merge and JSON) stores nothing', async () => {
    const name = uniq('dry-patch');
    const created = await createSecret(name);
    const merge = await ts.admin.patch(
      `${secret(name)}?dryRun=All`,
      { spec: { displayName: 'dry merge' } },
      MERGE_PATCH,
    );
    expect(merge.status).toBe(200);
    expect(merge.body.spec.displayName).toBe('dry merge');
    const json = await ts.admin.patch(
      `${secret(name)}?dryRun=All`,
      [{ op: 'add', path: '/spec/description', value: 'dry json' }],
      JSON_PATCH,
    );
    expect(json.status).toBe(200);
    expect(json.body.spec.description).toBe('dry json');
    const status = await ts.admin.patch(
      `${secret(name)}/status?dryRun=All`,
      { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      MERGE_PATCH,
    );
    expect(status.status).toBe(200);
    expect(status.body.status.conditions[0].type).toBe('Ready');
    await expectUnchanged(name, created);
  });

  test('dryRun=All on DELETE answers success but the object stays', async () => {
    const name = uniq('dry-delete');
    const created = await createSecret(name);
    const res = await ts.admin.delete(`${secret(name)}?dryRun=All`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name, kind: 'sharedsecrets', uid: created.metadata.uid },
    });
    await expectUnchanged(name, created);
  });

  test('dryRun=Bogus is 422 on every write and nothing changes', async () => {
    const name = uniq('dry-bogus');
    const create = await ts.admin.post(`${secrets()}?dryRun=Bogus`, secretBody(name));
    expectStatus(create, 422, 'Invalid');
    expect(create.body.message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Bogus"}: supported values: "All"',
    );
    expect(causes(create)).toEqual([expect.objectContaining({ field: 'dryRun', reason: 'FieldValueNotSupported' })]);
    expect((await ts.admin.get(secret(name))).status).toBe(404);

    const created = await createSecret(name);
    const put = await ts.admin.put(`${secret(name)}?dryRun=Bogus`, { ...created, spec: { displayName: 'x' } });
    expectStatus(put, 422, 'Invalid', 'UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value');
    const patch = await ts.admin.patch(`${secret(name)}?dryRun=Bogus`, { spec: { displayName: 'x' } }, MERGE_PATCH);
    expectStatus(patch, 422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value');
    const del = await ts.admin.delete(`${secret(name)}?dryRun=Bogus`);
    expectStatus(del, 422, 'Invalid', 'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value');
    await expectUnchanged(name, created);
  });
});
