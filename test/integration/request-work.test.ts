/**
 * A request holds its API Priority and Fairness seats, and its in-flight count, for as long as the server works on
 * it, not only for as long as its client is there: kube gives them back when the handler returns. A client that
 * sends a whole request and leaves at once would otherwise have it worked on without a seat, so one tenant could
 * have any number of its requests worked on at once, past --max-seats-per-flow and the level's seats.
 *
 * The work here is a tenant's create of an OwnedAccessKey (anyone may create one for themselves) held at a
 * validating admission webhook until the test lets it answer; its client resets its connection meanwhile.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { connect as connectTcp } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { API_VERSION, GROUP } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { answerWhen, waitFor } from '../support/wait.js';
import { startWebhookServer, type WebhookServer } from '../support/webhookserver.js';

const USERS = { root: ['system:masters'], alice: [] };
const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const HOOK_PATH = '/held';

let host: HostClusterStandIn;
let hook: WebhookServer;
let ts: TestServer & { as: Record<keyof typeof USERS, HttpClient> };
/** Resolves the webhook's answers held so far, and holds the next ones again. */
let letAnswer: () => void = () => {};

beforeAll(async () => {
  host = await startHostCluster();
  hook = await startWebhookServer();
  let release: () => void = () => {};
  let held = new Promise<void>((resolve) => (release = resolve));
  letAnswer = () => {
    release();
    held = new Promise<void>((resolve) => (release = resolve));
  };
  // Dry runs (the probe that shows the webhook in force) are answered at once; every other create waits for the test.
  hook.handle(HOOK_PATH, (review) => ({
    response: { allowed: true },
    ...(review.request.dryRun ? {} : { until: held }),
  }));
  // The grace a handler still at work gets after its request ended is longer than the webhook may take: only the
  // webhook's answer ends the work here.
  ts = await startTestServerWithUsers(USERS, { kubeconfig: host.kubeconfigPath, responseGraceMs: 120_000 });
  host.putAdmission('validatingwebhookconfigurations', {
    metadata: { name: 'held-keys' },
    webhooks: [
      {
        name: 'held-keys.hooks.example.com',
        clientConfig: { url: hook.url(HOOK_PATH), caBundle: hook.caBundle },
        rules: [{ operations: ['CREATE'], apiGroups: [GROUP], apiVersions: ['v1'], resources: ['ownedaccesskeys'] }],
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 30,
        failurePolicy: 'Fail',
      },
    ],
  } as KubeObj);
  await answerWhen(
    'the webhook to be asked',
    () => ts.as.alice.post(`${KEYS}?dryRun=All`, keyBody(`probe-${randomUUID()}`)),
    () => hook.received.some((r) => r.path === HOOK_PATH),
  );
}, 120_000);

afterAll(async () => {
  letAnswer();
  await ts?.stop();
  await hook?.stop();
  await host?.stop();
}, 60_000);

function keyBody(name: string) {
  return { apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name }, spec: {} };
}

/** What global-default holds, the mutating requests in flight, and the creates of keys that have ended. */
async function held(): Promise<{ seats: number; mutatingInFlight: number; createsEnded: number }> {
  const samples = parseSamples((await ts.as.root.get('/metrics')).text);
  return {
    seats: total(samples, 'apiserver_flowcontrol_current_executing_seats', { priority_level: 'global-default' }),
    mutatingInFlight: total(samples, 'apiserver_current_inflight_requests', { request_kind: 'mutating' }),
    createsEnded: total(samples, 'apiserver_request_total', { verb: 'POST', resource: 'ownedaccesskeys', dry_run: '' }),
  };
}

/** alice's create of `name` on a connection of its own, sent whole; `reset` then resets the connection (RST). */
function sendCreate(name: string) {
  const url = new URL(ts.server.url);
  const tcp = connectTcp(Number(url.port), url.hostname);
  const tls = connectTls({ socket: tcp, host: url.hostname, ca: ts.server.caPem });
  tcp.on('error', () => {});
  tls.on('error', () => {});
  const body = JSON.stringify(keyBody(name));
  tls.once('secureConnect', () =>
    tls.write(
      `POST ${KEYS} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${ts.as.alice.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    ),
  );
  const closed = new Promise<void>((resolve) => tls.once('close', () => resolve()));
  return {
    async reset() {
      tcp.resetAndDestroy();
      await closed;
    },
  };
}

test('a client that leaves while its create waits on a webhook does not take back its seat and in-flight count before the work is done', async () => {
  const before = await held();
  expect(before).toMatchObject({ seats: 0, mutatingInFlight: 0 });
  const name = `left-${randomUUID()}`;
  const client = sendCreate(name);
  await waitFor("alice's create to reach the webhook", async () =>
    hook.received.some((r) => r.review.request.name === name && !r.review.request.dryRun),
  );
  expect(await held()).toMatchObject({ seats: 1, mutatingInFlight: 1 });

  await client.reset();
  // The server has seen the request end: it is counted, as answered or not.
  await waitFor('the server to end the request', async () => (await held()).createsEnded > before.createsEnded);
  // Its work goes on (the webhook still holds it), and so do its seat and its place among the requests in flight.
  expect(await held()).toMatchObject({ seats: 1, mutatingInFlight: 1 });

  letAnswer();
  await waitFor('the create to give back its seat once done', async () => (await held()).seats === 0);
  expect(await held()).toMatchObject({ seats: 0, mutatingInFlight: 0 });
  // The work was done: the key exists, as a write whose client left still lands in kube.
  expect((await ts.as.root.get(`${KEYS}/${name}`)).status).toBe(200);
  expect((await ts.as.alice.get(`${KEYS}?timeout=4s`)).status).toBe(200);
}, 60_000);
