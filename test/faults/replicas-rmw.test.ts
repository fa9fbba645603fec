/**
 * Three server processes on one etcd, and 2,000 read-modify-write updates from 64 concurrent clients, each
 * reading an object from one replica and writing it back through another with the resourceVersion it read (again
 * on 409 Conflict, after the Retry-After on 429). Every acknowledged update must be in the final objects exactly
 * once: the count equals the number of acknowledgements, and the list of update ids kept in each object is exactly
 * the set of acknowledged ones, none missing and none twice.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP, secretBody, sharedSecretPath, sharedSecretsPath } from '../support/fixtures.js';
import { PooledClient, recordFigures, rootTokenFile, runPool, secondsSince } from '../support/load.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';

const NS = 'rmw';
const OBJECTS = 16;
/**
 * Enough for every object to be raced over many times (about two conflicts per update: 64 clients on 16 objects), and
 * no more: the races are as real with 2,000 as with 10,000, which took 78 s here and over 240 s with the machine busy.
 */
const UPDATES = 2_000;
const CONCURRENCY = 64;

let etcd: TestEtcd;
let tokens: ReturnType<typeof rootTokenFile>;
const prefix = `/rmw-${randomUUID()}`;
const replicas: ServerProcess[] = [];
const clients: PooledClient[] = [];

beforeAll(async () => {
  etcd = await startTestEtcd();
  tokens = rootTokenFile();
  for (let i = 0; i < 3; i++) {
    replicas.push(
      await startServerProcess({ etcdEndpoint: etcd.endpoint, etcdPrefix: prefix, tokenAuthFile: tokens.file }),
    );
  }
  clients.push(...replicas.map((r) => new PooledClient(r.url, r.caPem, tokens.token, CONCURRENCY)));
}, 300_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(replicas.map((r) => r.stop()));
  await etcd?.stop();
  tokens?.remove();
}, 60_000);

const objectName = (i: number) => `counter-${i}`;

interface Tally {
  acked: string[][];
  /** resourceVersion of each acknowledged write, per object. */
  versions: string[][];
  conflicts: number;
  throttled: number;
  requests: number;
  /** Answers that were neither 2xx, 409 Conflict nor 429 with Retry-After. */
  unexpected: string[];
}

/** One update: read from one replica, increment and append `id`, write through the next; again until acknowledged. */
async function update(t: Tally, obj: number, id: string, first: number): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const reader = clients[(first + attempt) % clients.length];
    const writer = clients[(first + attempt + 1) % clients.length];
    t.requests += 1;
    const got = await reader.get(sharedSecretPath(NS, objectName(obj)));
    if (got.status === 429 && got.headers['retry-after']) {
      t.throttled += 1;
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    if (got.status !== 200) {
      t.unexpected.push(`GET ${got.status} ${got.text}`);
      return;
    }
    const o = got.body;
    const count = Number(o.metadata.annotations.count);
    o.metadata.annotations.count = String(count + 1);
    o.metadata.annotations.ids = o.metadata.annotations.ids ? `${o.metadata.annotations.ids},${id}` : id;
    t.requests += 1;
    const put = await writer.put(sharedSecretPath(NS, objectName(obj)), o);
    if (put.status === 200) {
      if (put.body?.metadata?.annotations?.count !== String(count + 1)) t.unexpected.push(`PUT 200 with ${put.text}`);
      t.acked[obj].push(id);
      t.versions[obj].push(put.body.metadata.resourceVersion);
      return;
    }
    if (put.status === 409 && put.body?.kind === 'Status' && put.body.reason === 'Conflict' && put.body.code === 409) {
      t.conflicts += 1;
      continue;
    }
    if (put.status === 429 && put.headers['retry-after'] && put.body?.kind === 'Status') {
      t.throttled += 1;
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    t.unexpected.push(`PUT ${put.status} ${put.text}`);
    return;
  }
  t.unexpected.push(`update ${id} of ${objectName(obj)} never went through`);
}

describe(`three replicas, ${UPDATES.toLocaleString('en')} concurrent read-modify-write updates`, () => {
  test('every acknowledged update is in the objects exactly once: none lost, none doubled', async () => {
    for (let i = 0; i < OBJECTS; i++) {
      const body = secretBody(objectName(i));
      body.metadata.annotations = { count: '0' };
      const res = await clients[i % 3].post(sharedSecretsPath(NS), body);
      expect(res.status).toBe(201);
    }
    const t: Tally = {
      acked: Array.from({ length: OBJECTS }, () => []),
      versions: Array.from({ length: OBJECTS }, () => []),
      conflicts: 0,
      throttled: 0,
      requests: 0,
      unexpected: [],
    };

    const start = performance.now();
    // Update i goes to object i mod OBJECTS, read first through replica i mod 3: every object and every
    // replica gets its share, and the read and the write of one attempt go to different replicas.
    await runPool(UPDATES, CONCURRENCY, (i) => update(t, i % OBJECTS, `u${i}`, i % 3));
    const seconds = secondsSince(start);

    expect(t.unexpected.slice(0, 5)).toEqual([]);
    const ackedTotal = t.acked.reduce((n, ids) => n + ids.length, 0);
    expect(ackedTotal).toBe(UPDATES);

    // Every replica shows every object with exactly the acknowledged updates.
    for (const c of clients) {
      for (let i = 0; i < OBJECTS; i++) {
        const res = await c.get(sharedSecretPath(NS, objectName(i)));
        expect(res.status).toBe(200);
        const ids: string[] = res.body.metadata.annotations.ids.split(',');
        expect({ name: objectName(i), count: Number(res.body.metadata.annotations.count), ids: ids.length }).toEqual({
          name: objectName(i),
          count: t.acked[i].length,
          ids: t.acked[i].length,
        });
        expect(new Set(ids).size).toBe(ids.length);
        expect([...ids].sort()).toEqual([...t.acked[i]].sort());
        // The last acknowledged write is what is stored.
        expect(res.body.metadata.resourceVersion).toBe(t.versions[i].reduce((a, b) => (BigInt(a) > BigInt(b) ? a : b)));
      }
    }
    // Each acknowledged write made a revision of its own.
    const versions = t.versions.flat();
    expect(new Set(versions).size).toBe(versions.length);

    // And etcd itself holds the same.
    const kv = new Etcd3({ hosts: etcd.endpoint });
    try {
      for (let i = 0; i < OBJECTS; i++) {
        const stored = JSON.parse((await kv.get(`${prefix}/${GROUP}/sharedsecrets/${NS}/${objectName(i)}`).string())!);
        expect(Number(stored.metadata.annotations.count)).toBe(t.acked[i].length);
      }
    } finally {
      kv.close();
    }
    // The races were real.
    expect(t.conflicts).toBeGreaterThan(0);

    recordFigures('replicas-rmw', {
      updates: UPDATES,
      objects: OBJECTS,
      concurrency: CONCURRENCY,
      acknowledged: ackedTotal,
      conflicts: t.conflicts,
      throttled: t.throttled,
      requests: t.requests,
      seconds,
      requestsPerSecond: Math.round(t.requests / seconds),
      updatesPerSecond: Math.round(UPDATES / seconds),
    });
  }, 600_000);
});
