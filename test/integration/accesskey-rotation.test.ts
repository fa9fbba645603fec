/**
 * Rotating an access key (issue 43): POST ownedaccesskeys/<name>/rotate answers a new value once; the replaced value
 * works for the grace period, then is 401 with a message naming the rotation; a second rotation in the grace is
 * refused; only whoever may update the key rotates it; bad requests change nothing. One server for the file, real
 * etcd, the real kubectl.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KEY_SHOWN_ONCE_WARNING } from '../../src/kinds/ownedaccesskey/strategy.js';
import { API_VERSION, GROUP, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse, warningsOf as warnings } from '../support/http.js';
import { kubectlOn, writeUserlessKubeconfig } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const keyPath = (name: string) => `${KEYS}/${name}`;
const rotatePath = (name: string) => `${KEYS}/${name}/rotate`;

let ts: TestServer & { as: Record<'root' | 'alice' | 'bob', HttpClient> };
let admin: HttpClient;
let etcd: Etcd3;
let kubeconfig: string;
const { k: kubectl } = kubectlOn(() => kubeconfig);

const rotateBody = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
});
async function createKey(client: HttpClient, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post(KEYS, { apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name }, spec });
  expect(res.status).toBe(201);
  return res.body.spec.key as string;
}

/** The key as etcd holds it. */
async function stored(name: string): Promise<any> {
  return JSON.parse((await etcd.get(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`).string())!);
}

/** Whether `value` authenticates (a GET of its own key), and the answer. */
async function use(value: string, name: string): Promise<HttpResponse> {
  return ts.client(value).get(keyPath(name));
}

/** Waits until this server's index has the key as etcd holds it now (a write's event reaches it shortly after). */
async function settled(name: string): Promise<void> {
  const { kvs } = await etcd.get(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`).exec();
  const revision = Number(kvs[0].mod_revision);
  await waitFor('the key to be read at its last write', async () => {
    const res = await admin.get(keyPath(name));
    return Number(res.body.metadata.resourceVersion) >= revision;
  });
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [], bob: [] });
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  admin = ts.as.root;
  kubeconfig = writeUserlessKubeconfig(join(mkdtempSync(join(tmpdir(), 'rotation-')), 'kubeconfig'), ts.server);
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
  if (kubeconfig) rmSync(dirname(kubeconfig), { recursive: true, force: true });
}, 60_000);

