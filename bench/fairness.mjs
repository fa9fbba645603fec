#!/usr/bin/env node
// Fairness between tenants (issue 28): one tenant floods the server while a second sends a steady trickle of GETs
// of its own object; what the flood does to the second tenant's latency and answers. Run by hand (see
// bench/README.md): `bench/run.sh fairness`, or `npm run build && node bench/fairness.mjs`.
//
// One etcd, seeded once with --objects SharedSecrets; then one server child per arm, each with its own command-line
// flags (the arms: a baseline without the flood, and the flood under each set of flags), on the same etcd. In each
// arm the second tenant sends --rate GETs a second (open loop: each is sent on time whatever happened to earlier
// ones) while the first tenant runs --list-concurrency concurrent lists of every object for --seconds, then
// --create-concurrency concurrent creates for --seconds (closed loops: each sends again once answered).
//
// Tenants are users of a token file (none in system:masters, which is never throttled): the flooding `alice`, whom
// every seeded SharedSecret's access list lets read it (lib.mjs sharedSecret) and who creates OwnedAccessKeys of her
// own (the only create a user may make without a host cluster); the second tenant `bob`, who owns one SharedSecret.
// The admin seeds, and deletes the flood's keys after each arm.
//
// With --share (issue 39), each arm first measures what a tenant alone gets of the server next to what system:masters
// (exempt from APF) gets alone: --share-concurrency closed loops of consistent GETs of random seeded objects, then of
// merge PATCHes of random SharedSecrets alice owns, each for --share-seconds in --share-rounds slices that alternate
// who goes first; then alice's GETs beside bob's flood of as many GETs of his own object. A tenant alone is to get at least 0.8x of what the admin gets. With --reset-storm,
// each flood arm ends with alice's storm of resets of a large answer and her GET (bench/reset-storm.mjs); with
// --connection-burst, with the connection burst (bench/connection-burst.mjs). `bench/run.sh thread` runs them all.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  FlagRefused,
  GROUP,
  NS,
  NS_PATH,
  cpuLines,
  ctx,
  dist,
  expectStatus,
  f1,
  f2,
  forkServerChild,
  headerLines,
  httpsRequest,
  loadavg,
  log,
  machine,
  name,
  now,
  seed,
  sleep,
  startEtcd,
  summary,
  withCpu,
  phasedChild,
} from './lib.mjs';
import { connectionBurst, connectionBurstLines } from './connection-burst.mjs';
import { resetStorm, resetStormLines } from './reset-storm.mjs';
import { count, drained } from './steady-gets.mjs';

/** The arms: a baseline, then the flood with the build's defaults and with APF turned off. */
const DEFAULT_ARMS = ['baseline', 'flood', 'flood --enable-priority-and-fairness=false'];

const { values: args } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '15' },
    rate: { type: 'string', default: '20' },
    'list-concurrency': { type: 'string', default: '64' },
    'create-concurrency': { type: 'string', default: '64' },
    arm: { type: 'string', multiple: true },
    // Logs, every second of a flood, global-default's current limit, executing and waiting seats (APF metrics).
    'sample-apf': { type: 'boolean', default: false },
    // Logs each of bob's GETs that took longer than this many milliseconds, with when it was sent.
    'log-slow': { type: 'string' },
    share: { type: 'boolean', default: false },
    'reset-storm': { type: 'boolean', default: false },
    resets: { type: 'string', default: '1000' },
    'connection-burst': { type: 'boolean', default: false },
    'share-seconds': { type: 'string', default: '8' },
    'share-concurrency': { type: 'string', default: '64' },
    'share-rounds': { type: 'string', default: '4' },
    profile: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(`Usage: node bench/fairness.mjs [--objects 10000] [--seconds 15] [--rate 20] [--list-concurrency 64]
  [--create-concurrency 64] [--arm 'baseline|flood [server flags...]' ...] [--sample-apf] [--log-slow MS] [--profile DIR]
Each --arm is "baseline" (no flood) or "flood", then the server's command-line flags for that arm; the default arms
are ${DEFAULT_ARMS.map((a) => `'${a}'`).join(', ')}. An arm whose flags the server refuses (e.g. one this build
does not have) is not measured and the report says why. --profile DIR writes a V8 CPU profile of the server per
arm and phase into DIR (bench/profile-summary.mjs reads them; do not quote figures from a profiled run).`);
  process.exit(0);
}
const N = Number(args.objects);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const LIST_C = Number(args['list-concurrency']);
const CREATE_C = Number(args['create-concurrency']);
const SLOW_MS = args['log-slow'] === undefined ? Infinity : Number(args['log-slow']);
const SHARE_SECONDS = Number(args['share-seconds']);
const SHARE_C = Number(args['share-concurrency']);
const SHARE_ROUNDS = Number(args['share-rounds']);
/** Longer than the second a light flow counts as at work after its last request (LIGHT_FLOW_WINDOW_MS). */
const QUIET_MS = 1500;
if (args.profile) mkdirSync((ctx.profileDir = args.profile), { recursive: true });
const ARMS = (args.arm ?? DEFAULT_ARMS).map((spec) => {
  const [kind, ...flags] = spec.trim().split(/\s+/);
  if (kind !== 'baseline' && kind !== 'flood')
    throw new Error(`--arm ${JSON.stringify(spec)}: starts with baseline or flood, then the server's flags`);
  return { label: spec.trim(), flood: kind === 'flood', flags };
});

