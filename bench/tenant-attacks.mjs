#!/usr/bin/env node
// What a tenant can still do to the sharing of the thread (the review of issue 39), reproduced against a real
// server and etcd from the build (`npm run build && node bench/tenant-attacks.mjs [slow-bodies|probe-bound]`).
// Run by hand; nothing here asserts, it reports what it sees.
//
// - slow-bodies: alone on the server, alice (a tenant with no grant: anyone may create an OwnedAccessKey) opens
//   --bodies creates whose bodies never come. Work-conserving, her flow takes every seat global-default has, its
//   borrowed ones too; they are held until the request's deadline and its grace (70 s), as the body is read after
//   priority and fairness. bob, arriving then, waits in his queue a quarter of his deadline and gets 429.
// - probe-bound: alice alone, 16 GETs at once, with and without an anonymous client asking /healthz every 500 ms.
//   The probes' flow is a light flow at work, so alice is held to --max-seats-per-flow (1) as long as they come:
//   anyone who can reach the port takes the work-conserving share back from every tenant.
//
// Connections from many addresses: `node bench/connection-burst.mjs --flood 2048 --flood-sources 256` (on the shared
// 2-core machine the admin's new connection waited 11-16 s with 256-1,000 addresses each holding 2-8 silent ones).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import net from 'node:net';
import tls from 'node:tls';
import { randomUUID } from 'node:crypto';

const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);
const { startServer } = await import(new URL('server.js', dist).href);
const { defaultConfig } = await import(new URL('config.js', dist).href);
const { silentLogger } = await import(new URL('log.js', dist).href);
const { startEmbeddedEtcd } = await import(new URL('storage/embedded-etcd.js', dist).href);

const GROUP_PATH = '/apis/management.platform.sh/v1';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

