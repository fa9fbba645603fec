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
// --before DIR adds a second server built from another dist/ (e.g. of the main branch), under its own etcd prefix,
// whose rows are taken in turn with the others: a before/after comparison under the same conditions.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import {
  cpuSeconds,
  dist,
  ETCD_PREFIX,
  f2,
  GROUP,
  log,
  machineBusySeconds,
  now,
  NS,
  NS_PATH,
  pct,
  sharedSecret as benchSharedSecret,
} from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    slices: { type: 'string', default: '5' },
    only: { type: 'string', default: 'create,patch,put' },
    before: { type: 'string' },
    profile: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(`Usage: node bench/write-path.mjs [--concurrency 64] [--seconds 10] [--slices 5] [--only create,patch,put]
  [--profile DIR] [--before DIST_DIR]   (seconds per row, cut into slices taken in turn with the other rows)`);
  process.exit(0);
}
const C = Number(args.concurrency);
const SECONDS = Number(args.seconds);
const SLICES = args.profile ? 1 : Number(args.slices);
const ONLY = new Set(args.only.split(','));

const RAW_PREFIX = `/raw-bench/`;

// ---------- server children ----------

/** A server in a child process from the compiled `distDir`; answers on IPC with a message of the same type. */
async function startChild(label, distDir, config) {
  const child = fork(new URL('./server-child.mjs', import.meta.url), [], {
    env: { ...process.env, BENCH_DIST: distDir, BENCH_SERVER_CONFIG: JSON.stringify(config) },
    stdio: 'inherit',
  });
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`server child exited with ${code}`)));
  });
  const waiters = [];
  child.on('message', (msg) => {
    const k = waiters.findIndex((w) => w.type === msg.type);
    if (k >= 0) waiters.splice(k, 1)[0].resolve(msg);
  });
  return {
    label,
    ...info,
    keyPrefix: `${config.etcdPrefix}/${GROUP}/sharedsecrets/${NS}/`,
    agent: new https.Agent({ keepAlive: true, maxSockets: C }),
    ask(msg) {
      const type = typeof msg === 'string' ? msg : msg.type;
      return new Promise((resolve) => {
        waiters.push({ type, resolve });
        child.send(msg);
      });
    },
    stop() {
      this.agent.destroy();
      if (child.exitCode !== null) return Promise.resolve();
      return new Promise((resolve) => {
        child.once('exit', resolve);
        child.send('stop');
      });
    },
  };
}

