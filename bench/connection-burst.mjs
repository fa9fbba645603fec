#!/usr/bin/env node
// Connection burst (issue 39): what many connections opened together, and many idle ones, do to new connections:
// connection resets, and the admin's latency throughout. Run by hand (see bench/README.md): `bench/run.sh
// connection-burst`, or `npm run build && node bench/connection-burst.mjs`.
//
// One etcd and one server child (the build's defaults, or --server-flag's). The admin, from an address of its own
// (127.0.0.100), sends a GET on a new connection every --probe-interval ms from a process of its own (in this one its
// callbacks would wait behind the flood's handshakes), open loop, throughout. The phases:
//
// - quiet: the admin alone;
// - burst: --rounds times, --burst clients from one address (a NAT, a CI runner) open a connection each and send a
//   GET together; a connection reset is any client whose request got no answer (reset, closed, refused);
// - flood: --flood idle connections from --flood-sources addresses (127.1.0.1 and up, all of 127/8 being loopback)
//   that send nothing, each opened again as soon as the server closes it, for --flood-seconds;
// - flood + burst: the bursts again, halfway through the flood, from another address;
// - after: the admin alone once the flood is gone.
//
// Every request is the admin's (system:masters, exempt from API Priority and Fairness): what is measured is the
// connection layer, not the seats.
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  FlagRefused,
  cpuLines,
  ctx,
  f1,
  forkServerChild,
  headerLines,
  loadavg,
  log,
  machine,
  now,
  sleep,
  startEtcd,
  summary,
  withCpu,
  phasedChild,
} from './lib.mjs';

const ADMIN_FROM = '127.0.0.100';
const BURST_FROM = { burst: '127.0.0.60', 'flood + burst': '127.0.0.61' };
/** Goals of issue 39. */
const ADMIN_GOAL_MS = 1000;
/** A request not answered within this long is counted as failed (client-go's TLS handshake timeout is 10 s). */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * One GET on a new connection from `from`: its status (or the error's code when it got no answer), how long it
 * took, connecting included, and how long its connection took (to the end of its TLS handshake).
 */
export function freshGet(server, path, { token, from }) {
  const url = new URL(path, server.url);
  const sent = now();
  let connected = NaN;
  return new Promise((resolve) => {
    const done = (status) => resolve({ status, ms: now() - sent, connectedMs: connected - sent });
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: { Authorization: `Bearer ${token}`, Connection: 'close' },
        ca: server.caPem,
        agent: false,
        localAddress: from,
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        res.resume();
        res.on('end', () => done(String(res.statusCode)));
        res.on('error', (err) => done(err.code ?? 'error'));
      },
    );
    req.once('socket', (socket) => socket.once('secureConnect', () => (connected = now())));
    req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in time'), { code: 'timeout' })));
    req.on('error', (err) => done(err.code ?? 'error'));
    req.end();
  });
}

const count = (counts, key) => (counts[key] = (counts[key] ?? 0) + 1);
const byStatus = (counts) =>
  Object.entries(counts)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || '-';
const unanswered = (counts) => Object.entries(counts).reduce((n, [k, v]) => n + (/^\d+$/.test(k) ? 0 : v), 0);

/** `clients` GETs on new connections from `from`, all sent together: their statuses and latencies. */
async function burst(server, { clients, from, token }) {
  const answers = await Promise.all(Array.from({ length: clients }, () => freshGet(server, '/apis', { token, from })));
  const statuses = {};
  for (const a of answers) count(statuses, a.status);
  return { statuses, latencies: answers.map((a) => a.ms) };
}

/**
 * `n` idle connections spread over `sources` addresses, each opened again as soon as it is closed, until stop():
 * how many were opened, handshaken, closed before their handshake (refused, or closed while they waited) and
 * closed after it (unanswered: they never send a byte).
 */
function idleFlood(server, { n, sources }) {
  const url = new URL(server.url);
  const counts = { opened: 0, handshaken: 0, closedBeforeHandshake: 0, closedAfterHandshake: 0 };
  const open = new Set();
  const handshaking = new Set();
  let stopped = false;
  const slot = (from) => {
    if (stopped) return;
    counts.opened++;
    let secure = false;
    const socket = tls.connect({ host: url.hostname, port: Number(url.port), ca: server.caPem, localAddress: from });
    open.add(socket);
    handshaking.add(socket);
    socket.on('secureConnect', () => {
      secure = true;
      handshaking.delete(socket);
      counts.handshaken++;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      open.delete(socket);
      handshaking.delete(socket);
      if (stopped) return;
      counts[secure ? 'closedAfterHandshake' : 'closedBeforeHandshake']++;
      // Opened again at once, but not in a loop of its own: a connection refused at once comes back 20 ms later.
      setTimeout(() => slot(from), 20);
    });
  };
  // In 127.1/16, apart from the admin's and the bursts' addresses in 127.0.0/24 (all of 127/8 is loopback).
  const address = (k) => `127.1.${Math.floor(k / 250)}.${1 + (k % 250)}`;
  for (let i = 0; i < n; i++) slot(address(i % sources));
  return {
    counts,
    /** How many of the flood's connections are open and have not finished their handshake. */
    notHandshaken: () => handshaking.size,
    stop() {
      stopped = true;
      for (const s of open) s.destroy();
    },
  };
}

