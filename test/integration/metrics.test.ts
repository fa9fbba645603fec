/**
 * /metrics: Prometheus text with kube-apiserver's metric names and labels, protected like any non-resource path
 * (system:masters may read it, others get 403, no credentials 401) unless --authorization-always-allow-paths lists
 * it; every server keeps its own metrics.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, GROUP } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { find, parseSamples, total, type Sample } from '../support/prometheus.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { closeWatches, openWatch } from '../support/watch.js';

const SECRETS = `${GROUP_PATH}/namespaces/metrics/sharedsecrets`;

let etcd: TestEtcd;
let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let root: HttpClient;
let alice: HttpClient;

beforeAll(async () => {
  etcd = await startTestEtcd();
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [] }, {}, etcd);
  ({ root, alice } = ts.as);
}, 60_000);

afterAll(async () => {
  await ts?.stop();
  await etcd?.stop();
});

afterEach(() => closeWatches());

async function scrape(client: HttpClient = root): Promise<Sample[]> {
  const res = await client.get('/metrics');
  expect(res.status).toBe(200);
  return parseSamples(res.text);
}

const secret = (name: string) => ({
  apiVersion: API_VERSION,
  kind: 'SharedSecret',
  metadata: { name },
  spec: { data: { token: Buffer.from('x').toString('base64') } },
});

test('only those allowed read /metrics: system:masters yes, another user 403, no credentials 401', async () => {
  const res = await root.get('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  expect(res.text).toContain('# TYPE apiserver_request_total counter');

  const forbidden = await alice.get('/metrics');
  expect(forbidden.status).toBe(403);
  expect(forbidden.body).toMatchObject({
    kind: 'Status',
    reason: 'Forbidden',
    message: 'forbidden: User "alice" cannot get path "/metrics"',
  });
  const anonymous = await ts.anonymous.get('/metrics');
  expect(anonymous.status).toBe(401);
  expect(anonymous.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
});

test('requests are counted with kube verbs, scopes and codes, including refusals, and timed', async () => {
  expect((await root.post(SECRETS, secret('a'))).status).toBe(201);
  expect((await root.get(`${SECRETS}/a`)).status).toBe(200);
  expect((await root.get(SECRETS)).status).toBe(200);
  expect((await root.get(`${GROUP_PATH}/sharedsecrets`)).status).toBe(200);
  expect((await root.get(`${SECRETS}/missing`)).status).toBe(404);
  const applied = secret('applied');
  expect(
    (
      await root.request('PATCH', `${SECRETS}/applied?fieldManager=metrics-test`, {
        body: JSON.stringify(applied),
        contentType: 'application/apply-patch+yaml',
      })
    ).status,
  ).toBe(201);
  expect((await root.post(`${SECRETS}?dryRun=All`, secret('dry'))).status).toBe(201);
  expect((await ts.anonymous.get(SECRETS)).status).toBe(401);
  expect((await alice.delete(`${SECRETS}/a`)).status).toBe(403);
  expect((await root.get('/healthz')).status).toBe(200);
  expect((await root.get('/wp-admin/setup.php')).status).toBe(404);
  expect((await root.get(`${GROUP_PATH}/nothings`)).status).toBe(404);

  const s = await scrape();
  const resource = { group: GROUP, version: 'v1', resource: 'sharedsecrets', subresource: '', component: 'apiserver' };
  const count = (labels: Record<string, string>) => total(s, 'apiserver_request_total', labels);
  expect(count({ ...resource, verb: 'POST', scope: 'resource', dry_run: '', code: '201' })).toBe(1);
  expect(count({ ...resource, verb: 'POST', scope: 'resource', dry_run: 'All', code: '201' })).toBe(1);
  expect(count({ ...resource, verb: 'GET', scope: 'resource', code: '200' })).toBe(1);
  expect(count({ ...resource, verb: 'GET', scope: 'resource', code: '404' })).toBe(1);
  expect(count({ ...resource, verb: 'LIST', scope: 'namespace', code: '200' })).toBe(1);
  expect(count({ ...resource, verb: 'LIST', scope: 'cluster', code: '200' })).toBe(1);
  expect(count({ ...resource, verb: 'APPLY', scope: 'resource', code: '201' })).toBe(1);
  expect(count({ ...resource, verb: 'LIST', scope: 'namespace', code: '401' })).toBe(1);
  expect(count({ ...resource, verb: 'DELETE', scope: 'resource', code: '403' })).toBe(1);
  expect(count({ verb: 'GET', group: '', resource: '', subresource: '/healthz', scope: '', code: '200' })).toBe(1);
  // Paths and resources this server does not serve never become label values.
  expect(count({ subresource: 'other', code: '404' })).toBeGreaterThanOrEqual(1);
  expect(find(s, 'apiserver_request_total').filter((x) => /wp-admin|nothings/.test(JSON.stringify(x.labels)))).toEqual(
    [],
  );
  expect(count({ group: '', resource: '', verb: 'LIST', scope: 'cluster', code: '404' })).toBe(1);

  const posted = { ...resource, verb: 'POST', scope: 'resource', dry_run: '' };
  expect(total(s, 'apiserver_request_duration_seconds_count', posted)).toBe(1);
  expect(total(s, 'apiserver_request_duration_seconds_bucket', { ...posted, le: '60' })).toBe(1);
  expect(find(s, 'apiserver_request_duration_seconds_bucket', posted).map((b) => b.labels.le)).toEqual([
    '0.05',
    '0.1',
    '0.2',
    '0.4',
    '0.6',
    '0.8',
    '1',
    '1.25',
    '1.5',
    '2',
    '3',
    '4',
    '5',
    '6',
    '8',
    '10',
    '15',
    '20',
    '30',
    '45',
    '60',
    '+Inf',
  ]);
});

test('an open watch is a long-running request until it ends', async () => {
  const labels = { verb: 'WATCH', group: GROUP, version: 'v1', resource: 'sharedsecrets', scope: 'namespace' };
  const watch = await openWatch(root, SECRETS);
  expect(watch.status).toBe(200);
  expect(total(await scrape(), 'apiserver_longrunning_requests', labels)).toBe(1);
  watch.close();
  const after = await waitFor('the watch to be counted as ended', async () => {
    const s = await scrape();
    return total(s, 'apiserver_longrunning_requests', labels) === 0 && s;
  });
  expect(total(after, 'apiserver_request_total', { ...labels, code: '200' })).toBe(1);
});

test('the watch cache reports the objects it holds, its revision, and how far it is behind etcd', async () => {
  const labels = { group: GROUP, resource: 'sharedsecrets' };
  const first = await scrape();
  const before = total(first, 'apiserver_watch_cache_objects', labels);
  const bytesBefore = total(first, 'apiserver_watch_cache_object_bytes', labels);
  const historyBefore = total(first, 'apiserver_watch_cache_history_bytes', labels);
  let lastRv = 0;
  let written = 0;
  for (const name of ['w1', 'w2', 'w3']) {
    const res = await root.post(SECRETS, secret(name));
    expect(res.status).toBe(201);
    lastRv = Number(res.body.metadata.resourceVersion);
    written += JSON.stringify((await root.get(`${SECRETS}/${name}`)).body).length;
  }
  const s = await waitFor('the cache to hold the new objects', async () => {
    const got = await scrape();
    return total(got, 'apiserver_watch_cache_objects', labels) === before + 3 && got;
  });
  // The JSON of the three objects as served, once in the objects and once in the history of their creation.
  expect(total(s, 'apiserver_watch_cache_object_bytes', labels) - bytesBefore).toBe(written);
  expect(total(s, 'apiserver_watch_cache_history_bytes', labels) - historyBefore).toBe(written);
  expect(total(s, 'apiserver_watch_cache_resource_version', labels)).toBeGreaterThanOrEqual(lastRv);
  expect(find(s, 'apiserver_watch_cache_objects', { group: GROUP, resource: 'clusters' })).toHaveLength(1);

  // A write etcd sees but the cache does not hear of puts it behind; a consistent list proves it fresh again.
  const kv = new Etcd3({ hosts: etcd.endpoint });
  try {
    // Outside the server's etcd prefix: the cache hears every revision under it (test/integration/watchcache.test.ts).
    await kv.put(`/elsewhere-${Date.now()}`).value('x');
  } finally {
    kv.close();
  }
  expect(total(await scrape(), 'apiserver_watch_cache_lag_revisions', labels)).toBeGreaterThanOrEqual(1);
  await waitFor('a consistent list to catch the cache up', async () => {
    expect((await root.get(SECRETS)).status).toBe(200);
    return total(await scrape(), 'apiserver_watch_cache_lag_revisions', labels) === 0;
  });
});

test('etcd calls are timed by operation and object type', async () => {
  expect((await root.post(SECRETS, secret('timed'))).status).toBe(201);
  const s = await scrape();
  expect(
    total(s, 'etcd_request_duration_seconds_count', { operation: 'create', type: `sharedsecrets.${GROUP}` }),
  ).toBeGreaterThanOrEqual(1);
  expect(find(s, 'etcd_request_duration_seconds_count').every((x) => !x.labels.type.includes('/'))).toBe(true);
});

test("a tenant's get of an object its access list grants reads etcd once, and answers what it read", async () => {
  const body = secret('read-once');
  const granted = { ...body, spec: { ...body.spec, access: [{ name: 'readers', verbs: ['get'], users: ['alice'] }] } };
  expect((await root.post(SECRETS, granted)).status).toBe(201);
  // A consistent read is etcd's current revision (then the watch cache, once it holds that) or etcd's get; a scrape
  // reads the revision once itself, for the cache's lag.
  const reads = async () => {
    const s = await scrape();
    const count = (labels: Record<string, string>) => total(s, 'etcd_request_duration_seconds_count', labels);
    return count({ operation: 'currentRevision' }) + count({ operation: 'get', type: `sharedsecrets.${GROUP}` });
  };
  // Nothing else reads SharedSecrets one by one here once the garbage collector has taken the create.
  await waitFor(
    'the garbage collector to take the create',
    async () => total(await scrape(), 'workqueue_depth', { name: 'garbage-collector' }) === 0,
  );
  const first = await reads();
  const idle = (await reads()) - first;
  const before = await reads();
  for (let i = 0; i < 5; i++) {
    const res = await alice.get(`${SECRETS}/read-once`);
    expect(res.status).toBe(200);
    expect(res.body.spec.access).toEqual(granted.spec.access);
  }
  // Authorization reads the object (consistently) to find its grant; the get answers with that read.
  expect((await reads()) - before - idle).toBe(5);
});

test('controllers: the leader reports it, and the garbage collector queue counts what it is given', async () => {
  await waitFor(
    'this replica to lead',
    async () => total(await scrape(), 'leader_election_master_status', { name: 'controllers' }) === 1,
  );
  const owner = await root.post(SECRETS, secret('queued-owner'));
  expect(owner.status).toBe(201);
  const before = total(await scrape(), 'workqueue_adds_total', { name: 'garbage-collector' });
  // An object with an owner is the collector's work (one without is not queued at all).
  const owned = secret('queued');
  Object.assign(owned.metadata, {
    ownerReferences: [
      { apiVersion: API_VERSION, kind: 'SharedSecret', name: 'queued-owner', uid: owner.body.metadata.uid },
    ],
  });
  expect((await root.post(SECRETS, owned)).status).toBe(201);
  const s = await waitFor('the garbage collector to queue the new object', async () => {
    const got = await scrape();
    return total(got, 'workqueue_adds_total', { name: 'garbage-collector' }) > before && got;
  });
  expect(find(s, 'workqueue_depth', { name: 'garbage-collector' })).toHaveLength(1);
});

test('process metrics are there', async () => {
  const s = await scrape();
  expect(find(s, 'process_cpu_user_seconds_total')).toHaveLength(1);
  expect(find(s, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
  expect(find(s, 'nodejs_heap_size_total_bytes')).toHaveLength(1);
  expect(find(s, 'process_resident_memory_bytes')).toHaveLength(1);
});

describe('--authorization-always-allow-paths', () => {
  let open: TestServer;

  beforeAll(async () => {
    open = await startTestServerWithUsers(
      { root: ['system:masters'] },
      { authorizationAlwaysAllowPaths: ['/metrics', '/livez'] },
      etcd,
    );
  }, 60_000);

  afterAll(async () => {
    await open?.stop();
  });

  test('a listed path may be read by anyone; one left out of the list is no longer public', async () => {
    const s = await scrape(open.anonymous);
    // The anonymous scrape is itself a read-only request in flight.
    expect(total(s, 'apiserver_current_inflight_requests', { request_kind: 'readOnly' })).toBe(1);
    expect(total(s, 'apiserver_current_inflight_requests', { request_kind: 'mutating' })).toBe(0);
    expect((await open.anonymous.get('/livez')).status).toBe(200);
    const healthz = await open.anonymous.get('/healthz');
    expect(healthz.status).toBe(401);
    expect(healthz.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
    expect((await open.anonymous.get(SECRETS)).status).toBe(401);
  });

  test('each server counts only its own requests', async () => {
    const s = await scrape(open.anonymous);
    expect(total(s, 'apiserver_request_total', { resource: 'sharedsecrets', verb: 'POST' })).toBe(0);
    expect(total(s, 'apiserver_request_total', { subresource: '/healthz', code: '401' })).toBe(1);
  });
});
