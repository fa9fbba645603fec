#!/usr/bin/env node
// The scale figures of the server at several sizes (10,000, 50,000 and 100,000 SharedSecrets by default), side by
// side with raw etcd3 in the same run: memory (idle, with N objects, under a V8 heap limit), create throughput,
// consistent GET throughput, watch fan-out at two write rates, and the time a new server takes to serve N objects.
// Run with bench/run.sh scale (see bench/README.md); the markdown report goes to stdout, progress to stderr.
//
// One etcd; the server in a child process (bench/server-child.mjs) started with --expose-gc and the size's
// --max-old-space-size; this process is the client of both. The data grows through the API from one size to the
// next, and every row is measured at each size before the next growth. With --workers 1,2 every row is measured
// once per worker count at each size, on the same data: N > 1 runs the server as `dist/main.js --workers N` (a
// primary and N workers), whose CPU and memory are summed over all its processes. --burn-cores adds a steady
// outside load (bench/burn.mjs) for the whole run. With --protocols h1,h2 the create, GET and watch rows are each
// measured over HTTP/1.1 and over HTTP/2 (node:http2 sessions negotiated by ALPN), in turn on the same data.
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import {
  Http2Pool,
  KEY_PREFIX,
  NotH2,
  NS_PATH,
  cpuLines,
  cpuSecondsOf,
  ctx,
  f1,
  f2,
  forkServerChild,
  freePort,
  h2Sessions,
  headerLines,
  httpsRequest,
  interleavedClosedLoops,
  loadavg,
  log,
  machine,
  mib,
  name,
  now,
  prefixEnd,
  protocolName,
  retryOnReset,
  sharedSecret,
  sleep,
  spawnServerWorkers,
  startEtcd,
  watchFanOut,
  withCpu,
} from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,50000,100000' },
    'heap-mb': { type: 'string' },
    only: { type: 'string', default: 'memory,create,get,watch,start' },
    concurrency: { type: 'string', default: '64' },
    'create-seconds': { type: 'string', default: '10' },
    'create-slice-seconds': { type: 'string', default: '2' },
    'get-seconds': { type: 'string', default: '10' },
    'get-slices': { type: 'string', default: '5' },
    watchers: { type: 'string', default: '1000' },
    'write-rates': { type: 'string', default: '100,200' },
    'watch-seconds': { type: 'string', default: '10' },
    'idle-seconds': { type: 'string', default: '5' },
    'settle-seconds': { type: 'string', default: '2' },
    'start-timeout-seconds': { type: 'string', default: '120' },
    'stall-seconds': { type: 'string', default: '60' },
    workers: { type: 'string', default: '1' },
    'burn-cores': { type: 'string', default: '0' },
    protocols: { type: 'string', default: 'h1' },
    profile: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(`Usage: bench/run.sh scale [--sizes 10000,50000,100000] [--heap-mb 256,256,512] [--only memory,create,get,watch,start]
  [--concurrency 64] [--create-seconds 10] [--create-slice-seconds 2] [--get-seconds 10] [--get-slices 5]
  [--watchers 1000] [--write-rates 100,200] [--watch-seconds 10] [--idle-seconds 5] [--settle-seconds 2]
  [--start-timeout-seconds 120] [--stall-seconds 60] [--workers 1] [--burn-cores 0] [--protocols h1] [--profile DIR]
--heap-mb: the server's --max-old-space-size per size (one value for all sizes, or one per size; 0 = Node's
default). Default: 256 up to 50,000 objects, 512 above.
--workers: the server's worker counts, each measured at every size on the same data (e.g. 1,2 side by side); 1 is
the server in one process, N > 1 is dist/main.js --workers N.
--burn-cores: outside load, a process busy that fraction of a core (more than 1: several) for the whole run.
--protocols: h1, h2 or h1,h2: the create, GET and watch rows over HTTP/1.1 (https agents, a connection per
watcher) and/or HTTP/2 (node:http2 sessions of up to 100 streams: ceil(concurrency / 100) for creates and GETs,
ceil(watchers / 100) for the watchers), each in turn on the same data.
--profile DIR: a V8 CPU profile of the server per phase (bench/profile-summary.mjs); quote no figures of such a run.`);
  process.exit(0);
}
const list = (s) => s.split(',').filter(Boolean).map(Number);
if (args.profile) mkdirSync((ctx.profileDir = args.profile), { recursive: true });
const SIZES = list(args.sizes).sort((a, b) => a - b);
const HEAP_MB = args['heap-mb'] ? list(args['heap-mb']) : SIZES.map((n) => (n <= 50_000 ? 256 : 512));
const heapFor = (k) => HEAP_MB[Math.min(k, HEAP_MB.length - 1)];
const ONLY = new Set(args.only.split(','));
const CONCURRENCY = Number(args.concurrency);
const CREATE_SECONDS = Number(args['create-seconds']);
const CREATE_SLICE = Number(args['create-slice-seconds']);
const GET_SECONDS = Number(args['get-seconds']);
const GET_SLICES = Number(args['get-slices']);
const WATCHERS = Number(args.watchers);
const WRITE_RATES = list(args['write-rates']);
const WATCH_SECONDS = Number(args['watch-seconds']);
const IDLE_SECONDS = Number(args['idle-seconds']);
const SETTLE_SECONDS = Number(args['settle-seconds']);
const START_TIMEOUT = Number(args['start-timeout-seconds']);
const STALL_SECONDS = Number(args['stall-seconds']);
const WORKERS = list(args.workers);
const BURN_CORES = Number(args['burn-cores']);
if (!WORKERS.length || WORKERS.some((w) => !Number.isInteger(w) || w < 1 || w > 64))
  throw new Error(`--workers must be worker counts from 1 to 64, comma-separated (got ${args.workers})`);
