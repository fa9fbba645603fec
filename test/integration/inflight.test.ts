/**
 * --max-requests-inflight and --max-mutating-requests-inflight with --enable-priority-and-fairness=false, as
 * kube-apiserver's filter: past a limit a request
 * is refused at once with 429 TooManyRequests and Retry-After (so client-go retries); watches and system:masters
 * are not limited; a finished request frees its slot. A kube config request held open by a slow virtual cluster
 * signer keeps one slot busy.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { CLUSTERS_PATH, API_VERSION } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { HEALTH_INTERVAL_MS } from '../support/connectedclusters.js';
import { startSlowVirtualCluster, type SlowVirtualCluster } from '../support/slowrequest.js';

let slow: SlowVirtualCluster;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;

beforeAll(async () => {
  slow = await startSlowVirtualCluster('held');
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [] },
    {
      kubeconfig: slow.host.kubeconfigPath,
      maxRequestsInflight: 1,
      maxMutatingRequestsInflight: 1,
      // The limits on their own, as before API Priority and Fairness (test/integration/flowcontrol.test.ts has it).
      enablePriorityAndFairness: false,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
    },
  );
  ({ root, bob } = server.as);
  ts = server;
  await slow.createInstance(root, 'bob');
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await slow?.stop();
}, 60_000);

/** Starts a request that stays in flight until the test lets the virtual cluster sign (slow.release()). */
async function holdSlot(method: 'GET' | 'POST') {
  slow.hold();
  slow.resetCounts();
  const pending =
    method === 'GET'
      ? bob.get(slow.kubeconfigPath)
      : bob.post(slow.kubeconfigPath, { apiVersion: API_VERSION, kind: 'VirtualClusterInstanceKubeConfig', spec: {} });
  await slow.reached();
  // Wrapped: an async function returning the promise itself would make the caller wait for it.
  return { pending };
}

test('past --max-requests-inflight reads get 429 with Retry-After; masters and watches pass; the slot frees', async () => {
  const { pending: held } = await holdSlot('GET');
  const refused = await bob.get(CLUSTERS_PATH);
  expect(refused.status).toBe(429);
  expect(refused.headers['retry-after']).toBe('1');
  expect(refused.body).toMatchObject({
    kind: 'Status',
    reason: 'TooManyRequests',
    message: 'Too many requests, please try again later.',
    details: { retryAfterSeconds: 1 },
  });
  expect((await root.get(CLUSTERS_PATH)).status).toBe(200);
  expect((await bob.get(`${CLUSTERS_PATH}?watch=true&timeoutSeconds=1`)).status).toBe(200);
  // Mutating requests have their own limit.
  expect(
    (
      await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, {
        apiVersion: API_VERSION,
        kind: 'DirectClusterEndpointToken',
        spec: {},
      })
    ).status,
  ).toBe(201);

  slow.release();
  expect((await held).status).toBe(200);
  expect((await bob.get(CLUSTERS_PATH)).status).toBe(200);
}, 30_000);

test('past --max-mutating-requests-inflight writes get 429 while reads still pass', async () => {
  const { pending: held } = await holdSlot('POST');
  const refused = await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, {
    apiVersion: API_VERSION,
    kind: 'DirectClusterEndpointToken',
    spec: {},
  });
  expect(refused.status).toBe(429);
  expect(refused.headers['retry-after']).toBe('1');
  expect((await bob.get(CLUSTERS_PATH)).status).toBe(200);
  expect(
    (
      await root.post(`${GROUP_PATH}/directclusterendpointtokens`, {
        apiVersion: API_VERSION,
        kind: 'DirectClusterEndpointToken',
        spec: {},
      })
    ).status,
  ).toBe(201);

  slow.release();
  expect((await held).status).toBe(201);
  expect(
    (
      await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, {
        apiVersion: API_VERSION,
        kind: 'DirectClusterEndpointToken',
        spec: {},
      })
    ).status,
  ).toBe(201);
}, 30_000);
