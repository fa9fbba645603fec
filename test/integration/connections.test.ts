/**
 * Connection bounds, with real sockets: clients that never finish the TLS handshake, send their headers slowly, send
 * nothing, or keep an idle connection are closed by the server within its header deadline, first-byte deadline or
 * idle timeout; connections that have not authenticated are taken on up to a bound, and one source up to its share
 * of it, while those beyond wait, unread, and are taken on as room frees (the source holding the fewest first, the
 * front proxy's before any), closed only when the wait queue is full or at its deadline; other sources and
 * authenticated clients are served meanwhile; and a watch is never cut by any of this. The bounds are shortened
 * here so the test runs in seconds. Connections opened in a burst, more than a source's share, are all answered.
 * Sources are loopback addresses (on Linux all of 127/8 is local).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
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

// Long enough that 50 TLS handshakes end well within it on a machine busy with other work: the deadline counts from
// the connection's accept, its handshake included.
const HEADER_TIMEOUT_MS = 3000;
const IDLE_TIMEOUT_MS = 6000;
/**
 * How long past a deadline a test waits for what the deadline does (nothing else would ever close these
 * connections: their clients never close). Waits end as soon as it is done; only a machine far slower than any
 * other needs all of it.
 */
const SLACK_MS = 15_000;

/**
 * Every socket a test opened, destroyed after each test: those it held are destroyed by their describe's afterEach,
 * but a test that fails halfway (an open that fails beside others that succeeded) would leave the rest open for good,
 * half-open, and Jest could not exit.
 */
const opened = new Set<Socket>();
function track<S extends Socket>(socket: S): S {
  opened.add(socket);
  socket.once('close', () => opened.delete(socket));
  return socket;
}
afterEach(() => {
  for (const socket of opened) socket.destroy();
  opened.clear();
});

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

/** Each held connection got the server's FIN at its deadline: not before `deadlineMs` after opening, and not never. */
async function expectEndedAtDeadline(held: Held[], deadlineMs: number): Promise<void> {
  await Promise.all(held.map((h) => Promise.race([h.ended, sleep(deadlineMs + SLACK_MS)])));
  for (const h of held) {
    expect(h.endedAfter).toBeDefined();
    expect(h.endedAfter!).toBeGreaterThanOrEqual(deadlineMs - 100);
  }
}

/** Where a connection comes from (a loopback address), and the client certificate it presents. */
interface From {
  localAddress?: string;
  cert?: TestCert;
  /** A TCP connection already open, to begin TLS on (its localAddress is its own). */
  socket?: Socket;
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
    const socket: TLSSocket = track(tlsConnect(options, () => resolve(hold(socket))));
    socket.once('error', reject);
  });
}

