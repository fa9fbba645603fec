#!/usr/bin/env node
// The write path of the API server, side by side with raw etcd3 writes of the same size on the same etcd:
//   create: POST of a new SharedSecret      vs  etcd txn (key's createRevision == 0) then put
//   patch:  merge PATCH of spec.description vs  etcd txn (key's modRevision == the one last written) then put
//   put:    PUT of the object last answered  vs  the same CAS txn
// Each row is a closed loop of --concurrency workers; rows are cut into slices taken in turn (server, raw, server,
// raw, ...) so that load from elsewhere on the machine hits both alike; the report gives the ratio server / raw.
// Run by hand: `npm run build && node bench/write-path.mjs` (or BENCH_DIST=... for another build). The server runs
// in a child process (bench/server-child.mjs); --profile DIR writes a V8 CPU profile of it per row
// (summarise with bench/profile-summary.mjs; do not quote figures from a profiled run).
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';

const { values: args } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    slices: { type: 'string', default: '5' },
    only: { type: 'string', default: 'create,patch,put' },
    profile: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(`Usage: node bench/write-path.mjs [--concurrency 64] [--seconds 10] [--slices 5] [--only create,patch,put]
  [--profile DIR]   (seconds per row, cut into slices taken in turn with raw etcd3's)`);
  process.exit(0);
}
const C = Number(args.concurrency);
const SECONDS = Number(args.seconds);
const SLICES = args.profile ? 1 : Number(args.slices);
const ONLY = new Set(args.only.split(','));

const GROUP = 'management.platform.sh';
const NS = 'bench';
const ETCD_PREFIX = '/registry';
const NS_PATH = `/apis/${GROUP}/v1/namespaces/${NS}/sharedsecrets`;
const KEY_PREFIX = `${ETCD_PREFIX}/${GROUP}/sharedsecrets/${NS}/`;
const RAW_PREFIX = `/raw-bench/`;

const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);
const now = () => performance.now();
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : String(x));

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}
function machineBusySeconds() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / CLK_TCK;
}

// ---------- server child ----------

let child;
let server;
const waiters = [];
function askChild(msg) {
  const type = typeof msg === 'string' ? msg : msg.type;
  return new Promise((resolve) => {
    waiters.push({ type, resolve });
    child.send(msg);
  });
}

function httpsRequest(method, path, { agent, body, contentType } = {}) {
  const url = new URL(path, server.url);
  const headers = { Authorization: `Bearer ${server.token}` };
  if (body !== undefined) {
    headers['Content-Type'] = contentType ?? 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const req = https.request(
      { hostname: url.hostname, port: url.port, path: url.pathname, method, headers, ca: server.caPem, agent },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
function expectStatus(res, code, what) {
  if (res.status !== code) throw new Error(`${what}: HTTP ${res.status}: ${res.body.toString().slice(0, 300)}`);
}

// ---------- objects (the shape of bench/list-get-watch.mjs's sharedSecret) ----------

const b64 = (n) => randomBytes(n).toString('base64');
function sharedSecret(name, i) {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'SharedSecret',
    metadata: {
      name,
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

// ---------- closed loops ----------

async function closedLoop(seconds, op) {
  let done = 0;
  let errors = 0;
  let firstError;
  const latencies = [];
  const t0 = now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: C }, async (_, w) => {
      while (now() < end) {
        const s = now();
        try {
          await op(w);
          done++;
          latencies.push(now() - s);
        } catch (err) {
          errors++;
          firstError ??= err;
        }
      }
    }),
  );
  if (firstError) log(`  ${errors} errors, first: ${firstError.message}`);
  return { done, errors, latencies, elapsed: (now() - t0) / 1000 };
}

let profileDir;
const cpuRows = [];
async function measured(label, fn) {
  if (profileDir) await askChild({ type: 'profile', action: 'start' });
  const pids = { server: server.pid, etcd: etcdPid, client: process.pid };
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
  const busy0 = machineBusySeconds();
  const t0 = now();
  const r = await fn();
  const wall = (now() - t0) / 1000;
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p) - before[k]]));
  cpu.other = Math.max(0, machineBusySeconds() - busy0 - Object.values(cpu).reduce((a, b) => a + b, 0));
  if (profileDir) {
    const file = join(profileDir, `${label.replace(/[^a-zA-Z0-9]+/g, '-')}.cpuprofile`);
    await askChild({ type: 'profile', action: 'stop', file });
    log(`  profile: ${file}`);
  }
  const row = cpuRows.find((x) => x.label === label);
  if (row) {
    row.wall += wall;
    for (const k of Object.keys(cpu)) row.cpu[k] += cpu[k];
  } else cpuRows.push({ label, wall, cpu });
  return r;
}

