/**
 * Informers of @kubernetes/client-node (makeInformer: list, then watch from the list's resourceVersion; re-watch
 * when a stream ends; re-list on 410 Gone) on sharedsecrets through a server process, while writers keep
 * creating, updating and deleting objects in two namespaces and etcd goes through: a restart; compactions of its
 * whole history; and a compaction past the server's watch cache followed by a restart (the cache lists again and
 * ends its watches, and the informers' resourceVersions are too old: 410 and a re-list).
 *
 * What a controller author relies on, checked for each informer:
 * - in the end its cache equals the server's state (same objects, same resourceVersions), which is what the
 *   writers were told: every change made is seen, the latest version of every object is delivered;
 * - 'add' comes once per object (names are never reused here): an object the informer already had is never
 *   added again by a re-list; it comes as an 'update' when it changed meanwhile, or not at all;
 * - per object, events only move forward: resourceVersions and the writers' sequence numbers strictly increase,
 *   and nothing follows a 'delete';
 * - every object it had that was deleted is reported deleted.
 * An informer stops on an error other than 410 (client-node's contract); like a controller, the test starts it
 * again on 'error', and counts the errors.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { compactEtcd, startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP, MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath } from '../support/fixtures.js';
import { GROUP_PATH, type HttpResponse } from '../support/http.js';
import { PooledClient, recordFigures, rootTokenFile, secondsSince } from '../support/load.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';

const NAMESPACES = ['outage-a', 'outage-b'];
const WRITERS = 8;

let etcd: TestEtcd;
let kv: Etcd3;
let tokens: ReturnType<typeof rootTokenFile>;
let server: ServerProcess;
let client: PooledClient;
let kc: k8s.KubeConfig;
const prefix = `/outage-${randomUUID()}`;

beforeAll(async () => {
  etcd = await startTestEtcd();
  kv = new Etcd3({ hosts: etcd.endpoint });
  tokens = rootTokenFile();
  server = await startServerProcess({
    etcdEndpoint: etcd.endpoint,
    etcdPrefix: prefix,
    tokenAuthFile: tokens.file,
    args: ['--etcd-compaction-interval=0'],
  });
  client = new PooledClient(server.url, server.caPem, tokens.token, WRITERS * 2);
  kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'server', server: server.url, caData: Buffer.from(server.caPem).toString('base64') }],
    users: [{ name: 'root', token: tokens.token }],
    contexts: [{ name: 'root', cluster: 'server', user: 'root' }],
    currentContext: 'root',
  });
}, 60_000);

afterAll(async () => {
  await stopInformers();
  client?.close();
  kv?.close();
  await server?.stop();
  await etcd?.stop();
  tokens?.remove();
}, 60_000);

type Obj = k8s.KubernetesObject;

interface Seen {
  type: 'add' | 'update' | 'delete';
  key: string;
  rv: string;
  seq: number;
}

interface Recorded {
  name: string;
  informer: k8s.Informer<Obj> & k8s.ObjectCache<Obj>;
  events: Seen[];
  errors: string[];
  lists: number;
  stopped: boolean;
}

const keyOf = (o: Obj) => `${o.metadata?.namespace}/${o.metadata?.name}`;
const seqOf = (o: any) => Number(o?.metadata?.annotations?.seq);

const informers: Recorded[] = [];

async function stopInformers(): Promise<void> {
  for (const rec of informers) rec.stopped = true;
  for (const rec of informers) await rec.informer.stop();
}

async function startInformer(name: string, path: string, list: () => Promise<any>): Promise<Recorded> {
  const rec = { name, events: [], errors: [], lists: 0, stopped: false } as unknown as Recorded;
  rec.informer = k8s.makeInformer<Obj>(kc, path, () => {
    rec.lists += 1;
    return list();
  });
  const record = (type: Seen['type']) => (o: Obj) =>
    rec.events.push({ type, key: keyOf(o), rv: o.metadata?.resourceVersion ?? '', seq: seqOf(o) });
  rec.informer.on('add', record('add'));
  rec.informer.on('update', record('update'));
  rec.informer.on('delete', record('delete'));
  // client-node stops an informer on any error but 410; a controller starts it again.
  rec.informer.on('error', (err: any) => {
    if (rec.stopped) return; // the abort of stop() itself
    rec.errors.push(String(err?.statusCode ?? err?.code ?? err?.message ?? err));
    setTimeout(() => {
      if (!rec.stopped) void rec.informer.start().catch(() => {});
    }, 200);
  });
  informers.push(rec);
  await rec.informer.start();
  return rec;
}

/** What the writers were told, per object key: its seq, or deleted. */
interface Truth {
  state: Map<string, { seq: number } | 'deleted'>;
  writes: number;
  retries: number;
  /** Answers other than success, 5xx/connection failures while etcd is away, and their idempotent repeats. */
  unexpected: string[];
}