const PROTOCOLS = [...new Set(args.protocols.split(',').filter(Boolean))];
if (!PROTOCOLS.length || PROTOCOLS.some((p) => p !== 'h1' && p !== 'h2'))
  throw new Error(`--protocols must be h1, h2 or both, comma-separated (got ${args.protocols})`);
if (!(BURN_CORES >= 0))
  throw new Error(`--burn-cores must be a number of cores, 0 or more (got ${args['burn-cores']})`);
/** How a row's label names its protocol: nothing when HTTP/1.1 alone is measured (as before the option). */
const over = (p) => (PROTOCOLS.length === 1 && p === 'h1' ? '' : ` over ${protocolName(p)}`);
/** The client of a protocol's closed loops: an https.Agent, or HTTP/2 sessions of up to 100 streams. */
async function clientFor(p, concurrency) {
  if (p === 'h1') return new https.Agent({ keepAlive: true, maxSockets: concurrency });
  return new Http2Pool({ sessions: h2Sessions(concurrency), maxStreams: 100 }).connect();
}
/** More than one worker count: the report has a column per size and count, and the CPU table says which. */
const SIDE_BY_SIDE = WORKERS.length > 1;
const RAW_PREFIX = '/bench-raw/sharedsecrets/';

const fmtN = (n) => n.toLocaleString('en-US');

// ---------- the server child ----------

let serverConfig;
let etcdPid;
let child; // { handle, heapMb, workers, spawnedAt }
const oomLimits = []; // heap limits (MiB) a server ran out of
let burners = []; // the --burn-cores processes

/**
 * Starts a server with the heap limit `heapMb` (0: Node's default) and `workers` workers: 1 is the server child
 * (startServer in one process), more is dist/main.js --workers N (each worker has that heap limit).
 */
async function startChild(heapMb, workers) {
  const execArgv = ['--expose-gc', ...(heapMb ? [`--max-old-space-size=${heapMb}`] : [])];
  const t0 = now();
  const handle =
    workers > 1 ? spawnServerWorkers(serverConfig, { workers, execArgv }) : forkServerChild(serverConfig, { execArgv });
  child = { handle, heapMb, workers, spawnedAt: t0 };
  ctx.child = handle;
  return handle;
}
async function serving(handle) {
  ctx.server = await handle.ready;
  // With workers, the server's CPU is that of the primary and all its workers.
  ctx.pids = { server: handle.cpuSeconds ? handle : handle.pid, etcd: etcdPid, 'bench client': process.pid };
  burners.forEach((b, k) => (ctx.pids[burners.length > 1 ? `burner ${k + 1}` : 'burner'] = b.pid));
}
/** `fraction` of a core (more than 1: several processes) busy until the run ends. */
async function startBurners(cores) {
  const count = Math.ceil(cores);
  burners = Array.from({ length: count }, () =>
    fork(new URL('./burn.mjs', import.meta.url), [String(cores / count)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(burners.map((b) => new Promise((resolve) => b.once('spawn', resolve))));
}
function stopBurners() {
  for (const b of burners) b.kill('SIGTERM');
  burners = [];
}
/** How a size's column names its worker count in labels (nothing when only one count is measured). */
const atWorkers = (w) => (SIDE_BY_SIDE ? `, ${w} worker${w > 1 ? 's' : ''}` : '');
async function stopChild() {
  if (child) await child.handle.stop();
  child = undefined;
}
/** How a child ended, in words. */
function death(exit) {
  if (!exit) return undefined;
  if (exit.oom) return 'out of memory (V8 heap limit reached)';
  return `exited (${exit.signal ?? `code ${exit.code}`})`;
}
/** The child's memory after a forced GC, in MiB, and V8's heap limit. */
async function memoryAfterGc() {
  await sleep(SETTLE_SECONDS * 1000);
  const m = await child.handle.ask('gc');
  if (!m) throw new Error('the server child ended before answering');
  return {
    rss: mib(m.memory.rss),
    heapUsed: mib(m.heap.used_heap_size),
    heapTotal: mib(m.heap.total_heap_size),
    heapLimit: mib(m.heap.heap_size_limit),
    external: mib(m.memory.external),
    arrayBuffers: mib(m.memory.arrayBuffers),
    // Summed over processes, RSS counts the pages they share (Node's code) once per process; PSS splits them.
    pss: m.pss === undefined ? NaN : mib(m.pss),
    perProcess: m.perProcess?.map((p) => ({ pid: p.pid, rss: mib(p.rss), heapUsed: mib(p.heapUsed) })),
  };
}

// ---------- growth and the create row ----------

const created = new Uint8Array(Math.max(...SIZES));
let count = 0;

/**
 * Creates, through the server, every object below `n` not yet created, with CONCURRENCY POSTs at a time, until
 * `until` (ms, performance.now()) or until all exist. An object that exists already (409, created before a server
 * died) counts as created. The number created in this call.
 */
async function createThroughServer(n, until, agent) {
  let cursor = 0;
  const taken = new Uint8Array(n);
  let done = 0;
  let lastProgress = now();
  const { handle } = child;
  let failed = false; // one worker gave up: the others stop too
  const take = () => {
    if (failed) return -1;
    while (cursor < n && (created[cursor] || taken[cursor])) cursor++;
    if (cursor >= n) return -1;
    taken[cursor] = 1;
    return cursor;
  };
  const worker = async () => {
    while (now() < until) {
      const i = take();
      if (i < 0) return;
      let res;
      try {
        res = await retryOnReset(() => httpsRequest('POST', NS_PATH, { agent, body: JSON.stringify(sharedSecret(i)) }));
      } catch (err) {
        // A dead server: stop here (the caller restarts it); anything else is tried again unless nothing has
        // been created for a while.
        await Promise.race([handle.exited, sleep(1000)]);
        if (handle.exit) throw new Error(`server ${death(handle.exit)} while creating`, { cause: err });
        if (now() - lastProgress > STALL_SECONDS * 1000) throw err;
        taken[i] = 0;
        cursor = Math.min(cursor, i);
        continue;
      }
      if (res.status === 201 || res.status === 409) {
        if (!created[i]) count++;
        created[i] = 1;
        done++;
        lastProgress = now();
      } else {
        // A server near its heap limit answers 500 ServerTimeout (the object may exist then: 409 next time).
        if (now() - lastProgress > STALL_SECONDS * 1000)
          throw new Error(
            `nothing created for ${STALL_SECONDS} s; ${name(i)}: HTTP ${res.status}: ${res.body.toString()}`,
          );
        taken[i] = 0;
        cursor = Math.min(cursor, i);
      }
    }
  };
  // Every worker has ended before this returns, so none still writes when the caller restarts a server.
  const settled = await Promise.allSettled(
    Array.from({ length: CONCURRENCY }, () =>
      worker().catch((err) => {
        failed = true;
        throw err;
      }),
    ),
  );
  const rejected = settled.find((x) => x.status === 'rejected');
  if (rejected) throw rejected.reason;
  return done;
}

let rawTemplate;
let rawNext = 0;
/** Raw etcd3 create transactions (put if the key's createRevision is 0), CONCURRENCY at a time, for `seconds`. */
async function createRaw(etcd, seconds) {
  const until = now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (now() < until) {
        const k = rawNext++;
        // The value a server-stored object has, with its own name, uid and secret data, encoded per create.
        const obj = structuredClone(rawTemplate);
        obj.metadata.name = `raw-${k}`;
        obj.metadata.uid = randomUUID();
        for (const key of Object.keys(obj.spec.data))
          obj.spec.data[key] = randomBytes(obj.spec.data[key].length * 0.75).toString('base64');
        const key = `${RAW_PREFIX}${obj.metadata.name}`;
        const res = await etcd
          .if(key, 'Create', '==', 0)
          .then(etcd.put(key).value(JSON.stringify(obj)))
          .commit();
        if (!res.succeeded) throw new Error(`raw create ${key} found the key`);
        done++;
      }
    }),
  );
  return done;
}