const KEYS_PATH = `/apis/${GROUP}/v1/ownedaccesskeys`;
const OWN_NAME = 'bob-own';
const OWN_PATH = `${NS_PATH}/${OWN_NAME}`;
const FLOOD_LABEL = 'bench-fairness=flood';
const TENANTS = { admin: ['system:masters'], alice: [], bob: [] };
/**
 * Each tenant's source address (all of 127.0.0.0/8 is loopback): tenants are different clients, and the server's
 * bound on connections not yet authenticated from one source (25) must not count one's against the other's.
 */
const FROM = { alice: '127.0.0.2', bob: '127.0.0.3', admin: '127.0.0.4' };
/** SharedSecrets alice owns, for her merge PATCHes in the share rows. */
const ALICE_OWNS = 256;
const aliceOwn = (i) => `alice-own-${String(i).padStart(4, '0')}`;
const MERGE_PATCH = 'application/merge-patch+json';
const randomInt = (n) => Math.floor(Math.random() * n);

const byStatus = (counts) =>
  Object.entries(counts)
    .filter(([k]) => k !== 'messages')
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || '-';
/**
 * The second tenant's GETs, `RATE` a second from a process of its own (bench/steady-gets.mjs) until `stop()`, each
 * counted in the phase it was sent in (`phase(name)` changes it); what stop() gives is its per-phase latencies and
 * answers.
 */
function secondTenant(token, phase) {
  const { url, caPem } = ctx.server;
  const start = {
    url,
    caPem,
    token,
    path: OWN_PATH,
    from: FROM.bob,
    rate: RATE,
    phase,
    ...(Number.isFinite(SLOW_MS) && { slowMs: SLOW_MS }),
  };
  const slow = (msg) =>
    !!msg.slow &&
    (log(`  slow GET (${msg.slow.phase}): sent at ${f1(msg.slow.sentAt)} s, took ${f1(msg.slow.took)} ms`), true);
  return phasedChild(fileURLToPath(new URL('steady-gets.mjs', import.meta.url)), [], start, slow);
}

/** `concurrency` closed loops of `op` until `seconds` have passed; the statuses of their answers. */
async function closedLoops(concurrency, seconds, op) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses = {};
  const end = now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (now() < end) count(statuses, await op(agent));
    }),
  );
  agent.destroy();
  return statuses;
}

/**
 * The share rows (see the top): each a closed loop of SHARE_C for SHARE_SECONDS, run in SHARE_ROUNDS slices that
 * alternate the admin and alice (admin first, then alice first), so that what else the shared machine does falls on
 * both sides of a ratio; requests a second that got their expected status, the answers by status, and the ratio of
 * each round.
 */
