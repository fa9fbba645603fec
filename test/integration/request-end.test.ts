/**
 * A request gives back its API Priority and Fairness seat (and its in-flight count) however it ends, so that one
 * flow's single seat (--max-seats-per-flow=1) is never lost: a client that resets its connection during a large
 * answer, a client that stops reading one (its seat back once the answer is all written, its response cut a grace
 * after its deadline), a connection destroyed under a request. A lost seat would show as the same user's next request waiting out its wait limit and 429.
 *
 * On Node 24.20.0 a reset during a large answer sometimes left the response without 'close' for good
 * (docs/node-reset-close.md); that happens about once in hundreds of resets, so the tests make it happen every time:
 * the server's side of the request is found on Node's `http.server.request.start` diagnostics channel and its
 * response never emits 'close' (what the server got from Node then). Its connection still closes.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { API_VERSION, sharedSecretsPath } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const NS = 'default';
const USERS = { root: ['system:masters'], alice: [], bob: [], carol: [] };
type User = keyof typeof USERS;
const MARKER_HEADER = 'x-test-request';
/** SharedSecrets of 1000 KiB (before base64): their list is far more than the connection's buffers hold. */
const BIG_OBJECTS = 12;
/** Their list, from the watch cache (a consistent list reads 16 MiB from etcd first). */
const LIST = `${sharedSecretsPath(NS)}?resourceVersion=0`;

let ts: TestServer & { as: Record<User, HttpClient> };

beforeAll(async () => {
  // --request-timeout stays a minute: only the answer bob stops reading has a short deadline (its ?timeout=).
  ts = await startTestServerWithUsers(USERS, { maxSeatsPerFlow: 1, responseGraceMs: 500 });
  for (let i = 0; i < BIG_OBJECTS; i++) {
    const res = await ts.as.root.post(sharedSecretsPath(NS), {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: `big-${i}` },
      spec: {
        data: { k: Buffer.alloc(1000 * 1024, `big-${i}`).toString('base64') },
        access: [{ verbs: ['get', 'list'], users: ['alice', 'bob', 'carol'] }],
      },
    });
    expect(res.status).toBe(201);
  }
  // LIST is served from the watch cache as it is: wait until it holds them all (asked for as metadata, a few KiB).
  const metadataOnly = { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' };
  await waitFor(
    `the watch cache to hold the ${BIG_OBJECTS} objects`,
    async () => (await ts.as.root.get(LIST, { headers: metadataOnly })).body.items?.length === BIG_OBJECTS,
    60_000,
  );
}, 120_000);

afterAll(() => ts?.stop(), 60_000);

/** The APF and in-flight figures a leaked seat would keep up (the scrape itself is one read in flight). */
async function executing(): Promise<{ seats: number; requests: number; readOnlyInFlight: number }> {
  const samples = parseSamples((await ts.as.root.get('/metrics')).text);
  const level = { priority_level: 'global-default' };
  return {
    seats: total(samples, 'apiserver_flowcontrol_current_executing_seats', level),
    requests: total(samples, 'apiserver_flowcontrol_current_executing_requests', level),
    readOnlyInFlight: total(samples, 'apiserver_current_inflight_requests', { request_kind: 'readOnly' }),
  };
}

async function expectNothingHeld(): Promise<void> {
  await waitFor('every seat of global-default back', async () => (await executing()).seats === 0, 20_000);
  expect(await executing()).toEqual({ seats: 0, requests: 0, readOnlyInFlight: 1 });
}

/**
 * The user's next request is served: their flow's one seat is free. A lost one would make it wait in its queue for
 * a quarter of its deadline, then 429.
 */
async function expectServed(user: User): Promise<void> {
  expect((await ts.as[user].get(`${GROUP_PATH}/ownedaccesskeys?timeout=4s`)).status).toBe(200);
}

/**
 * The server's side of the request that carries `marker` in MARKER_HEADER, as it arrives; with `withoutClose`,
 * its response never emits 'close' (what Node 24.20.0 sometimes did after a reset).
 */
function serverSide(marker: string, withoutClose: boolean): Promise<{ res: ServerResponse; socket: Socket }> {
  return new Promise((resolve) => {
    const onStart = (message: unknown) => {
      const { request, response, socket } = message as {
        request: { headers: Record<string, unknown> };
        response: ServerResponse;
        socket: Socket;
      };
      if (request.headers[MARKER_HEADER] !== marker) return;
      unsubscribe('http.server.request.start', onStart);
      if (withoutClose) {
        const emit = response.emit.bind(response);
        response.emit = (event: string | symbol, ...args: unknown[]) => event !== 'close' && emit(event, ...args);
      }
      resolve({ res: response, socket });
    };
    subscribe('http.server.request.start', onStart);
  });
}