/** Runs the server row and the raw row in turn, slice by slice; their throughputs and the ratio. */
async function compare(what, serverOp, rawOp) {
  log(`${what}: warm-up`);
  await closedLoop(Math.min(2, SECONDS / 2), serverOp);
  await closedLoop(Math.min(2, SECONDS / 2), rawOp);
  const rows = [
    { label: `${what}: server`, op: serverOp, done: 0, elapsed: 0, latencies: [], errors: 0 },
    { label: `${what}: raw etcd3`, op: rawOp, done: 0, elapsed: 0, latencies: [], errors: 0 },
  ];
  for (let k = 0; k < SLICES; k++) {
    for (const row of k % 2 ? [...rows].reverse() : rows) {
      const r = await measured(row.label, () => closedLoop(SECONDS / SLICES, row.op));
      row.done += r.done;
      row.elapsed += r.elapsed;
      row.errors += r.errors;
      for (const l of r.latencies) row.latencies.push(l);
    }
  }
  const out = rows.map((row) => {
    const s = Float64Array.from(row.latencies).sort();
    return {
      label: row.label,
      done: row.done,
      rate: row.done / row.elapsed,
      p50: pct(s, 50),
      p99: pct(s, 99),
      errors: row.errors,
    };
  });
  out[0].ratio = out[0].rate / out[1].rate;
  for (const r of out) log(`  ${r.label}: ${r.rate.toFixed(0)}/s p50 ${f2(r.p50)} ms p99 ${f2(r.p99)} ms`);
  log(`  ratio server / raw: ${f2(out[0].ratio)}x`);
  return out;
}

// ---------- main ----------

