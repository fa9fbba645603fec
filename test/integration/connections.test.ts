/**
 * Connection bounds, with real sockets: clients that never finish the TLS handshake, send their headers slowly, send
 * nothing, or keep an idle connection are closed by the server within its header deadline, first-byte deadline or
 * idle timeout; a flood of connections that never authenticate is held to a bound, and one source to its share of
 * it, while other sources and authenticated clients are served; and a watch is never cut by any of this. The bounds
 * are shortened here so the test runs in seconds. Connections opened in a burst all get their handshake. Sources are loopback addresses (on Linux all of 127/8 is local).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { createLogger } from '../../src/log.js';
import { makeCa, makeCert, type TestCert } from '../support/certs.js';
import { createSecretAs, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { HttpClient } from '../support/http.js';
import { startTestEtcd } from '../support/etcd.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { sleep } from '../support/wait.js';
import { closeWatches, openWatch } from '../support/watch.js';

const HEADER_TIMEOUT_MS = 1000;
const IDLE_TIMEOUT_MS = 1500;
/** Deadlines are checked every quarter of the header timeout, and answered connections closed 0.5 s later. */
const SLACK_MS = 1500;

/** A connection the server has to close: the client never closes its side, even after the server's answer or FIN. */
interface Held {
  socket: Socket;
  opened: number;
  received: string;
  /** ms from `opened` to the server's FIN (or the connection's end); undefined while the server sends none. */
  endedAfter?: number;
  ended: Promise<void>;
}

function hold(socket: Socket): Held {
  const held: Held = { socket, opened: Date.now(), received: '', ended: Promise.resolve() };
  held.ended = new Promise((resolve) => {
    const ended = () => {
      held.endedAfter ??= Date.now() - held.opened;
      resolve();
    };
    socket.on('data', (d: Buffer) => (held.received += d.toString()));
    socket.on('error', () => {});
    socket.on('end', ended);
    socket.on('close', ended);
  });
  return held;
}

/**
 * How many connections the server (in this process) still holds on its port, from Node's handles: a server that
 * only half-closes sends its FIN but keeps the socket, and a client that never closes would hold it forever.
 */
function serverConnections(ts: TestServer): number {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  const peers = handles
    .filter((h): h is Socket => h instanceof Socket && !h.destroyed && h.localPort === ts.server.port)
    .map((h) => h.remotePort);
  return new Set(peers).size;
}

/** Waits until the server holds no connections but `keep`, or `ms` pass; returns how many it holds then. */
async function serverConnectionsAfter(ts: TestServer, ms: number, keep = 0): Promise<number> {
  const until = Date.now() + ms;
  while (serverConnections(ts) > keep && Date.now() < until) await sleep(50);
  return serverConnections(ts);
}

/** Each held connection got the server's FIN within `ms` of opening. */
async function expectEndedWithin(held: Held[], ms: number): Promise<void> {
  await Promise.all(held.map((h) => Promise.race([h.ended, sleep(ms + 3000)])));
  for (const h of held) {
    expect(h.endedAfter).toBeDefined();
    expect(h.endedAfter!).toBeLessThan(ms);
  }
}

/** Where a connection comes from (a loopback address), and the client certificate it presents. */
interface From {
  localAddress?: string;
  cert?: TestCert;
}

function openTls(ts: TestServer, from: From = {}): Promise<Held> {
  const url = new URL(ts.server.url);
  return new Promise((resolve, reject) => {
    // allowHalfOpen is a net.Socket option tls.connect passes on; its types leave it out.
    const options: ConnectionOptions & { allowHalfOpen: boolean } = {
      host: url.hostname,
      port: Number(url.port),
      ca: ts.server.caPem,
      allowHalfOpen: true,
      ...(from.localAddress && { localAddress: from.localAddress }),
      ...(from.cert && { cert: from.cert.certPem, key: from.cert.keyPem }),
    };
    const socket: TLSSocket = tlsConnect(options, () => resolve(hold(socket)));
    socket.once('error', reject);
  });
}

function openTcp(ts: TestServer): Promise<Held> {
  const url = new URL(ts.server.url);
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true }, () =>
      resolve(hold(socket)),
    );
    socket.once('error', reject);
  });
}

/** Writes one piece of `chunks` every `everyMs`, and goes quiet (without closing) once the server answers or ends. */
function trickle(held: Held, chunks: (i: number) => string | Buffer, everyMs: number): void {
  let i = 0;
  held.socket.write(chunks(i++));
  const timer = setInterval(() => held.socket.write(chunks(i++)), everyMs);
  const stop = () => clearInterval(timer);
  held.socket.once('data', stop);
  held.socket.once('end', stop);
  held.socket.once('close', stop);
}