/**
 * Grows the data to n objects through the server. The first CREATE_SECONDS of server time per protocol are cut
 * into slices of CREATE_SLICE seconds, the protocols' in turn, each followed by a raw etcd3 slice as long as it
 * took, so that outside load hits both alike; the rest of the growth (over HTTP/1.1) is not compared.
 */
async function grow(etcd, n, r, { finish = true, upTo = n } = {}) {
  const at = `N=${fmtN(n)}${atWorkers(r.workers)}`;
  const growing = `grow to ${fmtN(n)}${atWorkers(r.workers)} (not compared)`;
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const comparing = ONLY.has('create') && count < upTo;
  const clients = {};
  r.create ??= {};
  const c = r.create;
  for (const p of PROTOCOLS)
    c[p] ??= {
      server: { creates: 0, seconds: 0, cpuLabel: `create ${at}: server POST${over(p)}` },
      raw: {
        creates: 0,
        seconds: 0,
        cpuLabel: `create ${at}: raw etcd3 txn${PROTOCOLS.length > 1 ? ` (beside ${protocolName(p)})` : ''}`,
      },
    };
  const left = (p) => ONLY.has('create') && c[p].server.seconds < CREATE_SECONDS;
  const template = async () => {
    if (rawTemplate) return;
    const stored = (await etcd.get(KEY_PREFIX + name(created.indexOf(1))).exec()).kvs[0].value;
    rawTemplate = JSON.parse(stored.toString());
    c.rawValueBytes = JSON.stringify(rawTemplate).length;
  };
  try {
    if (comparing) {
      // A second of each first, not compared: it opens the connections and lets both sides' code get compiled.
      for (const p of PROTOCOLS) {
        clients[p] = p === 'h1' ? agent : await clientFor(p, CONCURRENCY);
        await withCpu(`${growing}${over(p)}`, () => createThroughServer(upTo, now() + 1000, clients[p]));
      }
      await template();
      await withCpu(`create ${at}: raw etcd3 warm-up (not compared)`, () => createRaw(etcd, 1));
    }
    // Not `finish`: only the compared slices, up to object `upTo` (another worker count's server grows the rest).
    while (count < upTo && (finish || PROTOCOLS.some(left))) {
      if (!PROTOCOLS.some(left)) {
        await withCpu(growing, () => createThroughServer(upTo, Infinity, agent));
        continue;
      }
      for (const p of PROTOCOLS.filter(left)) {
        if (count >= upTo) break;
        const t0 = now();
        const done = await withCpu(c[p].server.cpuLabel, () =>
          createThroughServer(upTo, t0 + CREATE_SLICE * 1000, clients[p]),
        );
        const seconds = (now() - t0) / 1000;
        c[p].server.creates += done;
        c[p].server.seconds += seconds;
        await template();
        const rawDone = await withCpu(c[p].raw.cpuLabel, () => createRaw(etcd, seconds));
        c[p].raw.creates += rawDone;
        c[p].raw.seconds += seconds;
        log(
          `  ${count} objects; slice${over(p)}: server ${(done / seconds).toFixed(0)}/s, raw ${(rawDone / seconds).toFixed(0)}/s`,
        );
      }
    }
  } finally {
    agent.destroy();
    for (const client of Object.values(clients)) client.destroy();
    await etcd.delete().prefix(RAW_PREFIX);
  }
}

