/**
 * A server process on a 3-member etcd cluster (--etcd-servers lists all three), under write load from 16 clients.
 *
 * 1. The etcd leader is SIGKILLed: writes resume once the other two elect a new leader (the time is measured and
 *    printed; the test only holds it to a generous 30 s), and no write that got a 2xx is lost. Writes that failed
 *    meanwhile were answered with a 5xx Status (their outcome is unknown: each is as before or as asked, nothing
 *    else). Once writes have resumed, with the old leader still down for 15 s, none may fail.
 * 2. Two of the three members are stopped (no quorum): every request that needs etcd is answered, within a bound
 *    and without hanging, with a 5xx Status (500 ServerTimeout, 503 or 504); /readyz fails, /livez does not; the
 *    process lives on.
 * 3. The two come back: the same server process serves reads and writes again and /readyz passes, with every
 *    acknowledged write still there. The object the outage's writes aimed at is as before or as one of them asked:
 *    their 5xx says the outcome is unknown, and etcd may indeed commit, once quorum is back, a proposal its last
 *    member accepted during the outage.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestEtcdCluster, type TestEtcdCluster } from '../support/etcdcluster.js';
import { MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath } from '../support/fixtures.js';
import type { HttpResponse } from '../support/http.js';
import { PooledClient, recordFigures, rootTokenFile, secondsSince } from '../support/load.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';

const NS = 'cluster';
const WORKERS = 16;
/** Longest any request may take while etcd has no quorum (the server's etcd call deadline is 10 s). */
const ANSWER_BOUND_MS = 20_000;

let cluster: TestEtcdCluster;
let tokens: ReturnType<typeof rootTokenFile>;
let server: ServerProcess;
let client: PooledClient;
const prefix = `/cluster-${randomUUID()}`;

beforeAll(async () => {
  cluster = await startTestEtcdCluster(3);
  tokens = rootTokenFile();
  server = await startServerProcess({
    etcdEndpoint: cluster.endpoints.join(','),
    etcdPrefix: prefix,
    tokenAuthFile: tokens.file,
  });
  client = new PooledClient(server.url, server.caPem, tokens.token, WORKERS * 2);
}, 90_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await cluster?.close();
  tokens?.remove();
}, 60_000);

const seqOf = (o: any) => Number(o?.metadata?.annotations?.seq);
const isStatus5xx = (r: HttpResponse) =>
  r.status >= 500 && r.body?.kind === 'Status' && r.body.code === r.status && [500, 503, 504].includes(r.status);

type Known = { seq: number; rv: string };
interface Unknown {
  name: string;
  before?: Known;
  seq: number;
}

interface Load {
  known: Map<string, Known>;
  unknown: Unknown[];
  /** Send and acknowledgement times (performance.now()) of every acknowledged write. */
  acks: { sent: number; at: number }[];
  failures: { sent: number; at: number; what: string }[];
  /** Failures that were not a 5xx Status (or no answer at all). */
  unexpected: string[];
}

/** One client: creates objects of its own and merge-patches each a few times; a failed write puts it in doubt. */
async function worker(load: Load, id: number, stop: () => boolean): Promise<void> {
  let n = 0;
  while (!stop()) {
    const name = `w${id}-o${n++}`;
    let state: Known | undefined;
    for (let seq = 0; seq < 5 && !stop(); seq++) {
      const sent = performance.now();
      let res: HttpResponse | undefined;
      let error: unknown;
      try {
        res = state
          ? await client.patch(
              sharedSecretPath(NS, name),
              { metadata: { annotations: { seq: String(seq) } } },
              MERGE_PATCH,
              { timeoutMs: ANSWER_BOUND_MS },
            )
          : await client.post(
              sharedSecretsPath(NS),
              { ...secretBody(name), metadata: { name, annotations: { seq: '0' } } },
              { timeoutMs: ANSWER_BOUND_MS },
            );
      } catch (err) {
        error = err;
      }
      const at = performance.now();
      if (res && (res.status === 200 || res.status === 201) && seqOf(res.body) === seq) {
        state = { seq, rv: res.body.metadata.resourceVersion };
        load.known.set(name, state);
        load.acks.push({ sent, at });
        continue;
      }
      load.failures.push({ sent, at, what: res ? `${res.status} ${res.body?.reason}` : String(error) });
      if (res && !isStatus5xx(res)) load.unexpected.push(`${name} seq ${seq}: ${res.status} ${res.text.slice(0, 200)}`);
      if (!res && !/timed out|ECONNRESET|socket hang up/.test(String(error)))
        load.unexpected.push(`${name} seq ${seq}: ${String(error)}`);
      load.known.delete(name);
      load.unknown.push({ name, before: state, seq });
      await new Promise((r) => setTimeout(r, 50));
      break;
    }
  }
}