let etcdPid;
async function main() {
  const { startEmbeddedEtcd } = await import(new URL('storage/embedded-etcd.js', dist).href);
  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-write-'));
  const etcdProc = await startEmbeddedEtcd({ dataDir: join(tmp, 'etcd'), unsafeNoFsync: true });
  etcdPid = etcdProc.pid;
  const etcdEndpoint = etcdProc.endpoints[0];
  const serverConfig = {
    etcdServers: [etcdEndpoint],
    etcdPrefix: ETCD_PREFIX,
    dataDir: join(tmp, 'server'),
    certDir: join(tmp, 'server', 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    etcdCompactionIntervalMs: 0,
  };
  child = fork(new URL('./server-child.mjs', import.meta.url), [], {
    env: { ...process.env, BENCH_SERVER_CONFIG: JSON.stringify(serverConfig) },
    stdio: 'inherit',
  });
  const etcd = new Etcd3({ hosts: etcdEndpoint });
  try {
    server = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
    });
    child.on('message', (msg) => {
      const k = waiters.findIndex((w) => w.type === msg.type);
      if (k >= 0) waiters.splice(k, 1)[0].resolve(msg);
    });
    if (args.profile) mkdirSync((profileDir = args.profile), { recursive: true });
    const agent = new https.Agent({ keepAlive: true, maxSockets: C });
    const results = [];

    // One object through the server gives the stored size the raw rows write.
    const first = await httpsRequest('POST', NS_PATH, { agent, body: JSON.stringify(sharedSecret('size-probe', 0)) });
    expectStatus(first, 201, 'create size-probe');
    const stored = (await etcd.get(KEY_PREFIX + 'size-probe').exec()).kvs[0].value;
    const rawValue = (i) => {
      // The stored object with other random data: same shape, same size.
      const o = JSON.parse(stored.toString());
      o.spec.data = sharedSecret('x', i).spec.data;
      o.metadata.uid = `${o.metadata.uid.slice(0, -8)}${String(i % 1e8).padStart(8, '0')}`;
      return JSON.stringify(o);
    };
    log(`one stored SharedSecret is ${stored.length} bytes; raw values are ${rawValue(1).length} bytes`);

    let seq = 0;
    if (ONLY.has('create')) {
      results.push(
        ...(await compare(
          `create, ${C} concurrent`,
          async () => {
            const i = ++seq;
            const res = await httpsRequest('POST', NS_PATH, {
              agent,
              body: JSON.stringify(sharedSecret(`c-${i}`, i)),
            });
            expectStatus(res, 201, 'create');
          },
          async () => {
            const i = ++seq;
            const key = `${RAW_PREFIX}c-${i}`;
            const txn = await etcd
              .if(key, 'Create', '==', 0)
              .then(etcd.put(key).value(rawValue(i)))
              .commit();
            if (!txn.succeeded) throw new Error('raw create failed');
          },
        )),
      );
    }

    if (ONLY.has('patch') || ONLY.has('put')) {
      // Each worker writes objects of its own (no conflicts between workers), in turn over a few.
      const PER_WORKER = 4;
      const objs = []; // [worker][k] = { name, last (server answer), rawKey, rawRev }
      for (let w = 0; w < C; w++) {
        objs.push(
          await Promise.all(
            Array.from({ length: PER_WORKER }, async (_, k) => {
              const name = `u-${w}-${k}`;
              const res = await httpsRequest('POST', NS_PATH, {
                agent,
                body: JSON.stringify(sharedSecret(name, w * PER_WORKER + k)),
              });
              expectStatus(res, 201, `create ${name}`);
              const rawKey = `${RAW_PREFIX}${name}`;
              const put = await etcd.put(rawKey).value(rawValue(w)).exec();
              return { name, last: JSON.parse(res.body.toString()), rawKey, rawRev: put.header.revision, n: 0 };
            }),
          ),
        );
      }
      const pick = (w) => {
        const list = objs[w];
        const o = list[0];
        list.push(list.shift());
        o.n++;
        return o;
      };
      const rawUpdate = async (w) => {
        const o = pick(w);
        const txn = await etcd
          .if(o.rawKey, 'Mod', '==', o.rawRev)
          .then(etcd.put(o.rawKey).value(rawValue(o.n)))
          .commit();
        if (!txn.succeeded) throw new Error('raw CAS failed');
        o.rawRev = txn.header.revision;
      };
      if (ONLY.has('patch')) {
        results.push(
          ...(await compare(
            `merge PATCH, ${C} concurrent`,
            async (w) => {
              const o = pick(w);
              const res = await httpsRequest('PATCH', `${NS_PATH}/${o.name}`, {
                agent,
                body: JSON.stringify({ spec: { description: `write ${o.n} of ${o.name}` } }),
                contentType: 'application/merge-patch+json',
              });
              expectStatus(res, 200, 'patch');
              o.last = JSON.parse(res.body.toString());
            },
            rawUpdate,
          )),
        );
      }
      if (ONLY.has('put')) {
        results.push(
          ...(await compare(
            `PUT, ${C} concurrent`,
            async (w) => {
              const o = pick(w);
              const body = { ...o.last, spec: { ...o.last.spec, description: `put ${o.n} of ${o.name}` } };
              const res = await httpsRequest('PUT', `${NS_PATH}/${o.name}`, { agent, body: JSON.stringify(body) });
              expectStatus(res, 200, 'put');
              o.last = JSON.parse(res.body.toString());
            },
            rawUpdate,
          )),
        );
      }
    }
    agent.destroy();
    console.log(report(results, stored.length));
  } finally {
    etcd.close();
    if (child.exitCode === null) {
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.send('stop');
      });
    }
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function report(results, storedBytes) {
  const out = [];
  out.push(`### Write path, ${new Date().toISOString()}`, '');
  out.push(
    `${os.cpus().length} cores, Node ${process.version}; server from ${process.env.BENCH_SOURCE ?? dist.pathname}; ` +
      `${C} concurrent, ${SECONDS} s per row in ${SLICES} slices taken in turn; one stored object is ${storedBytes} bytes.`,
    '',
  );
  out.push('| Row | per s | p50 ms | p99 ms | errors | server / raw |', '|---|---|---|---|---|---|');
  for (const r of results)
    out.push(
      `| ${r.label} | ${r.rate.toFixed(0)} | ${f2(r.p50)} | ${f2(r.p99)} | ${r.errors} | ${r.ratio ? `${f2(r.ratio)}x` : ''} |`,
    );
  // CPU per write is steadier than writes/s on a machine shared with other work.
  out.push(
    '',
    '| Row | wall s | server cores | etcd cores | client cores | other cores | server CPU ms per write | etcd CPU ms per write |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const r of cpuRows) {
    const done = results.find((x) => x.label === r.label)?.done ?? NaN;
    out.push(
      `| ${r.label} | ${r.wall.toFixed(1)} | ${['server', 'etcd', 'client', 'other'].map((k) => f2(r.cpu[k] / r.wall)).join(' | ')} | ${f2((1000 * r.cpu.server) / done)} | ${f2((1000 * r.cpu.etcd) / done)} |`,
    );
  }
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
