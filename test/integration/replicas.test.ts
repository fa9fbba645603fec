/**
 * Several replicas on one etcd, as separate server processes (node dist/main.js): exactly one leads the
 * controllers; both serve reads and writes and compare-and-swap keeps concurrent read-modify-writes and finalizer
 * changes from being lost; the garbage collector acts once (on the leader only); kill -9 of the leader hands the
 * lease over within seconds, even in the middle of a garbage collection, which then finishes without deleting
 * anything that still has an owner and without leaving anything half-deleted.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, JSON_PATCH, secretBody, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';

const ROOT_TOKEN = `root-${randomBytes(24).toString('hex')}`;
const NS = 'replicas';
const STARTED_LEADING = 'leader election: started leading';
const GC_DELETES = 'garbage collector: deleting object whose owners are gone';

let etcd: TestEtcd;
let dir: string;
let tokenFile: string;
const prefix = `/replicas-${randomUUID()}`;
const replicas: ServerProcess[] = [];

const start = async () => {
  const p = await startServerProcess({
    etcdEndpoint: etcd.endpoint,
    etcdPrefix: prefix,
    tokenAuthFile: tokenFile,
    args: ['--leader-elect-lease-duration=2s'],
  });
  replicas.push(p);
  return p;
};
const alive = () => replicas.filter((r) => !killed.has(r));
const killed = new Set<ServerProcess>();
const client = (r: ServerProcess) => r.client(ROOT_TOKEN);

/** The one live replica that leads (waits for one to), and the others. */
async function leaderAndFollowers(): Promise<{ leader: ServerProcess; followers: ServerProcess[] }> {
  for (let i = 0; i < 100; i++) {
    const leaders = alive().filter((r) => r.count(STARTED_LEADING) > r.count('leader election: stopped leading'));
    if (leaders.length === 1) return { leader: leaders[0], followers: alive().filter((r) => r !== leaders[0]) };
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no single leader among the live replicas');
}

async function kill(r: ServerProcess): Promise<void> {
  killed.add(r);
  await r.kill();
}

async function create(c: HttpClient, name: string, meta: Record<string, unknown> = {}): Promise<any> {
  const body = secretBody(name);
  body.metadata = { ...body.metadata, ...meta };
  const res = await c.post(sharedSecretsPath(NS), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

const ref = (owner: any, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'SharedSecret',
  name: owner.metadata.name,
  uid: owner.metadata.uid,
  ...extra,
});

/** GET, change, PUT with the resourceVersion read; again on 409 (what client-go's RetryOnConflict does). */
async function readModifyWrite(c: HttpClient, name: string, change: (obj: any) => void): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const got = await c.get(sharedSecretPath(NS, name));
    expect(got.status).toBe(200);
    change(got.body);
    const put = await c.put(sharedSecretPath(NS, name), got.body);
    if (put.status === 200) return attempt;
    expect({ status: put.status, reason: put.body?.reason }).toEqual({ status: 409, reason: 'Conflict' });
  }
}

async function names(c: HttpClient, labelSelector: string): Promise<string[]> {
  const res = await c.get(`${sharedSecretsPath(NS)}?labelSelector=${encodeURIComponent(labelSelector)}`);
  expect(res.status).toBe(200);
  return res.body.items.map((o: any) => o.metadata.name).sort();
}

