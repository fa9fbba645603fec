/**
 * kill -9 of a server process in the middle of write load. Two replicas on one etcd take creates, updates (PUT,
 * merge patch, JSON patch) and deletes from 48 concurrent clients; one replica is SIGKILLed while requests are in
 * flight, the other keeps taking writes. Four rounds, alternating the victim, which is started again after each.
 *
 * What a user relies on: every write that got a 2xx is there, exactly as acknowledged (same content, same
 * resourceVersion; a deleted object is gone), seen through the surviving replica and through the restarted one.
 * A write that got no answer may or may not have happened, but nothing else: the object is either as before it
 * or as the write would have made it. Nothing appears that no client ever asked for.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { JSON_PATCH, MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath } from '../support/fixtures.js';
import type { HttpResponse } from '../support/http.js';
import { PooledClient, recordFigures, rootTokenFile, secondsSince } from '../support/load.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';

const WORKERS = 48;
const ROUNDS = 4;
/** Acknowledged writes in a round before the kill, and on the survivor after it. */
const BEFORE_KILL = 1500;
const AFTER_KILL = 1000;

let etcd: TestEtcd;
let tokens: ReturnType<typeof rootTokenFile>;
const prefix = `/kill-${randomUUID()}`;

interface Replica {
  process: ServerProcess;
  client: PooledClient;
  dead: boolean;
}
const replicas: Replica[] = [];

async function startReplica(): Promise<Replica> {
  const process = await startServerProcess({
    etcdEndpoint: etcd.endpoint,
    etcdPrefix: prefix,
    tokenAuthFile: tokens.file,
  });
  return { process, client: new PooledClient(process.url, process.caPem, tokens.token, WORKERS), dead: false };
}

beforeAll(async () => {
  etcd = await startTestEtcd();
  tokens = rootTokenFile();
  replicas.push(await startReplica(), await startReplica());
}, 90_000);

afterAll(async () => {
  for (const r of replicas) r.client.close();
  await Promise.all(replicas.map((r) => r.process.stop()));
  await etcd?.stop();
  tokens?.remove();
}, 60_000);

/** What a client knows of one object from the answers it got: present with seq and resourceVersion, or absent. */
type Known = { present: true; seq: number; rv: string } | { present: false };
/** A write that got no answer: the object was `before` it, and would be `after` it. */
interface Unknown {
  name: string;
  op: string;
  before: Known;
  after: { present: true; seq: number } | { present: false };
}

interface Round {
  ns: string;
  known: Map<string, Known>;
  unknown: Unknown[];
  acked: number;
  ackedAfterKill: number;
  killed: boolean;
  /** Answers no client should get (non-2xx, or a survivor's connection failing). */
  unexpected: string[];
  ops: Record<string, number>;
}

const seqOf = (o: any) => Number(o?.metadata?.annotations?.seq);

/** One client: works through objects of its own, one write at a time, until told to stop or its replica dies. */
async function worker(round: Round, replica: Replica, id: number, stop: () => boolean): Promise<void> {
  const c = replica.client;
  let n = 0;
  let name = `w${id}-o${n}`;
  let state: Known = { present: false };
  while (!stop()) {
    let op: string;
    let after: Unknown['after'];
    let send: () => Promise<HttpResponse>;
    const path = sharedSecretPath(round.ns, name);
    if (!state.present) {
      op = 'create';
      after = { present: true, seq: 0 };
      const body = secretBody(name);
      body.metadata.annotations = { seq: '0' };
      send = () => c.post(sharedSecretsPath(round.ns), body);
    } else {
      const seq: number = state.seq + 1;
      const roll = Math.random();
      if (roll < 0.1) {
        op = 'delete';
        after = { present: false };
        send = () => c.delete(path);
      } else if (roll < 0.5) {
        op = 'put';
        after = { present: true, seq };
        const body = secretBody(name);
        body.metadata.annotations = { seq: String(seq) };
        body.metadata.resourceVersion = state.rv;
        body.spec.description = `update ${seq}`;
        send = () => c.put(path, body);
      } else if (roll < 0.8) {
        op = 'merge-patch';
        after = { present: true, seq };
        send = () =>
          c.patch(
            path,
            { metadata: { annotations: { seq: String(seq) } }, spec: { description: `patch ${seq}` } },
            MERGE_PATCH,
          );
      } else {
        op = 'json-patch';
        after = { present: true, seq };
        send = () =>
          c.patch(
            path,
            [
              { op: 'test', path: '/metadata/resourceVersion', value: state.present ? state.rv : '' },
              { op: 'replace', path: '/metadata/annotations/seq', value: String(seq) },
            ],
            JSON_PATCH,
          );
      }
    }
    let res: HttpResponse;
    try {
      res = await send();
    } catch (err) {
      // No answer: only acceptable from the replica that was killed. This object is in doubt from now on.
      if (!replica.dead) round.unexpected.push(`${op} ${name} on a live replica: ${String(err)}`);
      round.unknown.push({ name, op, before: state, after });
      round.known.delete(name);
      return;
    }
    const ok = op === 'create' ? res.status === 201 : res.status === 200;
    if (!ok || (after.present && seqOf(res.body) !== after.seq)) {
      round.unexpected.push(`${op} ${name}: ${res.status} ${res.text.slice(0, 300)}`);
      return;
    }
    state = after.present
      ? { present: true, seq: after.seq, rv: res.body.metadata.resourceVersion }
      : { present: false };
    round.known.set(name, state);
    round.acked += 1;
    round.ops[op] = (round.ops[op] ?? 0) + 1;
    if (round.killed) round.ackedAfterKill += 1;
    if (!state.present) {
      n += 1;
      name = `w${id}-o${n}`;
    }
  }
}

