// What the benchmarks share (bench/list-get-watch.mjs, bench/scale.mjs): the data, the HTTPS client, the server
// child, CPU accounting, closed-loop and watch fan-out measurements, and the report's common parts.
//
// The scripts are single runs, so the state they share is one mutable object, `ctx`: the server being measured
// ({ url, caPem, token, pid }), the server child, the pids whose CPU is counted, etcd's endpoint, the CPU table.
import { execFileSync, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

export const GROUP = 'management.platform.sh';
export const NS = 'bench';
export const ETCD_PREFIX = '/registry';
export const NS_PATH = `/apis/${GROUP}/v1/namespaces/${NS}/sharedsecrets`;
export const KEY_PREFIX = `${ETCD_PREFIX}/${GROUP}/sharedsecrets/${NS}/`;
export const name = (i) => `secret-${String(i).padStart(6, '0')}`;

/** The compiled server: BENCH_DIST (bench/run.sh builds a private copy in bench/.build/dist) or the repo's dist/. */
export const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);

export const now = () => performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

/** What a run shares; see the top of this file. */
export const ctx = { server: undefined, child: undefined, pids: {}, profileDir: undefined, etcdEndpoint: undefined };
export const cpuTable = [];

// ---------- statistics and CPU accounting ----------

export function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
export function summary(values) {
  const s = Float64Array.from(values).sort();
  return { n: s.length, p50: pct(s, 50), p95: pct(s, 95), p99: pct(s, 99), max: s.at(-1) ?? NaN, min: s[0] ?? NaN };
}
export const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : String(x));
export const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : String(x));
export const mib = (bytes) => bytes / 2 ** 20;

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
/** utime+stime of a process, in seconds (/proc/<pid>/stat fields 14 and 15). */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}
/**
 * CPU seconds of a process and all its children, live or gone: its own utime+stime, its reaped children's (cutime
 * and cstime, fields 16 and 17), and those of its live children (found by their parent pid in /proc/<pid>/stat).
 * A child that exits and is reaped between two readings moves from the second sum into the first.
 */
export function treeCpuSeconds(pid) {
  const fields = (p) => {
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  };
  let f;
  try {
    f = fields(pid);
  } catch {
    return NaN;
  }
  let ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  for (const child of childPids(pid)) {
    try {
      const c = fields(child);
      ticks += Number(c[11]) + Number(c[12]);
    } catch {
      // gone meanwhile: its time is in the parent's cutime once reaped
    }
  }
  return ticks / CLK_TCK;
}
/** The live children of `pid` (from the parent pid, field 4, of every /proc/<pid>/stat). */
export function childPids(pid) {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
/** CPU seconds of what ctx.pids names: a pid, or a process tree ({ cpuSeconds() }, the server's workers). */
const cpuOf = (p) => (typeof p === 'number' ? cpuSeconds(p) : p.cpuSeconds());
/** Busy (non-idle) CPU seconds of the whole machine, from /proc/stat. */
export function machineBusySeconds() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / CLK_TCK;
}
/** CPU used by each process during `fn`, as cores (CPU seconds / wall seconds), added to the CPU table. */
export async function withCpu(label, fn) {
  if (ctx.profileDir) await ctx.child.ask({ type: 'profile', action: 'start' });
  const before = Object.fromEntries(Object.entries(ctx.pids).map(([k, pid]) => [k, cpuOf(pid)]));
  const busyBefore = machineBusySeconds();
  const t0 = now();
  const result = await fn();
  const wall = (now() - t0) / 1000;
  const seconds = Object.fromEntries(Object.entries(ctx.pids).map(([k, pid]) => [k, cpuOf(pid) - before[k]]));
  const ours = Object.values(seconds).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  seconds['other processes'] = Math.max(0, machineBusySeconds() - busyBefore - ours);
  if (ctx.profileDir) {
    const file = join(
      ctx.profileDir,
      `${String(cpuTable.length).padStart(2, '0')}-${label.replace(/[^a-zA-Z0-9=]+/g, '-').replace(/-+$/, '')}.cpuprofile`,
    );
    await ctx.child.ask({ type: 'profile', action: 'stop', file });
    log(`  profile: ${file}`);
  }
  // Calls with the same label (interleaved slices of one measurement) add up into one row.
  const row = cpuTable.find((r) => r.label === label);
  if (row) {
    row.wall += wall;
    for (const k of Object.keys(seconds)) row.seconds[k] = (row.seconds[k] ?? 0) + seconds[k];
  } else {
    cpuTable.push({ label, wall, seconds });
  }
  return result;
}