/** Every acknowledged write is stored as acknowledged; every write in doubt is as before it or as asked. */
async function verify(load: Load): Promise<void> {
  const res = await waitFor(
    'a list',
    async () => {
      const r = await client.get(sharedSecretsPath(NS)).catch(() => undefined);
      return r?.status === 200 && r;
    },
    30_000,
    200,
  );
  const stored = new Map<string, any>(res.body.items.map((o: any) => [o.metadata.name, o]));
  const problems: string[] = [];
  for (const [name, k] of load.known) {
    const o = stored.get(name);
    if (!o) problems.push(`${name}: acknowledged seq ${k.seq}, missing`);
    else if (seqOf(o) !== k.seq || o.metadata.resourceVersion !== k.rv)
      problems.push(
        `${name}: acknowledged seq ${k.seq} rv ${k.rv}, stored seq ${seqOf(o)} rv ${o.metadata.resourceVersion}`,
      );
  }
  for (const u of load.unknown) {
    const o = stored.get(u.name);
    const asBefore = u.before ? !!o && seqOf(o) === u.before.seq && o.metadata.resourceVersion === u.before.rv : !o;
    const asAsked = !!o && seqOf(o) === u.seq;
    if (!asBefore && !asAsked)
      problems.push(`${u.name}: a write of seq ${u.seq} in doubt left ${o ? `seq ${seqOf(o)}` : 'nothing'}`);
  }
  expect(problems).toEqual([]);
}