// ---------- start time ----------

/** A new server child on the same etcd: time from spawn to /readyz 200 and to a consistent list from its cache. */
async function measureStart(n) {
  const { heapMb, workers } = child;
  await stopChild();
  const expected = Array.from({ length: n }, (_, i) => i).filter((i) => created[i] && i % 100 === 0).length;
  const handle = await startChild(heapMb, workers);
  const t0 = child.spawnedAt;
  const deadline = t0 + START_TIMEOUT * 1000;
  const result = {};
  handle.ready.then(
    () => (result.childReady = (now() - t0) / 1000),
    () => {},
  );
  // The port, certificate and token are those of the last server (same serverConfig), so the client can poll
  // before the child says it serves.
  const poll = async (path, ok) => {
    let last = 'no answer';
    for (;;) {
      if (handle.exit) throw new Error(`server ${death(handle.exit)} while starting`);
      if (now() > deadline) throw new Error(`${path} not answered as expected within ${START_TIMEOUT} s: ${last}`);
      try {
        const res = await httpsRequest('GET', path, { agent: false });
        last = ok(res);
        if (last === true) return (now() - t0) / 1000;
      } catch (err) {
        last = err.message; // not listening yet
      }
      await sleep(20);
    }
  };
  const answer = (res) => `HTTP ${res.status}: ${res.body.toString().slice(0, 300)}`;
  result.readyz = await poll('/readyz', (res) => res.status === 200 || answer(res));
  // At least: a create answered 500 (server near its heap limit) may have been stored all the same.
  result.list = await poll(`${NS_PATH}?labelSelector=app%3Dapp-0`, (res) => {
    if (res.status !== 200) return answer(res);
    const got = JSON.parse(res.body.toString()).items.length;
    return got >= expected || `the list had ${got} of at least ${expected} objects`;
  });
  await serving(handle);
  return result;
}

// ---------- one size ----------

/**
 * Runs `fn` as phase `what` of column result `r`; a server that died is recorded and started again without limit. A
 * worker that died (the primary starts another) is recorded too; one that ran out of memory has the whole server
 * started again without limit, as one process would.
 */
async function phase(r, what, fn) {
  let error;
  const workerExitsBefore = child?.handle.workerExits?.length ?? 0;
  try {
    await fn();
  } catch (err) {
    // A server that does not speak h2 is no row to record: the run stops.
    if (err instanceof NotH2) throw err;
    error = err;
  }
  const workerExits = child?.handle.workerExits?.slice(workerExitsBefore) ?? [];
  for (const e of workerExits)
    r.deaths.push({
      phase: what,
      how: `worker ${e.worker} ${death(e)} (the primary started another)`,
      objects: count,
      heapMb: child.heapMb,
    });
  const workerOom = workerExits.some((e) => e.oom);
  if (child?.handle.exit || (!child && error) || workerOom) {
    const workers = child?.workers ?? r.workers;
    const how = death(child?.handle.exit) ?? (workerOom ? 'a worker ran out of memory' : error.message);
    if (!workerOom) r.deaths.push({ phase: what, how, objects: count, heapMb: child?.heapMb });
    if ((child?.handle.exit?.oom || workerOom) && child.heapMb) oomLimits.push(child.heapMb);
    log(`  server ${how} during ${what} with ${count} objects; starting one without a heap limit`);
    await stopChild();
    await serving(await startChild(0, workers));
    return false;
  }
  if (error) {
    r.errors.push(`${what}: ${error.message}`);
    log(`  ${what} failed: ${error.stack}`);
    return false;
  }
  return true;
}

/** A column of the report: the figures of size `n` (the k-th) with `workers` workers. */
function column(n, k, workers) {
  const r = { n, workers, heapMb: heapFor(k), deaths: [], errors: [], loadavg: loadavg() };
  // A limit that a smaller size already ran out of would run out again: not tried twice.
  const outgrown = oomLimits.find((mb) => mb >= r.heapMb);
  if (r.heapMb && outgrown) {
    r.errors.push(`not run with --max-old-space-size=${r.heapMb}: a smaller size ran out of ${outgrown} MiB`);
    r.deaths.push({
      phase: 'an earlier size',
      how: `out of memory with ${outgrown} MiB`,
      objects: count,
      heapMb: outgrown,
    });
    r.heapMb = 0;
  }
  return r;
}

/** The server with `r`'s heap limit and worker count: the one running, or a new one. */
async function ensureServer(r) {
  if (child && child.heapMb === r.heapMb && child.workers === r.workers) return;
  log(`server with --max-old-space-size=${r.heapMb || 'default'}${SIDE_BY_SIDE ? `, ${r.workers} worker(s)` : ''}`);
  await stopChild();
  await phase(r, 'start with a new heap limit', async () => serving(await startChild(r.heapMb, r.workers)));
}