/** Whether a new TLS connection completes its handshake, or is closed first. */
function tryHandshake(ts: TestServer, from: From = {}): Promise<'connected' | 'refused'> {
  return openTls(ts, from).then(
    (held) => {
      held.socket.destroy();
      return 'connected' as const;
    },
    () => 'refused' as const,
  );
}

/** Writes a request on a held connection; resolves with the status line of its answer, or '' when it ends first. */
function send(held: Held, request: string): Promise<string> {
  const answers = () => held.received.match(/^HTTP\/1\.1 [^\r]*/gm) ?? [];
  const before = answers().length;
  return new Promise((resolve) => {
    const check = () => {
      const all = answers();
      if (all.length === before && held.endedAfter === undefined) return;
      for (const event of ['data', 'end', 'close']) held.socket.off(event, check);
      resolve(all.length > before ? all[before] : '');
    };
    for (const event of ['data', 'end', 'close']) held.socket.on(event, check);
    held.socket.write(request);
    check();
  });
}

describe('header deadline and idle timeout', () => {
  let ts: TestServer;
  const held: Held[] = [];
  beforeAll(async () => {
    ts = await startTestServer({ readHeaderTimeoutMs: HEADER_TIMEOUT_MS, idleTimeoutMs: IDLE_TIMEOUT_MS });
  }, 60_000);
  afterEach(() => {
    for (const h of held.splice(0)) h.socket.destroy();
    closeWatches();
  });
  afterAll(async () => ts?.stop(), 30_000);

  test('50 connections sending their headers slowly are each answered 408 and closed at the header deadline', async () => {
    const slow = await Promise.all(Array.from({ length: 50 }, () => openTls(ts)));
    held.push(...slow);
    for (const h of slow)
      trickle(h, (i) => (i === 0 ? 'GET /apis HTTP/1.1\r\nHost: x\r\n' : `X-Slow-${i}: a\r\n`), 200);
    await expectEndedWithin(slow, HEADER_TIMEOUT_MS + SLACK_MS);
    for (const h of slow) {
      expect(h.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(h.received.slice(h.received.indexOf('\r\n\r\n') + 4))).toMatchObject({
        kind: 'Status',
        code: 408,
        reason: 'Timeout',
      });
    }
    // Closed, not only half-closed: the clients never close their side, and the server holds none of them.
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
    expect((await ts.admin.get('/apis')).status).toBe(200);
  }, 30_000);

  test('connections that never finish the TLS handshake, silent or trickling bytes, are closed at the header deadline', async () => {
    const silent = await Promise.all(Array.from({ length: 5 }, () => openTcp(ts)));
    const trickling = await Promise.all(Array.from({ length: 5 }, () => openTcp(ts)));
    held.push(...silent, ...trickling);
    // The first bytes of a TLS ClientHello record, one at a time: never enough for a handshake.
    const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);
    for (const h of trickling) trickle(h, (i) => hello.subarray(i % hello.length, (i % hello.length) + 1), 200);
    await expectEndedWithin([...silent, ...trickling], HEADER_TIMEOUT_MS + SLACK_MS);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 30_000);

  test('a burst of connections opened together, from two sources, each completes its handshake and is answered', async () => {
    // Handshakes go a few per turn of the event loop (src/http/handshaketurns.ts): none may be lost or stuck.
    const from = (localAddress: string, n: number) => Array.from({ length: n }, () => openTls(ts, { localAddress }));
    const burst = await Promise.all([...from('127.0.0.2', 40), ...from('127.0.0.3', 10)]);
    held.push(...burst);
    const answers = await Promise.all(burst.map((h) => send(h, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')));
    expect(answers).toEqual(Array(50).fill('HTTP/1.1 200 OK'));
  }, 30_000);

  test('connections reset by their client before or during their first bytes leave the server serving', async () => {
    // A reset (RST) on a connection waiting for its handshake's turn is an error on a socket nothing else listens to.
    const resets = await Promise.all(Array.from({ length: 10 }, () => openTcp(ts)));
    resets.forEach((h, i) => {
      if (i % 2) h.socket.write(Buffer.from([0x16, 0x03, 0x01]));
    });
    for (const h of resets) h.socket.resetAndDestroy();
    await Promise.all(resets.map((h) => h.ended));
    expect((await ts.admin.get('/apis')).status).toBe(200);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 30_000);

  test('a connection that completes the handshake and sends nothing is closed at the header deadline', async () => {
    const quiet = await Promise.all(Array.from({ length: 5 }, () => openTls(ts)));
    held.push(...quiet);
    await expectEndedWithin(quiet, HEADER_TIMEOUT_MS + SLACK_MS);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 30_000);

  test('a keep-alive connection serves the next request within the idle timeout, and is closed once idle that long', async () => {
    const conn = await openTls(ts);
    held.push(conn);
    const responses = () => conn.received.split('HTTP/1.1 200 OK').length - 1;
    conn.socket.write('GET /version HTTP/1.1\r\nHost: x\r\n\r\n');
    while (responses() < 1 && conn.endedAfter === undefined) await sleep(20);
    await sleep(IDLE_TIMEOUT_MS / 2);
    conn.socket.write('GET /version HTTP/1.1\r\nHost: x\r\n\r\n');
    while (responses() < 2 && conn.endedAfter === undefined) await sleep(20);
    expect(responses()).toBe(2);
    const idleFrom = Date.now();
    await Promise.race([conn.ended, sleep(IDLE_TIMEOUT_MS + SLACK_MS + 3000)]);
    expect(conn.endedAfter).toBeDefined();
    const idle = conn.opened + conn.endedAfter! - idleFrom;
    expect(idle).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
    expect(idle).toBeLessThan(IDLE_TIMEOUT_MS + SLACK_MS);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 30_000);

  test('a watch lives on well past the header deadline and the idle timeout, and still gets events', async () => {
    const ns = uniq('conn-watch');
    const watch = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?timeoutSeconds=60`);
    expect(watch.status).toBe(200);
    await sleep(3 * Math.max(HEADER_TIMEOUT_MS, IDLE_TIMEOUT_MS));
    expect(watch.ended).toBe(false);
    const created = await createSecretAs(ts.admin, ns, uniq('s'));
    expect(await watch.nth(1)).toEqual({ type: 'ADDED', object: created });
    expect(watch.ended).toBe(false);
  }, 30_000);
});

describe('connections that have not authenticated', () => {
  const MAX = 20;
  const PER_SOURCE = 5;
  /** Long enough for a test's flood to stand while the test looks at it; the header deadline is twice that. */
  const FIRST_BYTE_TIMEOUT_MS = 4000;
  const FRONT_PROXY_CA = makeCa('front-proxy-ca');
  const FRONT_PROXY = makeCert({ commonName: 'front-proxy-client', issuer: FRONT_PROXY_CA });
  /** A request as kube-apiserver's proxy sends it: the user is in its headers, believed for its certificate. */
  const PROXIED = 'GET /apis HTTP/1.1\r\nHost: x\r\nX-Remote-User: proxied\r\nX-Remote-Group: system:masters\r\n\r\n';
  let ts: TestServer;
  let etcd: Awaited<ReturnType<typeof startTestEtcd>>;
  let dir: string;
  let adminToken: string;
  const held: Held[] = [];
  const logs: any[] = [];
  beforeAll(async () => {
    etcd = await startTestEtcd();
    dir = mkdtempSync(join(tmpdir(), 'connections-'));
    const requestheaderClientCaFile = join(dir, 'front-proxy-ca.crt');
    writeFileSync(requestheaderClientCaFile, FRONT_PROXY_CA.certPem);
    ts = await startTestServer(
      {
        maxUnauthenticatedConnections: MAX,
        maxUnauthenticatedConnectionsPerSource: PER_SOURCE,
        firstByteTimeoutMs: FIRST_BYTE_TIMEOUT_MS,
        readHeaderTimeoutMs: 2 * FIRST_BYTE_TIMEOUT_MS,
        requestheaderClientCaFile,
        requestheaderAllowedNames: ['front-proxy-client'],
      },
      etcd,
      createLogger((line) => logs.push(JSON.parse(line))),
    );
    adminToken = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
  }, 60_000);
  afterEach(async () => {
    for (const h of held.splice(0)) h.socket.destroy();
    await serverConnectionsAfter(ts, SLACK_MS);
  });
  afterAll(async () => {
    await ts?.stop();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  /** Each held connection was closed by the server without a word (not answered 408 at the header deadline). */
  async function expectClosedUnanswered(connections: Held[]): Promise<void> {
    await Promise.all(connections.map((h) => h.ended));
    for (const h of connections) expect(h.received).toBe('');
  }

  test('one source cannot take the bound: past its share its connections are closed, and other sources (the admin) connect', async () => {
    // More than the whole bound, from one address, at once.
    const attempts = await Promise.all(
      Array.from({ length: MAX + 5 }, () => openTls(ts, { localAddress: '127.0.0.2' }).catch(() => undefined)),
    );
    const flood = attempts.filter((h): h is Held => h !== undefined);
    held.push(...flood);

    expect((await ts.admin.get('/apis')).status).toBe(200);
    expect((await ts.anonymous.get('/healthz')).status).toBe(200);
    expect(await tryHandshake(ts, { localAddress: '127.0.0.3' })).toBe('connected');
    expect(flood).toHaveLength(PER_SOURCE);
    expect(await tryHandshake(ts, { localAddress: '127.0.0.2' })).toBe('refused');
    // The first refusal of this server (the first test), so the warning, at most one a minute, is about this one.
    const warning = logs.find((l) => l.msg.startsWith('too many connections have not authenticated'));
    expect(warning).toMatchObject({ level: 'warn', maxUnauthenticatedPerSource: PER_SOURCE, closedAtTotal: 0 });
    expect(warning!.closedAtSourceShare).toBeGreaterThan(0);
    expect(Object.keys(warning!.sources)).toEqual(['127.0.0.2']);

    // Its connections say nothing, so the first-byte deadline frees its share.
    await expectClosedUnanswered(flood);
    expect(await tryHandshake(ts, { localAddress: '127.0.0.2' })).toBe('connected');
  }, 60_000);

  test('beyond the bound new connections are closed at once, authenticated ones are served, and room comes back', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const admin = new HttpClient(ts.server.url, ts.server.caPem!, adminToken, { agent });
    try {
      // An authenticated keep-alive connection does not count against the bound.
      expect((await admin.get('/apis')).status).toBe(200);

      // The bound filled from four sources, each with its share.
      const sources = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
      const flood = await Promise.all(
        sources.flatMap((localAddress) => Array.from({ length: PER_SOURCE }, () => openTls(ts, { localAddress }))),
      );
      expect(flood).toHaveLength(MAX);
      held.push(...flood);
      for (let i = 0; i < 3; i++) expect(await tryHandshake(ts, { localAddress: '127.0.0.6' })).toBe('refused');
      expect((await ts.anonymous.get('/healthz').catch((err: Error) => ({ status: err.message }))).status).not.toBe(
        200,
      );

      // The authenticated connection is served on.
      expect((await admin.get('/apis')).status).toBe(200);
      expect((await admin.get(sharedSecretsPath('default'))).status).toBe(200);

      // Once the first-byte deadline closes the flood, new connections are accepted again.
      await expectClosedUnanswered(flood);
      // Only the authenticated keep-alive connection is left.
      expect(await serverConnectionsAfter(ts, SLACK_MS, 1)).toBe(1);
      expect(await tryHandshake(ts, { localAddress: '127.0.0.6' })).toBe('connected');
      expect((await ts.admin.get('/apis')).status).toBe(200);
    } finally {
      agent.destroy();
    }
  }, 60_000);

  test("connections presenting the front proxy's verified certificate are not counted, nor closed for saying nothing", async () => {
    // kube-apiserver's: more than the whole bound from one address, idle after their handshakes.
    const proxied: Held[] = [];
    for (let i = 0; i < MAX + 5; i++) {
      const conn = await openTls(ts, { localAddress: '127.0.0.4', cert: FRONT_PROXY });
      proxied.push(conn);
      held.push(conn);
    }
    // Anonymous connections from that address still have their whole share.
    const anonymous = await Promise.all(
      Array.from({ length: PER_SOURCE }, () => openTls(ts, { localAddress: '127.0.0.4' })),
    );
    held.push(...anonymous);

    // The anonymous ones, opened last, reach the first-byte deadline; the proxy's, opened first, are served on.
    await expectClosedUnanswered(anonymous);
    for (const h of proxied) expect(await send(h, PROXIED)).toBe('HTTP/1.1 200 OK');
  }, 60_000);

  test('a connection that sends nothing after its handshake is closed at the first-byte deadline, unanswered', async () => {
    const quiet = await Promise.all(Array.from({ length: 3 }, () => openTls(ts, { localAddress: '127.0.0.5' })));
    held.push(...quiet);
    await expectClosedUnanswered(quiet);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 60_000);

  test('a request begun before the first-byte deadline keeps the header deadline, and is served', async () => {
    const slow = await openTls(ts, { localAddress: '127.0.0.6' });
    held.push(slow);
    slow.socket.write('GET /healthz HTTP/1.1\r\n');
    // A connection opened after it says nothing and reaches the deadline; the begun request is not cut there.
    const quiet = await openTls(ts, { localAddress: '127.0.0.6' });
    held.push(quiet);
    await expectClosedUnanswered([quiet]);
    expect(await send(slow, 'Host: x\r\n\r\n')).toBe('HTTP/1.1 200 OK');
  }, 60_000);

  test('an authenticated keep-alive connection is not closed at the first-byte deadline', async () => {
    const conn = await openTls(ts, { localAddress: '127.0.0.7' });
    held.push(conn);
    const request = `GET /apis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminToken}\r\n\r\n`;
    expect(await send(conn, request)).toBe('HTTP/1.1 200 OK');
    const quiet = await openTls(ts, { localAddress: '127.0.0.7' });
    held.push(quiet);
    await expectClosedUnanswered([quiet]);
    expect(await send(conn, request)).toBe('HTTP/1.1 200 OK');
  }, 60_000);
});
