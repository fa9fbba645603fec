/**
 * --max-requests-inflight and --max-mutating-requests-inflight, as kube-apiserver's filter: past a limit a request
 * is refused at once with 429 TooManyRequests and Retry-After (so client-go retries); watches and system:masters
 * are not limited; a finished request frees its slot. A kube config request held open by a slow virtual cluster
 * signer keeps one slot busy.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { API_VERSION, CLUSTERS_PATH } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
const KUBECONFIG = `${GROUP_PATH}/namespaces/p-web/virtualclusterinstances/vc1/kubeconfig`;

beforeAll(async () => {
  host = await startHostCluster();
  vcluster = await startHostCluster({ csrSigningDelayMs: 2000 });
  host.addSecret('vcluster-vc1', 'vc-vc1', { config: vcluster.kubeconfigText() });
  const server = await startTestServerWithUsers({ root: ['system:masters'], bob: [] }, { kubeconfig: host.kubeconfigPath, maxRequestsInflight: 1, maxMutatingRequestsInflight: 1 });
  ({ root, bob } = server.as);
  ts = server;
  const vci = { apiVersion: API_VERSION, kind: 'VirtualClusterInstance', metadata: { name: 'vc1' }, spec: { owner: { user: 'bob' }, clusterRef: { cluster: 'eu-1', namespace: 'vcluster-vc1' }, ingressEndpoint: 'https://vc1.example.com' } };
  expect((await root.post(`${GROUP_PATH}/namespaces/p-web/virtualclusterinstances`, vci)).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await vcluster?.stop();
}, 60_000);

/** Starts a request that stays in flight until the virtual cluster signs (about 2 s). */
async function holdSlot(method: 'GET' | 'POST') {
  vcluster.resetCounts();
  const pending = method === 'GET' ? bob.get(KUBECONFIG) : bob.post(KUBECONFIG, { spec: {} });
  await waitFor('the held request to reach the virtual cluster', () => vcluster.count('certificatesigningrequests', 'POST') > 0);
  // Wrapped: an async function returning the promise itself would make the caller wait for it.
  return { pending };
}

test('past --max-requests-inflight reads get 429 with Retry-After; masters and watches pass; the slot frees', async () => {
  const { pending: held } = await holdSlot('GET');
  const refused = await bob.get(CLUSTERS_PATH);
  expect(refused.status).toBe(429);
  expect(refused.headers['retry-after']).toBe('1');
  expect(refused.body).toMatchObject({ kind: 'Status', reason: 'TooManyRequests', message: 'Too many requests, please try again later.', details: { retryAfterSeconds: 1 } });
  expect((await root.get(CLUSTERS_PATH)).status).toBe(200);
  expect((await bob.get(`${CLUSTERS_PATH}?watch=true&timeoutSeconds=1`)).status).toBe(200);
  // Mutating requests have their own limit.
  expect((await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, { spec: {} })).status).toBe(201);

  expect((await held).status).toBe(200);
  expect((await bob.get(CLUSTERS_PATH)).status).toBe(200);
}, 30_000);

test('past --max-mutating-requests-inflight writes get 429 while reads still pass', async () => {
  const { pending: held } = await holdSlot('POST');
  const refused = await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, { spec: {} });
  expect(refused.status).toBe(429);
  expect(refused.headers['retry-after']).toBe('1');
  expect((await bob.get(CLUSTERS_PATH)).status).toBe(200);
  expect((await root.post(`${GROUP_PATH}/directclusterendpointtokens`, { spec: {} })).status).toBe(201);

  expect((await held).status).toBe(201);
  expect((await bob.post(`${GROUP_PATH}/directclusterendpointtokens`, { spec: {} })).status).toBe(201);
}, 30_000);
