/**
 * Tracing of the controllers' work: every request sampled (samplingRatePerMillion 1000000), a host cluster for the
 * access sync. The access sync's and the garbage collector's turn on an object are root spans of their own traces,
 * linked to the traced write that caused them, with the object's kind and name; what they write is in their trace.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpreceiver.js';
import { startTestServer, type TestServer } from '../support/server.js';

const NS = 'team-controllers';
let receiver: OtlpReceiver;
let host: HostClusterStandIn;
let ts: TestServer;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  host = await startHostCluster();
  host.addNamespace(NS);
  const dir = mkdtempSync(join(tmpdir(), 'tracing-controllers-'));
  const tracingConfigFile = join(dir, 'tracing.yaml');
  writeFileSync(
    tracingConfigFile,
    `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: ${receiver.endpoint}\nsamplingRatePerMillion: 1000000\n`,
  );
  process.env.OTEL_BSP_SCHEDULE_DELAY = '20';
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, tracingConfigFile });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await receiver?.stop();
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
}, 60_000);

test('the access sync and the garbage collector trace their work on an object, linked to the create that caused it', async () => {
  const traceId = randomBytes(16).toString('hex');
  const name = uniq('linked');
  // An owner, so that the object is the garbage collector's work (one without an owner is not its to look at).
  const owner = await ts.admin.post(sharedSecretsPath(NS), secretBody(`${name}-owner`));
  expect(owner.status).toBe(201);
  const body: any = secretBody(name);
  body.metadata.ownerReferences = [
    { apiVersion: owner.body.apiVersion, kind: 'SharedSecret', name: `${name}-owner`, uid: owner.body.metadata.uid },
  ];
  const res = await ts.admin.post(sharedSecretsPath(NS), body, {
    headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
  });
  expect(res.status).toBe(201);
  const linkedRoot = (spans: ReceivedSpan[], spanName: string) =>
    spans.find((s) => s.name === spanName && s.attributes.name === name && s.links.some((l) => l.traceId === traceId));
  const spans = await receiver.until(
    'the access sync and garbage collector spans of the object',
    (all) => !!linkedRoot(all, 'Sync access') && !!linkedRoot(all, 'Garbage collect'),
  );
  const created = spans.filter((s) => s.traceId === traceId);
  for (const [spanName, kindAttribute] of [
    ['Sync access', { kind: 'SharedSecret' }],
    ['Garbage collect', { resource: 'sharedsecrets' }],
  ] as const) {
    const root = linkedRoot(spans, spanName)!;
    expect(root.parentSpanId).toBe('');
    expect(root.traceId).not.toBe(traceId);
    expect(root.attributes).toMatchObject({ ...kindAttribute, namespace: NS, name });
    // The link is to the span of the create's trace that wrote the object.
    const link = root.links.find((l) => l.traceId === traceId)!;
    expect(created.some((s) => s.spanId === link.spanId)).toBe(true);
  }
  // What the access sync does on the object (its condition written to etcd) is in its own trace.
  const sync = linkedRoot(spans, 'Sync access')!;
  await receiver.until('a write of the access sync in its trace', (all) =>
    all.some((s) => s.traceId === sync.traceId && s.parentSpanId === sync.spanId && s.name.endsWith(' etcd3')),
  );
});
