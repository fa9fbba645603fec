#!/usr/bin/env node
// List, single-object GET and watch fan-out of the API server, side by side with raw etcd3 on the same etcd.
// Run by hand (see bench/README.md): `npm run build && node bench/list-get-watch.mjs`, or bench/run.sh.
//
// One etcd (the Debian etcd binary, --unsafe-no-fsync, temp data dir) is started with the project's own
// startEmbeddedEtcd; the server runs in a child process (bench/server-child.mjs) or, with --in-process, in this
// one. This process is the client of both: HTTPS keep-alive to the server, the etcd3 library to etcd.
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';

const { values: args } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    'list-reps': { type: 'string', default: '20' },
    'get-seconds': { type: 'string', default: '10' },
    'get-slices': { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16,64' },
    watchers: { type: 'string', default: '1000' },
    'write-rate': { type: 'string', default: '100' },
    'watch-seconds': { type: 'string', default: '20' },
    'in-process': { type: 'boolean', default: false },
    profile: { type: 'string' },
    only: { type: 'string', default: 'list,get,watch' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(`Usage: node bench/list-get-watch.mjs [--objects 10000] [--list-reps 20] [--get-seconds 10] [--get-slices 5]
  [--concurrency 16,64] [--watchers 1000] [--write-rate 100] [--watch-seconds 20] [--only list,get,watch]
  [--in-process] [--profile DIR]
--profile DIR writes a V8 CPU profile of the server child per phase into DIR (summarise them with
bench/profile-summary.mjs); the profiler costs some speed, so do not quote numbers from a profiled run.`);
  process.exit(0);
}
const N = Number(args.objects);
const LIST_REPS = Number(args['list-reps']);
const GET_SECONDS = Number(args['get-seconds']);
const GET_SLICES = Number(args['get-slices']);
const CONCURRENCY = args.concurrency.split(',').map(Number);
const WATCHERS = Number(args.watchers);
const WRITE_RATE = Number(args['write-rate']);
const WATCH_SECONDS = Number(args['watch-seconds']);
const ONLY = new Set(args.only.split(','));

const GROUP = 'management.platform.sh';
const NS = 'bench';
const ETCD_PREFIX = '/registry';
const NS_PATH = `/apis/${GROUP}/v1/namespaces/${NS}/sharedsecrets`;
const KEY_PREFIX = `${ETCD_PREFIX}/${GROUP}/sharedsecrets/${NS}/`;
const name = (i) => `secret-${String(i).padStart(5, '0')}`;

/** The compiled server: BENCH_DIST (bench/run.sh builds a private copy in bench/.build/dist) or the repo's dist/. */
const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

// ---------- statistics and CPU accounting ----------

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
function summary(values) {
  const s = Float64Array.from(values).sort();
  return { n: s.length, p50: pct(s, 50), p95: pct(s, 95), p99: pct(s, 99), max: s[s.length - 1], min: s[0] };
}
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : String(x));
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : String(x));

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
/** utime+stime of a process, in seconds (/proc/<pid>/stat fields 14 and 15). */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}
/** Busy (non-idle) CPU seconds of the whole machine, from /proc/stat. */
function machineBusySeconds() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / CLK_TCK;
}
let pids = {};
/** CPU used by each process during `fn`, as cores (CPU seconds / wall seconds). */
async function withCpu(label, fn) {
  if (profileDir) await askChild({ type: 'profile', action: 'start' });
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const busyBefore = machineBusySeconds();
  const t0 = now();
  const result = await fn();
  const wall = (now() - t0) / 1000;
  const seconds = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - before[k]]));
  const ours = Object.values(seconds).reduce((a, b) => a + b, 0);
  seconds['other processes'] = Math.max(0, machineBusySeconds() - busyBefore - ours);
  if (profileDir) {
    const file = join(
      profileDir,
      `${String(cpuTable.length).padStart(2, '0')}-${label.replace(/[^a-zA-Z0-9=]+/g, '-').replace(/-+$/, '')}.cpuprofile`,
    );
    await askChild({ type: 'profile', action: 'stop', file });
    log(`  profile: ${file}`);
  }
  // Calls with the same label (interleaved slices of one measurement) add up into one row.
  const row = cpuTable.find((r) => r.label === label);
  if (row) {
    row.wall += wall;
    for (const k of Object.keys(seconds)) row.seconds[k] += seconds[k];
  } else {
    cpuTable.push({ label, wall, seconds });
  }
  return result;
}
const cpuTable = [];