/** Pauses the writers between two writes (none in flight), and lets them go again. */
class Gate {
  private closed?: Promise<void>;
  private open?: () => void;
  private active = 0;
  private idle?: () => void;
  async enter(): Promise<void> {
    while (this.closed) await this.closed;
    this.active += 1;
  }
  leave(): void {
    this.active -= 1;
    if (this.active === 0) this.idle?.();
  }
  async pause(): Promise<void> {
    this.closed = new Promise((r) => (this.open = r));
    if (this.active > 0) await new Promise<void>((r) => (this.idle = r));
    this.idle = undefined;
  }
  resume(): void {
    this.closed = undefined;
    this.open?.();
  }
}

/**
 * Sends one write until it gets a definite answer. While etcd is away answers are 5xx or none at all; repeats
 * are safe: a create that happened answers 409 AlreadyExists, a patch sets the same values again, a delete that
 * happened answers 404.
 */
async function definitely(
  t: Truth,
  send: () => Promise<HttpResponse>,
  done: (r: HttpResponse) => boolean,
  what: string,
): Promise<HttpResponse> {
  for (let attempt = 0; ; attempt++) {
    let res: HttpResponse | undefined;
    try {
      res = await send();
    } catch {
      res = undefined;
    }
    if (res && done(res)) return res;
    if (res && res.status < 500 && res.status !== 429) {
      t.unexpected.push(`${what}: ${res.status} ${res.text.slice(0, 300)}`);
      return res;
    }
    if (res && res.body?.kind !== 'Status')
      t.unexpected.push(`${what}: ${res.status} without a Status: ${res.text.slice(0, 300)}`);
    if (attempt > 600) throw new Error(`${what} never got through; last ${res?.status} ${res?.text}`);
    t.retries += 1;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function writer(t: Truth, gate: Gate, id: number, stop: () => boolean): Promise<void> {
  const live: { ns: string; name: string; seq: number }[] = [];
  let made = 0;
  const opts = { timeoutMs: 20_000 };
  while (!stop()) {
    await gate.enter();
    try {
      const roll = Math.random();
      if (live.length < 3 || roll < 0.25) {
        const ns = NAMESPACES[made % NAMESPACES.length];
        const name = `w${id}-${made++}`;
        const body = secretBody(name);
        body.metadata.annotations = { seq: '0' };
        await definitely(
          t,
          () => client.post(sharedSecretsPath(ns), body, opts),
          (r) => r.status === 201 || (r.status === 409 && r.body?.reason === 'AlreadyExists'),
          `create ${ns}/${name}`,
        );
        live.push({ ns, name, seq: 0 });
        t.state.set(`${ns}/${name}`, { seq: 0 });
      } else if (roll < 0.85) {
        const o = live[Math.floor(Math.random() * live.length)];
        const seq = o.seq + 1;
        await definitely(
          t,
          () =>
            client.patch(
              sharedSecretPath(o.ns, o.name),
              { metadata: { annotations: { seq: String(seq) } }, spec: { description: `seq ${seq}` } },
              MERGE_PATCH,
              opts,
            ),
          (r) => r.status === 200 && seqOf(r.body) === seq,
          `patch ${o.ns}/${o.name}`,
        );
        o.seq = seq;
        t.state.set(`${o.ns}/${o.name}`, { seq });
      } else {
        const [o] = live.splice(Math.floor(Math.random() * live.length), 1);
        await definitely(
          t,
          () => client.delete(sharedSecretPath(o.ns, o.name), opts),
          (r) => r.status === 200 || r.status === 404,
          `delete ${o.ns}/${o.name}`,
        );
        t.state.set(`${o.ns}/${o.name}`, 'deleted');
      }
      t.writes += 1;
    } finally {
      gate.leave();
    }
  }
}

/** The server's objects in `namespaces` (all when undefined), key → resourceVersion. */
async function serverState(namespaces?: string[]): Promise<Map<string, { rv: string; seq: number }>> {
  const res = await client.get(`${GROUP_PATH}/sharedsecrets`);
  expect(res.status).toBe(200);
  const items: any[] = res.body.items.filter((o: any) => !namespaces || namespaces.includes(o.metadata.namespace));
  return new Map(
    items.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, { rv: o.metadata.resourceVersion, seq: seqOf(o) }]),
  );
}