async function shareRows(arm, tokens) {
  const get = (user) => (agent) =>
    drained(ctx.server, 'GET', `${NS_PATH}/${name(randomInt(N))}`, { agent, token: tokens[user], from: FROM[user] });
  const patch = (user) => (agent) =>
    drained(ctx.server, 'PATCH', `${NS_PATH}/${aliceOwn(randomInt(ALICE_OWNS))}`, {
      agent,
      token: tokens[user],
      from: FROM[user],
      body: JSON.stringify({ spec: { description: `patched ${randomUUID()}` } }),
      contentType: MERGE_PATCH,
    });
  const ownGets = (agent) => drained(ctx.server, 'GET', OWN_PATH, { agent, token: tokens.bob, from: FROM.bob });
  const rate = (statuses) => (statuses['200'] ?? 0) / SHARE_SECONDS;
  const slice = SHARE_SECONDS / SHARE_ROUNDS;
  const rows = {};
  for (const [verb, op] of [
    ['GET', get],
    ['PATCH', patch],
  ]) {
    const totals = { admin: {}, alice: {} };
    const rounds = [];
    for (let round = 0; round < SHARE_ROUNDS; round++) {
      const ok = {};
      for (const user of round % 2 ? ['alice', 'admin'] : ['admin', 'alice']) {
        // Alone: the previous slice's flow, light once its last requests end, counts as at work for a second after
        // (src/flowcontrol/activity.ts), and would hold alice to --max-seats-per-flow meanwhile.
        await sleep(QUIET_MS);
        const statuses = await withCpu(`${arm.label}: share, ${user} ${verb}`, () =>
          closedLoops(SHARE_C, slice, op(user)),
        );
        for (const [k, v] of Object.entries(statuses))
          if (k !== 'messages') totals[user][k] = (totals[user][k] ?? 0) + v;
        ok[user] = statuses['200'] ?? 0;
      }
      rounds.push(ok.alice / ok.admin);
    }
    for (const user of ['admin', 'alice']) {
      const label = `${user} ${verb}`;
      rows[label] = { rate: rate(totals[user]), statuses: totals[user] };
      log(`  share: ${label}: ${f1(rows[label].rate)}/s; ${byStatus(totals[user])}`);
    }
    rows[`${verb} rounds`] = rounds;
    log(`  share: alice/admin ${verb} by round: ${rounds.map(f2).join(', ')}`);
  }
  const [alice, bob] = await Promise.all([
    closedLoops(SHARE_C, SHARE_SECONDS, get('alice')),
    closedLoops(SHARE_C, SHARE_SECONDS, ownGets),
  ]);
  rows['alice GET beside bob'] = { rate: rate(alice), statuses: alice };
  rows["bob's GETs beside alice"] = { rate: rate(bob), statuses: bob };
  log(`  share: alice GET beside bob's flood: ${f1(rate(alice))}/s, bob ${f1(rate(bob))}/s`);
  return rows;
}

/** The server's etcd_request_errors_total, summed over operations and types. */
async function etcdErrors() {
  const res = await httpsRequest('GET', '/metrics');
  expectStatus(res, 200, 'metrics');
  const lines = res.body.toString().match(/^etcd_request_errors_total\{[^}]*\} \S+$/gm) ?? [];
  return lines.reduce((n, line) => n + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/**
 * How many requests of global-default (alice's FlowSchema, and bob's) waited over 100 ms in APF's queues, from the
 * server's apiserver_flowcontrol_request_wait_duration_seconds: bob's GETs never wait that long while his p99 meets
 * the goal, so these are alice's requests held back. 0 without APF (no such metric).
 */
async function queuedLong() {
  const res = await httpsRequest('GET', '/metrics');
  expectStatus(res, 200, 'metrics');
  const buckets = {};
  for (const [, labels, value] of res.body
    .toString()
    .matchAll(/^apiserver_flowcontrol_request_wait_duration_seconds_bucket\{([^}]*)\} (\S+)$/gm)) {
    if (!labels.includes('flow_schema="global-default"')) continue;
    const le = labels.match(/le="([^"]*)"/)[1];
    buckets[le] = (buckets[le] ?? 0) + Number(value);
  }
  return (buckets['+Inf'] ?? 0) - (buckets['0.1'] ?? 0);
}

/**
 * Every second until stop(): global-default's APF seats and the longest the event loop stood still (since the last
 * scrape) from /metrics, logged (the admin's scrape is exempt).
 */
