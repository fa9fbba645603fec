/**
 * HTTP/2 beside HTTP/1.1 on the one port, with real clients: ALPN gives h2 to a client that offers it and HTTP/1.1
 * to the others; lists, writes and watches are streams of one connection; a watch whose client reads nothing is
 * ended without the connection's other streams noticing; the server's stream bound is the one it advertises, and
 * streams past it are refused; at shutdown the connection is told GOAWAY, its watch ends cleanly and its request in
 * flight is still answered.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { createLogger } from '../../src/log.js';
import { makeCa, makeCert } from '../support/certs.js';
import { GROUP, MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { Http2Client, answerOf, openWatch2 } from '../support/http2.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { closeWatches } from '../support/watch.js';

let etcd: TestEtcd;
let ts: TestServer;
/** The request log lines of `ts` (--v=3). */
const lines: string[] = [];
const clients: Http2Client[] = [];

/** An HTTP/2 client of `server` as its admin, closed after the test. */
function h2(server: TestServer = ts): Http2Client {
  const client = new Http2Client(server.server.url, server.server.caPem ?? '', server.admin.token);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  etcd = await startTestEtcd();
  const log = createLogger((line) => lines.push(line), { verbosity: 3 });
  ts = await startTestServer({ verbosity: 3 }, etcd, log);
}, 120_000);

afterEach(async () => {
  closeWatches();
  await Promise.all(clients.splice(0).map((c) => c.session.destroy()));
});

afterAll(async () => {
  await ts?.stop();
  await etcd?.stop();
}, 60_000);

/** The protocol that the request log line of the request with `auditID` names. */
function loggedProtocol(auditID: unknown): Promise<string> {
  return waitFor(`the log line of ${String(auditID)}`, () => {
    for (const line of lines.join('').split('\n')) {
      if (!line.includes(String(auditID))) continue;
      const parsed = JSON.parse(line) as { msg: string; auditID?: string; protocol?: string };
      if (parsed.msg === 'HTTP' && parsed.auditID === auditID) return parsed.protocol;
    }
    return undefined;
  });
}

/** The protocol ALPN chose on a TLS connection offering `protocols` (false: none). */
function negotiated(protocols?: string[]): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const url = new URL(ts.server.url);
    const socket: TLSSocket = tlsConnect(
      { host: url.hostname, port: Number(url.port), ca: ts.server.caPem, ALPNProtocols: protocols },
      () => {
        resolve(socket.alpnProtocol ?? false);
        socket.destroy();
      },
    );
    socket.on('error', reject);
  });
}

describe('ALPN', () => {
  test('h2 for a client that offers it, HTTP/1.1 for one that offers only that or nothing', async () => {
    expect(await negotiated(['h2', 'http/1.1'])).toBe('h2');
    expect(await negotiated(['http/1.1', 'h2'])).toBe('h2');
    expect(await negotiated(['http/1.1'])).toBe('http/1.1');
    expect(await negotiated()).toBe(false);
  });

  test('an HTTP/2 client is answered over h2, an https client over HTTP/1.1, the same way', async () => {
    const client = h2();
    const over2 = await client.get('/version');
    expect(client.session.alpnProtocol).toBe('h2');
    expect(over2.status).toBe(200);
    const over1 = await ts.admin.get('/version');
    expect(over1.status).toBe(200);
    expect(over2.body).toEqual(over1.body);
    expect(await loggedProtocol(over2.headers['audit-id'])).toBe('HTTP/2.0');
    expect(await loggedProtocol(over1.headers['audit-id'])).toBe('HTTP/1.1');
  });

  test('a failure is the same Status over both', async () => {
    const client = new Http2Client(ts.server.url, ts.server.caPem ?? '');
    clients.push(client);
    const over2 = await client.get(`/apis/${GROUP}/v1/sharedsecrets`);
    const over1 = await ts.anonymous.get(`/apis/${GROUP}/v1/sharedsecrets`);
    expect(over2.status).toBe(401);
    expect(over2.body).toEqual(over1.body);
  });
});