describe('a 3-member etcd cluster', () => {
  const load: Load = { known: new Map(), unknown: [], acks: [], failures: [], unexpected: [] };
  const figures: Record<string, unknown> = {};

  test('kill -9 of the etcd leader under write load: writes resume within seconds, then none fails, and no acknowledged write is lost', async () => {
    let stopped = false;
    let postFailover: string[] | undefined;
    const workers = Array.from({ length: WORKERS }, (_, i) => worker(load, i, () => stopped));
    try {
      await waitFor('writes before the kill', () => load.acks.length >= 300, 30_000, 10);
      const leader = await cluster.leader();
      const killedAt = performance.now();
      await cluster.kill(leader);
      figures.killedLeader = leader.name;
      // Writes resume: one sent after the kill is acknowledged.
      await waitFor(
        'a write sent after the kill to be acknowledged',
        () => load.acks.some((a) => a.sent > killedAt),
        30_000,
        10,
      );
      const resumed = Math.min(...load.acks.filter((a) => a.sent > killedAt).map((a) => a.at));
      figures.writesResumeAfterLeaderKillSeconds = Math.round(resumed - killedAt) / 1000;
      figures.newLeader = (await cluster.leader()).name;
      // The load goes on with the old leader still down, past the time the etcd client waits before it tries a
      // failed endpoint again (5 s): once writes have resumed, none may fail.
      const acksAtResume = load.acks.length;
      await new Promise((r) => setTimeout(r, Math.max(0, killedAt + 15_000 - performance.now())));
      figures.acknowledgedAfterResume = load.acks.length - acksAtResume;
      postFailover = load.failures
        .filter((f) => f.sent > resumed + 1000)
        .map((f) => `${Math.round(f.at - killedAt)} ms after the kill: ${f.what}`);
      // The longest time without any acknowledgement around the kill.
      const around = load.acks
        .map((a) => a.at)
        .filter((t) => t > killedAt - 1000)
        .sort((a, b) => a - b);
      figures.longestGapWithoutAcksSeconds =
        Math.round(Math.max(0, ...around.slice(1).map((t, i) => t - around[i]), around[0] - killedAt)) / 1000;
      figures.failedWrites = load.failures
        .map((f) => `${f.what}${f.at < killedAt ? ' (before the kill)' : ''}`)
        .reduce<Record<string, number>>((m, w) => ((m[w] = (m[w] ?? 0) + 1), m), {});
    } finally {
      stopped = true;
      await Promise.all(workers);
    }
    expect(load.unexpected).toEqual([]);
    figures.acknowledgedWrites = load.acks.length;
    figures.writesInDoubt = load.unknown.length;
    await verify(load);
    // With quorum intact and a leader elected, the one member still down must cost no request.
    expect(postFailover).toEqual([]);
  }, 120_000);

  test('without quorum: requests get a 5xx Status within the bound, /readyz fails, the process lives; back with quorum: the same process serves again', async () => {
    // The killed member back first: all three up.
    for (const m of cluster.members) await cluster.start(m);
    await cluster.waitHealthy();
    // The object the outage's requests aim at: a write answered 5xx has an unknown outcome (etcd may commit a
    // proposal its last member accepted once quorum is back), so it is checked apart from the load's objects.
    const target = `before-${randomUUID().slice(0, 8)}`;
    const created = await waitFor(
      'the server to write again',
      async () => {
        const r = await client.post(sharedSecretsPath(NS), secretBody(target)).catch(() => undefined);
        return r?.status === 201 && r;
      },
      30_000,
      200,
    );

    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader)!;
    const stopping = performance.now();
    await Promise.all([cluster.stop(leader), cluster.stop(follower)]);
    const lostAt = performance.now();
    figures.twoMembersStopSeconds = Math.round(lostAt - stopping) / 1000;

    // Every kind of request that needs etcd: a 5xx Status, in time; at once (before the server can know), and
    // again once /readyz has failed.
    const requests: [string, () => Promise<HttpResponse>][] = [
      [
        'create',
        () =>
          client.post(sharedSecretsPath(NS), secretBody(`during-${randomUUID().slice(0, 8)}`), {
            timeoutMs: ANSWER_BOUND_MS,
          }),
      ],
      ['get', () => client.get(sharedSecretPath(NS, target), { timeoutMs: ANSWER_BOUND_MS })],
      ['list', () => client.get(sharedSecretsPath(NS), { timeoutMs: ANSWER_BOUND_MS })],
      [
        'merge patch',
        () =>
          client.patch(sharedSecretPath(NS, target), { metadata: { labels: { during: 'outage' } } }, MERGE_PATCH, {
            timeoutMs: ANSWER_BOUND_MS,
          }),
      ],
      ['delete', () => client.delete(sharedSecretPath(NS, target), { timeoutMs: ANSWER_BOUND_MS })],
    ];
    const latencies: Record<string, number[]> = {};
    const problems: string[] = [];
    const ask = async (what: string, send: () => Promise<HttpResponse>) => {
      const t0 = performance.now();
      let res: HttpResponse | undefined;
      try {
        res = await send();
      } catch (err) {
        problems.push(`${what}: no answer (${String(err)})`);
        return;
      }
      (latencies[what] ??= []).push(Math.round(performance.now() - t0));
      if (!isStatus5xx(res)) problems.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    };
    await Promise.all(requests.map(([what, send]) => ask(`${what} at once`, send)));

    // /readyz fails soon (the etcd check or the probe notices) while /livez stays fine.
    await waitFor(
      '/readyz to fail',
      async () => (await client.get('/readyz', { timeoutMs: ANSWER_BOUND_MS })).status !== 200,
      30_000,
      200,
    );
    figures.readyzFailsAfterQuorumLossSeconds = secondsSince(lostAt);
    expect((await client.get('/livez')).status).toBe(200);

    for (let round = 0; round < 3; round++) {
      for (const [what, send] of requests) {
        await ask(what, send);
      }
    }
    figures.answerMsWithoutQuorum = latencies;
    expect(problems).toEqual([]);
    // Still the same process, still answering.
    expect(() => process.kill(server.pid, 0)).not.toThrow();
    expect((await client.get('/livez')).status).toBe(200);

    // Quorum again: the same process recovers by itself.
    const backAt = performance.now();
    await Promise.all([cluster.start(leader), cluster.start(follower)]);
    await cluster.waitHealthy();
    await waitFor(
      'a write to succeed again',
      async () =>
        (
          await client
            .post(sharedSecretsPath(NS), secretBody(`after-${randomUUID().slice(0, 8)}`))
            .catch(() => undefined)
        )?.status === 201,
      60_000,
      200,
    );
    figures.writesResumeAfterQuorumBackSeconds = secondsSince(backAt);
    await waitFor('/readyz to pass', async () => (await client.get('/readyz')).status === 200, 60_000, 200);
    figures.readyzPassesAfterQuorumBackSeconds = secondsSince(backAt);
    expect(server.count('serving')).toBe(1);
    // Nothing acknowledged before is lost; the outage's target is as created, as patched, or deleted.
    await verify(load);
    const after = await client.get(sharedSecretPath(NS, target));
    if (after.status === 200) {
      const unchanged = after.body.metadata.resourceVersion === created.body.metadata.resourceVersion;
      expect(after.body.metadata.labels ?? {}).toEqual(unchanged ? {} : { during: 'outage' });
      figures.outageTargetAfterQuorumBack = unchanged ? 'as created' : 'patched';
    } else {
      expect(after.status).toBe(404);
      figures.outageTargetAfterQuorumBack = 'deleted';
    }
    recordFigures('etcd-cluster', figures);
  }, 150_000);
});