/**
 * The admin's GETs on new connections, every `intervalMs` until stop(), from a process of its own; each counted in
 * the phase it was sent in (`phase(name)` changes it). stop() gives, per phase, the latencies and statuses.
 */
function adminProbe(server, { token, intervalMs, phase }) {
  return phasedChild(fileURLToPath(import.meta.url), ['--admin-probe'], {
    url: server.url,
    caPem: server.caPem,
    token,
    from: ADMIN_FROM,
    intervalMs,
    phase,
  });
}

/**
 * The scenario against a running server ({ url, caPem }), the admin's `token`: the phases above, their bursts'
 * answers, the flood's counts, and the admin's latencies per phase. For a combined benchmark to call.
 */
export async function connectionBurst(server, token, opts) {
  const o = {
    burst: 60,
    rounds: 5,
    flood: 500,
    floodSources: 11,
    floodSeconds: 30,
    probeIntervalMs: 100,
    ...opts,
  };
  let phase = 'quiet';
  const probe = await adminProbe(server, { token, intervalMs: o.probeIntervalMs, phase });
  ctx.pids["admin's client"] = probe.pid;
  const setPhase = (name) => {
    phase = name;
    probe.phase(name);
    log(`  phase: ${name} (${new Date().toISOString().slice(11, 23)})`);
  };
  const bursts = {};
  const bursting = async (name) => {
    const rounds = [];
    for (let i = 0; i < o.rounds; i++) {
      rounds.push(await burst(server, { clients: o.burst, from: BURST_FROM[name], token }));
      await sleep(500);
    }
    const statuses = {};
    for (const r of rounds) for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
    bursts[name] = { statuses, latency: summary(rounds.flatMap((r) => r.latencies)) };
    log(`  ${name}: ${o.rounds} x ${o.burst} clients: ${byStatus(statuses)}`);
  };

  await withCpu('quiet', () => sleep(3000));
  setPhase('burst');
  await withCpu(`burst: ${o.rounds} x ${o.burst} clients`, () => bursting('burst'));
  setPhase('flood');
  const flood = idleFlood(server, { n: o.flood, sources: o.floodSources });
  const floodSamples = [];
  const sampler = setInterval(() => floodSamples.push(flood.notHandshaken()), 1000);
  await withCpu(`flood: ${o.flood} idle from ${o.floodSources} addresses`, async () => {
    await sleep((o.floodSeconds * 1000) / 2);
    setPhase('flood + burst');
    await bursting('flood + burst');
    setPhase('flood');
    await sleep((o.floodSeconds * 1000) / 2);
  });
  clearInterval(sampler);
  flood.stop();
  log(`  flood: ${JSON.stringify(flood.counts)}`);
  setPhase('after');
  await withCpu('after', () => sleep(3000));
  const admin = await probe.stop();
  const phases = Object.fromEntries(
    Object.entries(admin).map(([name, p]) => [name, { statuses: p.statuses, latency: summary(p.latencies) }]),
  );
  return { options: o, bursts, flood: { ...flood.counts, notHandshaken: summary(floodSamples) }, admin: phases };
}