describe('a rotation', () => {
  test('answers a new value once; both values work in the grace; the status records the rotation', async () => {
    const name = uniq('rot');
    const old = await createKey(ts.as.alice, name);
    const before = Date.now();
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 600 }));
    expect(res.status).toBe(201);
    const fresh = res.body.spec.key as string;
    expect(fresh).toMatch(/^pak_/);
    expect(fresh).not.toBe(old);
    expect(warnings(res)).toContain(KEY_SHOWN_ONCE_WARNING);
    expect(warnings(res).some((w) => /previous value of access key .* works until/.test(w))).toBe(true);
    expect(res.body.status.rotations).toBe(1);
    const until = Date.parse(res.body.status.previousKeyExpirationTimestamp);
    expect(until).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 600_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 600_000);
    expect(Date.parse(res.body.status.lastRotationTimestamp)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    // Never shown again, and the replaced value's hash never at all.
    expect(res.body.status.previousKey).toBeUndefined();
    const read = await admin.get(keyPath(name));
    expect(read.body.spec.key).toBeUndefined();
    expect(read.body.status.previousKey).toBeUndefined();
    expect(read.body.status.rotations).toBe(1);
    // Both work; the old one says it was rotated.
    await settled(name);
    expect((await use(fresh, name)).status).toBe(200);
    const withOld = await use(old, name);
    expect(withOld.status).toBe(200);
    expect(warnings(withOld).some((w) => w.includes('was rotated: this value stops working at'))).toBe(true);
    // At rest: hashes only.
    const raw = JSON.stringify(await stored(name));
    expect(raw).not.toContain(fresh);
    expect(raw).not.toContain(old);
  });

  test('the replaced value is 401 once the grace ends, with a message naming the rotation; an empty body rotates too', async () => {
    const name = uniq('rot0');
    const old = await createKey(ts.as.alice, name);
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 0 }));
    expect(res.status).toBe(201);
    await settled(name);
    const refused = await use(old, name);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe(
      `access key "${name}" was rotated at ${res.body.status.lastRotationTimestamp}; its previous value stopped working at ${res.body.status.previousKeyExpirationTimestamp}; use the new value`,
    );
    expect((await use(res.body.spec.key, name)).status).toBe(200);
    // No body at all: the default grace of five minutes.
    const again = await ts.client(res.body.spec.key).request('POST', rotatePath(name), {});
    expect(again.status).toBe(201);
    expect(again.body.status.rotations).toBe(2);
    expect(
      Date.parse(again.body.status.previousKeyExpirationTimestamp) -
        Date.parse(again.body.status.lastRotationTimestamp),
    ).toBe(300_000);
    await settled(name);
    // Two rotations back: no longer known at all.
    expect((await use(old, name)).status).toBe(401);
    expect((await use(res.body.spec.key, name)).status).toBe(200);
    expect((await use(again.body.spec.key, name)).status).toBe(200);
  });

  test('a second rotation in the grace is refused (409) and changes nothing', async () => {
    const name = uniq('twice');
    const old = await createKey(ts.as.alice, name);
    const first = await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 600 }));
    expect(first.status).toBe(201);
    const before = await stored(name);
    const second = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect(second.body.message).toContain('its previous value works until');
    expect(second.body.message).toContain('disable the key to stop every value at once');
    expect(await stored(name)).toEqual(before);
    await settled(name);
    expect((await use(old, name)).status).toBe(200);
    expect((await use(first.body.spec.key, name)).status).toBe(200);
  });

  test('a rotation changes nothing but the value: identity, scope, ttl and expiry stay; other spec fields in the body are not applied', async () => {
    const name = uniq('same');
    await createKey(admin, name, { user: 'alice', ttl: 3600, scope: { clusters: [{ cluster: 'eu-1' }] } });
    const before = (await admin.get(keyPath(name))).body;
    const res = await admin.post(
      rotatePath(name),
      rotateBody(name, { user: 'root', ttl: 99999, rotationGracePeriod: 10 }),
    );
    expect(res.status).toBe(201);
    expect(warnings(res)).toContain(
      'spec.user, spec.ttl: not changed by a rotation, which only replaces the value; update the key to change them',
    );
    expect(res.body.spec).toEqual({ ...before.spec, key: res.body.spec.key });
    expect(res.body.status.expirationTimestamp).toBe(before.status.expirationTimestamp);
    expect(res.body.metadata.uid).toBe(before.metadata.uid);
  });

  test('kubectl create --raw rotates a key and prints the new value', async () => {
    const name = uniq('kubectl');
    await createKey(ts.as.alice, name);
    const dir = mkdtempSync(join(tmpdir(), 'rotate-body-'));
    const file = join(dir, 'rotate.json');
    writeFileSync(file, JSON.stringify(rotateBody(name, { rotationGracePeriod: 60 })));
    try {
      const res = await kubectl('--token', admin.token!, 'create', '--raw', rotatePath(name), '-f', file);
      expect(res.code).toBe(0);
      const answer = JSON.parse(res.stdout);
      expect(answer).toMatchObject({ kind: 'OwnedAccessKey', metadata: { name }, status: { rotations: 1 } });
      expect(answer.spec.key).toMatch(/^pak_/);
      await settled(name);
      expect((await use(answer.spec.key, name)).status).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an update of the key after a rotation (a PUT of what a GET showed) keeps the replaced value working', async () => {
    const name = uniq('putafter');
    const old = await createKey(ts.as.alice, name);
    expect((await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 600 }))).status).toBe(201);
    const read = (await ts.as.alice.get(keyPath(name))).body;
    const put = await ts.as.alice.put(keyPath(name), { ...read, spec: { ...read.spec, ttl: 7200 } });
    expect(put.status).toBe(200);
    expect(put.body.status.rotations).toBe(1);
    await settled(name);
    expect((await use(old, name)).status).toBe(200);
    expect((await stored(name)).status.previousKey).toMatch(/^sha256:/);
  });
});

describe('who may rotate', () => {
  test("a holder may not rotate someone else's key (403) and the key stays as it was", async () => {
    const name = uniq('bobs');
    const bobs = await createKey(ts.as.bob, name);
    const before = await stored(name);
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
    expect(await stored(name)).toEqual(before);
    expect((await use(bobs, name)).status).toBe(200);
  });

  test('a key rotates itself; an admin rotates anyone’s; a scoped key may not rotate (403)', async () => {
    const self = uniq('self');
    const value = await createKey(ts.as.alice, self);
    await settled(self);
    const res = await ts.client(value).post(rotatePath(self), rotateBody(self));
    expect(res.status).toBe(201);
    const other = uniq('byadmin');
    await createKey(ts.as.bob, other);
    expect((await admin.post(rotatePath(other), rotateBody(other))).status).toBe(201);

    const scoped = uniq('scoped');
    const scopedValue = await createKey(ts.as.alice, scoped, { scope: { clusters: [{ cluster: 'eu-1' }] } });
    await settled(scoped);
    const before = await stored(scoped);
    const refused = await ts.client(scopedValue).post(rotatePath(scoped), rotateBody(scoped));
    expect(refused.status).toBe(403);
    expect(await stored(scoped)).toEqual(before);
  });

  test('nobody writes the rotation status: a status write by an admin keeps it, a user’s update keeps it', async () => {
    const name = uniq('status');
    await createKey(ts.as.alice, name);
    const rotated = await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 0 }));
    const status = rotated.body.status;
    const write = await admin.patch(
      `${keyPath(name)}/status`,
      {
        status: {
          rotations: 7,
          lastRotationTimestamp: '2030-01-01T00:00:00Z',
          previousKeyExpirationTimestamp: '2099-01-01T00:00:00Z',
          previousKey: `sha256:${'0'.repeat(64)}`,
        },
      },
      MERGE_PATCH,
    );
    expect(write.status).toBe(200);
    expect(write.body.status).toMatchObject({
      rotations: status.rotations,
      lastRotationTimestamp: status.lastRotationTimestamp,
      previousKeyExpirationTimestamp: status.previousKeyExpirationTimestamp,
    });
    const stored1 = await stored(name);
    expect(stored1.status.previousKey).not.toBe(`sha256:${'0'.repeat(64)}`);
    const update = await admin.patch(keyPath(name), { status: { rotations: 0 }, spec: { ttl: 100 } }, MERGE_PATCH);
    expect(update.status).toBe(200);
    expect(update.body.status.rotations).toBe(1);
  });
});

