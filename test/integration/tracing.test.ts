/**
 * OpenTelemetry tracing (--tracing-config-file), exported over OTLP/gRPC to a real receiver (test/support/
 * otlpreceiver.ts). The server samples at rate 0, as kube-apiserver's default: only what a caller sampled with its
 * `traceparent` is exported. A request's spans are in the caller's trace with kube's names and attributes (request →
 * handler → admission webhook, request → etcd, request → TokenReview and SubjectAccessReview at the host), the
 * webhook receives the trace context, log lines name the trace, unsampled requests export nothing, and no attribute
 * of any span holds a key, a token or secret data.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { API_VERSION, GROUP, secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import { GROUP_PATH, HttpClient, type HttpResponse } from '../support/http.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpreceiver.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { answerWhen } from '../support/wait.js';
import { startWebhookServer, type WebhookServer } from '../support/webhookserver.js';

const NS = 'team-traced';
const HOOK_PATH = '/traced';
const HOST_TOKEN = `host-token-${randomBytes(8).toString('hex')}`;
const lines: string[] = [];
let receiver: OtlpReceiver;
let host: HostClusterStandIn;
let hook: WebhookServer;
let ts: TestServer;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  host = await startHostCluster();
  host.addNamespace(NS);
  host.addToken(HOST_TOKEN, { name: 'host-user', uid: 'uid-host-user', groups: ['system:authenticated'] });
  host.onSubjectAccessReview = (spec) => (spec.user === 'host-user' ? { allowed: true } : undefined);
  hook = await startWebhookServer();
  hook.handle(HOOK_PATH, () => ({ response: { allowed: true } }));
  const dir = mkdtempSync(join(tmpdir(), 'tracing-'));
  const tracingConfigFile = join(dir, 'tracing.yaml');
  writeFileSync(
    tracingConfigFile,
    `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: ${receiver.endpoint}\nsamplingRatePerMillion: 0\n`,
  );
  // The SDK's own setting of how long spans wait for their batch (default 5 s).
  process.env.OTEL_BSP_SCHEDULE_DELAY = '20';
  ts = await startTestServer(
    { kubeconfig: host.kubeconfigPath, tracingConfigFile, verbosity: 3 },
    undefined,
    createLogger((line) => lines.push(line), { verbosity: 3 }),
  );
  host.putAdmission('validatingwebhookconfigurations', {
    metadata: { name: 'traced' },
    webhooks: [
      {
        name: 'traced.hooks.example.com',
        clientConfig: { url: hook.url(HOOK_PATH), caBundle: hook.caBundle },
        rules: [{ operations: ['CREATE'], apiGroups: [GROUP], apiVersions: ['v1'], resources: ['sharedsecrets'] }],
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  } as KubeObj);
  await answerWhen(
    'the webhook to be asked',
    () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
    () => hook.received.length > 0,
  );
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await hook?.stop();
  await host?.stop();
  await receiver?.stop();
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
}, 60_000);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const traceparent = (traceId: string, sampled: boolean) => `00-${traceId}-${hex(8)}-${sampled ? '01' : '00'}`;

/** The spans of `traceId` once the request's span (the last to end) and `names` have all arrived. */
async function traceOf(traceId: string, names: string[] = []): Promise<ReceivedSpan[]> {
  const of = (spans: ReceivedSpan[]) => spans.filter((s) => s.traceId === traceId);
  const spans = await receiver.until(`the spans of trace ${traceId}`, (all) => {
    const mine = of(all);
    return mine.some((s) => s.kind === 2) && names.every((n) => mine.some((s) => s.name === n));
  });
  return of(spans);
}

function byName(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((s) => s.name === name);
  expect(span).toBeDefined();
  return span!;
}

/** Whether `span` descends from `ancestor` in `spans`. */
function descends(spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  for (let s: ReceivedSpan | undefined = span; s; s = spans.find((p) => p.spanId === s!.parentSpanId))
    if (s.parentSpanId === ancestor.spanId) return true;
  return false;
}

const REQUEST_SPAN = `POST /apis/${GROUP}/v1/namespaces/{:namespace}/sharedsecrets`;