/**
 * A request on a TLS connection of its own, over a TCP socket the test may reset (RST, as a client killed while
 * it reads). The client reads the first bytes of the answer and then nothing until it is resumed, so the server is
 * still writing a large answer when the test acts.
 */
function rawRequest(user: User, method: string, path: string, marker: string) {
  const url = new URL(ts.server.url);
  const tcp = connectTcp(Number(url.port), url.hostname);
  const tls: TLSSocket = connectTls({ socket: tcp, host: url.hostname, ca: ts.server.caPem });
  tcp.on('error', () => {});
  tls.on('error', () => {});
  const received: Buffer[] = [];
  const answered = new Promise<void>((resolve) =>
    tls.on('data', (d: Buffer) => {
      if (!received.length) tls.pause();
      received.push(d);
      resolve();
    }),
  );
  tls.once('secureConnect', () =>
    tls.write(
      `${method} ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${ts.as[user].token}\r\n` +
        `Accept: application/json\r\n${MARKER_HEADER}: ${marker}\r\n\r\n`,
    ),
  );
  const closed = new Promise<void>((resolve) => tls.once('close', () => resolve()));
  const text = () => Buffer.concat(received).toString('latin1');
  return { tcp, tls, answered, closed, text, bytes: () => received.reduce((n, d) => n + d.length, 0) };
}

test('a client that resets its connection during a large answer gives its seat back, also when Node emits no close', async () => {
  const marker = randomUUID();
  const server = serverSide(marker, true);
  const client = rawRequest('alice', 'GET', LIST, marker);
  await server;
  // The answer has begun: reset while the server still writes it (it is several times what the connection buffers).
  await client.answered;
  expect(client.text()).toMatch(/^HTTP\/1\.1 200 /);
  client.tcp.resetAndDestroy();
  await client.closed;

  await expectNothingHeld();
  await expectServed('alice');
}, 60_000);

test('a client that stops reading a large answer holds no seat meanwhile, and has it cut a grace after its deadline', async () => {
  const marker = randomUUID();
  const server = serverSide(marker, false);
  const client = rawRequest('bob', 'GET', `${LIST}&timeout=5s`, marker);
  const { socket } = await server;
  const cut = new Promise((resolve) => socket.once('close', resolve));
  await client.answered;
  expect(client.text()).toMatch(/^HTTP\/1\.1 200 /);
  // bob reads no more. His answer all written, what Node holds for him is no work of the server's: the seat is back.
  await waitFor('the seat of the answer bob does not read back', async () => (await executing()).seats === 0, 20_000);
  expect(await executing()).toEqual({ seats: 0, requests: 0, readOnlyInFlight: 1 });
  await expectServed('bob');
  // The server cuts the answer (and the connection) after the deadline and its grace.
  await cut;

  // What the connection still held reaches bob, then its end, short of the length the answer announced.
  client.tls.resume();
  await client.closed;
  const text = client.text();
  const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(text)?.[1]);
  expect(length).toBeGreaterThan(BIG_OBJECTS * 1000 * 1024);
  expect(text.length - text.indexOf('\r\n\r\n') - 4).toBeLessThan(length);
}, 60_000);

test("a connection destroyed under a request ends the request's APF ticket, also when Node emits no close", async () => {
  const marker = randomUUID();
  const server = serverSide(marker, true);
  // A create holds its seat until its body has come: the body is read after priority and fairness.
  const body = JSON.stringify({
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name: 'held' },
    spec: {},
  });
  const held = ts.as.carol.open('POST', `${GROUP_PATH}/ownedaccesskeys`, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    [MARKER_HEADER]: marker,
  });
  const failed = new Promise<string>((resolve) => held.on('error', (err) => resolve(err.message)));
  held.flushHeaders();
  const { socket } = await server;
  await waitFor("carol's create to hold its seat", async () => (await executing()).seats === 1);

  socket.destroy();
  expect(await failed).toMatch(/socket hang up|ECONNRESET/);
  await expectNothingHeld();
  await expectServed('carol');
  // Nothing was created: the body never came.
  expect((await ts.as.root.get(`${GROUP_PATH}/ownedaccesskeys/held`)).status).toBe(404);
}, 60_000);