// The server child answers each request on the IPC channel with a message of the same type.
let child;
let profileDir;
const childWaiters = [];
function askChild(msg) {
  const type = typeof msg === 'string' ? msg : msg.type;
  return new Promise((resolve) => {
    childWaiters.push({ type, resolve });
    child.send(msg);
  });
}
function onChildMessage(msg) {
  const k = childWaiters.findIndex((w) => w.type === msg.type);
  if (k >= 0) childWaiters.splice(k, 1)[0].resolve(msg);
}

// ---------- machine ----------

function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? 'unknown';
  const mhz = /cpu MHz\s*:\s*(.*)/.exec(cpuinfo)?.[1];
  let etcdVersion = 'unknown';
  try {
    etcdVersion = execFileSync('etcd', ['--version']).toString().split('\n')[0].replace('etcd Version: ', '');
  } catch {
    // etcd not on PATH: the report says unknown.
  }
  return {
    cpu: `${model}${mhz ? ` (${Number(mhz).toFixed(0)} MHz)` : ''}`,
    cores: os.cpus().length,
    memoryGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    kernel: os.release(),
    node: process.version,
    etcd: etcdVersion,
    loadavg: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
  };
}

// ---------- HTTPS client ----------

let server; // { url, caPem, token }
function httpsRequest(method, path, { agent, body, contentType } = {}) {
  const url = new URL(path, server.url);
  const headers = { Authorization: `Bearer ${server.token}` };
  if (body !== undefined) {
    headers['Content-Type'] = contentType ?? 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers,
        ca: server.caPem,
        agent,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', (err) => {
      // A keep-alive socket the server closed as it was being reused (Node's documented race): retryable.
      err.reusedSocket = req.reusedSocket;
      reject(err);
    });
    req.end(body);
  });
}
/** Runs `fn` again once when it failed on a reused keep-alive socket the server had just closed. */
async function retryOnReset(fn, onRetry = () => {}) {
  try {
    return await fn();
  } catch (err) {
    if (!(err.reusedSocket && err.code === 'ECONNRESET')) throw err;
    onRetry();
    return fn();
  }
}
function expectStatus(res, code, what) {
  if (res.status !== code) throw new Error(`${what}: HTTP ${res.status}: ${res.body.toString().slice(0, 500)}`);
}

// ---------- objects ----------

const b64 = (n) => randomBytes(n).toString('base64');
function sharedSecret(i) {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'SharedSecret',
    metadata: {
      name: name(i),
      namespace: NS,
      labels: { app: `app-${i % 100}`, team: `team-${i % 10}`, env: ['dev', 'staging', 'prod'][i % 3] },
    },
    spec: {
      displayName: `Service ${i} credentials`,
      description: `Credentials service ${i} uses to reach its database and the payment API`,
      owner: i % 2 ? { user: `user-${i % 50}` } : { team: `team-${i % 10}` },
      data: { username: b64(12), password: b64(24), 'api-token': b64(48) },
      access: [
        {
          name: 'readers',
          verbs: ['get', 'list', 'watch'],
          users: [`user-${i % 50}`, 'alice'],
          teams: [`team-${i % 10}`, 'ci'],
        },
      ],
    },
  };
}

async function seed(agent) {
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < N) {
        const i = next++;
        const res = await httpsRequest('POST', NS_PATH, { agent, body: JSON.stringify(sharedSecret(i)) });
        expectStatus(res, 201, `create ${name(i)}`);
      }
    }),
  );
  return (now() - t0) / 1000;
}

// ---------- etcd metrics ----------