test("a request with a traceparent: its spans continue that trace, with kube's names and attributes; the webhook receives the context", async () => {
  const traceId = hex(16);
  const parent = traceparent(traceId, true);
  hook.received.splice(0);
  const name = uniq('traced');
  const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(name), {
    headers: { traceparent: parent, 'User-Agent': 'tracing-test/1.0' },
  });
  expect(res.status).toBe(201);
  const spans = await traceOf(traceId, ['Create', 'Call validating webhook', 'Create etcd3']);

  const request = byName(spans, REQUEST_SPAN);
  expect(request.parentSpanId).toBe(parent.split('-')[2]);
  expect(request.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.response.status_code': 201,
    'user_agent.original': 'tracing-test/1.0',
    'audit-id': res.headers['audit-id'],
  });
  expect(request.resource).toMatchObject({ 'service.name': 'platform-management-api' });
  expect(typeof request.resource['service.version']).toBe('string');

  const handler = byName(spans, 'Create');
  expect(handler.parentSpanId).toBe(request.spanId);
  expect(handler.attributes).toMatchObject({
    verb: 'CREATE',
    resource: 'sharedsecrets',
    namespace: NS,
    scope: 'namespace',
    'user-agent': 'tracing-test/1.0',
    'audit-id': res.headers['audit-id'],
  });

  const webhook = byName(spans, 'Call validating webhook');
  expect(descends(spans, webhook, handler)).toBe(true);
  expect(webhook.attributes).toMatchObject({
    configuration: 'traced',
    webhook: 'traced.hooks.example.com',
    resource: 'sharedsecrets',
    operation: 'CREATE',
  });
  const etcd = byName(spans, 'Create etcd3');
  expect(descends(spans, etcd, request)).toBe(true);
  expect(String(etcd.attributes.key)).toContain(`/sharedsecrets/${NS}/${name}`);

  // The webhook was called within its span: the trace goes on there.
  const received = hook.received.find((r) => r.review.request.name === name);
  expect(received?.traceparent).toBe(`00-${traceId}-${webhook.spanId}-01`);
});

test('a host token: TokenReview and SubjectAccessReview are calls to the host within the request, carrying its trace on', async () => {
  const traceId = hex(16);
  const client = new HttpClient(ts.server.url, ts.server.caPem ?? '', HOST_TOKEN);
  const res = await client.get(sharedSecretsPath(NS), { headers: { traceparent: traceparent(traceId, true) } });
  expect(res.status).toBe(200);
  const spans = await traceOf(traceId, ['List']);
  const request = byName(spans, `GET /apis/${GROUP}/v1/namespaces/{:namespace}/sharedsecrets`);
  const calls = spans.filter((s) => s.name === 'HTTP POST');
  expect(calls.map((s) => s.attributes.operation).sort()).toEqual(['SubjectAccessReview', 'TokenReview']);
  for (const call of calls) {
    expect(descends(spans, call, request)).toBe(true);
    expect(call.kind).toBe(1);
    expect(call.attributes['http.response.status_code']).toBe(201);
    // The host's apiserver got the trace context of the call's span.
    expect(host.requests.some((r) => r.traceparent === `00-${traceId}-${call.spanId}-01`)).toBe(true);
  }
});

test('rate 0: a request without a traceparent, or with an unsampled one, exports nothing; log lines name the trace of a sampled one', async () => {
  const unsampled = hex(16);
  const plain = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('plain')));
  expect(plain.status).toBe(201);
  const notSampled = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('unsampled')), {
    headers: { traceparent: traceparent(unsampled, false) },
  });
  expect(notSampled.status).toBe(201);
  // Spans are sent in the order they end: once a later sampled request's spans are in, earlier ones would be too.
  const marker = hex(16);
  const sampled = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('marker')), {
    headers: { traceparent: traceparent(marker, true) },
  });
  await traceOf(marker);
  const exported = new Set(receiver.spans.map((s) => s.traceId));
  expect(exported.has(unsampled)).toBe(false);
  // Nothing but the traces the tests sampled: no root was sampled by the server itself.
  expect(receiver.spans.filter((s) => !s.parentSpanId && s.kind !== 2)).toEqual([]);
  for (const res of [plain, notSampled])
    expect(receiver.spans.some((s) => s.attributes['audit-id'] === res.headers['audit-id'])).toBe(false);

  const logged = (res: HttpResponse) =>
    lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'HTTP' && l.auditID === res.headers['audit-id']);
  expect(logged(sampled)?.traceID).toBe(marker);
  expect(logged(plain)).toBeDefined();
  expect(logged(plain).traceID).toBeUndefined();
  expect(logged(notSampled).traceID).toBeUndefined();
});