async function startWithUsers(users, overrides = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tenant-attacks-'));
  const etcd = await startEmbeddedEtcd({ dataDir: join(dir, 'etcd'), unsafeNoFsync: true });
  const tokens = Object.fromEntries(users.map((u) => [u, `${u}-${randomUUID()}`]));
  const tokenAuthFile = join(dir, 'tokens.csv');
  const groups = (u) => (u === 'root' ? ',"system:masters"' : '');
  writeFileSync(tokenAuthFile, users.map((u) => `${tokens[u]},${u},uid-${u}${groups(u)}`).join('\n') + '\n');
  const config = {
    ...defaultConfig(),
    etcdServers: etcd.endpoints,
    dataDir: join(dir, 'data'),
    certDir: join(dir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    tokenAuthFile,
    ...overrides,
  };
  const server = await startServer(config, silentLogger);
  const url = new URL(server.url);
  const agent = new https.Agent({ ca: server.caPem, keepAlive: true, maxSockets: 1000 });
  const request = (user, method, path, body) =>
    new Promise((done, fail) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const headers = { Accept: 'application/json', ...(user ? { Authorization: `Bearer ${tokens[user]}` } : {}) };
      if (data)
        Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) });
      const req = https.request({ host: url.hostname, port: url.port, path, method, agent, headers }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
      });
      req.on('error', fail);
      req.end(data);
    });
  const gauge = async (name, level = 'global-default') => {
    const text = (await request('root', 'GET', '/metrics')).text;
    let sum = 0;
    for (const line of text.split('\n'))
      if (line.startsWith(`${name}{`) && line.includes(`priority_level="${level}"`))
        sum += Number(line.split(' ').at(-1));
    return sum;
  };
  return {
    url,
    caPem: server.caPem,
    tokens,
    request,
    gauge,
    async stop() {
      agent.destroy();
      await server.close();
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function slowBodies(bodies) {
  const s = await startWithUsers(['root', 'alice', 'bob']);
  const sockets = [];
  let stopping = () => {};
  try {
    log(`alice keeps ${bodies} creates whose bodies never come (one refused with 429 is sent again)`);
    let stop = false;
    const keep = () => {
      if (stop) return;
      const socket = tls.connect({ host: s.url.hostname, port: Number(s.url.port), ca: s.caPem });
      socket.on('error', () => {});
      socket.once('secureConnect', () =>
        socket.write(
          `POST ${GROUP_PATH}/ownedaccesskeys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.tokens.alice}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
        ),
      );
      socket.once('data', () => socket.destroy());
      socket.once('close', () => {
        sockets.splice(sockets.indexOf(socket), 1);
        keep();
      });
      sockets.push(socket);
    };
    for (let i = 0; i < bodies; i++) keep();
    stopping = () => (stop = true);
    // The level borrows seats every 10 s (adjustment period): a few periods for her to take them all.
    for (let i = 0; i < 30; i++) {
      await sleep(1000);
      const [seats, limit] = await Promise.all([
        s.gauge('apiserver_flowcontrol_current_executing_seats'),
        s.gauge('apiserver_flowcontrol_current_limit_seats'),
      ]);
      log(`  global-default: ${seats} of ${limit} seats executing`);
    }
    const started = Date.now();
    const bob = await s.request('bob', 'GET', `${GROUP_PATH}/ownedaccesskeys`);
    console.log(`slow-bodies: bob's GET ${bob.status} after ${Date.now() - started} ms`);
  } finally {
    stopping();
    for (const socket of [...sockets]) socket.destroy();
    await s.stop();
  }
}

async function probeBound(path = '/healthz') {
  const s = await startWithUsers(['root', 'alice']);
  try {
    const secret = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 'one' },
      spec: { data: { k: 'eA==' }, access: [{ verbs: ['get'], users: ['alice'] }] },
    };
    await s.request('root', 'POST', `${GROUP_PATH}/namespaces/default/sharedsecrets`, secret);
    for (const probing of [false, true]) {
      let stop = false;
      const prober = (async () => {
        while (probing && !stop) {
          await s.request(undefined, 'GET', path);
          await sleep(500);
        }
      })();
      await sleep(1500);
      let done = 0;
      const alice = Array.from({ length: 16 }, async () => {
        while (!stop) {
          await s.request('alice', 'GET', `${GROUP_PATH}/namespaces/default/sharedsecrets/one`);
          done++;
        }
      });
      // No scrapes meanwhile: the admin's are a light flow too.
      await sleep(8000);
      stop = true;
      await Promise.all([...alice, prober]);
      console.log(
        `probe-bound: ${probing ? 'with' : 'without'} an anonymous ${path} every 500 ms: alice ${Math.round(done / 8)} GET/s`,
      );
      await sleep(1500);
    }
  } finally {
    await s.stop();
  }
}

/** The gauges that must be back to 0 once every request has ended (read as the admin). */
async function leftOver(s) {
  const all = async (name) => {
    const text = (await s.request('root', 'GET', '/metrics')).text;
    let sum = 0;
    for (const line of text.split('\n'))
      if (line.startsWith(`${name}{`) && !line.includes('priority_level="exempt"'))
        sum += Number(line.split(' ').at(-1));
    return sum;
  };
  return {
    executingSeats: await all('apiserver_flowcontrol_current_executing_seats'),
    inqueue: await all('apiserver_flowcontrol_current_inqueue_requests'),
    bodyTurnWaiting: await all('apiserver_flowcontrol_current_body_turn_waiting_requests'),
    // The admin's own scrape is one.
    inflight: (await all('apiserver_current_inflight_requests')) - 1,
  };
}

/** A raw request on a TLS connection of its own: `then(socket)` is called once it is written. */
function rawRequest(s, head, body, then = () => {}) {
  // The TCP socket under it, for a reset (resetAndDestroy).
  const tcp = net.connect({ host: s.url.hostname, port: Number(s.url.port) });
  const socket = tls.connect({ socket: tcp, ca: s.caPem, servername: 'localhost' });
  socket.resetAndDestroy = () => tcp.resetAndDestroy();
  socket.on('error', () => {});
  const answer = new Promise((done) => {
    let text = '';
    // The first status line that is not 100 Continue; or none, when the connection closes before one.
    socket.on('data', (c) => {
      text += c;
      const line = text.split('\r\n\r\n').find((head) => /^HTTP\/1\.1 (?!100)/.test(head));
      if (line) done(line.split('\r\n')[0]);
    });
    socket.once('close', () => done(''));
  });
  socket.once('secureConnect', () => {
    socket.write(head + body);
    then(socket);
  });
  return { socket, answer };
}

/**
 * Every way a request with a body still coming can end, alice's, with bob's (same flow for each of his) in turn
 * behind; then the gauges, which must all be back to 0, and a slow body of each that must be granted at once.
 */
async function turnEnds() {
  const s = await startWithUsers(['root', 'alice', 'bob']);
  try {
    const head = (user, path, more = '') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.tokens[user]}\r\nContent-Type: application/json\r\n${more}`;
    const keys = `${GROUP_PATH}/ownedaccesskeys`;
    const cases = {
      // Holding the turn, reset; waiting for it, reset.
      'reset holding': () =>
        rawRequest(s, head('alice', keys, 'Content-Length: 100\r\n\r\n'), '{', (k) =>
          setTimeout(() => k.resetAndDestroy(), 300),
        ),
      'reset waiting': () =>
        rawRequest(s, head('alice', keys, 'Content-Length: 100\r\n\r\n'), '{', (k) =>
          setTimeout(() => k.resetAndDestroy(), 600),
        ),
      // Answered before its body is read: 404 (no such resource), 403 (bob may not create SharedSecrets in default), 415.
      '404 before reading': () =>
        rawRequest(s, head('bob', `${GROUP_PATH}/nosuchthings`, 'Content-Length: 100\r\n\r\n'), '{', (k) =>
          setTimeout(() => k.end(), 2000),
        ),
      '403 before reading': () =>
        rawRequest(
          s,
          head('bob', `${GROUP_PATH}/namespaces/default/sharedsecrets`, 'Content-Length: 100\r\n\r\n'),
          '{',
          (k) => setTimeout(() => k.end(), 2000),
        ),
      '415 before reading': () =>
        rawRequest(s, head('bob', keys, 'Content-Encoding: gzip\r\nContent-Length: 100\r\n\r\n'), '{', (k) =>
          setTimeout(() => k.end(), 2000),
        ),
      // Chunked, Expect: 100-continue, all but one byte, a length larger than sent (then the client gives up: FIN).
      chunked: () =>
        rawRequest(s, head('bob', keys, 'Transfer-Encoding: chunked\r\n\r\n'), '1\r\n{\r\n', (k) =>
          setTimeout(() => k.end(), 1500),
        ),
      'expect 100-continue': () =>
        rawRequest(s, head('bob', keys, 'Expect: 100-continue\r\nContent-Length: 2\r\n\r\n'), '', (k) =>
          setTimeout(() => k.end(), 1500),
        ),
      'all but one byte': () =>
        rawRequest(s, head('bob', keys, 'Content-Length: 3\r\n\r\n'), '{}', (k) => setTimeout(() => k.end(), 1500)),
    };
    for (const [name, start] of Object.entries(cases)) {
      // Two at once: the second waits for the first's turn.
      const a = start();
      await sleep(100);
      const b = start();
      const answers = await Promise.all([a.answer, b.answer]);
      console.log(`turn-ends: ${name}: ${answers.map((x) => x || '(no answer)').join(' / ')}`);
    }
    // The 429 path: one holds the turn past the other's wait limit (?timeout=4s: a wait limit of 1 s).
    const holder = rawRequest(s, head('alice', keys, 'Content-Length: 100\r\n\r\n'), '{');
    await sleep(200);
    const late = rawRequest(s, head('alice', `${keys}?timeout=4s`, 'Content-Length: 100\r\n\r\n'), '{');
    console.log(`turn-ends: waited past its limit: ${await late.answer}`);
    holder.socket.destroy();
    await holder.answer;
    await sleep(500);
    console.log('turn-ends: left over', JSON.stringify(await leftOver(s)));
    // Each flow's turn is free again: a slow body of each is answered once its body comes.
    for (const user of ['alice', 'bob']) {
      const r = rawRequest(s, head(user, keys, 'Content-Length: 2\r\n\r\n'), '{', (k) =>
        setTimeout(() => k.write('}'), 300),
      );
      console.log(
        `turn-ends: ${user}'s next slow body: ${await Promise.race([r.answer, sleep(5000).then(() => 'none in 5 s')])}`,
      );
      r.socket.destroy();
    }
  } finally {
    await s.stop();
  }
}