function openTcp(ts: TestServer, from: From = {}): Promise<Held> {
  const url = new URL(ts.server.url);
  return new Promise((resolve, reject) => {
    const options = { host: url.hostname, port: Number(url.port), allowHalfOpen: true };
    const socket = track(
      tcpConnect({ ...options, ...(from.localAddress && { localAddress: from.localAddress }) }, () =>
        resolve(hold(socket)),
      ),
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

/** A TLS connection being opened, which the server may hold before its handshake. */
interface Opening {
  held: Held;
  /** 'waiting' until its handshake is done ('connected') or it is closed first ('closed'). */
  state: 'waiting' | 'connected' | 'closed';
  /** Its TCP connection is open: the server has it, taken on or waiting. */
  accepted: Promise<void>;
  /** Resolves once its handshake is done or it is closed first: its state then. */
  settled: Promise<'connected' | 'closed'>;
}

function startTls(ts: TestServer, from: From = {}): Opening {
  const url = new URL(ts.server.url);
  const options: ConnectionOptions & { allowHalfOpen: boolean } = {
    host: url.hostname,
    port: Number(url.port),
    ca: ts.server.caPem,
    allowHalfOpen: true,
    ...(from.localAddress && { localAddress: from.localAddress }),
    ...(from.cert && { cert: from.cert.certPem, key: from.cert.keyPem }),
    ...(from.socket && { socket: from.socket }),
  };
  let settle: (state: 'connected' | 'closed') => void = () => {};
  const settled = new Promise<'connected' | 'closed'>((resolve) => (settle = resolve));
  const socket: TLSSocket = track(
    tlsConnect(options, () => {
      opening.state = 'connected';
      settle('connected');
    }),
  );
  const opening: Opening = {
    held: hold(socket),
    state: 'waiting',
    accepted: from.socket ? Promise.resolve() : new Promise((resolve) => socket.once('connect', () => resolve())),
    settled,
  };
  const closed = () => {
    if (opening.state === 'waiting') opening.state = 'closed';
    settle(opening.state as 'connected' | 'closed');
  };
  socket.once('close', closed);
  // A TCP connection the server closed before TLS began on it: its end came already.
  if (from.socket?.destroyed || from.socket?.readableEnded) closed();
  else from.socket?.once('end', closed);
  return opening;
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
    await expectEndedAtDeadline(slow, HEADER_TIMEOUT_MS);
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
  }, 60_000);

  test('connections that never finish the TLS handshake, silent or trickling bytes, are closed at the header deadline', async () => {
    const silent = await Promise.all(Array.from({ length: 5 }, () => openTcp(ts)));
    const trickling = await Promise.all(Array.from({ length: 5 }, () => openTcp(ts)));
    held.push(...silent, ...trickling);
    // The first bytes of a TLS ClientHello record, one at a time: never enough for a handshake.
    const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);
    for (const h of trickling) trickle(h, (i) => hello.subarray(i % hello.length, (i % hello.length) + 1), 200);
    await expectEndedAtDeadline([...silent, ...trickling], HEADER_TIMEOUT_MS);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 60_000);

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
  }, 60_000);

  test('a connection that completes the handshake and sends nothing is closed at the header deadline', async () => {
    const quiet = await Promise.all(Array.from({ length: 5 }, () => openTls(ts)));
    held.push(...quiet);
    await expectEndedAtDeadline(quiet, HEADER_TIMEOUT_MS);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 60_000);

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
    await Promise.race([conn.ended, sleep(IDLE_TIMEOUT_MS + SLACK_MS)]);
    expect(conn.endedAfter).toBeDefined();
    const idle = conn.opened + conn.endedAfter! - idleFrom;
    expect(idle).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
    expect(await serverConnectionsAfter(ts, SLACK_MS)).toBe(0);
  }, 60_000);

  test('a watch lives on well past the header deadline and the idle timeout, and still gets events', async () => {
    const ns = uniq('conn-watch');
    const watch = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?timeoutSeconds=60`);
    expect(watch.status).toBe(200);
    await sleep(1.5 * Math.max(HEADER_TIMEOUT_MS, IDLE_TIMEOUT_MS));
    expect(watch.ended).toBe(false);
    const created = await createSecretAs(ts.admin, ns, uniq('s'));
    expect(await watch.nth(1)).toEqual({ type: 'ADDED', object: created });
    expect(watch.ended).toBe(false);
  }, 60_000);
});

describe('a burst of connections', () => {
  // The defaults: 500 connections taken on at once, 25 from one source; and a handshake deadline of 32 s, which a
  // burst in this one process does not come near.
  let ts: TestServer;
  let adminToken: string;
  const held: Held[] = [];
  beforeAll(async () => {
    ts = await startTestServer();
    adminToken = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
  }, 60_000);
  afterEach(() => {
    for (const h of held.splice(0)) h.socket.destroy();
  });
  afterAll(async () => ts?.stop(), 30_000);

  test('a burst of clients from one address (a NAT, a CI runner), more than its share, is all answered: no connection is reset', async () => {
    // 60 clients start together, with 10 of another source, and the server has all their connections before the
    // first handshake (as a busy server does): it answers a later connection first. Then each client begins its
    // handshake and sends its request once connected. Beyond a source's share (25) connections wait for room, and
    // handshakes go a few per turn of the event loop (src/http/handshaketurns.ts): none may be lost, stuck or closed.
    const request = `GET /apis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminToken}\r\n\r\n`;
    const from = (localAddress: string, n: number) => Array.from({ length: n }, () => openTcp(ts, { localAddress }));
    const tcp = await Promise.all([...from('127.0.0.2', 60), ...from('127.0.0.3', 10)]);
    held.push(...tcp);
    // Node accepts one connection a turn of its event loop, in the order they came.
    const later = await openTls(ts, { localAddress: '127.0.0.4' });
    held.push(later);
    expect(await send(later, request)).toBe('HTTP/1.1 200 OK');

    const answers = await Promise.all(
      tcp.map(async ({ socket }) => {
        const opening = startTls(ts, { socket });
        held.push(opening.held);
        if ((await opening.settled) === 'closed') return 'reset';
        return send(opening.held, request);
      }),
    );
    expect(answers).toEqual(Array(70).fill('HTTP/1.1 200 OK'));
  }, 30_000);
});

describe('connections that have not authenticated', () => {
  const MAX = 20;
  const PER_SOURCE = 5;
  const MAX_WAITING = 6;
  /** Long enough for a test's flood to stand while the test looks at it. */
  const FIRST_BYTE_TIMEOUT_MS = 4000;
  const WAIT_TIMEOUT_MS = 6000;
  /** What connections that hold room have: each has begun a request, which keeps the header deadline. */
  const HEADER_TIMEOUT_MS = 15_000;
  const FRONT_PROXY_CA = makeCa('front-proxy-ca');
  const FRONT_PROXY = makeCert({ commonName: 'front-proxy-client', issuer: FRONT_PROXY_CA });
  /** A request as kube-apiserver's proxy sends it: the user is in its headers, believed for its certificate. */
  const PROXIED = 'GET /apis HTTP/1.1\r\nHost: x\r\nX-Remote-User: proxied\r\nX-Remote-Group: system:masters\r\n\r\n';
  /** A tenant's token (no grant at all). */
  const TENANT_TOKEN = `mallory-${randomUUID()}`;
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
    const tokenAuthFile = join(dir, 'tokens.csv');
    // The admin, and a tenant with no grant at all.
    adminToken = `admin-${randomUUID()}`;
    writeFileSync(
      tokenAuthFile,
      `${adminToken},admin,uid-admin,"system:masters"\n${TENANT_TOKEN},mallory,uid-mallory\n`,
      {
        mode: 0o600,
      },
    );
    ts = await startTestServer(
      {
        maxUnauthenticatedConnections: MAX,
        maxUnauthenticatedConnectionsPerSource: PER_SOURCE,
        maxWaitingConnections: MAX_WAITING,
        connectionWaitTimeoutMs: WAIT_TIMEOUT_MS,
        firstByteTimeoutMs: FIRST_BYTE_TIMEOUT_MS,
        readHeaderTimeoutMs: HEADER_TIMEOUT_MS,
        requestheaderClientCaFile,
        requestheaderAllowedNames: ['front-proxy-client'],
        tokenAuthFile,
      },
      etcd,
      createLogger((line) => logs.push(JSON.parse(line))),
    );
  }, 60_000);
  afterEach(async () => {
    for (const h of held.splice(0)) h.socket.destroy();
    // A connection that waits is not read, so its client's close is not heard: it ends at the wait deadline.
    await serverConnectionsAfter(ts, WAIT_TIMEOUT_MS + SLACK_MS);
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

  /** What the admin's request would finish: sent after a begun request (`hold`), it is authenticated and answered. */
  const authenticatedEnd = () => `Authorization: Bearer ${adminToken}\r\n\r\n`;
  const authenticatedGet = () => `GET /apis HTTP/1.1\r\nHost: x\r\n${authenticatedEnd()}`;

  /** `n` connections from `localAddress` that take room: handshaken, each with a request begun and not finished. */
  async function holdRoom(localAddress: string, n: number): Promise<Held[]> {
    const holders = await Promise.all(Array.from({ length: n }, () => openTls(ts, { localAddress })));
    held.push(...holders);
    for (const h of holders) h.socket.write('GET /apis HTTP/1.1\r\nHost: x\r\n');
    return holders;
  }

  /** `n` connections from `localAddress`, opened one after the other (the server has them in this order). */
  async function startWaiting(localAddress: string, n: number, cert?: TestCert): Promise<Opening[]> {
    const openings: Opening[] = [];
    for (let i = 0; i < n; i++) {
      const opening = startTls(ts, { localAddress, cert });
      held.push(opening.held);
      openings.push(opening);
      await opening.accepted;
    }
    return openings;
  }

  /** A new connection from `localAddress` is handshaken and answered (its room freed again: it authenticates). */
  async function servedAnew(localAddress: string): Promise<string> {
    const conn = await openTls(ts, { localAddress });
    held.push(conn);
    return send(conn, authenticatedGet());
  }

  const states = (openings: Opening[]) => openings.map((o) => o.state);

  test("a source's connections beyond its share wait, unread, while other sources are served; each is taken on as room frees", async () => {
    const holders = await holdRoom('127.0.0.2', PER_SOURCE);
    const waiting = await startWaiting('127.0.0.2', 3);

    // Another source's connection, opened after them, is handshaken and answered; theirs are not handshaken.
    expect(await servedAnew('127.0.0.3')).toBe('HTTP/1.1 200 OK');
    expect((await new HttpClient(ts.server.url, ts.server.caPem!, adminToken).get('/apis')).status).toBe(200);
    expect(states(waiting)).toEqual(['waiting', 'waiting', 'waiting']);

    // One of the source's requests authenticates: its room goes to one waiting connection.
    expect(await send(holders[0], authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await Promise.race(waiting.map((o) => o.settled))).toBe('connected');
    expect(states(waiting).filter((s) => s === 'connected')).toHaveLength(1);

    // Each waiting connection is served in turn, as the source's others authenticate.
    for (const h of holders.slice(1)) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await Promise.all(waiting.map((o) => o.settled))).toEqual(['connected', 'connected', 'connected']);
    for (const o of waiting) expect(await send(o.held, authenticatedGet())).toBe('HTTP/1.1 200 OK');
    expect(logs.filter((l) => l.msg.startsWith('connections beyond the bounds'))).toEqual([]);
  }, 60_000);

  test('with the bound full, a new source waits and is taken on first, before the flooding sources; authenticated connections are served on', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const admin = new HttpClient(ts.server.url, ts.server.caPem!, adminToken, { agent });
    try {
      // An authenticated keep-alive connection does not count against the bound.
      expect((await admin.get('/apis')).status).toBe(200);

      // The bound filled from four sources, each with its share and one more waiting.
      const sources = ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14'];
      const holders = await Promise.all(sources.map((source) => holdRoom(source, PER_SOURCE)));
      const flood = (await Promise.all(sources.map((source) => startWaiting(source, 1)))).flat();
      const newcomer = await startWaiting('127.0.0.15', 1);

      // The authenticated connection is served on; every new one waits.
      expect((await admin.get(sharedSecretsPath('default'))).status).toBe(200);
      expect(states([...flood, ...newcomer])).toEqual(Array(5).fill('waiting'));

      // Room for one: the source that holds none is taken on, not the one that freed it.
      expect(await send(holders[0][0], authenticatedEnd())).toBe('HTTP/1.1 200 OK');
      expect(await newcomer[0].settled).toBe('connected');
      expect(states(flood)).toEqual(Array(4).fill('waiting'));
      expect(await send(newcomer[0].held, authenticatedGet())).toBe('HTTP/1.1 200 OK');

      // Then each flooding source in turn, as room frees.
      for (const h of holders.flat().slice(1)) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
      expect(await Promise.all(flood.map((o) => o.settled))).toEqual(Array(4).fill('connected'));
      for (const o of flood) expect(await send(o.held, authenticatedGet())).toBe('HTTP/1.1 200 OK');
    } finally {
      agent.destroy();
    }
  }, 60_000);

  test('with the bound full, an address that had a request authenticated goes before new addresses that hold as few', async () => {
    // The admin has used the server from 127.0.0.51 before.
    expect(await servedAnew('127.0.0.51')).toBe('HTTP/1.1 200 OK');

    // The bound full, and three new addresses (a flood of many, each with one connection) waiting before the admin's.
    const sources = ['127.0.0.61', '127.0.0.62', '127.0.0.63', '127.0.0.64'];
    const holders = await Promise.all(sources.map((source) => holdRoom(source, PER_SOURCE)));
    const strangers = [
      ...(await startWaiting('127.0.0.52', 1)),
      ...(await startWaiting('127.0.0.53', 1)),
      ...(await startWaiting('127.0.0.54', 1)),
    ];
    const admin = await startWaiting('127.0.0.51', 1);

    // Room for one: the admin's address, holding none as they do, is taken on first.
    expect(await send(holders[0][0], authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await admin[0].settled).toBe('connected');
    expect(states(strangers)).toEqual(Array(3).fill('waiting'));
    expect(await send(admin[0].held, authenticatedGet())).toBe('HTTP/1.1 200 OK');

    // The others as room frees.
    for (const h of holders.flat().slice(1)) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await Promise.all(strangers.map((o) => o.settled))).toEqual(Array(3).fill('connected'));
  }, 60_000);

  test("a tenant's token used from many addresses makes only its latest few as known as the admin's", async () => {
    // The admin has used the server from 127.0.0.71; a tenant, with its one token, from 127.0.0.72-.81 after.
    expect(await servedAnew('127.0.0.71')).toBe('HTTP/1.1 200 OK');
    const tenantSources = Array.from({ length: 10 }, (_, i) => `127.0.0.${72 + i}`);
    for (const source of tenantSources) {
      const conn = await openTls(ts, { localAddress: source });
      held.push(conn);
      expect(
        await send(conn, `GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TENANT_TOKEN}\r\n\r\n`),
      ).toBe('HTTP/1.1 200 OK');
    }

    // The bound full, and the tenant's first two addresses (beyond its latest 8) waiting before the admin's.
    const holders = await Promise.all(
      ['127.0.0.65', '127.0.0.66', '127.0.0.67', '127.0.0.68'].map((s) => holdRoom(s, PER_SOURCE)),
    );
    const tenant = [...(await startWaiting(tenantSources[0], 1)), ...(await startWaiting(tenantSources[1], 1))];
    const admin = await startWaiting('127.0.0.71', 1);

    // Room for one: the admin's address goes first, as it would before addresses never seen.
    expect(await send(holders[0][0], authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await admin[0].settled).toBe('connected');
    expect(states(tenant)).toEqual(['waiting', 'waiting']);
    expect(await send(admin[0].held, authenticatedGet())).toBe('HTTP/1.1 200 OK');

    for (const h of holders.flat().slice(1)) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await Promise.all(tenant.map((o) => o.settled))).toEqual(['connected', 'connected']);
  }, 60_000);

  test("the front proxy's new connection (a verified client certificate) is never behind anonymous ones: with the bound full, it is handshaken and served at once", async () => {
    // kube-apiserver has connected before (its address is known for its certificate).
    const first = await openTls(ts, { localAddress: '127.0.0.8', cert: FRONT_PROXY });
    held.push(first);
    expect(await send(first, PROXIED)).toBe('HTTP/1.1 200 OK');

    // The bound full of anonymous connections, and more waiting, one of a source that holds none.
    const sources = ['127.0.0.41', '127.0.0.42', '127.0.0.43', '127.0.0.44'];
    const holders = await Promise.all(sources.map((source) => holdRoom(source, PER_SOURCE)));
    const anonymous = [
      ...(await Promise.all(sources.map((source) => startWaiting(source, 1)))).flat(),
      ...(await startWaiting('127.0.0.45', 1)),
    ];

    const proxied = await startWaiting('127.0.0.8', 3, FRONT_PROXY);
    expect(await Promise.all(proxied.map((o) => o.settled))).toEqual(['connected', 'connected', 'connected']);
    for (const o of proxied) expect(await send(o.held, PROXIED)).toBe('HTTP/1.1 200 OK');
    expect(states(anonymous)).toEqual(Array(5).fill('waiting'));

    // The anonymous ones are then taken on as room frees.
    for (const h of holders.flat()) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    expect(await Promise.all(anonymous.map((o) => o.settled))).toEqual(Array(5).fill('connected'));
  }, 60_000);

  test('a full wait queue closes the newest connection of the source with the most waiting, unanswered, and says so in the log', async () => {
    const holdersA = await holdRoom('127.0.0.21', PER_SOURCE);
    const waitingA = await startWaiting('127.0.0.21', MAX_WAITING);
    // The queue is full, and this source has all of it: its newest connection is closed.
    const [overflow] = await startWaiting('127.0.0.21', 1);
    expect(await overflow.settled).toBe('closed');
    await expectClosedUnanswered([overflow.held]);

    // Another source's connection beyond its share takes the place of the first source's newest.
    const holdersB = await holdRoom('127.0.0.22', PER_SOURCE);
    const [waitingB] = await startWaiting('127.0.0.22', 1);
    expect(await waitingA[MAX_WAITING - 1].settled).toBe('closed');
    await expectClosedUnanswered([waitingA[MAX_WAITING - 1].held]);
    expect(states([...waitingA.slice(0, -1), waitingB])).toEqual(Array(MAX_WAITING).fill('waiting'));

    // The first closure of this server for a full queue, so the warning (at most one a minute) is about it.
    const warnings = logs.filter((l) => l.msg.startsWith('connections beyond the bounds'));
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 'warn',
        maxUnauthenticated: MAX,
        maxUnauthenticatedPerSource: PER_SOURCE,
        maxWaiting: MAX_WAITING,
        closedAtQueueFull: 1,
        closedAtWaitDeadline: 0,
        sources: { '127.0.0.21': 1 },
      }),
    ]);

    // Those left are served as room frees.
    for (const h of [...holdersA, ...holdersB]) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');
    for (const o of [...waitingA.slice(0, -1), waitingB]) {
      expect(await o.settled).toBe('connected');
      expect(await send(o.held, authenticatedGet())).toBe('HTTP/1.1 200 OK');
    }
  }, 60_000);

  test('a connection that waits past the deadline is closed unanswered, and says so in the log; the room holders are served on', async () => {
    const holders = await holdRoom('127.0.0.31', PER_SOURCE);
    const waiting = await startWaiting('127.0.0.31', 2);
    // Held, while another source is served, until their deadline closes them.
    expect(await servedAnew('127.0.0.32')).toBe('HTTP/1.1 200 OK');
    expect(states(waiting)).toEqual(['waiting', 'waiting']);
    expect(await Promise.all(waiting.map((o) => o.settled))).toEqual(['closed', 'closed']);
    await expectClosedUnanswered(waiting.map((o) => o.held));
    for (const h of holders) expect(await send(h, authenticatedEnd())).toBe('HTTP/1.1 200 OK');

    // The first closure of this server at the wait deadline: its warning counts it (and the full queue's since).
    const warning = logs.filter((l) => l.msg.startsWith('connections beyond the bounds'))[1];
    expect(warning).toMatchObject({ level: 'warn', waitTimeoutMs: WAIT_TIMEOUT_MS });
    expect(warning.closedAtWaitDeadline).toBeGreaterThanOrEqual(1);
    expect(warning.sources['127.0.0.31']).toBeGreaterThanOrEqual(1);
    expect(await servedAnew('127.0.0.31')).toBe('HTTP/1.1 200 OK');
  }, 60_000);

  test("connections presenting the front proxy's verified certificate are not counted, nor closed for saying nothing", async () => {
    // kube-apiserver's: more than the whole bound from one address, idle after their handshakes.
    const proxied: Held[] = [];
    for (let i = 0; i < MAX + 5; i++) {
      const conn = await openTls(ts, { localAddress: '127.0.0.9', cert: FRONT_PROXY });
      proxied.push(conn);
      held.push(conn);
    }
    // Anonymous connections from that address still have their whole share.
    const anonymous = await Promise.all(
      Array.from({ length: PER_SOURCE }, () => openTls(ts, { localAddress: '127.0.0.9' })),
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