beforeAll(async () => {
  etcd = await startTestEtcd();
  dir = mkdtempSync(join(tmpdir(), 'replicas-'));
  tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${ROOT_TOKEN},root,uid-root,"system:masters"\n`, { mode: 0o600 });
  await Promise.all([start(), start()]);
}, 60_000);

afterAll(async () => {
  await Promise.all(alive().map((r) => r.stop()));
  await etcd?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('two replicas on one etcd', () => {
  test('exactly one of them leads the controllers; the other waits for it', async () => {
    const { leader, followers } = await leaderAndFollowers();
    expect(followers).toHaveLength(1);
    await followers[0].waitForLog('leader election: waiting for the current leader');
    // Some lease renewals later, still the same single leader.
    await new Promise((r) => setTimeout(r, 2500));
    expect(leader.count(STARTED_LEADING)).toBe(1);
    expect(followers[0].count(STARTED_LEADING)).toBe(0);
  });

  test('both serve writes the other one reads at once', async () => {
    const [a, b] = alive();
    const made = await create(client(a), uniq('from-a'));
    const read = await client(b).get(sharedSecretPath(NS, made.metadata.name));
    expect(read.status).toBe(200);
    expect(read.body.metadata.uid).toBe(made.metadata.uid);

    const patched = await client(b).patch(
      sharedSecretPath(NS, made.metadata.name),
      [{ op: 'add', path: '/metadata/labels', value: { by: 'b' } }],
      JSON_PATCH,
    );
    expect(patched.status).toBe(200);
    const again = await client(a).get(sharedSecretPath(NS, made.metadata.name));
    expect(again.body.metadata).toMatchObject({
      labels: { by: 'b' },
      resourceVersion: patched.body.metadata.resourceVersion,
    });
  });

  test('concurrent read-modify-write increments through both replicas lose no update', async () => {
    const name = uniq('counter');
    await create(client(alive()[0]), name, { annotations: { count: '0' } });
    const workers = alive().flatMap((r) => Array.from({ length: 4 }, () => client(r)));
    const PER_WORKER = 15;
    let conflicts = 0;
    await Promise.all(
      workers.map(async (c) => {
        for (let i = 0; i < PER_WORKER; i++) {
          const attempts = await readModifyWrite(c, name, (obj) => {
            obj.metadata.annotations.count = String(Number(obj.metadata.annotations.count) + 1);
          });
          conflicts += attempts - 1;
        }
      }),
    );
    const final = await client(alive()[1]).get(sharedSecretPath(NS, name));
    expect(final.body.metadata.annotations.count).toBe(String(workers.length * PER_WORKER));
    // The races were real: some writes lost their compare-and-swap and had to read again.
    expect(conflicts).toBeGreaterThan(0);
  }, 60_000);

  test('finalizers added and removed at once by two clients on two replicas: none is lost', async () => {
    const name = uniq('finalizers');
    const [a, b] = alive().map(client);
    await create(a, name, { finalizers: ['example.com/base'] });
    const path = sharedSecretPath(NS, name);
    const series = (p: string) => Array.from({ length: 15 }, (_, i) => `example.com/${p}-${i}`);
    // A JSON patch is applied by the server to the latest object; a PUT carries the resourceVersion it read.
    const append = async (c: HttpClient, f: string) => {
      const res = await c.patch(path, [{ op: 'add', path: '/metadata/finalizers/-', value: f }], JSON_PATCH);
      expect(res.status).toBe(200);
    };
    const finalizers = async () => [...((await a.get(path)).body.metadata.finalizers ?? [])].sort();

    // a appends its series with patches while b appends its own with read-modify-write.
    await Promise.all([
      (async () => {
        for (const f of series('a')) await append(a, f);
      })(),
      (async () => {
        for (const f of series('b')) await readModifyWrite(b, name, (obj) => obj.metadata.finalizers.push(f));
      })(),
    ]);
    expect(await finalizers()).toEqual(['example.com/base', ...series('a'), ...series('b')].sort());

    // Now b removes a's one by one while a appends a third series.
    await Promise.all([
      (async () => {
        for (const f of series('c')) await append(a, f);
      })(),
      (async () => {
        for (const f of series('a')) {
          await readModifyWrite(
            b,
            name,
            (obj) => (obj.metadata.finalizers = obj.metadata.finalizers.filter((x: string) => x !== f)),
          );
        }
      })(),
    ]);
    expect(await finalizers()).toEqual(['example.com/base', ...series('b'), ...series('c')].sort());

    // Deleted while finalizers remain; the removal of the last one through the other replica ends it.
    const del = await a.delete(path);
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionTimestamp).toBeDefined();
    expect((await b.patch(path, { metadata: { finalizers: null } }, 'application/merge-patch+json')).status).toBe(200);
    expect((await a.get(path)).status).toBe(404);
  }, 60_000);
});

describe('the garbage collector across replicas', () => {
  test('acts once: only the leader deletes the dependents of a deleted owner, each exactly once', async () => {
    const { leader, followers } = await leaderAndFollowers();
    const c = client(followers[0]);
    const owner = await create(c, uniq('owner'));
    const group = uniq('deps');
    for (let i = 0; i < 20; i++) await create(c, `${group}-${i}`, { labels: { group }, ownerReferences: [ref(owner)] });
    const before = { leader: leader.count(GC_DELETES), follower: followers[0].count(GC_DELETES) };

    // Background (the default): the owner goes at once, the dependents after it.
    const del = await c.delete(sharedSecretPath(NS, owner.metadata.name));
    expect({ status: del.status, kind: del.body.kind, statusText: del.body.status }).toEqual({
      status: 200,
      kind: 'Status',
      statusText: 'Success',
    });
    await waitFor('the dependents to be gone', async () => (await names(c, `group=${group}`)).length === 0, 30_000);

    expect(leader.count(GC_DELETES) - before.leader).toBe(20);
    expect(followers[0].count(GC_DELETES) - before.follower).toBe(0);
  }, 60_000);

  test('kill -9 of the leader: the other replica takes over within seconds and collects garbage', async () => {
    const { leader, followers } = await leaderAndFollowers();
    const next = followers[0];
    await kill(leader);
    // The lease is 2s: the follower must win it soon after it runs out.
    await next.waitForLog(STARTED_LEADING, 15_000);
    await start();

    const c = client(next);
    const owner = await create(c, uniq('owner'));
    const group = uniq('after-kill');
    for (let i = 0; i < 5; i++) await create(c, `${group}-${i}`, { labels: { group }, ownerReferences: [ref(owner)] });
    expect((await c.delete(sharedSecretPath(NS, owner.metadata.name))).status).toBe(200);
    await waitFor('the dependents to be gone', async () => (await names(c, `group=${group}`)).length === 0, 30_000);
    expect((await leaderAndFollowers()).leader).toBe(next);
  }, 60_000);

  test('kill -9 of the leader during a foreground deletion: it finishes on the next leader, and what still has an owner stays', async () => {
    const { leader, followers } = await leaderAndFollowers();
    const c = client(followers[0]);
    const group = uniq('fg');
    const doomed = await create(c, `${group}-doomed`);
    const keeper = await create(c, `${group}-keeper`);
    const N = 120;
    for (let i = 0; i < N; i++) {
      await create(c, `${group}-dep-${i}`, {
        labels: { group, role: 'dep' },
        ownerReferences: [ref(doomed, { blockOwnerDeletion: true })],
      });
    }
    // Owned by both: loses its reference to the doomed owner but is not deleted.
    for (let i = 0; i < 10; i++) {
      await create(c, `${group}-shared-${i}`, {
        labels: { group, role: 'shared' },
        ownerReferences: [ref(doomed, { blockOwnerDeletion: true }), ref(keeper)],
      });
    }
    const before = leader.count(GC_DELETES);

    const del = await c.delete(sharedSecretPath(NS, doomed.metadata.name), {
      body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' },
    });
    expect(del.status).toBe(200);
    expect(del.body.metadata).toMatchObject({ finalizers: ['foregroundDeletion'], deletionGracePeriodSeconds: 0 });
    expect(del.body.metadata.deletionTimestamp).toBeDefined();

    // Some of the dependents are gone, not all: the leader dies in the middle.
    await waitFor('the leader to delete some', () => leader.count(GC_DELETES) - before >= 10, 30_000);
    await kill(leader);
    const left = await names(c, `group=${group},role=dep`);
    expect(left.length).toBeGreaterThan(0);

    await waitFor(
      'the dependents to be gone',
      async () => (await names(c, `group=${group},role=dep`)).length === 0,
      45_000,
    );
    await waitFor(
      'the owner to be gone',
      async () => (await c.get(sharedSecretPath(NS, doomed.metadata.name))).status === 404,
      30_000,
    );

    // The objects with another owner are all there, owned by it alone, and not being deleted.
    const shared = await c.get(
      `${sharedSecretsPath(NS)}?labelSelector=${encodeURIComponent(`group=${group},role=shared`)}`,
    );
    expect(shared.body.items).toHaveLength(10);
    for (const obj of shared.body.items) {
      expect(obj.metadata.ownerReferences).toEqual([ref(keeper)]);
      expect(obj.metadata.deletionTimestamp).toBeUndefined();
    }
    // Nothing is left half-deleted.
    const all = await c.get(sharedSecretsPath(NS));
    expect(all.body.items.filter((o: any) => o.metadata.deletionTimestamp).map((o: any) => o.metadata.name)).toEqual(
      [],
    );
    await start();
  }, 120_000);
});