function cacheState(rec: Recorded): Map<string, string> {
  return new Map(rec.informer.list().map((o) => [keyOf(o), o.metadata?.resourceVersion ?? '']));
}

/** The per-object rules every informer must keep; returns the violations. */
function eventRules(rec: Recorded): string[] {
  const problems: string[] = [];
  const byKey = new Map<string, Seen[]>();
  for (const e of rec.events) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
  for (const [key, events] of byKey) {
    const adds = events.filter((e) => e.type === 'add').length;
    if (adds !== 1) problems.push(`${rec.name}: ${key} added ${adds} times: ${JSON.stringify(events)}`);
    if (events[0].type !== 'add') problems.push(`${rec.name}: ${key} first seen as ${events[0].type}`);
    const del = events.findIndex((e) => e.type === 'delete');
    if (del >= 0 && del !== events.length - 1)
      problems.push(`${rec.name}: ${key} has events after its delete: ${JSON.stringify(events)}`);
    const changes = events.filter((e) => e.type !== 'delete');
    for (let i = 1; i < changes.length; i++) {
      if (!(BigInt(changes[i].rv) > BigInt(changes[i - 1].rv) && changes[i].seq > changes[i - 1].seq)) {
        problems.push(
          `${rec.name}: ${key} went from rv ${changes[i - 1].rv} seq ${changes[i - 1].seq} to rv ${changes[i].rv} seq ${changes[i].seq}`,
        );
      }
    }
  }
  return problems;
}