// ---------- machine ----------

export const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

export function machine() {
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
    node: process.env.BENCH_SERVER_NODE
      ? `${process.version} (client), ${execFileSync(process.env.BENCH_SERVER_NODE, ['--version']).toString().trim()} (server)`
      : process.version,
    etcd: etcdVersion,
    loadavg: loadavg(),
  };
}

/** The report's opening lines: when, on what, which source, under what load. */
export function headerLines(m, loadavgAtEnd, extra = '') {
  return [
    `### Run of ${new Date().toISOString()}`,
    '',
    `Machine: ${m.cpu}, **${m.cores} cores**, ${m.memoryGiB} GiB RAM, Linux ${m.kernel}; Node ${m.node}${process.env.BENCH_SERVER_NODE_ARGS ? ` with ${process.env.BENCH_SERVER_NODE_ARGS} (server)` : ''}; etcd ${m.etcd} (--unsafe-no-fsync).`,
    `Server source: ${process.env.BENCH_SOURCE ?? `the repository's dist/ (${dist.pathname})`}.`,
    `Load average before / after: ${m.loadavg} / ${loadavgAtEnd}.${extra ? ` ${extra}` : ''}`,
    '',
  ];
}

/** The CPU seconds per process of the CPU table's row `label` (all its calls added up), or undefined. */
export const cpuSecondsOf = (label) => cpuTable.find((r) => r.label === label)?.seconds;

/** The CPU table of every phase measured with withCpu. */
export function cpuLines(cores) {
  const out = [
    `#### CPU per process during each phase (cores busy = CPU seconds / wall seconds; ${cores} cores in all)`,
    '',
  ];
  const procs = [...new Set(cpuTable.flatMap((c) => Object.keys(c.seconds)))];
  out.push(`| Phase | wall s | ${procs.join(' | ')} |`, `|---|---|${procs.map(() => '---').join('|')}|`);
  for (const c of cpuTable)
    out.push(`| ${c.label} | ${f1(c.wall)} | ${procs.map((p) => f2((c.seconds[p] ?? NaN) / c.wall)).join(' | ')} |`);
  out.push('');
  return out;
}

// ---------- etcd and the server ----------