describe('what is refused and changes nothing', () => {
  const cases: Array<[string, (name: string) => unknown, number, RegExp]> = [
    [
      'a negative grace',
      (n) => rotateBody(n, { rotationGracePeriod: -1 }),
      422,
      /spec\.rotationGracePeriod: Invalid value: -1: must be between 0 and 86400 seconds/,
    ],
    [
      'a grace over a day',
      (n) => rotateBody(n, { rotationGracePeriod: 86401 }),
      422,
      /spec\.rotationGracePeriod: Invalid value: 86401: must be between 0 and 86400/,
    ],
    ['a grace of the wrong type', (n) => rotateBody(n, { rotationGracePeriod: '5m' }), 422, /rotationGracePeriod/],
    [
      'a value of its own',
      (n) => rotateBody(n, { key: 'pak_mine' }),
      422,
      /spec\.key: Forbidden: a rotation generates/,
    ],
    ['a misspelt field', (n) => rotateBody(n, { rotationGrace: 5 }), 422, /rotationGrace/],
    ['another name', () => rotateBody('someone-else'), 400, /does not match the name on the URL/],
    [
      'another kind',
      (n) => ({ ...rotateBody(n), kind: 'Cluster' }),
      422,
      /kind: Invalid value: "Cluster": must be OwnedAccessKey/,
    ],
    ['a body without kind', (n) => ({ metadata: { name: n } }), 400, /Kind' is missing/],
  ];
  test.each(cases)('%s', async (_what, body, code, message) => {
    const name = uniq('bad');
    const value = await createKey(ts.as.alice, name);
    const before = await stored(name);
    const res = await ts.as.alice.post(rotatePath(name), body(name));
    expect(res.status).toBe(code);
    expect(res.body.kind).toBe('Status');
    expect(res.body.message).toMatch(message);
    expect(res.body.message).not.toContain('pak_mine');
    expect(await stored(name)).toEqual(before);
    await settled(name);
    expect((await use(value, name)).status).toBe(200);
  });

  test('a disabled key is 409 and stays as it was', async () => {
    const name = uniq('disabled');
    await createKey(ts.as.alice, name, { disabled: true });
    const before = await stored(name);
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    expect(res.status).toBe(409);
    expect(res.body.message).toContain('the key is disabled');
    expect(await stored(name)).toEqual(before);
  });

  test('an expired key is 409: a rotation does not renew it', async () => {
    const name = uniq('expired');
    await createKey(admin, name, { user: 'alice', ttl: 60 });
    const path = `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`;
    const old = await stored(name);
    old.metadata.creationTimestamp = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await etcd.put(path).value(JSON.stringify(old)).exec();
    await waitFor('the rewritten key', async () => {
      const res = await admin.get(keyPath(name));
      return res.body.metadata.creationTimestamp === old.metadata.creationTimestamp;
    });
    const res = await admin.post(rotatePath(name), rotateBody(name));
    expect(res.status).toBe(409);
    expect(res.body.message).toContain('the key has expired');
    expect(await stored(name)).toEqual(old);
  });

  test('a key that does not exist is 404', async () => {
    const res = await admin.post(rotatePath('no-such-key'), rotateBody('no-such-key'));
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'NotFound' });
  });

  test('a client cannot rotate by writing: a new spec.key in an update is still 422 immutable', async () => {
    const name = uniq('immut');
    await createKey(ts.as.alice, name);
    const res = await admin.patch(keyPath(name), { spec: { key: 'pak_another' } }, MERGE_PATCH);
    expect(res.status).toBe(422);
    expect(res.body.message).toContain('spec.key: Invalid value: "<redacted>": field is immutable');
  });
});