/**
 * Every row of size `n` once per worker count; the columns, one per count. The compared creates of every other
 * count come first, then those of the first count, whose server grows the rest of the way: the first count's rows
 * are measured as with one count alone, right after the growth. Each count's other rows follow in turn.
 */
async function measureSize(etcd, n, k) {
  const cols = WORKERS.map((w) => column(n, k, w));
  const order = [...cols.slice(1), cols[0]];
  for (const [j, r] of order.entries()) {
    const finish = r === cols[0];
    // Each count before the first has at most its share of what is left, so that every count has objects to create.
    const upTo = finish ? n : count + Math.floor((n - count) / (order.length - j));
    if (!finish && !(ONLY.has('create') && count < upTo)) continue;
    await ensureServer(r);
    log(
      `growing to ${fmtN(n)} SharedSecrets through the server (${CONCURRENCY} concurrent POSTs)${finish ? '' : `: the compared creates of ${r.workers} workers`}`,
    );
    if (!(await phase(r, 'growth', () => grow(etcd, n, r, { finish, upTo }))) && count < n && finish)
      await phase(r, 'growth', () => grow(etcd, n, r));
  }
  // The newest objects: the watch rows' patches have changed older ones.
  const sample = await etcd.kv.range({
    key: Buffer.from(KEY_PREFIX + name(Math.max(0, count - 1000))),
    range_end: prefixEnd(KEY_PREFIX),
    limit: 1000,
  });
  const values = sample.kvs.map((kv) => kv.value);
  const storedBytes = values.reduce((a, v) => a + v.length, 0) / values.length;
  for (const r of cols) {
    r.storedBytes = storedBytes;
    if (r !== cols[0]) {
      r.loadavg = loadavg();
      log(`--- ${fmtN(n)} objects, ${r.workers} worker(s) ---`);
      await ensureServer(r);
    }
    await measureRows(etcd, n, r, { afterGrowth: r === cols[0] });
  }
  return cols;
}

/** The memory, GET, watch and start rows of column `r` (memory after growth only on the server that grew). */
async function measureRows(etcd, n, r, { afterGrowth }) {
  const at = `N=${fmtN(n)}${atWorkers(r.workers)}`;
  if (ONLY.has('memory') && afterGrowth) {
    await phase(r, 'memory', async () => {
      r.memory = await memoryAfterGc();
      r.memory.heapMbInForce = child.heapMb;
      log(`  RSS ${f1(r.memory.rss)} MiB, heap ${f1(r.memory.heapUsed)} of ${f1(r.memory.heapLimit)} MiB after GC`);
    });
  }
  if (ONLY.has('get')) {
    log(`consistent GET: ${GET_SECONDS} s per row at concurrency ${CONCURRENCY}`);
    await phase(r, 'get', async () => {
      const random = () => {
        for (;;) {
          const i = Math.floor(Math.random() * n);
          if (created[i]) return i;
        }
      };
      const serverGet = (agent) => async () => {
        const res = await retryOnReset(() => httpsRequest('GET', `${NS_PATH}/${name(random())}`, { agent }));
        if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
        JSON.parse(res.body.toString('utf8'));
      };
      // One target per protocol, then raw etcd3: their slices in turn, the raw baseline shared.
      const targets = {};
      const agents = {};
      for (const p of PROTOCOLS) {
        const label = `server GET${over(p)} (consistent, no resourceVersion)`;
        targets[label] = serverGet;
        if (p !== 'h1') agents[label] = await clientFor(p, CONCURRENCY);
      }
      targets['raw etcd3 get(key) + JSON.parse'] = () => async () => {
        const res = await etcd.get(KEY_PREFIX + name(random())).exec();
        if (res.kvs.length !== 1) throw new Error('missing key');
        JSON.parse(res.kvs[0].value.toString('utf8'));
      };
      const rows = await interleavedClosedLoops(CONCURRENCY, targets, {
        seconds: GET_SECONDS,
        slices: GET_SLICES,
        cpuLabel: (label) => `GET ${at}: ${label}`,
        agents,
      });
      r.get = { raw: rows.at(-1), ...Object.fromEntries(PROTOCOLS.map((p, k) => [p, rows[k]])) };
    });
  }
  if (ONLY.has('watch')) {
    r.watch = [];
    for (const rate of WRITE_RATES)
      for (const p of PROTOCOLS) {
        const how = p === 'h2' ? `${h2Sessions(WATCHERS)} HTTP/2 sessions` : `${WATCHERS} connections`;
        log(`watch${over(p)}: ${WATCHERS} watchers on ${how}, ${rate} writes/s for ${WATCH_SECONDS} s`);
        await phase(r, `watch at ${rate}/s${over(p)}`, async () => {
          // Patches go to objects 0..n-1; after a server died some may be missing, so only created ones.
          const targets = count === n ? n : created.indexOf(0);
          r.watch.push(
            await watchFanOut({
              n: targets,
              watchers: WATCHERS,
              rate,
              seconds: WATCH_SECONDS,
              cpuLabel: `${at}${over(p)} `,
              protocol: p,
            }),
          );
        });
      }
  }
  if (ONLY.has('start')) {
    log(`start: a new server${atWorkers(r.workers)} on ${fmtN(count)} objects`);
    await phase(r, 'start', async () => {
      r.start = await measureStart(n);
      log(`  /readyz after ${f2(r.start.readyz)} s, first list after ${f2(r.start.list)} s`);
      if (ONLY.has('memory')) {
        r.memoryAfterStart = await memoryAfterGc();
        log(`  fresh server: RSS ${f1(r.memoryAfterStart.rss)} MiB, heap ${f1(r.memoryAfterStart.heapUsed)} MiB`);
      }
    });
  }
  r.objects = count;
  r.survived = !r.deaths.length;
  return r;
}