test('no span attribute holds an access key, a token or secret data, not even hashed', async () => {
  const traceId = hex(16);
  const headers = { traceparent: traceparent(traceId, true) };
  const secretValue = Buffer.from(`the-secret-value-${hex(8)}`).toString('base64');
  const givenKey = `my-own-key-${hex(16)}`;
  const generated = await ts.admin.post(
    `${GROUP_PATH}/ownedaccesskeys`,
    {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name: uniq('traced') },
      spec: { user: 'traced-bot' },
    },
    { headers },
  );
  expect(generated.status).toBe(201);
  const key: string = generated.body.spec.key;
  const given = await ts.admin.post(
    `${GROUP_PATH}/ownedaccesskeys`,
    {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name: uniq('given') },
      spec: { user: 'traced-bot', key: givenKey },
    },
    { headers },
  );
  expect(given.status).toBe(201);
  // A rotation answers a new value; the old one goes on working for the grace.
  const rotated = await ts.admin.post(
    `${GROUP_PATH}/ownedaccesskeys/${given.body.metadata.name}/rotate`,
    { apiVersion: API_VERSION, kind: 'OwnedAccessKey', spec: { rotationGracePeriod: 60 } },
    { headers },
  );
  expect(rotated.status).toBe(201);
  const rotatedKey: string = rotated.body.spec.key;
  const secretName = uniq('data');
  const body = { ...secretBody(secretName), spec: { data: { token: secretValue } } };
  expect((await ts.admin.post(sharedSecretsPath(NS), body, { headers })).status).toBe(201);
  // The keys and a host token used as credentials, and a secret read back.
  await new HttpClient(ts.server.url, ts.server.caPem ?? '', key).get(sharedSecretsPath(NS), { headers });
  await new HttpClient(ts.server.url, ts.server.caPem ?? '', givenKey).get(sharedSecretsPath(NS), { headers });
  await answerWhen(
    'the rotated value to work',
    () => new HttpClient(ts.server.url, ts.server.caPem ?? '', rotatedKey).get(sharedSecretsPath(NS), { headers }),
    (res) => res.status === 200,
    30_000,
  );
  await new HttpClient(ts.server.url, ts.server.caPem ?? '', HOST_TOKEN).get(sharedSecretsPath(NS), { headers });
  expect((await ts.admin.get(`${sharedSecretsPath(NS)}/${secretName}`, { headers })).status).toBe(200);
  const marker = hex(16);
  await ts.admin.get(sharedSecretsPath(NS), { headers: { traceparent: traceparent(marker, true) } });
  await traceOf(marker);
  expect(receiver.spans.filter((s) => s.traceId === traceId).length).toBeGreaterThan(10);

  const adminToken = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
  const secrets = [
    key,
    givenKey,
    rotatedKey,
    HOST_TOKEN,
    adminToken,
    secretValue,
    Buffer.from(secretValue, 'base64').toString(),
  ];
  const forms = secrets.flatMap((s) => [
    s,
    Buffer.from(s).toString('base64'),
    createHash('sha256').update(s).digest('hex'),
    createHash('sha256').update(s).digest('base64'),
    createHash('sha256').update(s).digest('base64url'),
  ]);
  const values = receiver.spans.flatMap((s) => [
    s.name,
    ...Object.values(s.attributes).flat().map(String),
    ...Object.values(s.resource).flat().map(String),
  ]);
  for (const form of forms) expect(values.filter((v) => v.includes(form))).toEqual([]);
});
