/**
 * etcd unreachable: requests that need it fail at once with a Status (500 ServerTimeout, Retry-After) instead of
 * each waiting out a deadline, /readyz says etcd failed while /livez stays fine, reads the watch cache can answer
 * (resourceVersion=0) still work, and everything recovers without a restart once etcd answers again. Both ways
 * etcd goes away: stopped (connections refused) and hung (SIGSTOP: connections open, nothing answered). A user
 * whose access the object itself grants gets the same 500, never a 403: the grant could not be read, which does not
 * make it absent.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { API_VERSION, GROUP, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { eventually, type HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let ts: TestServer;

beforeAll(async () => {
  ts = await startTestServer();
}, 60_000);

afterAll(async () => {
  await ts?.stop();
}, 60_000);

function secret(name: string) {
  return { apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { name }, spec: { data: { k: 'dg==' } } };
}

function expectServerTimeout(res: HttpResponse, operation: string) {
  expect(res.status).toBe(500);
  expect(res.body).toMatchObject({
    kind: 'Status',
    status: 'Failure',
    reason: 'ServerTimeout',
    code: 500,
    message: `The ${operation} operation against sharedsecrets.management.platform.sh could not be completed at this time, please try again.`,
  });
  expect(res.headers['retry-after']).toBe(String(res.body.details.retryAfterSeconds));
}

const readyz = () => ts.anonymous.get('/readyz?verbose');

async function outage(takeDown: () => Promise<void> | void, bringBack: () => Promise<void> | void) {
  const kept = uniq('kept');
  expect((await ts.admin.post(sharedSecretsPath('default'), secret(kept))).status).toBe(201);

  await takeDown();
  // The first requests may wait for the health check to notice; from then on every answer comes at once.
  await eventually(readyz, (r) => r.status === 500, '/readyz to fail');
  const ready = await readyz();
  expect(ready.text).toContain('[-]etcd failed: reason withheld');
  expect(ready.text).toContain('readyz check failed');
  expect((await ts.anonymous.get('/livez')).status).toBe(200);

  expectServerTimeout(await ts.admin.get(sharedSecretPath('default', kept)), 'get');
  expectServerTimeout(await ts.admin.get(sharedSecretsPath('default')), 'list');
  const lost = uniq('lost');
  expectServerTimeout(await ts.admin.post(sharedSecretsPath('default'), secret(lost)), 'create');
  expectServerTimeout(await ts.admin.put(sharedSecretPath('default', kept), secret(kept)), 'update');
  expectServerTimeout(await ts.admin.delete(sharedSecretPath('default', kept)), 'delete');
  // The watch cache still answers what it may: a list at resourceVersion=0.
  const cached = await ts.admin.get(`${sharedSecretsPath('default')}?resourceVersion=0`);
  expect(cached.status).toBe(200);
  expect(cached.body.items.map((i: any) => i.metadata.name)).toContain(kept);

  await bringBack();
  await eventually(readyz, (r) => r.status === 200, '/readyz to pass again', 30_000);
  expect((await ts.admin.get(sharedSecretPath('default', kept))).status).toBe(200);
  expect((await ts.admin.get(sharedSecretPath('default', lost))).status).toBe(404);
  const after = uniq('after');
  expect((await ts.admin.post(sharedSecretsPath('default'), secret(after))).status).toBe(201);
  const list = await ts.admin.get(sharedSecretsPath('default'));
  expect(list.body.items.map((i: any) => i.metadata.name)).toEqual(expect.arrayContaining([kept, after]));
}

test('etcd stopped: 500 ServerTimeout at once, /readyz fails, the cache answers rv=0 reads; back without a restart', async () => {
  await outage(
    () => ts.etcd.kill(),
    () => ts.etcd.restart(),
  );
}, 90_000);

test('etcd hung (no answers on open connections): the same, and a request already waiting gets a Status too', async () => {
  const name = uniq('inflight');
  await outage(
    async () => {
      ts.etcd.pause();
      // Sent while the hang is not yet noticed: it is given up once it is (its write may still land later).
      const waiting = await ts.admin.post(sharedSecretsPath('default'), secret(name));
      expectServerTimeout(waiting, 'create');
    },
    () => ts.etcd.resume(),
  );
}, 90_000);

test('a user whose access the object grants gets 500 ServerTimeout, never 403, while etcd does not answer', async () => {
  const name = uniq('granted');
  const granted = {
    ...secret(name),
    spec: { data: { k: 'dg==' }, access: [{ name: 'alice', verbs: ['get', 'update'], users: ['alice'] }] },
  };
  expect((await ts.admin.post(sharedSecretsPath('default'), granted)).status).toBe(201);
  // An access key: it is known from the watch cache, so alice is still authenticated while etcd is hung.
  const key = await ts.admin.post(`/apis/${GROUP}/v1/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name: uniq('alice') },
    spec: { user: 'alice' },
  });
  expect(key.status).toBe(201);
  const alice = ts.client(key.body.spec.key);
  await eventually(
    () => alice.get(sharedSecretPath('default', name)),
    (r) => r.status === 200,
    'alice to read it',
  );

  ts.etcd.pause();
  try {
    await eventually(readyz, (r) => r.status === 500, '/readyz to fail');
    // The authorizer could not read the object's access list: that failure is the answer, whatever the verb.
    expectServerTimeout(await alice.get(sharedSecretPath('default', name)), 'get');
    expectServerTimeout(await alice.put(sharedSecretPath('default', name), granted), 'get');
  } finally {
    ts.etcd.resume();
  }
  await eventually(readyz, (r) => r.status === 200, '/readyz to pass again', 30_000);
  expect((await alice.get(sharedSecretPath('default', name))).status).toBe(200);
}, 90_000);