/** The scenario's report: a table per phase, the flood's counts, and whether the goals were met. */
export function connectionBurstLines(r) {
  const o = r.options;
  const out = [
    `Connection burst: ${o.rounds} rounds of ${o.burst} clients from one address, each opening a connection and sending a GET together; then ${o.flood} idle connections from ${o.floodSources} addresses (each opened again once closed) for ${o.floodSeconds} s, with the bursts again (from another address) halfway; the admin's GET on a new connection every ${o.probeIntervalMs} ms from an address of its own, throughout.`,
    '',
    "| Phase | Bursts' answers by status | Connection resets | Burst p50 / p99 / max ms | Admin's GETs | Admin's answers by status | Admin p50 / p99 / max ms |",
    '|---|---|---|---|---|---|---|',
  ];
  for (const [name, a] of Object.entries(r.admin)) {
    const b = r.bursts[name];
    out.push(
      `| ${name} | ${b ? byStatus(b.statuses) : '-'} | ${b ? unanswered(b.statuses) : '-'} | ${b ? `${f1(b.latency.p50)} / ${f1(b.latency.p99)} / ${f1(b.latency.max)}` : '-'} | ${a.latency.n} | ${byStatus(a.statuses)} | ${f1(a.latency.p50)} / ${f1(a.latency.p99)} / ${f1(a.latency.max)} |`,
    );
  }
  const f = r.flood;
  out.push(
    '',
    `Flood: ${f.opened} connections opened, ${f.handshaken} handshaken; the server closed ${f.closedBeforeHandshake} before their handshake (refused, or past the wait deadline) and ${f.closedAfterHandshake} after it (sending nothing); not yet handshaken at a time (sampled each second): median ${f.notHandshaken.p50}, max ${f.notHandshaken.max}.`,
    '',
  );
  const resets = Object.values(r.bursts).reduce((n, b) => n + unanswered(b.statuses), 0);
  const adminMax = Math.max(...Object.values(r.admin).map((a) => a.latency.max));
  const adminFailed = Object.values(r.admin).reduce(
    (n, a) => n + Object.entries(a.statuses).reduce((k, [s, c]) => k + (s === '200' ? 0 : c), 0),
    0,
  );
  const met = resets === 0 && adminFailed === 0 && adminMax <= ADMIN_GOAL_MS;
  out.push(
    `Goal: 0 connection resets in the bursts (${resets}), and the admin answered within ${ADMIN_GOAL_MS / 1000} s throughout (slowest ${f1(adminMax)} ms; ${adminFailed} not answered 200). Goal ${met ? 'met' : 'not met'}.`,
    '',
  );
  return out;
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      burst: { type: 'string', default: '60' },
      rounds: { type: 'string', default: '5' },
      flood: { type: 'string', default: '500' },
      'flood-sources': { type: 'string', default: '11' },
      'flood-seconds': { type: 'string', default: '30' },
      'probe-interval': { type: 'string', default: '100' },
      'server-flag': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (args.help) {
    console.log(`Usage: node bench/connection-burst.mjs [--burst 60] [--rounds 5] [--flood 500] [--flood-sources 11]
  [--flood-seconds 30] [--probe-interval 100] [--server-flag=--flag=value ...]
--server-flag passes one of the server's command-line flags (e.g. --server-flag=--max-waiting-connections=0).`);
    return;
  }
  const info = machine();
  log('machine', info);
  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-connections-'));
  const { etcdProc, serverConfig } = await startEtcd(tmp);
  try {
    const flags = args['server-flag'] ?? [];
    const child = (ctx.child = forkServerChild(serverConfig, { flags }));
    try {
      ctx.server = await child.ready;
    } catch (err) {
      if (err instanceof FlagRefused) console.error(err.message);
      throw err;
    }
    ctx.pids = { server: ctx.server.pid, etcd: etcdProc.pid, 'bench client': process.pid };
    log(`server on ${ctx.server.url} (pid ${ctx.server.pid})${flags.length ? ` with ${flags.join(' ')}` : ''}`);
    const result = await connectionBurst(ctx.server, ctx.server.token, {
      burst: Number(args.burst),
      rounds: Number(args.rounds),
      flood: Number(args.flood),
      floodSources: Number(args['flood-sources']),
      floodSeconds: Number(args['flood-seconds']),
      probeIntervalMs: Number(args['probe-interval']),
    });
    const extra = `Server in a child process${flags.length ? `, with ${flags.join(' ')}` : ', default flags'}.`;
    console.log(
      [...headerLines(info, loadavg(), extra), ...connectionBurstLines(result), ...cpuLines(info.cores)].join('\n'),
    );
  } finally {
    await ctx.child?.stop();
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

// As the admin's client: GETs on new connections, driven by the parent's messages ({ start }, { phase }, { stop }).
async function probeChild() {
  const phases = {};
  let phase;
  let stopped = false;
  let loop;
  const pending = new Set();
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (msg) => {
    if (msg.start) {
      const { url, caPem, token, from, intervalMs } = msg.start;
      phase = msg.start.phase;
      loop = (async () => {
        const t0 = now();
        for (let i = 0; !stopped; i++) {
          const wait = t0 + i * intervalMs - now();
          if (wait > 1) await sleep(wait);
          if (stopped) break;
          const p = (phases[phase] ??= { latencies: [], statuses: {} });
          const sentAt = new Date().toISOString().slice(11, 23);
          const get = freshGet({ url, caPem }, '/apis', { token, from }).then((a) => {
            p.latencies.push(a.ms);
            count(p.statuses, a.status);
            if (a.ms > ADMIN_GOAL_MS || a.status !== '200')
              process.stderr.write(
                `  admin's GET sent at ${sentAt} (${phase}): ${a.status} in ${f1(a.ms)} ms (connected in ${f1(a.connectedMs)} ms)\n`,
              );
            pending.delete(get);
          });
          pending.add(get);
        }
      })();
      process.send({ ready: true });
    } else if (msg.phase) {
      phase = msg.phase;
    } else if (msg.stop) {
      stopped = true;
      await loop;
      await Promise.all(pending);
      process.send({ phases });
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--admin-probe') probeChild();
  else
    main().catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
