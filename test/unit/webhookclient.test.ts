/**
 * The admission webhook client against a real HTTPS webhook: credentials in a webhook URL (`user:password@`) are sent
 * as Basic credentials, as node's https sends them, and never shown in the error of a failed call (which becomes the
 * client's 500 and the log line); a POST whose kept-alive connection the webhook closes is not sent again (kube's
 * admission webhooks are not called twice for one request).
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { callWebhook } from '../../src/admission/webhookclient.js';
import { makeCert } from '../support/certs.js';

const ca = makeCert({ commonName: 'webhook-ca', isCa: true });
const serving = makeCert({ commonName: 'webhook', issuer: ca, usage: 'serverAuth', ips: ['127.0.0.1'] });
const caBundle = Buffer.from(ca.certPem).toString('base64');

/** What the webhook received: each request's path and Authorization header, and on which connection. */
const received: { path: string; authorization?: string; socket: Socket }[] = [];
/** Paths whose requests are read whole, then have their connection destroyed when it carried one of them before. */
const closeReused = new Set<string>();
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'https://webhook').pathname;
      const reused = received.some((r) => r.socket === req.socket && r.path === path);
      received.push({ path, authorization: req.headers.authorization, socket: req.socket });
      if (reused && closeReused.has(path)) return req.socket.destroy();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ response: { allowed: true } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('credentials in a webhook URL are sent as Basic credentials', async () => {
  await callWebhook({ url: `https://hook-user:hook%20pass@127.0.0.1:${port}/basic`, caBundle }, {}, 5);
  const asked = received.filter((r) => r.path === '/basic');
  expect(asked.map((r) => r.authorization)).toEqual([`Basic ${Buffer.from('hook-user:hook pass').toString('base64')}`]);
});

test('a failed call names the webhook URL without the credentials in it', async () => {
  const err = await callWebhook({ url: 'https://hook-user:hook-secret@127.0.0.1:1/unreachable', caBundle }, {}, 5).then(
    () => undefined,
    (e: Error) => e,
  );
  expect(err?.message).toMatch(/^failed to call webhook: Post "https:\/\/127\.0\.0\.1:1\/unreachable\?timeout=5s": /);
  expect(err?.message).not.toContain('hook-secret');
  expect(err?.message).not.toContain('hook-user');
});

test('a call whose kept-alive connection the webhook closes after reading it is not sent again', async () => {
  closeReused.add('/once');
  const url = `https://127.0.0.1:${port}/once`;
  // The first call leaves its connection open for the next (the agent keeps it alive).
  await callWebhook({ url, caBundle }, {}, 5);
  const second = await callWebhook({ url, caBundle }, {}, 5).then(
    () => 'answered',
    (e: Error) => e.message,
  );
  expect(second).toMatch(/^failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/once\?timeout=5s": /);
  expect(received.filter((r) => r.path === '/once')).toHaveLength(2);
});