/** Checks what `c` shows of the round against what the clients were told; returns how many unanswered writes happened. */
async function verify(round: Round, c: PooledClient): Promise<{ unanswered: number; applied: number }> {
  const res = await c.get(sharedSecretsPath(round.ns));
  expect(res.status).toBe(200);
  const stored = new Map<string, any>(res.body.items.map((o: any) => [o.metadata.name, o]));
  const problems: string[] = [];
  for (const [name, k] of round.known) {
    const o = stored.get(name);
    if (!k.present && o) problems.push(`${name}: deleted with a 200, still there`);
    if (k.present && !o) problems.push(`${name}: acknowledged (seq ${k.seq}, rv ${k.rv}), missing`);
    if (k.present && o && (seqOf(o) !== k.seq || o.metadata.resourceVersion !== k.rv)) {
      problems.push(
        `${name}: acknowledged seq ${k.seq} rv ${k.rv}, stored seq ${seqOf(o)} rv ${o.metadata.resourceVersion}`,
      );
    }
  }
  let applied = 0;
  for (const u of round.unknown) {
    const o = stored.get(u.name);
    const asBefore = u.before.present
      ? !!o && o.metadata.resourceVersion === u.before.rv && seqOf(o) === u.before.seq
      : !o;
    const asAfter = u.after.present ? !!o && seqOf(o) === u.after.seq : !o;
    if (asAfter && !asBefore) applied += 1;
    if (!asBefore && !asAfter)
      problems.push(
        `${u.name}: unanswered ${u.op} left it neither as before nor as after: ${o ? `seq ${seqOf(o)} rv ${o.metadata.resourceVersion}` : 'absent'}`,
      );
  }
  const attempted = new Set([...round.known.keys(), ...round.unknown.map((u) => u.name)]);
  for (const name of stored.keys()) if (!attempted.has(name)) problems.push(`${name}: exists, but no client wrote it`);
  expect(problems).toEqual([]);
  return { unanswered: round.unknown.length, applied };
}

describe('kill -9 of a replica under write load', () => {
  test('every acknowledged write survives, seen through the other replica and through the restarted one; unanswered ones are all or nothing', async () => {
    const figures: object[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const round: Round = {
        ns: `kill-r${r}`,
        known: new Map(),
        unknown: [],
        acked: 0,
        ackedAfterKill: 0,
        killed: false,
        unexpected: [],
        ops: {},
      };
      const victimIndex = r % 2;
      const victim = replicas[victimIndex];
      const survivor = replicas[1 - victimIndex];
      let stopped = false;
      const start = performance.now();
      const workers = Array.from({ length: WORKERS }, (_, i) => {
        const replica = i % 2 === victimIndex ? victim : survivor;
        return worker(round, replica, i, () => stopped || (replica.dead && replica === victim));
      });
      const failOn = () => (round.unexpected.length ? round.unexpected : undefined);

      await waitFor('writes before the kill', () => failOn() ?? round.acked >= BEFORE_KILL, 60_000, 5);
      victim.dead = true;
      await victim.process.kill();
      round.killed = true;
      const killedAt = performance.now();
      await waitFor(
        'writes on the survivor after the kill',
        () => failOn() ?? round.ackedAfterKill >= AFTER_KILL,
        60_000,
        5,
      );
      stopped = true;
      await Promise.all(workers);
      expect(round.unexpected).toEqual([]);

      const throughSurvivor = await verify(round, survivor.client);
      // A new process in the dead one's place, starting from etcd alone.
      victim.client.close();
      const restarted = await startReplica();
      replicas[victimIndex] = restarted;
      const throughRestarted = await verify(round, restarted.client);
      expect(throughRestarted).toEqual(throughSurvivor);
      figures.push({
        round: r,
        acknowledged: round.acked,
        ops: round.ops,
        ackedAfterKill: round.ackedAfterKill,
        unanswered: throughSurvivor.unanswered,
        unansweredApplied: throughSurvivor.applied,
        objects: round.known.size + round.unknown.length,
        secondsBeforeKill: Math.round(killedAt - start) / 1000,
        secondsUnderLoad: secondsSince(start),
      });
    }
    recordFigures('kill-under-load', figures);
  }, 180_000);
});