function sampleApf(phase) {
  let stopped = false;
  const t0 = now();
  const seats = (text, name) => {
    const re = new RegExp(`^${name}\\{[^}]*priority_level="global-default"[^}]*\\} (\\S+)$`, 'gm');
    return [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const loop = (async () => {
    while (!stopped) {
      const res = await httpsRequest('GET', '/metrics');
      const text = res.body.toString();
      log(
        `  apf ${f1((now() - t0) / 1000)} s (${phase()}): global-default limit ${seats(text, 'apiserver_flowcontrol_current_limit_seats')}` +
          `, executing seats ${seats(text, 'apiserver_flowcontrol_current_executing_seats')}` +
          `, waiting requests ${seats(text, 'apiserver_flowcontrol_current_inqueue_requests')}` +
          `, event loop delay max ${f1(1000 * Number(text.match(/^nodejs_eventloop_lag_max_seconds (\S+)$/m)?.[1]))} ms`,
      );
      await sleep(1000);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

async function runArm(arm, serverConfig, tokens, etcdPid) {
  const child = (ctx.child = forkServerChild(serverConfig, { flags: arm.flags }));
  try {
    ctx.server = { ...(await child.ready), token: tokens.admin };
  } catch (err) {
    if (!(err instanceof FlagRefused)) throw err;
    log(`arm "${arm.label}": NOT MEASURED: ${err.message}`);
    await child.exited;
    return { ...arm, refused: err.reason };
  }
  ctx.pids = { server: ctx.server.pid, etcd: etcdPid, 'bench client': process.pid };
  log(`arm "${arm.label}": server on ${ctx.server.url} (pid ${ctx.server.pid})`);
  try {
    // Warm-up: the second tenant's connection, and the first tenant's first list and create (the server's first
    // write of a kind compiles its schema; no phase should count that).
    for (let i = 0; i < 5; i++)
      expectStatus(await httpsRequest('GET', OWN_PATH, { token: tokens.bob }), 200, 'warm-up GET');
    expectStatus(await httpsRequest('GET', NS_PATH, { token: tokens.alice }), 200, 'warm-up list');
    const key = JSON.stringify({
      apiVersion: `${GROUP}/v1`,
      kind: 'OwnedAccessKey',
      metadata: { generateName: 'flood-', labels: { 'bench-fairness': 'flood' } },
      spec: {},
    });
    expectStatus(await httpsRequest('POST', KEYS_PATH, { token: tokens.alice, body: key }), 201, 'warm-up create');
    const share = args.share ? await shareRows(arm, tokens) : undefined;

    let phase = arm.flood ? 'lists' : 'no flood';
    const gets = await secondTenant(tokens.bob, phase);
    ctx.pids["bob's client"] = gets.pid;
    const sampler = args['sample-apf'] && arm.flood ? sampleApf(() => phase) : undefined;
    const flood = {};
    if (arm.flood) {
      const list = (agent) => drained(ctx.server, 'GET', NS_PATH, { agent, token: tokens.alice, from: FROM.alice });
      flood.lists = await withCpu(`${arm.label}: ${LIST_C} lists`, () => closedLoops(LIST_C, SECONDS, list));
      phase = 'creates';
      gets.phase(phase);
      const create = (agent) =>
        drained(ctx.server, 'POST', KEYS_PATH, { agent, token: tokens.alice, body: key, from: FROM.alice });
      flood.creates = await withCpu(`${arm.label}: ${CREATE_C} creates`, () => closedLoops(CREATE_C, SECONDS, create));
    } else {
      await withCpu(`${arm.label}: no flood`, () => sleep(2 * SECONDS * 1000));
    }
    await sampler?.stop();
    const phases = await gets.stop();
    const storm =
      args['reset-storm'] && arm.flood
        ? await resetStorm(ctx.server, {
            token: tokens.alice,
            from: FROM.alice,
            path: '/openapi/v2',
            getPath: NS_PATH + '?limit=1',
            resets: Number(args.resets),
          })
        : undefined;
    const burst =
      args['connection-burst'] && arm.flood
        ? await withCpu(`${arm.label}: connection burst`, () => connectionBurst(ctx.server, tokens.admin, {}))
        : undefined;
    const result = {
      ...arm,
      share,
      storm,
      burst,
      phases: {},
      etcdErrors: await etcdErrors(),
      queuedLong: await queuedLong(),
    };
    for (const [name, p] of Object.entries(phases)) {
      result.phases[name] = { gets: summary(p.latencies), statuses: p.statuses, flood: flood[name] };
      const s = result.phases[name].gets;
      log(`  ${name}: bob ${s.n} GETs p50 ${f1(s.p50)} ms p99 ${f1(s.p99)} ms; ${byStatus(p.statuses)}`);
      if (flood[name]) log(`  ${name}: alice ${byStatus(flood[name])}`);
    }
    log(`  etcd requests that failed in the server during the arm: ${result.etcdErrors}`);
    log(`  requests of global-default that waited over 100 ms in APF's queues: ${result.queuedLong}`);
    // The next arm starts without this one's keys (they would make its authentication index larger).
    const cleanup = await httpsRequest('DELETE', `${KEYS_PATH}?labelSelector=${encodeURIComponent(FLOOD_LABEL)}`);
    expectStatus(cleanup, 200, 'delete the flood keys');
    return result;
  } finally {
    await child.stop();
  }
}

async function main() {
  const info = machine();
  log('machine', info);

  // Arms whose flags this build refuses are known before anything is seeded.
  const { FlagError, parseFlags } = await import(new URL('config.js', dist).href);
  for (const arm of ARMS) {
    try {
      parseFlags(arm.flags);
    } catch (err) {
      if (!(err instanceof FlagError)) throw err;
      arm.refused = err.message;
      log(`arm "${arm.label}" will not be measured: the server refuses its flags: ${err.message}`);
    }
  }

  const tmp = mkdtempSync(join(os.tmpdir(), 'bench-fairness-'));
  const { etcdProc, serverConfig } = await startEtcd(tmp);
  try {
    const tokens = Object.fromEntries(Object.keys(TENANTS).map((user) => [user, `${user}-${randomUUID()}`]));
    const tokenAuthFile = join(tmp, 'tokens.csv');
    const lines = Object.entries(TENANTS).map(
      ([user, groups]) => `${tokens[user]},${user},uid-${user}${groups.length ? `,"${groups.join(',')}"` : ''}`,
    );
    writeFileSync(tokenAuthFile, `${lines.join('\n')}\n`, { mode: 0o600 });
    const config = { ...serverConfig, tokenAuthFile };

    // Seeding through a server with the build's defaults.
    const seeder = (ctx.child = forkServerChild(config));
    ctx.server = { ...(await seeder.ready), token: tokens.admin };
    log(`seeding ${N} SharedSecrets (alice may read them all) and bob's own`);
    const seedAgent = new https.Agent({ keepAlive: true, maxSockets: 32 });
    const seedSeconds = await seed(seedAgent, 0, N);
    seedAgent.destroy();
    const own = {
      apiVersion: `${GROUP}/v1`,
      kind: 'SharedSecret',
      metadata: { name: OWN_NAME, namespace: NS },
      spec: { displayName: 'bob', owner: { user: 'bob' }, data: { password: 'c2VjcmV0' } },
    };
    expectStatus(await httpsRequest('POST', NS_PATH, { body: JSON.stringify(own) }), 201, `create ${OWN_NAME}`);
    if (args.share)
      for (let i = 0; i < ALICE_OWNS; i++) {
        const owned = {
          ...own,
          metadata: { name: aliceOwn(i), namespace: NS },
          spec: { ...own.spec, owner: { user: 'alice' } },
        };
        expectStatus(
          await httpsRequest('POST', NS_PATH, { body: JSON.stringify(owned) }),
          201,
          `create ${aliceOwn(i)}`,
        );
      }
    await seeder.stop();

    const results = [];
    for (const arm of ARMS) {
      if (arm.refused) results.push(arm);
      else results.push(await runArm(arm, config, tokens, etcdProc.pid));
    }
    console.log(report({ machine: { ...info, loadavgAtEnd: loadavg() }, seedSeconds, results }));
  } finally {
    await ctx.child?.stop();
    await etcdProc.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function report(r) {
  const out = [...headerLines(r.machine, r.machine.loadavgAtEnd, 'Server in a child process, one per arm.')];
  out.push(
    `Seed: ${N} SharedSecrets (32 concurrent POSTs, ${f1(r.seedSeconds)} s), every one readable by alice; bob owns one more.`,
    '',
    `Flood (alice): ${LIST_C} concurrent lists of all ${N} for ${SECONDS} s, then ${CREATE_C} concurrent creates of its own OwnedAccessKeys for ${SECONDS} s (closed loops). Second tenant (bob): ${RATE} GETs/s of its own SharedSecret (open loop, consistent reads), throughout; each GET counts in the phase it was sent in.`,
    '',
    "| Arm | Phase | bob's GETs | p50 ms | p99 ms | max ms | bob's answers by status | alice's answers by status |",
    '|---|---|---|---|---|---|---|---|',
  );
  for (const arm of r.results) {
    if (arm.refused) {
      out.push(`| ${arm.label} | not measured: the server refused its flags (${arm.refused}) | | | | | | |`);
      continue;
    }
    for (const [name, p] of Object.entries(arm.phases))
      out.push(
        `| ${arm.label} | ${name} | ${p.gets.n} | ${f1(p.gets.p50)} | ${f1(p.gets.p99)} | ${f1(p.gets.max)} | ${byStatus(p.statuses)} | ${p.flood ? byStatus(p.flood) : '-'} |`,
      );
  }
  out.push('');
  const measured = r.results.filter((arm) => arm.phases);
  out.push(
    `etcd requests that failed in the server (etcd_request_errors_total) during each arm: ${measured.map((arm) => `${arm.label} ${arm.etcdErrors}`).join('; ')}.`,
    '',
  );
  const firstMessages = [];
  for (const arm of r.results)
    for (const [name, p] of Object.entries(arm.phases ?? {})) {
      const who = [
        ['bob', p.statuses],
        ['alice', p.flood ?? {}],
      ];
      for (const [user, counts] of who)
        for (const [status, message] of Object.entries(counts.messages ?? {}))
          firstMessages.push(`- ${arm.label}, ${name}, ${user}'s first ${status}: ${message}`);
    }
  if (firstMessages.length) out.push('First error message of each status:', '', ...firstMessages, '');
  const baseline = r.results.find((a) => !a.flood && a.phases)?.phases['no flood']?.gets.p99;
  if (baseline) {
    out.push(
      `Goal: bob's p99 under the flood within 3x of its p99 without it (${f1(baseline)} ms), none of bob's GETs answered 429, while alice is throttled (answered 429, or held in APF's queues: requests of global-default that waited over 100 ms there, which bob's GETs do not while they meet the goal).`,
      '',
    );
    for (const arm of r.results.filter((a) => a.flood && a.phases)) {
      const all = Object.values(arm.phases);
      const worst = Math.max(...all.map((p) => p.gets.p99));
      const sum = (counts, status) => all.reduce((n, p) => n + ((counts(p) ?? {})[status] ?? 0), 0);
      const bobFailed = all.reduce(
        (n, p) =>
          n + Object.entries(p.statuses).reduce((k, [s, c]) => k + (s !== '200' && s !== 'messages' ? c : 0), 0),
        0,
      );
      const throttled = sum((p) => p.flood, '429') > 0 || arm.queuedLong > 0;
      const met = worst <= 3 * baseline && sum((p) => p.statuses, '429') === 0 && throttled;
      out.push(
        `- ${arm.label}: worst phase p99 ${f1(worst)} ms = ${f1(worst / baseline)}x baseline; bob: ${sum((p) => p.statuses, '429')} answered 429, ${bobFailed} not 200 in all; alice: ${sum((p) => p.flood, '429')} answered 429, ${arm.queuedLong} requests waited over 100 ms in queue. Goal ${met ? 'met' : 'not met'}.`,
      );
    }
    out.push('');
  }
  const shared = r.results.filter((arm) => arm.share);
  if (shared.length) {
    out.push(
      `Share: ${SHARE_C} closed loops for ${SHARE_SECONDS} s per row in ${SHARE_ROUNDS} rounds that alternate who goes first, requests a second answered 200 (GET: consistent reads of random seeded objects; PATCH: merge patches of random SharedSecrets alice owns). Goal: alice alone at least 0.8x of the admin (system:masters, exempt) for GET and PATCH.`,
      '',
      '| Arm | admin GET/s | alice GET/s | alice/admin (rounds) | admin PATCH/s | alice PATCH/s | alice/admin (rounds) | alice GET/s beside bob | bob GET/s beside alice |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const arm of shared) {
      const s = arm.share;
      const ratio = (verb) =>
        `${f2(s[`alice ${verb}`].rate / s[`admin ${verb}`].rate)} (${f2(Math.min(...s[`${verb} rounds`]))}-${f2(Math.max(...s[`${verb} rounds`]))})`;
      out.push(
        `| ${arm.label} | ${f1(s['admin GET'].rate)} | ${f1(s['alice GET'].rate)} | ${ratio('GET')} | ${f1(s['admin PATCH'].rate)} | ${f1(s['alice PATCH'].rate)} | ${ratio('PATCH')} | ${f1(s['alice GET beside bob'].rate)} | ${f1(s["bob's GETs beside alice"].rate)} |`,
      );
    }
    out.push('');
  }
  for (const arm of r.results.filter((a) => a.storm || a.burst)) {
    out.push(`**${arm.label}**:`, '');
    if (arm.storm) out.push(...resetStormLines(arm.storm));
    if (arm.burst) out.push(...connectionBurstLines(arm.burst));
  }
  out.push(...cpuLines(r.machine.cores));
  return out.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