function httpsRequest(server, method, path, { body, contentType } = {}) {
  const url = new URL(path, server.url);
  const headers = { Authorization: `Bearer ${server.token}` };
  if (body !== undefined) {
    headers['Content-Type'] = contentType ?? 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  const { agent, caPem: ca } = server;
  return new Promise((resolve, reject) => {
    const req = https.request(
      { hostname: url.hostname, port: url.port, path: url.pathname, method, headers, ca, agent },
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

// ---------- objects ----------

/** bench/lib.mjs's SharedSecret number i, named `name`. */
function sharedSecret(name, i) {
  const obj = benchSharedSecret(i);
  obj.metadata.name = name;
  return obj;
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
/** Every server child, for the CPU accounting. */
const allServers = [];
/** Runs `fn` (a row's slice, `server` its server or none) with CPU accounting and, with --profile, a profile. */
async function measured(label, server, fn) {
  const profiled = profileDir && server;
  if (profiled) await server.ask({ type: 'profile', action: 'start' });
  // The servers of the other rows idle meanwhile (their watch caches see nothing of this row's writes).
  const idle = allServers.filter((x) => x !== server).map((x) => x.pid);
  const pids = {
    server: server?.pid,
    etcd: etcdPid,
    client: process.pid,
    ...Object.fromEntries(idle.map((p, k) => [`idle ${k}`, p])),
  };
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, p === undefined ? 0 : cpuSeconds(p)]));
  const busy0 = machineBusySeconds();
  const t0 = now();
  const r = await fn();
  const wall = (now() - t0) / 1000;
  const cpu = Object.fromEntries(
    Object.entries(pids).map(([k, p]) => [k, p === undefined ? 0 : cpuSeconds(p) - before[k]]),
  );
  cpu.other = Math.max(0, machineBusySeconds() - busy0 - Object.values(cpu).reduce((a, b) => a + b, 0));
  if (profiled) {
    const file = join(profileDir, `${label.replace(/[^a-zA-Z0-9]+/g, '-')}.cpuprofile`);
    await server.ask({ type: 'profile', action: 'stop', file });
    log(`  profile: ${file}`);
  }
  const row = cpuRows.find((x) => x.label === label);
  if (row) {
    row.wall += wall;
    for (const k of Object.keys(cpu)) row.cpu[k] += cpu[k];
  } else cpuRows.push({ label, wall, cpu });
  return r;
}

/**
 * Runs each server's row (`serverOp(server)`) and the raw row in turn, slice by slice (the order turning each
 * slice); their throughputs and each server's ratio to raw etcd3.
 */
async function compare(what, servers, serverOp, rawOp) {
  log(`${what}: warm-up`);
  const rows = [
    ...servers.map((server) => ({ label: `${what}: ${server.label}`, server, op: serverOp(server) })),
    { label: `${what}: raw etcd3`, op: rawOp },
  ].map((row) => ({ ...row, done: 0, elapsed: 0, latencies: [], errors: 0 }));
  for (const row of rows) await closedLoop(Math.min(2, SECONDS / 2), row.op);
  for (let k = 0; k < SLICES; k++) {
    for (let j = 0; j < rows.length; j++) {
      const row = rows[(j + k) % rows.length];
      const r = await measured(row.label, row.server, () => closedLoop(SECONDS / SLICES, row.op));
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
  const raw = out[out.length - 1];
  for (const r of out.slice(0, -1)) r.ratio = r.rate / raw.rate;
  for (const r of out)
    log(
      `  ${r.label}: ${r.rate.toFixed(0)}/s p50 ${f2(r.p50)} ms p99 ${f2(r.p99)} ms${r.ratio ? ` = ${f2(r.ratio)}x raw` : ''}`,
    );
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
  const serverConfig = (name, etcdPrefix) => ({
    etcdServers: [etcdEndpoint],
    etcdPrefix,
    dataDir: join(tmp, name),
    certDir: join(tmp, name, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    etcdCompactionIntervalMs: 0,
  });
  const etcd = new Etcd3({ hosts: etcdEndpoint });
  const servers = [];
  try {
    servers.push(await startChild('server', fileURLToPath(dist), serverConfig('server', ETCD_PREFIX)));
    if (args.before)
      servers.push(await startChild('server before', resolve(args.before), serverConfig('before', '/before')));
    allServers.push(...servers);
    if (args.profile) mkdirSync((profileDir = args.profile), { recursive: true });
    const results = [];

    // One object through the server gives the stored size the raw rows write.
    const first = await httpsRequest(servers[0], 'POST', NS_PATH, {
      body: JSON.stringify(sharedSecret('size-probe', 0)),
    });
    expectStatus(first, 201, 'create size-probe');
    const stored = (await etcd.get(servers[0].keyPrefix + 'size-probe').exec()).kvs[0].value;
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
          servers,
          (server) => async () => {
            const i = ++seq;
            const res = await httpsRequest(server, 'POST', NS_PATH, {
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
      // Each worker writes objects of its own (no conflicts between workers), in turn over a few; for each server
      // and for raw etcd3.
      const PER_WORKER = 4;
      const targets = new Map(); // server (or 'raw') -> [worker][k] = { name, last, rev, n }
      for (const server of servers) {
        const objs = [];
        for (let w = 0; w < C; w++) {
          objs.push(
            await Promise.all(
              Array.from({ length: PER_WORKER }, async (_, k) => {
                const name = `u-${w}-${k}`;
                const res = await httpsRequest(server, 'POST', NS_PATH, {
                  body: JSON.stringify(sharedSecret(name, w * PER_WORKER + k)),
                });
                expectStatus(res, 201, `create ${name}`);
                return { name, last: JSON.parse(res.body.toString()), n: 0 };
              }),
            ),
          );
        }
        targets.set(server, objs);
      }
      const rawObjs = [];
      for (let w = 0; w < C; w++) {
        rawObjs.push(
          await Promise.all(
            Array.from({ length: PER_WORKER }, async (_, k) => {
              const name = `${RAW_PREFIX}u-${w}-${k}`;
              const put = await etcd.put(name).value(rawValue(w)).exec();
              return { name, rev: put.header.revision, n: 0 };
            }),
          ),
        );
      }
      targets.set('raw', rawObjs);
      const pick = (who, w) => {
        const list = targets.get(who)[w];
        const o = list[0];
        list.push(list.shift());
        o.n++;
        return o;
      };
      const rawUpdate = async (w) => {
        const o = pick('raw', w);
        const txn = await etcd
          .if(o.name, 'Mod', '==', o.rev)
          .then(etcd.put(o.name).value(rawValue(o.n)))
          .commit();
        if (!txn.succeeded) throw new Error('raw CAS failed');
        o.rev = txn.header.revision;
      };
      if (ONLY.has('patch')) {
        results.push(
          ...(await compare(
            `merge PATCH, ${C} concurrent`,
            servers,
            (server) => async (w) => {
              const o = pick(server, w);
              const res = await httpsRequest(server, 'PATCH', `${NS_PATH}/${o.name}`, {
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
            servers,
            (server) => async (w) => {
              const o = pick(server, w);
              const body = { ...o.last, spec: { ...o.last.spec, description: `put ${o.n} of ${o.name}` } };
              const res = await httpsRequest(server, 'PUT', `${NS_PATH}/${o.name}`, { body: JSON.stringify(body) });
              expectStatus(res, 200, 'put');
              o.last = JSON.parse(res.body.toString());
            },
            rawUpdate,
          )),
        );
      }
    }
    console.log(report(results, stored.length));
  } finally {
    etcd.close();
    for (const server of servers) await server.stop();
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function report(results, storedBytes) {
  const out = [];
  out.push(`### Write path, ${new Date().toISOString()}`, '');
  out.push(
    `${os.cpus().length} cores, Node ${process.version}; server from ${process.env.BENCH_SOURCE ?? dist.pathname}` +
      `${args.before ? `, server before from ${resolve(args.before)}` : ''}; ` +
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
    '| Row | wall s | server cores | etcd cores | client cores | idle server cores | other cores | server CPU ms per write | etcd CPU ms per write |',
    '|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of cpuRows) {
    const done = results.find((x) => x.label === r.label)?.done ?? NaN;
    const idle = Object.entries(r.cpu).reduce((n, [k, v]) => (k.startsWith('idle') ? n + v : n), 0);
    const cores = ['server', 'etcd', 'client'].map((k) => f2(r.cpu[k] / r.wall));
    const perWrite = (k) => f2((1000 * r.cpu[k]) / done);
    out.push(
      `| ${r.label} | ${r.wall.toFixed(1)} | ${cores.join(' | ')} | ${f2(idle / r.wall)} | ${f2(r.cpu.other / r.wall)} | ${r.cpu.server ? perWrite('server') : ''} | ${perWrite('etcd')} |`,
    );
  }
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