/** One etcd (the project's startEmbeddedEtcd: temp data dir, no fsync) and the server's config to use it. */
export async function startEtcd(tmp) {
  const { startEmbeddedEtcd } = await import(new URL('storage/embedded-etcd.js', dist).href);
  const etcdProc = await startEmbeddedEtcd({ dataDir: join(tmp, 'etcd'), unsafeNoFsync: true });
  ctx.etcdEndpoint = etcdProc.endpoints[0];
  const serverConfig = {
    etcdServers: [ctx.etcdEndpoint],
    etcdPrefix: ETCD_PREFIX,
    dataDir: join(tmp, 'server'),
    certDir: join(tmp, 'server', 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    etcdCompactionIntervalMs: 0,
  };
  return { etcdProc, serverConfig };
}

/** A free TCP port on loopback (for a server whose address must be known before it says it is serving). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Forks bench/server-child.mjs with `execArgv` (e.g. --max-old-space-size) and those of BENCH_SERVER_NODE_ARGS, and
 * the server's command-line `flags` (under `serverConfig`'s settings). Resolves once the child has forked;
 * `ready` then resolves with { url, caPem, token, pid } once it serves (or rejects with a FlagRefused when the
 * server does not take `flags`), and `exited` with { code, signal, oom }
 * whenever it ends (`oom`: V8 said the heap ran out). Its stderr is passed on; `ask` sends a message and resolves
 * with the child's answer of the same type, or undefined if the child ends first.
 */
export function forkServerChild(serverConfig, { execArgv = [], flags = [] } = {}) {
  // BENCH_SERVER_NODE_ARGS: more Node/V8 flags for the server alone (e.g. --max-semi-space-size=16);
  // BENCH_SERVER_NODE: another Node.js for the server alone (to compare runtimes with the same client).
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const proc = fork(new URL('./server-child.mjs', import.meta.url), [], {
    execPath: process.env.BENCH_SERVER_NODE || process.execPath,
    env: {
      ...process.env,
      BENCH_SERVER_CONFIG: JSON.stringify(serverConfig),
      BENCH_SERVER_FLAGS: JSON.stringify(flags),
    },
    execArgv: [...execArgv, ...extra],
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  let stderrTail = '';
  proc.stderr.on('data', (chunk) => {
    process.stderr.write(chunk);
    stderrTail = (stderrTail + chunk.toString()).slice(-4096);
  });
  const waiters = [];
  const handle = {
    proc,
    pid: proc.pid,
    exit: undefined,
    exited: new Promise((resolve) =>
      proc.once('exit', (code, signal) => {
        handle.exit = { code, signal, oom: /heap out of memory|Reached heap limit/.test(stderrTail) };
        for (const w of waiters.splice(0)) w.resolve(undefined);
        resolve(handle.exit);
      }),
    ),
    ask(msg) {
      if (handle.exit) return Promise.resolve(undefined);
      const type = typeof msg === 'string' ? msg : msg.type;
      return new Promise((resolve) => {
        waiters.push({ type, resolve });
        proc.send(msg);
      });
    },
    /** Asks the child to close the server and exit; resolves when it has. */
    async stop() {
      if (!handle.exit) proc.send('stop');
      return handle.exited;
    },
  };
  handle.ready = new Promise((resolve, reject) => {
    proc.once('message', (msg) =>
      msg.type === 'flag-error' ? reject(new FlagRefused(flags, msg.message)) : resolve(msg),
    );
    handle.exited.then((e) => reject(new Error(`server child exited with ${e.code ?? e.signal} before serving`)));
  });
  handle.ready.then(
    () =>
      proc.on('message', (msg) => {
        const k = waiters.findIndex((w) => w.type === msg.type);
        if (k >= 0) waiters.splice(k, 1)[0].resolve(msg);
      }),
    () => {},
  );
  return handle;
}

/**
 * The server as `dist/main.js --workers N` runs it: the primary and N workers (node:cluster), on `serverConfig`'s
 * etcd, data dir and port (securePort must be a fixed port: main.js does not say which it picked). A handle as
 * forkServerChild's: `ready` resolves once the primary says every worker serves, with the url, the CA of the
 * self-signed certificate and the admin token it wrote into the data dir, and the primary's pid; `exited` when the
 * primary ends; `ask('stats' | 'gc')` answers as the server child does, summed over the primary and every worker
 * (bench/server-probe.mjs, loaded into each, answers per process); `stop` is SIGTERM to the primary (it drains its
 * workers). `cpuSeconds()` is the CPU of the primary and all its workers, including workers that died;
 * `workerExits` lists workers that ended while the primary did not (it starts others).
 */
export function spawnServerWorkers(serverConfig, { workers, execArgv = [] }) {
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const probeDir = mkdtempSync(join(os.tmpdir(), 'bench-probe-'));
  const flags = [
    `--workers=${workers}`,
    `--etcd-servers=${serverConfig.etcdServers.join(',')}`,
    `--etcd-prefix=${serverConfig.etcdPrefix}`,
    `--data-dir=${serverConfig.dataDir}`,
    `--cert-dir=${serverConfig.certDir}`,
    `--bind-address=${serverConfig.bindAddress}`,
    `--secure-port=${serverConfig.securePort}`,
    `--etcd-compaction-interval=${serverConfig.etcdCompactionIntervalMs ?? 0}ms`,
  ];
  const proc = spawn(
    process.env.BENCH_SERVER_NODE || process.execPath,
    [
      ...execArgv,
      ...extra,
      `--import=${new URL('./server-probe.mjs', import.meta.url).href}`,
      new URL('main.js', dist).pathname,
      ...flags,
    ],
    { env: { ...process.env, BENCH_PROBE_DIR: probeDir }, stdio: ['ignore', 'inherit', 'pipe'] },
  );
  // Its logs are JSON lines on stderr: passed on, and read for the primary's word that the workers serve.
  let stderrTail = '';
  let partial = '';
  let onServing;
  const serving = new Promise((resolve) => (onServing = resolve));
  const handle = {
    proc,
    pid: proc.pid,
    exit: undefined,
    workerExits: [],
    cpuSeconds: () => treeCpuSeconds(proc.pid),
  };
  proc.stderr.on('data', (chunk) => {
    process.stderr.write(chunk);
    const text = chunk.toString();
    stderrTail = (stderrTail + text).slice(-4096);
    const lines = (partial + text).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      if (entry.msg === 'workers serving') onServing(entry.url);
      if (entry.msg === 'worker exited; starting another')
        handle.workerExits.push({
          worker: entry.worker,
          code: entry.code,
          signal: entry.signal,
          oom: /heap out of memory|Reached heap limit/.test(stderrTail),
        });
    }
  });
  handle.exited = new Promise((resolve) =>
    proc.once('exit', (code, signal) => {
      handle.exit = { code, signal, oom: /heap out of memory|Reached heap limit/.test(stderrTail) };
      rmSync(probeDir, { recursive: true, force: true });
      resolve(handle.exit);
    }),
  );
  // A benchmark that ends without stopping it leaves no server behind (its workers drain when the primary goes).
  const leave = () => proc.kill('SIGTERM');
  process.once('exit', leave);
  handle.exited.then(() => process.off('exit', leave));
  handle.ready = Promise.race([
    serving.then((url) => ({
      url,
      caPem: readFileSync(join(serverConfig.certDir, 'ca.crt'), 'utf8'),
      token: readFileSync(join(serverConfig.dataDir, 'admin-token'), 'utf8').trim(),
      pid: proc.pid,
    })),
    handle.exited.then((e) => {
      throw new Error(`server primary exited with ${e.code ?? e.signal} before its workers served`);
    }),
  ]);
  handle.ask = async (msg) => {
    if (handle.exit || (msg !== 'stats' && msg !== 'gc')) return undefined;
    writeFileSync(join(probeDir, 'ask'), msg);
    const pids = [proc.pid, ...childPids(proc.pid)].filter((pid) => existsSync(join(probeDir, `${pid}.ready`)));
    const answers = [];
    for (const pid of pids) {
      const file = join(probeDir, `${pid}.json`);
      rmSync(file, { force: true });
      try {
        process.kill(pid, 'SIGUSR2');
      } catch {
        continue; // gone meanwhile
      }
      const deadline = now() + 60_000;
      while (!existsSync(file) && now() < deadline && !handle.exit) await sleep(10);
      if (!existsSync(file)) continue;
      answers.push(JSON.parse(readFileSync(file, 'utf8')));
      unlinkSync(file);
    }
    if (!answers.length) return undefined;
    const sum = (get) => answers.reduce((a, x) => a + get(x), 0);
    return {
      type: msg,
      processes: answers.length,
      pss: answers.every((a) => a.pss !== undefined) ? sum((a) => a.pss) : undefined,
      collected: answers.every((a) => a.collected),
      memory: Object.fromEntries(Object.keys(answers[0].memory).map((k) => [k, sum((a) => a.memory[k])])),
      heap: Object.fromEntries(Object.keys(answers[0].heap).map((k) => [k, sum((a) => a.heap[k])])),
      perProcess: answers.map((a) => ({ pid: a.pid, rss: a.memory.rss, pss: a.pss, heapUsed: a.heap.used_heap_size })),
    };
  };
  handle.stop = async () => {
    if (!handle.exit) proc.kill('SIGTERM');
    return handle.exited;
  };
  return handle;
}

/** The server refused its command-line flags (e.g. one this build does not have): `message` is its own words. */
export class FlagRefused extends Error {
  constructor(flags, message) {
    super(`the server refused its flags ${flags.join(' ')}: ${message}`);
    this.flags = flags;
    this.reason = message;
  }
}

// ---------- HTTPS client ----------

/**
 * `token`: whose request (default: the server's admin token). `agent`: an https.Agent (HTTP/1.1), or an Http2Pool
 * whose sessions carry the request as a stream.
 */
export function httpsRequest(method, path, { agent, body, contentType, token } = {}) {
  if (agent instanceof Http2Pool) return agent.request(method, path, { body, contentType, token });
  const { server } = ctx;
  const url = new URL(path, server.url);
  const headers = { Authorization: `Bearer ${token ?? server.token}` };
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
/**
 * Runs `fn` again once when it failed on a reused keep-alive socket the server had just closed, or on an HTTP/2
 * session that went away (GOAWAY, closed) before the stream was answered.
 */
export async function retryOnReset(fn, onRetry = () => {}) {
  try {
    return await fn();
  } catch (err) {
    if (!((err.reusedSocket && err.code === 'ECONNRESET') || err.sessionGone)) throw err;
    onRetry();
    return fn();
  }
}

/**
 * HTTP/2 client sessions to the server (ctx.server), as client-go holds them: `sessions` connections, each carrying
 * at most `maxStreams` concurrent streams (the server's own bound is 100, kube-apiserver's), the stream going to the
 * session with fewest open; past sessions × maxStreams a stream waits for one to close, as a request waits for a
 * socket of an https.Agent with maxSockets. `connect()` opens them all and fails unless the server negotiated h2 by
 * ALPN; a session that goes away (GOAWAY, closed) is opened again by the next stream. `destroy()` as an agent's.
 */
export class Http2Pool {
  constructor({ sessions, maxStreams = 100 }) {
    this.slots = Array.from({ length: sessions }, () => ({ session: undefined, opening: undefined, active: 0 }));
    this.maxStreams = maxStreams;
    this.waiting = [];
    this.destroyed = false;
  }
  /** Opens every session; rejects if one did not negotiate h2. */
  async connect() {
    await Promise.all(this.slots.map((slot) => this.#live(slot)));
    return this;
  }
  /** A request as httpsRequest makes it: { status, body }. */
  async request(method, path, { body, contentType, token } = {}) {
    const headers = { ':method': method, ':path': path, authorization: `Bearer ${token ?? ctx.server.token}` };
    if (body !== undefined) {
      headers['content-type'] = contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const stream = await this.stream(headers, { endStream: body === undefined });
    return new Promise((resolve, reject) => {
      let status;
      const chunks = [];
      stream.once('response', (h) => (status = h[':status']));
      stream.on('data', (c) => chunks.push(c));
      stream.once('end', () => resolve({ status, body: Buffer.concat(chunks) }));
      stream.once('error', (err) => {
        // A session that went away, or a stream refused before the server took it, never reached the handler.
        if (status === undefined && /GOAWAY|SESSION|REFUSED_STREAM|NGHTTP2_CANCEL/.test(`${err.code} ${err.message}`))
          err.sessionGone = true;
        reject(err);
      });
      if (body !== undefined) stream.end(body);
    });
  }
  /** A stream on the least busy session, its slot given back when it closes. */
  async stream(headers, options = {}) {
    const slot = await this.#acquire();
    let session;
    try {
      session = await this.#live(slot);
      const stream = session.request(headers, options);
      stream.once('close', () => this.#release(slot));
      return stream;
    } catch (err) {
      this.#release(slot);
      if (session) err.sessionGone = true; // the session closed between its check and the request
      throw err;
    }
  }
  /** The number of sessions open now. */
  get open() {
    return this.slots.filter((s) => s.session && !s.session.closed && !s.session.destroyed).length;
  }
  destroy() {
    this.destroyed = true;
    for (const slot of this.slots) slot.session?.destroy();
  }
  async #acquire() {
    for (;;) {
      if (this.destroyed) throw new Error('HTTP/2 pool destroyed');
      let best;
      for (const slot of this.slots)
        if (slot.active < this.maxStreams && !(best && best.active <= slot.active)) best = slot;
      if (best) {
        best.active++;
        return best;
      }
      await new Promise((resolve) => this.waiting.push(resolve));
    }
  }
  #release(slot) {
    slot.active--;
    this.waiting.shift()?.();
  }
  /** The slot's session, opened (again) if it has none or it went away. */
  #live(slot) {
    const s = slot.session;
    if (s && !s.closed && !s.destroyed && !slot.goaway) return Promise.resolve(s);
    slot.opening ??= connectH2().then(
      (session) => {
        slot.session = session;
        slot.goaway = false;
        slot.opening = undefined;
        session.once('goaway', () => (slot.goaway = true));
        if (this.destroyed) session.destroy();
        return session;
      },
      (err) => {
        slot.opening = undefined;
        throw err;
      },
    );
    return slot.opening;
  }
}

/** The server did not negotiate h2 for an HTTP/2 client: an h2 row would measure nothing it says. */
export class NotH2 extends Error {}

/**
 * The receive windows client-go's HTTP/2 transport (golang.org/x/net/http2) opens with: 4 MiB per stream, 1 GiB per
 * connection. Node's defaults (64 KiB each) would have the server wait for a WINDOW_UPDATE after every 64 KiB a
 * session's hundred watchers are sent, which no informer makes it do.
 */
const CLIENT_GO_STREAM_WINDOW = 4 << 20;
const CLIENT_GO_CONNECTION_WINDOW = 1 << 30;

/** One HTTP/2 session to the server, with client-go's windows; rejects unless ALPN picked h2. */
function connectH2() {
  const { server } = ctx;
  return new Promise((resolve, reject) => {
    const session = http2.connect(server.url, {
      ca: server.caPem,
      settings: { initialWindowSize: CLIENT_GO_STREAM_WINDOW },
    });
    const failed = (err) =>
      reject(
        // What TLS says when the server offers no protocol of the client's (h2) by ALPN.
        err.code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL'
          ? new NotH2(`the server did not negotiate h2 by ALPN: ${err.message}`, { cause: err })
          : err,
      );
    session.once('error', failed);
    session.once('connect', () => {
      session.off('error', failed);
      // Errors of its streams are the streams' own; a session error (the server went) ends them all.
      session.on('error', () => {});
      if (session.alpnProtocol !== 'h2') {
        session.destroy();
        reject(new NotH2(`the server negotiated ${session.alpnProtocol ?? 'no protocol'} by ALPN, not h2`));
        return;
      }
      session.setLocalWindowSize(CLIENT_GO_CONNECTION_WINDOW);
      resolve(session);
    });
  });
}

/** The sessions of an Http2Pool to carry `concurrency` streams at a time, 100 on each at most. */
export const h2Sessions = (concurrency) => Math.max(1, Math.ceil(concurrency / 100));
/** A protocol's name in a report. */
export const protocolName = (p) => (p === 'h2' ? 'HTTP/2' : 'HTTP/1.1');

export function expectStatus(res, code, what) {
  if (res.status !== code) throw new Error(`${what}: HTTP ${res.status}: ${res.body.toString().slice(0, 500)}`);
}

// ---------- objects ----------

const b64 = (n) => randomBytes(n).toString('base64');
/** SharedSecret number i: about 1.1 KiB in etcd once the server has added its metadata. */
export function sharedSecret(i) {
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

/** Creates SharedSecrets `from`..`to`-1 through the server, `concurrency` POSTs at a time; the seconds it took. */
export async function seed(agent, from, to, concurrency = 32) {
  let next = from;
  const t0 = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < to) {
        const i = next++;
        const res = await httpsRequest('POST', NS_PATH, { agent, body: JSON.stringify(sharedSecret(i)) });
        expectStatus(res, 201, `create ${name(i)}`);
      }
    }),
  );
  return (now() - t0) / 1000;
}

export function prefixEnd(prefix) {
  const b = Buffer.from(prefix);
  b[b.length - 1]++;
  return b;
}

// ---------- etcd metrics ----------

export function etcdMetrics() {
  return new Promise((resolve, reject) => {
    http
      .get(`${ctx.etcdEndpoint}/metrics`, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          const gauge = (n) => Number(new RegExp(`^${n} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
          resolve({
            watchers: gauge('etcd_debugging_mvcc_watcher_total'),
            streams: gauge('etcd_debugging_mvcc_watch_stream_total'),
            dbBytes: gauge('etcd_mvcc_db_total_size_in_use_in_bytes'),
          });
        });
      })
      .on('error', reject);
  });
}

// ---------- closed loops ----------

/** `concurrency` loops doing `op` back to back for `seconds`; the latencies (ms), errors and elapsed seconds. */
export async function closedLoop(concurrency, seconds, op) {
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

/**
 * Closed loops of every target at concurrency `c`: a warm-up per target, then `seconds` per target cut into
 * `slices` taken in turn with the other targets' (A B C A B C ...), so that a burst of load from elsewhere on the
 * machine hits every target alike. `targets` maps a label to (agent) => op; `agents` may give a target's label
 * its own client (an Http2Pool, say), else it has an https.Agent of `c` keep-alive sockets. One row per target,
 * with its requests completed and its label in the CPU table.
 */
export async function interleavedClosedLoops(c, targets, { seconds, slices, cpuLabel, agents = {} }) {
  const rows = Object.entries(targets).map(([label, make]) => {
    const agent = agents[label] ?? new https.Agent({ keepAlive: true, maxSockets: c });
    return { label, agent, op: make(agent), latencies: [], errors: 0, elapsed: 0 };
  });
  for (const row of rows) await closedLoop(c, Math.min(2, seconds), row.op); // warm-up; opens the connections
  for (let k = 0; k < slices; k++) {
    for (const row of rows) {
      const r = await withCpu(cpuLabel(row.label), () => closedLoop(c, seconds / slices, row.op));
      for (const l of r.latencies) row.latencies.push(l);
      row.errors += r.errors;
      row.elapsed += r.elapsed;
    }
  }
  return rows.map((row) => {
    row.agent.destroy();
    const r = {
      concurrency: c,
      label: row.label,
      cpuLabel: cpuLabel(row.label),
      requests: row.latencies.length,
      rps: row.latencies.length / row.elapsed,
      ...summary(row.latencies),
      errors: row.errors,
    };
    log(`  c=${c} ${row.label}: ${r.rps.toFixed(0)} req/s p50 ${f2(r.p50)} ms p99 ${f2(r.p99)} ms`);
    return r;
  });
}

// ---------- watch fan-out ----------

const RV_FIELD = '"resourceVersion":"';
let watchRuns = 0;

/**
 * `watchers` HTTPS watch streams on the namespace while an open-loop writer sends `rate` merge patches a second for
 * `seconds` to objects 0..n-1; every event at every watcher is matched to its write. See bench/README.md.
 * `cpuLabel` starts the labels of its rows in the CPU table. `protocol` 'h1': each watcher a connection of its own
 * and the writer an https.Agent of 32 keep-alive sockets; 'h2': the watchers as streams of 100 to a session (as
 * many informer processes), the writer one session of at most 32 concurrent streams.
 */
export async function watchFanOut({
  n,
  watchers: WATCHERS,
  rate: WRITE_RATE,
  seconds: WATCH_SECONDS,
  cpuLabel = '',
  protocol = 'h1',
}) {
  const writes = Math.round(WRITE_RATE * WATCH_SECONDS);
  // Each run writes values no earlier run wrote: a patch that changes nothing is not written and makes no event.
  const run = ++watchRuns;
  const metrics = { beforeWatchers: await etcdMetrics() };
  const { server } = ctx;

  // A list gives the revision every watcher starts from (the namespace's current state, no initial events).
  const listed = await httpsRequest('GET', `${NS_PATH}?limit=1`, { agent: false });
  expectStatus(listed, 200, 'list for watch');
  const fromRV = JSON.parse(listed.body.toString()).metadata.resourceVersion;

  const h2 = protocol === 'h2';
  const watchAgent = h2
    ? await new Http2Pool({ sessions: h2Sessions(WATCHERS), maxStreams: 100 }).connect()
    : new https.Agent({ keepAlive: false, maxSockets: Infinity });
  const watchers = [];
  const watchPath = `${NS_PATH}?watch=true&resourceVersion=${fromRV}&timeoutSeconds=600`;
  /** The watch request; `onResponse(status, body)` with its body stream (utf8 chunks, 'end', 'error'). */
  const request = async (onResponse, onError) => {
    if (h2) {
      const stream = await watchAgent.stream({ ':path': watchPath, authorization: `Bearer ${server.token}` });
      stream.once('response', (h) => onResponse(h[':status'], stream));
      stream.on('error', onError);
      return stream;
    }
    const url = new URL(watchPath, server.url);
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        headers: { Authorization: `Bearer ${server.token}` },
        ca: server.caPem,
        agent: watchAgent,
      },
      (res) => onResponse(res.statusCode, res),
    );
    req.on('error', onError);
    req.end();
    return req;
  };
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
      request(
        (status, res) => {
          if (status !== 200) return reject(new Error(`watch ${i}: HTTP ${status}`));
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
        (err) => {
          w.ended = true;
          reject(err);
        },
      ).then((req) => (w.req = req), reject);
    });

  const tOpen = now();
  await withCpu(`${cpuLabel}watch: open ${WATCHERS} watch streams`, async () => {
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
  const writeAgent = h2
    ? await new Http2Pool({ sessions: 1, maxStreams: 32 }).connect()
    : new https.Agent({ keepAlive: true, maxSockets: 32 });
  const sent = new Float64Array(writes);
  const acked = new Float64Array(writes);
  const ackRV = new Float64Array(writes);
  let writeErrors = 0;
  let writeRetries = 0;
  let writeSeconds = NaN;
  const pending = [];
  const writesLabel = `${cpuLabel}watch: ${WRITE_RATE} writes/s to ${WATCHERS} watchers`;
  await withCpu(writesLabel, async () => {
    const t0 = now();
    for (let i = 0; i < writes; i++) {
      const due = t0 + (i * 1000) / WRITE_RATE;
      const wait = due - now();
      if (wait > 1) await sleep(wait);
      if (i === Math.floor(writes / 2)) pending.push(etcdMetrics().then((m) => (metrics.duringWrites = m)));
      sent[i] = now();
      const patch = () =>
        httpsRequest('PATCH', `${NS_PATH}/${name(i % n)}`, {
          agent: writeAgent,
          body: JSON.stringify({ spec: { description: `run ${run} write ${i}` } }),
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
    protocol,
    connections: h2 ? watchAgent.slots.length : WATCHERS,
    cpuLabel: writesLabel,
    watchers: WATCHERS,
    rate: WRITE_RATE,
    seconds: WATCH_SECONDS,
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
    outOfOrder: watchers.reduce((k, w) => k + w.outOfOrder, 0),
    other: watchers.reduce((k, w) => k + w.other, 0),
    ended: endedEarly,
    fromAck: summary(fromAck),
    fromSend: summary(fromSend),
    lastFromAck: summary(lastFromAck),
    ackLatency: summary(ackLatency),
    metrics,
  };
}

/**
 * A measuring client in a process of its own (`file` with `args`, over IPC), started with `start` and told each
 * phase change: `phase(name)`; `stop()` gives what it measured per phase. Each message but a phase change has one
 * answer, awaited before the next is sent; `onNotice` gets messages it sends on its own (`{ slow }`).
 */
export async function phasedChild(file, args, start, onNotice = () => false) {
  const child = fork(file, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let answer;
  child.on('message', (msg) => {
    if (!onNotice(msg)) answer?.(msg);
  });
  const ask = (msg) =>
    new Promise((resolve) => {
      answer = resolve;
      child.send(msg);
    });
  await ask({ start });
  return {
    pid: child.pid,
    phase: (name) => child.send({ phase: name }),
    async stop() {
      const { phases } = await ask({ stop: true });
      child.disconnect();
      return phases;
    },
  };
}