describe('informers across etcd restarts and compactions, under writes', () => {
  test('end in the server state, add each object once, move forward only, and report every delete', async () => {
    const figures: Record<string, unknown> = {};
    const truth: Truth = { state: new Map(), writes: 0, retries: 0, unexpected: [] };
    const gate = new Gate();
    let stopped = false;
    const writers = Array.from({ length: WRITERS }, (_, i) => writer(truth, gate, i, () => stopped));
    const nsOf = (rec: Recorded) => (rec.name === 'namespaced' ? [NAMESPACES[0]] : undefined);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const writesNow = () => truth.writes;
    const start = performance.now();
    try {
      const api = kc.makeApiClient(k8s.CustomObjectsApi);
      await startInformer('namespaced', sharedSecretsPath(NAMESPACES[0]), () =>
        api.listNamespacedCustomObject({
          group: GROUP,
          version: 'v1',
          namespace: NAMESPACES[0],
          plural: 'sharedsecrets',
        }),
      );
      await startInformer('all-namespaces', `${GROUP_PATH}/sharedsecrets`, () =>
        api.listClusterCustomObject({ group: GROUP, version: 'v1', plural: 'sharedsecrets' }),
      );

      // 1. etcd restarts under the writes.
      await sleep(1500);
      let w = writesNow();
      let t0 = performance.now();
      await etcd.restart();
      figures.restartSeconds = secondsSince(t0);
      await waitFor('writes after the etcd restart', () => writesNow() > w + WRITERS, 30_000);
      figures.writesResumeAfterRestartSeconds = secondsSince(t0);

      // 2. etcd's whole history compacted, five times, under the writes.
      for (let i = 0; i < 5; i++) {
        await sleep(300);
        await compactEtcd(kv);
      }
      await sleep(1000);

      // 3. A compaction past everything the server's watch cache has seen, then a restart: the cache resumes from a
      // compacted revision, lists again and ends its watches; the informers come back with old resourceVersions.
      const listsBefore = informers.map((r) => r.lists);
      await gate.pause();
      // (Several revisions: etcd's watch resumes after the last revision in a response header it got.)
      for (let i = 0; i < 3; i++) await kv.put(`/outage-filler/${randomUUID()}`).value(String(i));
      await compactEtcd(kv);
      await etcd.kill();
      gate.resume();
      await sleep(500);
      t0 = performance.now();
      w = writesNow();
      await etcd.restart();
      await waitFor('writes after the compaction and restart', () => writesNow() > w + WRITERS, 30_000);
      await waitFor('the informers to list again', () => informers.every((r, i) => r.lists > listsBefore[i]), 30_000);
      figures.relistAfterCompactedRestartSeconds = secondsSince(t0);
      await sleep(1500);
    } finally {
      stopped = true;
      gate.resume();
      await Promise.allSettled(writers);
    }

    // Writes stop; every informer must come to the server's state.
    const stoppedAt = performance.now();
    expect(truth.unexpected.slice(0, 5)).toEqual([]);
    const all = await serverState();
    // The server holds what the writers were told.
    const told = [...truth.state]
      .filter(([, s]) => s !== 'deleted')
      .map(([k, s]) => `${k}#${(s as { seq: number }).seq}`)
      .sort();
    expect([...all].map(([k, s]) => `${k}#${s.seq}`).sort()).toEqual(told);

    for (const rec of informers) {
      const want = await serverState(nsOf(rec));
      const wanted = JSON.stringify([...want].map(([k, s]) => [k, s.rv]).sort());
      await waitFor(
        `the ${rec.name} informer's cache to equal the server`,
        () => JSON.stringify([...cacheState(rec)].sort()) === wanted,
        30_000,
        50,
      );
    }
    figures.convergeAfterWritesStopSeconds = secondsSince(stoppedAt);
    await stopInformers();

    for (const rec of informers) {
      const want = await serverState(nsOf(rec));
      expect(eventRules(rec)).toEqual([]);
      // The last event of every object is its current version; every deleted object it had was deleted.
      const last = new Map<string, Seen>();
      for (const e of rec.events) last.set(e.key, e);
      for (const [key, s] of want)
        expect({ key, last: last.get(key) && { type: last.get(key)!.type, rv: last.get(key)!.rv } }).toEqual({
          key,
          last: { type: expect.stringMatching(/^(add|update)$/), rv: s.rv },
        });
      for (const [key, e] of last) if (!want.has(key)) expect({ key, type: e.type }).toEqual({ key, type: 'delete' });
      // The compaction did cut them off: each listed again.
      expect(rec.lists).toBeGreaterThanOrEqual(2);
    }
    figures.seconds = secondsSince(start);
    figures.writes = truth.writes;
    figures.writeRetriesWhileEtcdAway = truth.retries;
    figures.objectsAtEnd = all.size;
    figures.watchCacheRelists = server.count(/^watch cache: the etcd watch was lost/);
    figures.informers = informers.map((r) => ({
      name: r.name,
      events: r.events.length,
      lists: r.lists,
      errors: r.errors,
    }));
    recordFigures('watch-across-outage', figures);
  }, 150_000);
});