describe('requests and watches as streams of one connection', () => {
  test('a create, a list and a watch whose events arrive', async () => {
    const client = h2();
    const ns = uniq('h2');
    const created = await client.request('POST', sharedSecretsPath(ns), { body: secretBody('first') });
    expect(created.status).toBe(201);
    const list = await client.get(sharedSecretsPath(ns));
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: any) => i.metadata.name)).toEqual(['first']);

    const watch = await openWatch2(
      client,
      `${sharedSecretsPath(ns)}?resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    expect(watch.status).toBe(200);
    expect(watch.headers['content-type']).toBe('application/json');
    expect((await client.request('POST', sharedSecretsPath(ns), { body: secretBody('second') })).status).toBe(201);
    const patched = await client.request('PATCH', sharedSecretPath(ns, 'first'), {
      body: { spec: { displayName: 'patched' } },
      contentType: MERGE_PATCH,
    });
    expect(patched.status).toBe(200);
    const events = await watch.count(2);
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED second', 'MODIFIED first']);
    expect(events[1].object.spec.displayName).toBe('patched');
    // All of it on the one connection.
    expect(client.session.destroyed).toBe(false);
  });

  test('a body of no stated length (as kubectl create --raw -f sends a file) is read whole', async () => {
    const client = h2();
    const ns = uniq('h2-unsized');
    const body = JSON.stringify(secretBody('unsized'));
    const stream = client.open('POST', sharedSecretsPath(ns), {
      open: true,
      headers: { 'content-type': 'application/json' },
    });
    stream.write(body.slice(0, 20));
    stream.end(body.slice(20));
    const created = await answerOf(stream);
    expect(created.status).toBe(201);
    expect(created.body.metadata.name).toBe('unsized');
    // And with none at all, as a GET sends it: no body, not a wait for one.
    expect((await client.get(`${sharedSecretsPath(ns)}/unsized`)).status).toBe(200);
  });

  test("kube's flow control: 256 KiB a stream and frame, 16 streams' windows for the connection", async () => {
    const client = h2();
    await client.ready;
    expect(client.session.remoteSettings).toMatchObject({ initialWindowSize: 256 * 1024, maxFrameSize: 256 * 1024 });
    // The connection's window is widened by a WINDOW_UPDATE after the SETTINGS: 4 MiB, not kube's 256 MiB.
    await waitFor('the connection window', () => client.session.state.remoteWindowSize === 16 * 256 * 1024);
    // A body past one stream's window arrives whole, the window given back as it is read.
    const ns = uniq('h2-large');
    const large = secretBody('large');
    large.spec.data = { blob: Buffer.alloc(700 * 1024, 7).toString('base64') };
    const created = await client.request('POST', sharedSecretsPath(ns), { body: large });
    expect(created.status).toBe(201);
    expect((await client.get(`${sharedSecretsPath(ns)}/large`)).body.spec.data.blob).toBe(large.spec.data.blob);
  });

  test('a watch whose client reads nothing is ended once its buffer is full; the other streams go on', async () => {
    const client = h2();
    const ns = uniq('h2-slow');
    const name = uniq('big');
    expect((await client.request('POST', sharedSecretsPath(ns), { body: secretBody(name) })).status).toBe(201);
    const rv = (await client.get(sharedSecretsPath(ns))).body.metadata.resourceVersion;
    const terminated = async () =>
      total(parseSamples((await client.get('/metrics')).text), 'apiserver_terminated_watchers_total', {
        group: GROUP,
        resource: 'sharedsecrets',
      });
    const endedBefore = await terminated();

    // The stream that nobody reads: its window fills, and the server holds what it cannot send.
    const stuck = client.open('GET', `${sharedSecretsPath(ns)}?watch=true&resourceVersion=${rv}`);
    const stuckStatus = await new Promise<number>((resolve) =>
      stuck.once('response', (h) => resolve(Number(h[':status']))),
    );
    expect(stuckStatus).toBe(200);
    stuck.pause();
    const reader = await openWatch2(client, `${sharedSecretsPath(ns)}?resourceVersion=${rv}`);

    // Changes of about 1.3 MB each, each answered on the same connection, until the server says it ended the
    // unread watch (it holds 16 MiB for it: 40 are far more than enough); reads answered meanwhile too.
    const versions: string[] = [];
    while ((await terminated()) === endedBefore) {
      expect(versions.length).toBeLessThan(40);
      const value = Buffer.alloc(1000 * 1024, `v${versions.length}-`).toString('base64');
      const patched = await client.request('PATCH', sharedSecretPath(ns, name), {
        body: { spec: { data: { k: value } } },
        contentType: MERGE_PATCH,
      });
      expect(patched.status).toBe(200);
      versions.push(patched.body.metadata.resourceVersion);
      expect((await client.get(sharedSecretPath(ns, name))).status).toBe(200);
      await reader.count(versions.length, 60_000);
    }

    // The unread watch, read now: a prefix of the changes, whole events, then its end.
    const text = await new Promise<{ text: string; cleanly: boolean }>((resolve) => {
      let got = '';
      stuck.setEncoding('utf8');
      stuck.on('data', (chunk: string) => (got += chunk));
      stuck.on('end', () => resolve({ text: got, cleanly: true }));
      stuck.on('close', () => resolve({ text: got, cleanly: false }));
      stuck.resume();
    });
    expect(text.cleanly).toBe(true);
    const seen = text.text.split('\n');
    expect(seen.pop()).toBe('');
    expect(seen.length).toBeLessThan(versions.length);
    expect(seen.map((l) => JSON.parse(l).object.metadata.resourceVersion)).toEqual(versions.slice(0, seen.length));

    // The connection and its other watch are still there, and had every event.
    expect(reader.ended).toBe(false);
    expect((await reader.count(versions.length)).map((e) => e.object.metadata.resourceVersion)).toEqual(versions);
    expect((await client.get('/version')).status).toBe(200);
    expect(client.session.destroyed).toBe(false);
  }, 180_000);
});

describe('connection bounds over HTTP/2', () => {
  let bounded: TestServer;
  beforeAll(async () => {
    bounded = await startTestServer(
      { maxUnauthenticatedConnectionsPerSource: 1, firstByteTimeoutMs: 1000, idleTimeoutMs: 2000 },
      etcd,
    );
  }, 60_000);
  afterAll(() => bounded?.stop(), 60_000);

  const ca = () => bounded.server.caPem ?? '';

  test('a connection counts as unauthenticated until one of its streams is authenticated', async () => {
    // Anonymous, on a public path: the source's one unauthenticated connection.
    const first = new Http2Client(bounded.server.url, ca());
    clients.push(first);
    expect((await first.get('/version')).status).toBe(200);
    // So the next from the same source waits, unread...
    const second = h2(bounded);
    const waiting = second.get('/version');
    // ...until the first's next stream is authenticated: then there is room, and it is answered.
    const authenticated = await first.request('GET', '/apis', {
      headers: { authorization: `Bearer ${bounded.admin.token}` },
    });
    expect(authenticated.status).toBe(200);
    expect((await waiting).status).toBe(200);
  });

  test('a connection that opens no stream is closed; one whose streams are done is told GOAWAY when idle', async () => {
    const silent = new Http2Client(bounded.server.url, ca());
    clients.push(silent);
    // Its preface and SETTINGS are sent, no request: the first byte's deadline closes it.
    await new Promise<void>((resolve) => silent.session.once('close', () => resolve()));

    const done = h2(bounded);
    expect((await done.get('/version')).status).toBe(200);
    const goaway = new Promise<number>((resolve) => done.session.once('goaway', (code) => resolve(code)));
    expect(await goaway).toBe(0);
  });
});

describe('client certificates and the front proxy over HTTP/2', () => {
  const clientCa = makeCa('h2-client-ca');
  const frontProxyCa = makeCa('h2-front-proxy-ca');
  const carol = makeCert({ commonName: 'carol', organizations: ['devs'], issuer: clientCa });
  const frontProxy = makeCert({ commonName: 'front-proxy-client', issuer: frontProxyCa });
  let dir: string;
  let withCas: TestServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'h2-cas-'));
    writeFileSync(join(dir, 'client-ca.crt'), clientCa.certPem);
    writeFileSync(join(dir, 'front-proxy-ca.crt'), frontProxyCa.certPem);
    withCas = await startTestServer(
      {
        clientCaFile: join(dir, 'client-ca.crt'),
        requestheaderClientCaFile: join(dir, 'front-proxy-ca.crt'),
        requestheaderAllowedNames: ['front-proxy-client'],
      },
      etcd,
    );
  }, 60_000);
  afterAll(async () => {
    await withCas?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  const review = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
  const whoami = (client: Http2Client, headers?: Record<string, string | string[]>) =>
    client
      .request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: review, headers })
      .then((res) => ({ status: res.status, user: res.body?.status?.userInfo }));

  test("the connection's certificate authenticates each of its streams", async () => {
    const client = new Http2Client(withCas.server.url, withCas.server.caPem ?? '', undefined, carol);
    clients.push(client);
    const carolIs = {
      status: 201,
      user: expect.objectContaining({ username: 'carol', groups: ['devs', 'system:authenticated'] }),
    };
    expect(await whoami(client)).toEqual(carolIs);
    expect(await whoami(client)).toEqual(carolIs);
  });

  test("the front proxy's streams carry each their own user, groups repeated as headers", async () => {
    const proxy = new Http2Client(withCas.server.url, withCas.server.caPem ?? '', undefined, frontProxy);
    clients.push(proxy);
    const [alice, bob] = await Promise.all([
      whoami(proxy, { 'x-remote-user': 'alice', 'x-remote-group': ['g1', 'g2'] }),
      whoami(proxy, { 'x-remote-user': 'bob' }),
    ]);
    expect(alice).toEqual({
      status: 201,
      user: expect.objectContaining({ username: 'alice', groups: ['g1', 'g2', 'system:authenticated'] }),
    });
    expect(bob).toEqual({
      status: 201,
      user: expect.objectContaining({ username: 'bob', groups: ['system:authenticated'] }),
    });
  });
});

describe('--http2-max-streams-per-connection', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ http2MaxStreamsPerConnection: 3 }, etcd);
  }, 60_000);
  afterAll(() => limited?.stop(), 60_000);

  test('is the bound the server advertises', async () => {
    const client = h2(limited);
    await client.ready;
    expect(client.session.remoteSettings.maxConcurrentStreams).toBe(3);
  });

  test('a stream past it is refused (REFUSED_STREAM) while the others are served', async () => {
    const url = new URL(limited.server.url);
    const socket = tlsConnect({
      host: url.hostname,
      port: Number(url.port),
      ca: limited.server.caPem,
      ALPNProtocols: ['h2'],
    });
    try {
      await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
      expect(socket.alpnProtocol).toBe('h2');
      const frames = readFrames(socket);
      // Four watches sent at once, before the server's SETTINGS could have been heeded, as a client that ignores them.
      const watch = `${sharedSecretsPath(uniq('h2-limit'))}?watch=true`;
      const headers = (id: number) =>
        frame(
          HEADERS,
          END_STREAM | END_HEADERS,
          id,
          hpack([
            [':method', 'GET'],
            [':scheme', 'https'],
            [':authority', url.host],
            [':path', watch],
            ['authorization', `Bearer ${limited.admin.token}`],
          ]),
        );
      socket.write(
        Buffer.concat([Buffer.from(PREFACE), frame(SETTINGS, 0, 0, Buffer.alloc(0)), ...[1, 3, 5, 7].map(headers)]),
      );
      const refused = await frames.find((f) => f.type === RST_STREAM);
      expect({ stream: refused.stream, code: refused.payload.readUInt32BE(0) }).toEqual({
        stream: 7,
        code: REFUSED_STREAM,
      });
      for (const id of [1, 3, 5]) await frames.find((f) => f.type === HEADERS && f.stream === id);
      expect(frames.seen.filter((f) => f.type === RST_STREAM || f.type === GOAWAY).map((f) => f.stream)).toEqual([7]);
    } finally {
      socket.destroy();
    }
  });
});

describe('shutdown', () => {
  test('GOAWAY, the watch ends cleanly, the request in flight is answered, then the server is gone', async () => {
    const stopping = await startTestServer({}, etcd);
    const client = h2(stopping);
    const ns = uniq('h2-stop');
    const watch = await openWatch2(client, sharedSecretsPath(ns));
    // A create whose body has not all come: in flight until the test sends the rest.
    const body = JSON.stringify(secretBody('late'));
    const create = client.open('POST', sharedSecretsPath(ns), {
      open: true,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    });
    create.write(body.slice(0, 10));
    const answer = answerOf(create);
    // Streams are taken in order: once a later one is answered, the server has the create.
    expect((await client.get('/version')).status).toBe(200);

    const goaway = new Promise<void>((resolve) => client.session.once('goaway', () => resolve()));
    const stopped = stopping.stop();
    await goaway;
    await watch.end();
    expect(watch.endedCleanly).toBe(true);
    create.end(body.slice(10));
    expect((await answer).status).toBe(201);
    await stopped;
  }, 60_000);
});

// HTTP/2 frames, for a client that does what node:http2's would not.
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const GOAWAY = 0x7;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const REFUSED_STREAM = 0x7;

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK literal fields without indexing (RFC 7541 6.2.2), no Huffman: lengths below 127 fit the 7-bit prefix. */
function hpack(fields: Array<[string, string]>): Buffer {
  return Buffer.concat(
    fields.map(([name, value]) => {
      if (name.length > 126 || value.length > 126) throw new Error(`field too long for this encoder: ${name}`);
      return Buffer.concat([
        Buffer.from([0, name.length]),
        Buffer.from(name),
        Buffer.from([value.length]),
        Buffer.from(value),
      ]);
    }),
  );
}

/** The frames the server sends on `socket`, and a wait for the first that matches. */
function readFrames(socket: TLSSocket) {
  const seen: Frame[] = [];
  let buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    while (buffer.length >= 9) {
      const length = buffer.readUIntBE(0, 3);
      if (buffer.length < 9 + length) break;
      seen.push({
        type: buffer[3],
        flags: buffer[4],
        stream: buffer.readUInt32BE(5) & 0x7fffffff,
        payload: buffer.subarray(9, 9 + length),
      });
      buffer = buffer.subarray(9 + length);
    }
  });
  return {
    seen,
    find: (match: (f: Frame) => boolean) => waitFor('a frame', () => seen.find(match)),
  };
}
