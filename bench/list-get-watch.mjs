#!/usr/bin/env node
// List, single-object GET and watch fan-out of the API server, side by side with raw etcd3 on the same etcd.
// Run by hand (see bench/README.md): `npm run build && node bench/list-get-watch.mjs`, or bench/run.sh.
//
// One etcd (the Debian etcd binary, --unsafe-no-fsync, temp data dir) is started with the project's own
// startEmbeddedEtcd; the server runs in a child process (bench/server-child.mjs) or, with --in-process, in this
// one. This process is the client of both: HTTPS keep-alive to the server, the etcd3 library to etcd.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import {
  KEY_PREFIX,
  NS_PATH,
  cpuLines,
  cpuTable,
  ctx,
  dist,
  etcdMetrics,
  expectStatus,
  f1,
  f2,
  forkServerChild,
  headerLines,
  httpsRequest,
  interleavedClosedLoops,
  loadavg,
  log,
  machine,
  name,
  now,
  prefixEnd,
  retryOnReset,
  seed,
  startEtcd,
  summary,
  watchFanOut,
  withCpu,
} from './lib.mjs';

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

const profileDir = args.profile;

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

// ---------- 2. single-object GET ----------

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
  // A profiled run takes one slice per row.
  const slices = profileDir ? 1 : GET_SLICES;
  const results = [];
  for (const c of CONCURRENCY) {
    const rows = await interleavedClosedLoops(c, targets, {
      seconds: GET_SECONDS,
      slices,
      cpuLabel: (label) => `GET c=${c}: ${label}`,
    });
    results.push(...rows);
  }
  return results;
}

// ---------- main ----------

async function main() {
  const info = machine();
  log('machine', info);

  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-'));
  const { etcdProc, serverConfig } = await startEtcd(tmp);
  log(`etcd ${info.etcd} (pid ${etcdProc.pid}) on ${ctx.etcdEndpoint}`);
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
  let server;
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
    ctx.pids = { 'bench client + server (one process)': process.pid, etcd: etcdProc.pid };
  } else {
    const child = (ctx.child = forkServerChild(serverConfig));
    server = await child.ready;
    if (profileDir) mkdirSync((ctx.profileDir = profileDir), { recursive: true });
    stopServer = () => child.stop();
    ctx.pids = { server: server.pid, etcd: etcdProc.pid, 'bench client': process.pid };
  }
  ctx.server = server;
  setStop(stopServer);
  log(`server on ${server.url} (${args['in-process'] ? 'in this process' : `child pid ${server.pid}`})`);

  const etcd = new Etcd3({ hosts: ctx.etcdEndpoint, grpcOptions: { 'grpc.max_receive_message_length': -1 } });
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
    const seedSeconds = await withCpu(`seed: create ${N} objects`, () => seed(seedAgent, 0, N));
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
      results.watch = await watchFanOut({ n: N, watchers: WATCHERS, rate: WRITE_RATE, seconds: WATCH_SECONDS });
    }
    if (ctx.child) {
      const stats = await ctx.child.ask('stats');
      results.serverMemory = { rssMiB: stats.memory.rss / 2 ** 20, heapUsedMiB: stats.memory.heapUsed / 2 ** 20 };
    } else {
      results.serverMemory = {
        rssMiB: process.memoryUsage().rss / 2 ** 20,
        heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
      };
    }
  }
  results.machine.loadavgAtEnd = loadavg();
  results.cpu = cpuTable;
  console.log(report(results));
  if (process.env.BENCH_JSON)
    (await import('node:fs')).writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
}

function report(r) {
  const out = [];
  const m = r.machine;
  out.push(
    ...headerLines(
      m,
      m.loadavgAtEnd,
      `Server ${r.options.inProcess ? 'in the benchmark process' : 'in a child process'}.`,
    ),
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
  out.push(...cpuLines(m.cores));
  out.push(
    `Server memory at the end: RSS ${f1(r.serverMemory.rssMiB)} MiB, heap used ${f1(r.serverMemory.heapUsedMiB)} MiB.`,
  );
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