/** One user's creates of `kib` KiB bodies, `concurrency` at once, for `seconds`: creates/s and the slowest. */
async function largeCreates(concurrency = 16, kib = 512, seconds = 10) {
  const s = await startWithUsers(['root', 'alice']);
  try {
    const statuses = {};
    const times = [];
    let stop = false;
    const body = () => ({
      apiVersion: 'management.platform.sh/v1',
      kind: 'OwnedAccessKey',
      metadata: { generateName: 'big-', annotations: { pad: 'x'.repeat(kib * 1024) } },
      spec: { disabled: true },
    });
    const loops = Array.from({ length: concurrency }, async () => {
      while (!stop) {
        const started = performance.now();
        const r = await s.request('alice', 'POST', `${GROUP_PATH}/ownedaccesskeys`, body());
        times.push(performance.now() - started);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      }
    });
    await sleep(seconds * 1000);
    stop = true;
    await Promise.all(loops);
    times.sort((a, b) => a - b);
    const p = (q) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]);
    console.log(
      `large-creates: ${concurrency} at once of ${kib} KiB: ${(times.length / seconds).toFixed(1)}/s, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, statuses ${JSON.stringify(statuses)}`,
    );
    console.log('large-creates: left over', JSON.stringify(await leftOver(s)));
  } finally {
    await s.stop();
  }
}

const what = process.argv[2] ?? 'slow-bodies';
if (what === 'slow-bodies') await slowBodies(Number(process.argv[3] ?? 600));
else if (what === 'probe-bound') await probeBound(process.argv[3]);
else if (what === 'turn-ends') await turnEnds();
else if (what === 'large-creates') await largeCreates(...process.argv.slice(3).map(Number));
else {
  console.error('usage: node bench/tenant-attacks.mjs [slow-bodies [n]|probe-bound]');
  process.exit(2);
}
