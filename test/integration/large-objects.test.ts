/**
 * Objects near etcd's limits: a page of large objects is more than gRPC's default 4 MiB answer, and must still be
 * read (a server restarting on such data fills its watch cache from it); an object etcd refuses as too large is a
 * 413, not a server error, and leaves nothing behind.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { API_VERSION, sharedSecretPath, sharedSecretsPath } from '../support/fixtures.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startTestServer, type TestServer } from '../support/server.js';

let etcd: TestEtcd;
let first: TestServer | undefined;
let second: TestServer | undefined;

beforeAll(async () => {
  etcd = await startTestEtcd();
}, 60_000);

afterAll(async () => {
  await first?.stop();
  await second?.stop();
  await etcd?.stop();
}, 60_000);

/** A SharedSecret whose one data value is `kib` KiB before base64 (a third more after). */
function big(name: string, kib: number) {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name },
    spec: { data: { k: Buffer.alloc(kib * 1024, name).toString('base64') } },
  };
}

test('objects adding up to more than 4 MiB are listed, also by a server that starts on them', async () => {
  first = await startTestServer({}, etcd);
  const names = ['big-1', 'big-2', 'big-3', 'big-4'];
  for (const name of names)
    expect((await first.admin.post(sharedSecretsPath('default'), big(name, 1000))).status).toBe(201);
  const prefix = first.config.etcdPrefix;
  await first.stop();
  first = undefined;

  second = await startTestServer({ etcdPrefix: prefix }, etcd);
  for (const query of ['', '?resourceVersion=0', '?limit=2']) {
    const list = await second.admin.get(`${sharedSecretsPath('default')}${query}`);
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: any) => i.metadata.name)).toEqual(query === '?limit=2' ? names.slice(0, 2) : names);
  }
  expect((await second.admin.get(sharedSecretPath('default', 'big-3'))).body.spec.data.k).toBe(
    big('big-3', 1000).spec.data.k,
  );
}, 120_000);

test('an object etcd refuses as too large is 413 RequestEntityTooLarge and is not stored', async () => {
  const ts = second ?? (await startTestServer({}, etcd));
  const res = await ts.admin.post(sharedSecretsPath('default'), big('too-big', 1300));
  expect(res.status).toBe(413);
  expect(res.body).toMatchObject({ kind: 'Status', reason: 'RequestEntityTooLarge', code: 413 });
  expect(res.body.message).toContain('larger than etcd accepts in one request');
  expect((await ts.admin.get(sharedSecretPath('default', 'too-big'))).status).toBe(404);
  const update = await ts.admin.put(sharedSecretPath('default', 'big-1'), {
    ...big('big-1', 1300),
    metadata: {
      name: 'big-1',
      resourceVersion: (await ts.admin.get(sharedSecretPath('default', 'big-1'))).body.metadata.resourceVersion,
    },
  });
  expect(update.status).toBe(413);
  expect((await ts.admin.get('/readyz')).status).toBe(200);
}, 60_000);
