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

async function probeBound() {
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
          await s.request(undefined, 'GET', '/healthz');
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
        `probe-bound: ${probing ? 'with' : 'without'} an anonymous /healthz every 500 ms: alice ${Math.round(done / 8)} GET/s`,
      );
      await sleep(1500);
    }
  } finally {
    await s.stop();
  }
}

const what = process.argv[2] ?? 'slow-bodies';
if (what === 'slow-bodies') await slowBodies(Number(process.argv[3] ?? 600));
else if (what === 'probe-bound') await probeBound();
else {
  console.error('usage: node bench/tenant-attacks.mjs [slow-bodies [n]|probe-bound]');
  process.exit(2);
}