let etcdEndpoint;
function etcdMetrics() {
  return new Promise((resolve, reject) => {
    http
      .get(`${etcdEndpoint}/metrics`, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          const gauge = (n) => Number(new RegExp(`^${n} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
          resolve({
            watchers: gauge('etcd_debugging_mvcc_watcher_total'),
            streams: gauge('etcd_debugging_mvcc_watch_stream_total'),
          });
        });
      })
      .on('error', reject);
  });
}

// ---------- 1. list ----------

async function benchList(etcd) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  const variants = {
    'server, consistent (no resourceVersion)': async () => {
      const t0 = now();
      const res = await httpsRequest('GET', NS_PATH, { agent });
      expectStatus(res, 200, 'list');
      const t1 = now();
      const list = JSON.parse(res.body.toString('utf8'));
      if (list.items.length !== N) throw new Error(`list has ${list.items.length} items`);
      return { total: now() - t0, transfer: t1 - t0, bytes: res.body.length };
    },
    'server, resourceVersion=0': async () => {
      const t0 = now();
      const res = await httpsRequest('GET', `${NS_PATH}?resourceVersion=0`, { agent });
      expectStatus(res, 200, 'list rv=0');
      const t1 = now();
      const list = JSON.parse(res.body.toString('utf8'));
      if (list.items.length !== N) throw new Error(`list has ${list.items.length} items`);
      return { total: now() - t0, transfer: t1 - t0, bytes: res.body.length };
    },
    'raw etcd3, one range + JSON.parse': async () => {
      const t0 = now();
      const res = await etcd.kv.range({ key: Buffer.from(KEY_PREFIX), range_end: Buffer.from(prefixEnd(KEY_PREFIX)) });
      const t1 = now();
      const items = res.kvs.map((kv) => JSON.parse(kv.value.toString('utf8')));
      if (items.length !== N) throw new Error(`range has ${items.length} items`);
      return { total: now() - t0, transfer: t1 - t0, bytes: res.kvs.reduce((n, kv) => n + kv.value.length, 0) };
    },
    'raw etcd3, pages of 1000 + JSON.parse': async () => {
      const t0 = now();
      const items = [];
      let start = KEY_PREFIX;
      let revision;
      for (;;) {
        const res = await etcd.kv.range({
          key: Buffer.from(start),
          range_end: Buffer.from(prefixEnd(KEY_PREFIX)),
          limit: 1000,
          revision,
        });
        revision = res.header.revision;
        for (const kv of res.kvs) items.push(JSON.parse(kv.value.toString('utf8')));
        if (!res.more || !res.kvs.length) break;
        start = res.kvs[res.kvs.length - 1].key.toString() + '\0';
      }
      const t1 = now();
      if (items.length !== N) throw new Error(`range has ${items.length} items`);
      return { total: t1 - t0, transfer: NaN, bytes: NaN };
    },
  };
  const names = Object.keys(variants);
  for (let w = 0; w < 3; w++) for (const n of names) await variants[n](); // warm-up, not counted
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  await withCpu('list (all variants, interleaved)', async () => {
    // The order turns every repetition, so no variant always pays for the garbage the one before it left.
    for (let r = 0; r < LIST_REPS; r++) {
      for (let k = 0; k < names.length; k++) {
        const n = names[(r + k) % names.length];
        samples[n].push(await variants[n]());
      }
    }
  });
  agent.destroy();
  return Object.fromEntries(
    names.map((n) => [
      n,
      {
        total: summary(samples[n].map((s) => s.total)),
        transfer: summary(samples[n].map((s) => s.transfer)),
        bytes: samples[n][0].bytes,
      },
    ]),
  );
}

function prefixEnd(prefix) {
  const b = Buffer.from(prefix);
  b[b.length - 1]++;
  return b;
}

// ---------- 2. single-object GET ----------

/** `concurrency` loops doing `op` back to back for `seconds`; the latencies (ms), errors and elapsed seconds. */
async function closedLoop(concurrency, seconds, op) {
  const latencies = [];
  let errors = 0;
  let firstError;
  const t0 = now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (now() < end) {
        const s = now();
        try {
          await op();
          latencies.push(now() - s);
        } catch (err) {
          errors++;
          firstError ??= err;
        }
      }
    }),
  );
  if (firstError) log(`  ${errors} errors, first: ${firstError.message}`);
  return { latencies, errors, elapsed: (now() - t0) / 1000 };
}

async function benchGet(etcd) {
  const random = () => Math.floor(Math.random() * N);
  const targets = {
    'server GET (consistent, no resourceVersion)': (agent) => async () => {
      const res = await retryOnReset(() => httpsRequest('GET', `${NS_PATH}/${name(random())}`, { agent }));
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      JSON.parse(res.body.toString('utf8'));
    },
    'server GET ?resourceVersion=0 (watch cache)': (agent) => async () => {
      const res = await retryOnReset(() =>
        httpsRequest('GET', `${NS_PATH}/${name(random())}?resourceVersion=0`, { agent }),
      );
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      JSON.parse(res.body.toString('utf8'));
    },
    'raw etcd3 get(key) + JSON.parse': () => async () => {
      const res = await etcd.get(KEY_PREFIX + name(random())).exec();
      if (res.kvs.length !== 1) throw new Error('missing key');
      JSON.parse(res.kvs[0].value.toString('utf8'));
    },
  };
  // Each row's time is cut into slices taken in turn with the other rows' (A B C A B C ...), so that a burst of
  // load from elsewhere on the machine hits every row alike. A profiled run takes one slice per row.
  const slices = profileDir ? 1 : GET_SLICES;
  const results = [];
  for (const c of CONCURRENCY) {
    const rows = Object.entries(targets).map(([label, make]) => {
      const agent = new https.Agent({ keepAlive: true, maxSockets: c });
      return { label, agent, op: make(agent), latencies: [], errors: 0, elapsed: 0 };
    });
    for (const row of rows) await closedLoop(c, Math.min(2, GET_SECONDS), row.op); // warm-up; opens the connections
    for (let k = 0; k < slices; k++) {
      for (const row of rows) {
        const r = await withCpu(`GET c=${c}: ${row.label}`, () => closedLoop(c, GET_SECONDS / slices, row.op));
        for (const l of r.latencies) row.latencies.push(l);
        row.errors += r.errors;
        row.elapsed += r.elapsed;
      }
    }
    for (const row of rows) {
      row.agent.destroy();
      const r = {
        concurrency: c,
        label: row.label,
        rps: row.latencies.length / row.elapsed,
        ...summary(row.latencies),
        errors: row.errors,
      };
      log(`  c=${c} ${row.label}: ${r.rps.toFixed(0)} req/s p50 ${f2(r.p50)} ms p99 ${f2(r.p99)} ms`);
      results.push(r);
    }
  }
  return results;
}

// ---------- 3. watch fan-out ----------

const RV_FIELD = '"resourceVersion":"';

async function benchWatch() {
  const writes = Math.round(WRITE_RATE * WATCH_SECONDS);
  const metrics = { beforeWatchers: await etcdMetrics() };

  // A list gives the revision every watcher starts from (the namespace's current state, no initial events).
  const listed = await httpsRequest('GET', `${NS_PATH}?limit=1`, { agent: false });
  expectStatus(listed, 200, 'list for watch');
  const fromRV = JSON.parse(listed.body.toString()).metadata.resourceVersion;

  const watchAgent = new https.Agent({ keepAlive: false, maxSockets: Infinity });
  const watchers = [];
  const openOne = (i) =>
    new Promise((resolve, reject) => {
      const w = {
        i,
        count: 0,
        other: 0,
        outOfOrder: 0,
        lastRV: 0,
        rvs: new Float64Array(writes + 64),
        times: new Float64Array(writes + 64),
        req: undefined,
        ended: false,
      };
      const url = new URL(`${NS_PATH}?watch=true&resourceVersion=${fromRV}&timeoutSeconds=600`, server.url);
      w.req = https.request(
        {
          hostname: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          headers: { Authorization: `Bearer ${server.token}` },
          ca: server.caPem,
          agent: watchAgent,
        },
        (res) => {
          if (res.statusCode !== 200) return reject(new Error(`watch ${i}: HTTP ${res.statusCode}`));
          res.setEncoding('utf8');
          let rest = '';
          res.on('data', (chunk) => {
            const t = now();
            const s = rest ? rest + chunk : chunk;
            let start = 0;
            for (let nl = s.indexOf('\n'); nl !== -1; start = nl + 1, nl = s.indexOf('\n', start)) {
              const p = s.indexOf(RV_FIELD, start);
              if (p === -1 || p > nl || !s.startsWith('{"type":"MODIFIED"', start)) {
                w.other++;
                continue;
              }
              const rv = Number(s.slice(p + RV_FIELD.length, s.indexOf('"', p + RV_FIELD.length)));
              if (rv <= w.lastRV) w.outOfOrder++;
              w.lastRV = rv;
              if (w.count < w.rvs.length) {
                w.rvs[w.count] = rv;
                w.times[w.count] = t;
              }
              w.count++;
            }
            rest = s.slice(start);
          });
          res.on('end', () => (w.ended = true));
          res.on('error', () => (w.ended = true));
          resolve(w);
        },
      );
      w.req.on('error', (err) => {
        w.ended = true;
        reject(err);
      });
      w.req.end();
    });

  const tOpen = now();
  await withCpu(`watch: open ${WATCHERS} watch streams`, async () => {
    for (let i = 0; i < WATCHERS; i += 50) {
      watchers.push(
        ...(await Promise.all(Array.from({ length: Math.min(50, WATCHERS - i) }, (_, k) => openOne(i + k)))),
      );
    }
  });
  const openSeconds = (now() - tOpen) / 1000;
  log(`  ${watchers.length} watch streams open in ${openSeconds.toFixed(1)} s (from resourceVersion ${fromRV})`);
  await sleep(500);
  metrics.watchersOpen = await etcdMetrics();

  // Open-loop writer: write i is sent at t0 + i/rate whatever happened to earlier ones.
  const writeAgent = new https.Agent({ keepAlive: true, maxSockets: 32 });
  const sent = new Float64Array(writes);
  const acked = new Float64Array(writes);
  const ackRV = new Float64Array(writes);
  let writeErrors = 0;
  let writeRetries = 0;
  let writeSeconds = NaN;
  const pending = [];
  await withCpu(`watch: ${WRITE_RATE} writes/s to ${WATCHERS} watchers`, async () => {
    const t0 = now();
    for (let i = 0; i < writes; i++) {
      const due = t0 + (i * 1000) / WRITE_RATE;
      const wait = due - now();
      if (wait > 1) await sleep(wait);
      if (i === Math.floor(writes / 2)) pending.push(etcdMetrics().then((m) => (metrics.duringWrites = m)));
      sent[i] = now();
      const patch = () =>
        httpsRequest('PATCH', `${NS_PATH}/${name(i % N)}`, {
          agent: writeAgent,
          body: JSON.stringify({ spec: { description: `write ${i}` } }),
          contentType: 'application/merge-patch+json',
        });
      const write = async () => {
        let res;
        try {
          res = await retryOnReset(patch, () => writeRetries++); // the same merge patch again sets the same value
        } catch (err) {
          writeErrors++;
          log(`  write ${i} failed: ${err.message}`);
          return;
        }
        acked[i] = now();
        if (res.status !== 200) {
          writeErrors++;
          log(`  write ${i} failed: HTTP ${res.status}: ${res.body.toString().slice(0, 200)}`);
          return;
        }
        ackRV[i] = Number(JSON.parse(res.body.toString()).metadata.resourceVersion);
      };
      pending.push(write());
    }
    await Promise.all(pending);
    writeSeconds = (now() - t0) / 1000;
    log(`  ${writes} writes sent and acknowledged in ${writeSeconds.toFixed(1)} s; waiting for delivery`);
    // Wait for every watcher to have every event (or give up after 30 s).
    const deadline = now() + 30_000;
    const succeeded = writes - writeErrors;
    while (now() < deadline && watchers.some((w) => w.count < succeeded && !w.ended)) await sleep(50);
  });
  writeAgent.destroy();

  // Per event per watcher: time received minus time the writer had its acknowledgement (and minus time sent).
  const byRV = new Map();
  for (let i = 0; i < writes; i++) if (ackRV[i]) byRV.set(ackRV[i], i);
  const fromAck = [];
  const fromSend = [];
  const lastDelivery = new Float64Array(writes).fill(-Infinity);
  const perEventCount = new Uint32Array(writes);
  let unknown = 0;
  let beforeAck = 0;
  for (const w of watchers) {
    for (let k = 0; k < Math.min(w.count, w.rvs.length); k++) {
      const i = byRV.get(w.rvs[k]);
      if (i === undefined) {
        unknown++;
        continue;
      }
      const t = w.times[k];
      perEventCount[i]++;
      if (t < acked[i]) beforeAck++;
      fromAck.push(t - acked[i]);
      fromSend.push(t - sent[i]);
      if (t > lastDelivery[i]) lastDelivery[i] = t;
    }
  }
  const lastFromAck = [];
  for (let i = 0; i < writes; i++) if (perEventCount[i]) lastFromAck.push(lastDelivery[i] - acked[i]);
  const ackLatency = [];
  for (let i = 0; i < writes; i++) if (acked[i]) ackLatency.push(acked[i] - sent[i]);
  const succeeded = writes - writeErrors;
  const complete = watchers.filter((w) => w.count === succeeded && w.outOfOrder === 0 && w.other === 0).length;
  const eventsComplete = perEventCount.filter((c) => c === watchers.length).length;

  const endedEarly = watchers.filter((w) => w.ended).length;
  for (const w of watchers) w.req.destroy();
  watchAgent.destroy();
  await sleep(1000);
  metrics.afterClose = await etcdMetrics();

  return {
    writes,
    succeeded,
    writeErrors,
    writeRetries,
    writeSeconds,
    openSeconds,
    fromRV,
    delivered: fromAck.length,
    expected: succeeded * watchers.length,
    complete,
    eventsComplete,
    unknown,
    beforeAck,
    outOfOrder: watchers.reduce((n, w) => n + w.outOfOrder, 0),
    other: watchers.reduce((n, w) => n + w.other, 0),
    ended: endedEarly,
    fromAck: summary(fromAck),
    fromSend: summary(fromSend),
    lastFromAck: summary(lastFromAck),
    ackLatency: summary(ackLatency),
    metrics,
  };
}

// ---------- main ----------

async function main() {
  const info = machine();
  log('machine', info);
  const { startEmbeddedEtcd } = await import(new URL('storage/embedded-etcd.js', dist).href);

  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-'));
  const etcdProc = await startEmbeddedEtcd({ dataDir: join(tmp, 'etcd'), unsafeNoFsync: true });
  etcdEndpoint = etcdProc.endpoints[0];
  log(`etcd ${info.etcd} (pid ${etcdProc.pid}) on ${etcdEndpoint}`);

  const serverConfig = {
    etcdServers: [etcdEndpoint],
    etcdPrefix: ETCD_PREFIX,
    dataDir: join(tmp, 'server'),
    certDir: join(tmp, 'server', 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    etcdCompactionIntervalMs: 0,
  };
  let stopServer = async () => {};
  let etcd;
  try {
    await run(
      serverConfig,
      etcdProc,
      (stop) => (stopServer = stop),
      (client) => (etcd = client),
    );
  } finally {
    etcd?.close();
    await stopServer();
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function run(serverConfig, etcdProc, setStop, setEtcd) {
  const info = machine();
  let stopServer;
  if (args['in-process']) {
    const { startServer } = await import(new URL('server.js', dist).href);
    const { defaultConfig } = await import(new URL('config.js', dist).href);
    const { silentLogger } = await import(new URL('log.js', dist).href);
    const running = await startServer({ ...defaultConfig(), ...serverConfig }, silentLogger);
    server = {
      url: running.url,
      caPem: running.caPem,
      token: readFileSync(join(serverConfig.dataDir, 'admin-token'), 'utf8').trim(),
    };
    if (args.profile) throw new Error('--profile needs the server in a child process');
    stopServer = () => running.close();
    pids = { 'bench client + server (one process)': process.pid, etcd: etcdProc.pid };
  } else {
    child = fork(new URL('./server-child.mjs', import.meta.url), [], {
      env: { ...process.env, BENCH_SERVER_CONFIG: JSON.stringify(serverConfig) },
      stdio: 'inherit',
    });
    server = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
    });
    child.on('message', onChildMessage);
    if (args.profile) mkdirSync((profileDir = args.profile), { recursive: true });
    stopServer = () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.send('stop');
      });
    pids = { server: server.pid, etcd: etcdProc.pid, 'bench client': process.pid };
  }
  setStop(stopServer);
  log(`server on ${server.url} (${args['in-process'] ? 'in this process' : `child pid ${server.pid}`})`);

  const etcd = new Etcd3({ hosts: etcdEndpoint, grpcOptions: { 'grpc.max_receive_message_length': -1 } });
  setEtcd(etcd);
  const results = {
    machine: info,
    options: {
      N,
      LIST_REPS,
      GET_SECONDS,
      CONCURRENCY,
      WATCHERS,
      WRITE_RATE,
      WATCH_SECONDS,
      inProcess: args['in-process'],
    },
  };
  {
    log(`seeding ${N} SharedSecrets through the server (32 concurrent POSTs)`);
    const seedAgent = new https.Agent({ keepAlive: true, maxSockets: 32 });
    const seedSeconds = await withCpu(`seed: create ${N} objects`, () => seed(seedAgent));
    seedAgent.destroy();
    const sample = (await etcd.get(KEY_PREFIX + name(0)).exec()).kvs[0].value;
    results.seed = { seconds: seedSeconds, perSecond: N / seedSeconds, storedBytes: sample.length };
    log(`  ${(N / seedSeconds).toFixed(0)} creates/s; one stored object is ${sample.length} bytes`);
    results.metricsAtStart = await etcdMetrics();

    if (ONLY.has('list')) {
      log(`list: ${LIST_REPS} repetitions of each variant, interleaved`);
      results.list = await benchList(etcd);
      for (const [k, v] of Object.entries(results.list))
        log(`  ${k}: median ${f1(v.total.p50)} ms p95 ${f1(v.total.p95)} ms`);
    }
    if (ONLY.has('get')) {
      log(`get: ${GET_SECONDS} s per row, concurrency ${CONCURRENCY.join(', ')}`);
      results.get = await benchGet(etcd);
    }
    if (ONLY.has('watch')) {
      log(`watch: ${WATCHERS} watchers, ${WRITE_RATE} writes/s for ${WATCH_SECONDS} s`);
      results.watch = await benchWatch();
    }
    if (child) {
      const stats = await askChild('stats');
      results.serverMemory = { rssMiB: stats.memory.rss / 2 ** 20, heapUsedMiB: stats.memory.heapUsed / 2 ** 20 };
    } else {
      results.serverMemory = {
        rssMiB: process.memoryUsage().rss / 2 ** 20,
        heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
      };
    }
  }
  results.machine.loadavgAtEnd = os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  results.cpu = cpuTable;
  console.log(report(results));
  if (process.env.BENCH_JSON)
    (await import('node:fs')).writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
}

function report(r) {
  const out = [];
  const m = r.machine;
  out.push(`### Run of ${new Date().toISOString()}`, '');
  out.push(
    `Machine: ${m.cpu}, **${m.cores} cores**, ${m.memoryGiB} GiB RAM, Linux ${m.kernel}; Node ${m.node}; etcd ${m.etcd} (--unsafe-no-fsync).`,
  );
  out.push(`Server source: ${process.env.BENCH_SOURCE ?? `the repository's dist/ (${dist.pathname})`}.`);
  out.push(
    `Load average before / after: ${m.loadavg} / ${m.loadavgAtEnd}. Server ${r.options.inProcess ? 'in the benchmark process' : 'in a child process'}.`,
    '',
  );
  out.push(
    `Seed: ${N} SharedSecrets created through the server (32 concurrent POSTs) in ${f1(r.seed.seconds)} s = ${r.seed.perSecond.toFixed(0)} creates/s; one object is ${r.seed.storedBytes} bytes in etcd.`,
    '',
  );
  if (r.list) {
    out.push(
      `#### 1. List of ${N} SharedSecrets (${LIST_REPS} repetitions each, interleaved in turning order; time to a parsed result in the client)`,
      '',
    );
    out.push(
      '| Variant | median ms | p95 ms | min ms | median ms to last byte | bytes | median vs raw etcd3 (one range) |',
      '|---|---|---|---|---|---|---|',
    );
    const base = r.list['raw etcd3, one range + JSON.parse'].total.p50;
    for (const [k, v] of Object.entries(r.list)) {
      out.push(
        `| ${k} | ${f1(v.total.p50)} | ${f1(v.total.p95)} | ${f1(v.total.min)} | ${f1(v.transfer.p50)} | ${Number.isFinite(v.bytes) ? v.bytes : '-'} | ${f2(v.total.p50 / base)}x |`,
      );
    }
    out.push('');
  }
  if (r.get) {
    out.push(
      `#### 2. Single-object GET, closed loop, ${GET_SECONDS} s per row in ${profileDir ? 1 : GET_SLICES} slices taken in turn (random object of ${N})`,
      '',
    );
    out.push(
      '| Concurrency | Target | req/s | p50 ms | p99 ms | max ms | errors | req/s vs raw etcd3 |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const row of r.get) {
      const base = r.get.find((x) => x.concurrency === row.concurrency && x.label.startsWith('raw')).rps;
      out.push(
        `| ${row.concurrency} | ${row.label} | ${row.rps.toFixed(0)} | ${f2(row.p50)} | ${f2(row.p99)} | ${f1(row.max)} | ${row.errors} | ${f2(row.rps / base)}x |`,
      );
    }
    out.push('');
  }
  if (r.watch) {
    const w = r.watch;
    out.push(
      `#### 3. Watch fan-out: ${WATCHERS} watchers, ${WRITE_RATE} writes/s for ${WATCH_SECONDS} s (${w.writes} merge-patches through the server)`,
      '',
    );
    out.push(
      `The ${w.writes} writes were all answered after ${f1(w.writeSeconds)} s: ${f1(w.writes / w.writeSeconds)} writes/s achieved (${WRITE_RATE} offered), i.e. ${((w.writes * WATCHERS) / w.writeSeconds / 1000).toFixed(1)}k event deliveries/s.`,
      '',
    );
    out.push(
      `Watch streams opened in ${f1(w.openSeconds)} s. Delivered ${w.delivered} of ${w.expected} events (${w.writeErrors} failed writes, ${w.writeRetries} writes retried after a keep-alive reset, ${w.unknown} unmatched, ${w.outOfOrder} out of order, ${w.other} other lines, ${w.ended} streams ended early); ${w.complete} of ${WATCHERS} watchers got every event exactly once in order; ${w.eventsComplete} of ${w.succeeded} successful writes reached every watcher as events.`,
      '',
    );
    out.push('| Latency (ms) | p50 | p99 | max |', '|---|---|---|---|');
    out.push(
      `| write acknowledged → event received (each event × watcher) | ${f1(w.fromAck.p50)} | ${f1(w.fromAck.p99)} | ${f1(w.fromAck.max)} |`,
    );
    out.push(
      `| write sent → event received (each event × watcher) | ${f1(w.fromSend.p50)} | ${f1(w.fromSend.p99)} | ${f1(w.fromSend.max)} |`,
    );
    out.push(
      `| write acknowledged → last watcher has it (per event) | ${f1(w.lastFromAck.p50)} | ${f1(w.lastFromAck.p99)} | ${f1(w.lastFromAck.max)} |`,
    );
    out.push(
      `| write sent → acknowledged (the PATCH itself) | ${f1(w.ackLatency.p50)} | ${f1(w.ackLatency.p99)} | ${f1(w.ackLatency.max)} |`,
    );
    out.push(
      '',
      `${w.beforeAck} deliveries arrived before the writer had processed its acknowledgement (negative ack → event; included as is).`,
      '',
    );
    const mm = w.metrics;
    out.push('etcd watch gauges (`etcd_debugging_mvcc_watcher_total` / `etcd_debugging_mvcc_watch_stream_total`):', '');
    out.push(`- before the watchers: ${mm.beforeWatchers.watchers} / ${mm.beforeWatchers.streams}`);
    out.push(`- all ${WATCHERS} watch streams open: ${mm.watchersOpen.watchers} / ${mm.watchersOpen.streams}`);
    out.push(`- midway through the writes: ${mm.duringWrites?.watchers} / ${mm.duringWrites?.streams}`);
    out.push(`- after the streams closed: ${mm.afterClose.watchers} / ${mm.afterClose.streams}`, '');
  }
  out.push(
    `#### CPU per process during each phase (cores busy = CPU seconds / wall seconds; ${m.cores} cores in all)`,
    '',
  );
  const procs = Object.keys(r.cpu[0]?.seconds ?? {});
  out.push(`| Phase | wall s | ${procs.join(' | ')} |`, `|---|---|${procs.map(() => '---').join('|')}|`);
  for (const c of r.cpu)
    out.push(`| ${c.label} | ${f1(c.wall)} | ${procs.map((p) => f2(c.seconds[p] / c.wall)).join(' | ')} |`);
  out.push(
    '',
    `Server memory at the end: RSS ${f1(r.serverMemory.rssMiB)} MiB, heap used ${f1(r.serverMemory.heapUsedMiB)} MiB.`,
  );
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
