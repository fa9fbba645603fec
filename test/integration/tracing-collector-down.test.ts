/**
 * Tracing with a collector that takes the connection and never answers (the worst case: every export hangs), every
 * request sampled and a small span queue: requests are answered as ever while the exports hang, since ending a span
 * only queues it (and past the queue's bound spans are dropped), and the server still stops.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

const NS = 'team-untraced';
const ENV = {
  // Spans go out at once, at most 20 wait, and a hung export would be waited on for ten minutes.
  OTEL_BSP_SCHEDULE_DELAY: '10',
  OTEL_BSP_MAX_QUEUE_SIZE: '20',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
  OTEL_BSP_EXPORT_TIMEOUT: '600000',
  OTEL_EXPORTER_OTLP_TIMEOUT: '600000',
};
let blackHole: Server;
const connections: Socket[] = [];
let connected: Promise<void>;
let ts: TestServer;

beforeAll(async () => {
  let onConnection = () => {};
  connected = new Promise((resolve) => (onConnection = resolve));
  blackHole = createServer((socket) => {
    connections.push(socket);
    onConnection();
  });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const { port } = blackHole.address() as { port: number };
  const dir = mkdtempSync(join(tmpdir(), 'tracing-down-'));
  const tracingConfigFile = join(dir, 'tracing.yaml');
  writeFileSync(
    tracingConfigFile,
    `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:${port}\nsamplingRatePerMillion: 1000000\n`,
  );
  Object.assign(process.env, ENV);
  ts = await startTestServer({ tracingConfigFile });
}, 120_000);

afterAll(async () => {
  // The collector goes away first: the exports fail now (not after the test), and the server stops.
  const closed = new Promise((resolve) => blackHole?.close(resolve));
  for (const socket of connections) socket.destroy();
  await closed;
  await ts?.stop();
  for (const name of Object.keys(ENV)) delete process.env[name];
}, 60_000);

test('a collector that never answers neither fails nor holds up requests', async () => {
  expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('first')))).status).toBe(201);
  // The exporter has connected: from here on its export hangs.
  await connected;
  // Far more spans than the queue holds; none of the requests waits for an export (that would take ten minutes).
  for (let i = 0; i < 40; i++) {
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('untraced')));
    expect(res.status).toBe(201);
  }
  const list = await ts.admin.get(sharedSecretsPath(NS));
  expect(list.status).toBe(200);
  expect(list.body.items).toHaveLength(41);
});