// ---------- main ----------

async function main() {
  const info = machine();
  log('machine', info);
  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-scale-'));
  const started = await startEtcd(tmp);
  const { etcdProc } = started;
  etcdPid = etcdProc.pid;
  serverConfig = { ...started.serverConfig, securePort: await freePort() };
  log(`etcd ${info.etcd} (pid ${etcdProc.pid}) on ${ctx.etcdEndpoint}`);
  const etcd = new Etcd3({ hosts: ctx.etcdEndpoint, grpcOptions: { 'grpc.max_receive_message_length': -1 } });
  const results = { machine: info, workers: WORKERS, burnCores: BURN_CORES, sizes: [], idle: {}, idleAfterGc: {} };
  // Killed (kill <pid>, timeout): the report of the sizes done so far; etcd and its data go too (the server child
  // exits when this process goes).
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.once(signal, () => {
      log(`${signal}: stopping etcd and removing ${tmp}`);
      if (results.sizes.length) {
        results.machine.loadavgAtEnd = loadavg();
        console.log(
          `${report(results)}\n\nInterrupted by ${signal} before the sizes after ${fmtN(results.sizes.at(-1).n)}.`,
        );
      }
      stopBurners();
      etcdProc.stop().finally(() => {
        rmSync(tmp, { recursive: true, force: true });
        process.exit(130);
      });
    });
  try {
    if (BURN_CORES) {
      log(`outside load: ${BURN_CORES} of a core busy from now on (bench/burn.mjs)`);
      await startBurners(BURN_CORES);
    }
    for (const w of WORKERS) {
      log(`idle: a server${atWorkers(w)} on empty etcd, ${IDLE_SECONDS} s to settle`);
      await stopChild();
      await serving(await startChild(heapFor(0), w));
      await sleep(IDLE_SECONDS * 1000);
      const stats = await child.handle.ask('stats');
      results.idle[w] = { rss: mib(stats.memory.rss), heapUsed: mib(stats.memory.heapUsed), heapMb: child.heapMb };
      results.idleAfterGc[w] = await memoryAfterGc();
      log(`  RSS ${f1(results.idle[w].rss)} MiB; after GC ${f1(results.idleAfterGc[w].rss)} MiB`);
    }
    for (const [k, n] of SIZES.entries()) {
      log(`=== ${fmtN(n)} objects ===`);
      results.sizes.push(...(await measureSize(etcd, n, k)));
    }
  } finally {
    etcd.close();
    stopBurners();
    await stopChild();
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  results.machine.loadavgAtEnd = loadavg();
  console.log(report(results));
  if (process.env.BENCH_JSON)
    (await import('node:fs')).writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
}

// ---------- report ----------

/** A protocol's watchers, in words. */
const watchConnections = (p) =>
  p === 'h2' ? `${h2Sessions(WATCHERS)} HTTP/2 connection(s) of up to 100 streams` : `${WATCHERS} connections`;
/** Column `r`'s watch result at `rate` over `p`. */
const watchOf = (r, rate, p) => r.watch?.find((w) => w.rate === rate && w.protocol === p);
/** The server's CPU µs per request of the CPU table's row `label`, `requests` completed in it (formatted). */
function perRequest(label, requests, proc = 'server') {
  const seconds = label && cpuSecondsOf(label)?.[proc];
  if (!(seconds >= 0) || !requests) return '–';
  return fmtN(Math.round((seconds * 1e6) / requests));
}

/**
 * The CPU per request of every compared row, per process: CPU seconds during the row's slices (the CPU table's
 * rows of the same label) over the requests completed in them; the watch rows per delivered event × watcher.
 */
function cpuPerRequestLines(S) {
  const procs = ['server', 'etcd', 'bench client'];
  const out = [
    '#### CPU per request (µs: CPU seconds of the process during the row / requests completed in it)',
    '',
    `| Row | completed | ${procs.join(' µs | ')} µs |`,
    `|---|---|${procs.map(() => '---|').join('')}`,
  ];
  const line = (what, label, requests) =>
    label &&
    requests &&
    out.push(`| ${what} | ${fmtN(requests)} | ${procs.map((p) => perRequest(label, requests, p)).join(' | ')} |`);
  for (const r of S) {
    const at = `${fmtN(r.n)}${atWorkers(r.workers)}`;
    for (const p of PROTOCOLS) {
      const c = r.create?.[p];
      line(`${at}: create${over(p)}`, c?.server.cpuLabel, c?.server.creates);
      line(`${at}: raw etcd3 txn${over(p) && ` (beside ${protocolName(p)})`}`, c?.raw.cpuLabel, c?.raw.creates);
    }
    for (const p of PROTOCOLS) line(`${at}: consistent GET${over(p)}`, r.get?.[p]?.cpuLabel, r.get?.[p]?.requests);
    line(`${at}: raw etcd3 get`, r.get?.raw.cpuLabel, r.get?.raw.requests);
    for (const w of r.watch ?? [])
      line(
        `${at}: watch${over(w.protocol)} at ${w.rate}/s, per delivered event × watcher (${fmtN(w.watchers)} on ${watchConnections(w.protocol)})`,
        w.cpuLabel,
        w.delivered,
      );
  }
  out.push(
    '',
    "The watch rows' CPU is that of the write phase (the patches, their events to every watcher, the wait for the last delivery); " +
      'in the raw etcd3 rows the etcd column is the baseline, and the server column is what the server did meanwhile (it is not idle during raw creates: see the CPU table).',
    '',
  );
  return out;
}

function report(res) {
  const m = res.machine;
  const many = WORKERS.filter((w) => w > 1);
  const how = [
    WORKERS.includes(1) &&
      `${many.length ? 'With 1 worker, the server runs' : 'Server'} in a child process started with --expose-gc`,
    many.length &&
      `${WORKERS.includes(1) ? 'with' : 'With'} ${many.join(' or ')} workers, as \`dist/main.js --workers N\`: the primary and each worker started with --expose-gc, CPU and memory summed over all of them`,
  ];
  const out = headerLines(
    m,
    m.loadavgAtEnd,
    `${how.filter(Boolean).join('; ')}.` +
      (BURN_CORES
        ? ` **Outside load: ${BURN_CORES} of a core** kept busy throughout by bench/burn.mjs (the "burner" column of the CPU table).`
        : ''),
  );
  out.push(
    `Options: sizes ${SIZES.map(fmtN).join(', ')}; heap limits ${SIZES.map((_, k) => `${heapFor(k) || 'default'}`).join(', ')} MiB${many.length ? ' (per process)' : ''}; ` +
      `${WORKERS.join(' and ')} worker${WORKERS.length > 1 || WORKERS[0] > 1 ? 's' : ''}; ` +
      `${CONCURRENCY} concurrent creates and GETs; create comparison over the first ${CREATE_SECONDS} s of growth per size in ${CREATE_SLICE} s slices; ` +
      `GET ${GET_SECONDS} s per row in ${GET_SLICES} slices; ${WATCHERS} watchers at ${WRITE_RATES.join(' then ')} writes/s for ${WATCH_SECONDS} s each; ` +
      `${PROTOCOLS.map((p) => `${protocolName(p)} (${p === 'h2' ? `creates and GETs on ${h2Sessions(CONCURRENCY)} session(s) of up to 100 streams, watchers on ${h2Sessions(WATCHERS)} session(s) of up to 100, writes on 1 session of up to 32` : `creates and GETs on up to ${CONCURRENCY} keep-alive connections, each watcher a connection, writes on up to 32`})`).join(' and ')}.`,
    '',
  );
  for (const w of WORKERS) {
    const idle = res.idle[w];
    const idleGc = res.idleAfterGc[w];
    if (idle)
      out.push(
        `**RSS idle${atWorkers(w)}** (server on empty etcd, ${IDLE_SECONDS} s after it served, --max-old-space-size=${idle.heapMb || 'default'}): ` +
          `**${f1(idle.rss)} MiB** (heap used ${f1(idle.heapUsed)} MiB); after a forced GC ${f1(idleGc.rss)} MiB${Number.isFinite(idleGc.pss) ? ` (PSS ${f1(idleGc.pss)})` : ''}, heap used ${f1(idleGc.heapUsed)} MiB` +
          (idleGc.perProcess
            ? `; per process (the primary first), RSS / heap used: ${idleGc.perProcess.map((p) => `${f1(p.rss)} / ${f1(p.heapUsed)}`).join(', ')}`
            : '') +
          '.',
        '',
      );
  }
  const S = res.sizes;
  const row = (label, cell, goal = '') =>
    out.push(
      `| ${label} | ${S.map((r) => {
        try {
          return cell(r) ?? '–';
        } catch {
          return '–';
        }
      }).join(' | ')} | ${goal} |`,
    );
  out.push(
    `| Figure | ${S.map((r) => `${fmtN(r.n)} objects${atWorkers(r.workers)}${r.objects < r.n ? ` (only ${fmtN(r.objects)} created)` : ''}`).join(' | ')} | Goal |`,
    `|---|${S.map(() => '---|').join('')}---|`,
  );
  row('Load average (1, 5, 15 min) as the size began', (r) => r.loadavg);
  row('Mean object size in etcd (bytes, newest 1,000 objects)', (r) => r.storedBytes.toFixed(0));
  row(
    'Heap limit (--max-old-space-size); survived?',
    (r) =>
      `${r.heapMb ? `${r.heapMb} MiB` : "none (Node's default)"}; ${r.survived ? '**yes**' : `**no**: ${r.deaths.map((d) => `${d.how} during ${d.phase} at ${fmtN(d.objects)} objects (limit ${d.heapMb ? `${d.heapMb} MiB` : 'none'})`).join('; ')}`}`,
    '50,000 in 256 MiB, 100,000 in 512 MiB',
  );
  const memCell = (mm) =>
    mm &&
    `RSS **${f1(mm.rss)}**${Number.isFinite(mm.pss) ? ` (PSS ${f1(mm.pss)})` : ''}, heap ${f1(mm.heapUsed)} / ${f1(mm.heapLimit)}${mm.heapMbInForce === 0 ? ' (no limit: after OOM)' : ''}`;
  row('MiB after growth + forced GC: RSS, V8 heap used / limit', (r) => memCell(r.memory), 'RSS < 400 MiB at 50,000');
  row('MiB in a freshly started server + forced GC', (r) => memCell(r.memoryAfterStart));
  if (Object.keys(res.idleAfterGc).length)
    row('Per 10,000 objects above idle (after GC; fresh server, else after growth): RSS / heap MiB', (r) => {
      const idleGc = res.idleAfterGc[r.workers];
      const mm = r.memoryAfterStart ?? r.memory;
      return `${f1(((mm.rss - idleGc.rss) / r.objects) * 1e4)} / ${f1(((mm.heapUsed - idleGc.heapUsed) / r.objects) * 1e4)}`;
    });
  for (const p of PROTOCOLS)
    row(
      `Create${over(p)}, ${CONCURRENCY} concurrent: server / raw etcd3 txn creates/s (ratio)`,
      (r) => {
        const c = r.create?.[p];
        if (!c?.server.seconds) return undefined;
        const s = c.server.creates / c.server.seconds;
        const w = c.raw.creates / c.raw.seconds;
        return `${s.toFixed(0)} / ${w.toFixed(0)} (**${f2(s / w)}x**)`;
      },
      '>= 0.5x',
    );
  for (const p of PROTOCOLS)
    row(
      `Consistent GET${over(p)}, ${CONCURRENCY} concurrent: server / raw etcd3 req/s (ratio); p99 ms`,
      (r) => {
        const s = r.get[p];
        const w = r.get.raw;
        return `${s.rps.toFixed(0)} / ${w.rps.toFixed(0)} (**${f2(s.rps / w.rps)}x**); ${f1(s.p99)} / ${f1(w.p99)}${s.errors + w.errors ? `; ${s.errors + w.errors} errors` : ''}`;
      },
      '>= 1.5x',
    );
  for (const rate of WRITE_RATES)
    for (const p of PROTOCOLS)
      row(
        `Watch${over(p)}, ${WATCHERS} watchers${over(p) ? ` on ${watchConnections(p)}` : ''}, ${rate} patches/s offered: achieved/s; deliveries missing; p99 ack → received ms`,
        (r) => {
          const w = watchOf(r, rate, p);
          if (!w) return undefined;
          return `${f1(w.writes / w.writeSeconds)}; ${w.expected - w.delivered}${w.writeErrors ? ` (+${w.writeErrors} failed writes)` : ''}; **${f1(w.fromAck.p99)}**`;
        },
        `${rate}/s, 0 missing, p99 < 100 ms`,
      );
  for (const p of PROTOCOLS)
    row(
      `Server CPU µs${over(p)}: ${[
        ONLY.has('create') && 'per create',
        ONLY.has('get') && 'per consistent GET',
        ONLY.has('watch') && `per delivered event (event × watcher) at ${WRITE_RATES.join(', ')}/s`,
      ]
        .filter(Boolean)
        .join('; ')}`,
      (r) => {
        const cells = [
          ONLY.has('create') && perRequest(r.create?.[p]?.server.cpuLabel, r.create?.[p]?.server.creates),
          ONLY.has('get') && perRequest(r.get?.[p]?.cpuLabel, r.get?.[p]?.requests),
          ONLY.has('watch') &&
            WRITE_RATES.map((rate) => {
              const w = watchOf(r, rate, p);
              return perRequest(w?.cpuLabel, w?.delivered);
            }).join(', '),
        ];
        return cells
          .filter((x) => x !== false)
          .map((x) => `**${x}**`)
          .join('; ');
      },
      "each half of today's",
    );
  row(
    'Start: spawn → /readyz 200; → first consistent list (s)',
    (r) => `${f2(r.start.readyz)}; **${f2(r.start.list)}**`,
    '< 10 s at 100,000',
  );
  out.push('');
  const notes = S.flatMap((r) => r.errors.map((e) => `- ${fmtN(r.n)}: ${e}`));
  if (notes.length) out.push('Errors:', '', ...notes, '');
  out.push(
    "Create rows: the server's creates are the growth to the size itself (from the previous size), in slices each followed by a raw slice as long; " +
      `raw values are a server-stored object re-encoded with a new name, uid and secret data (${S.find((r) => r.create?.rawValueBytes)?.create.rawValueBytes ?? '?'} bytes).`,
    '',
  );
  if (SIDE_BY_SIDE)
    out.push(
      `Columns of one size share its data. The first worker count's server grew the data (its create row is the growth's first ${CREATE_SECONDS} s; ` +
        '"after growth" is measured on it alone); each other count\'s create row is its own slices just before, on a server of its own.',
      '',
    );
  out.push('Watch details (each event × watcher, ms):', '');
  out.push(
    '| Size | offered/s | achieved/s | delivered / expected | ack → received p50 / p99 / max | sent → received p50 / p99 | PATCH p50 / p99 |',
    '|---|---|---|---|---|---|---|',
  );
  for (const r of S)
    for (const w of r.watch ?? [])
      out.push(
        `| ${fmtN(r.n)}${atWorkers(r.workers)}${over(w.protocol)} | ${w.rate} | ${f1(w.writes / w.writeSeconds)} | ${w.delivered} / ${w.expected} | ${f1(w.fromAck.p50)} / ${f1(w.fromAck.p99)} / ${f1(w.fromAck.max)} | ${f1(w.fromSend.p50)} / ${f1(w.fromSend.p99)} | ${f1(w.ackLatency.p50)} / ${f1(w.ackLatency.p99)} |`,
      );
  out.push('');
  out.push(...cpuPerRequestLines(S));
  out.push(...cpuLines(m.cores));
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
