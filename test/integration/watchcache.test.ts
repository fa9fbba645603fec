/**
 * The watch cache against a real etcd: what it holds costs about the objects' JSON (it keeps them encoded, decoding
 * one only for a reader that looks inside), its history is bounded by bytes as well as by events, a fill of many
 * objects reads them in pages, selectors read what the cache keeps beside each JSON, and a watch of many objects
 * does not hold the event loop while it sends them.
 */
import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Etcd3 } from 'etcd3';
import { TooOldResourceVersion, WatchCache, type CacheEvent } from '../../src/storage/cacher.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { cachedAttributes } from '../../src/registry/registry.js';
import { ResourceReader } from '../../src/storage/reader.js';
import { decoded } from '../../src/apimachinery/encoded.js';
import { encodeWithCopy, withRevision } from '../../src/storage/codec.js';
import { predicate } from '../../src/http/listoptions.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { waitFor } from '../support/wait.js';

let etcd: TestEtcd;
let storage: EtcdStorage;
let raw: Etcd3;

beforeAll(async () => {
  etcd = await startTestEtcd();
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
  raw = new Etcd3({ hosts: etcd.endpoint });
});
afterAll(async () => {
  raw?.close();
  await storage?.close();
  await etcd?.stop();
});

/** How long a wait on the cache (an event reaching it, a stop) may take on a busy machine before it counts as never. */
const FRESH_MS = 30_000;
// Tests of 5,000 objects: about 5 s here with the machine's two cores shared, 10 s with them busy several times over.
jest.setTimeout(120_000);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A reader of SharedSecrets served from `cache`. */
function secretsReader(cache: WatchCache<KubeObject>): ResourceReader {
  return new ResourceReader(
    {
      apiVersion: 'management.platform.sh/v1',
      listKind: 'SharedSecretList',
      groupResource: { group: '', resource: '' },
    },
    storage,
    cache,
  );
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** About 1 KiB of JSON, shaped like a SharedSecret: labels, data, an access entry, managedFields. */
function secret(i: number): KubeObject {
  const b64 = (n: number) => randomBytes(n).toString('base64');
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecret',
    metadata: {
      name: `secret-${i}`,
      namespace: 'bench',
      uid: randomUUID(),
      creationTimestamp: '2026-11-24T21:00:00Z',
      generation: 1,
      labels: { app: `app-${i % 100}`, team: `team-${i % 10}`, env: ['dev', 'staging', 'prod'][i % 3] },
      managedFields: [
        {
          manager: 'kubectl',
          operation: 'Update',
          apiVersion: 'management.platform.sh/v1',
          time: '2026-11-24T21:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {}, 'f:env': {}, 'f:team': {} } }, 'f:spec': {} },
        },
      ],
    },
    spec: {
      displayName: `Service ${i} credentials`,
      owner: { team: `team-${i % 10}` },
      data: { username: b64(12), password: b64(24), 'api-token': b64(48) },
      access: [{ name: 'readers', verbs: ['get', 'list', 'watch'], users: [`user-${i % 50}`], teams: ['ci'] }],
    },
  };
}

/** etcd's default --max-txn-ops: the most puts one transaction may hold. */
const PUTS_PER_TXN = 128;

/**
 * Stores `count` secrets under `prefix` as the server's storage stores them (its encoding, no transformer), many to a
 * transaction: seeding, which these tests do not test, in a few dozen round trips rather than one per object (5,000
 * creates one by one outlasted Jest's 30 s on a busy machine). Returns the bytes of their JSON as served.
 */
async function fill(prefix: string, count: number): Promise<number> {
  let jsonBytes = 0;
  for (let start = 0; start < count; start += PUTS_PER_TXN) {
    const encoded = Array.from({ length: Math.min(PUTS_PER_TXN, count - start) }, (_, j) => ({
      key: `${prefix}${start + j}`,
      ...encodeWithCopy(secret(start + j)),
    }));
    const txn = await raw.kv.txn({
      success: encoded.map(({ key, bytes }) => ({ request_put: { key: Buffer.from(key), value: Buffer.from(bytes) } })),
    });
    for (const { copy } of encoded) jsonBytes += JSON.stringify(withRevision(copy, txn.header.revision)).length;
  }
  return jsonBytes;
}

test('holding 5,000 objects of about 1 KiB costs the heap less than twice their JSON, and a snapshot of them all decodes none', async () => {
  const prefix = `/test-${randomUUID()}/management.platform.sh/sharedsecrets/bench/`;
  const count = 5000;
  const jsonBytes = await fill(prefix, count);
  const before = heapUsed();
  const cache = new WatchCache<KubeObject>(
    storage,
    prefix.slice(0, prefix.indexOf('sharedsecrets/')),
    cachedAttributes,
  );
  await cache.start();
  try {
    const held = heapUsed() - before;
    const perObject = held / count;
    const jsonPerObject = jsonBytes / count;
    expect(jsonPerObject).toBeGreaterThan(800);
    // A parsed object of this shape takes about 4 KiB more (measured 5.2 KiB per object before the cache kept JSON).
    expect(perObject).toBeLessThan(2 * jsonPerObject);
    expect(cache.sizes().get('sharedsecrets')).toEqual({ objects: count, bytes: jsonBytes, historyBytes: 0 });

    const { items } = cache.snapshot(prefix);
    expect(items).toHaveLength(count);
    expect(heapUsed() - before).toBeLessThan(2 * jsonBytes);
    // Decoding gives the stored object back, shared while held, with its JSON unchanged.
    const first = items.find((o) => o.object.metadata.name === 'secret-0')!;
    expect(first.object).toBe(first.object);
    expect(Object.isFrozen(first.object.metadata)).toBe(true);
    expect(JSON.stringify(first.object)).toBe(first.json);
  } finally {
    await cache.stop();
  }
});

test('the history forgets its oldest events beyond its byte bound: a watch from before them is too old', async () => {
  const prefix = `/test-${randomUUID()}/management.platform.sh/`;
  const key = `${prefix}sharedsecrets/bench/one`;
  const created = await storage.create(key, secret(1));
  const size = JSON.stringify(created).length;
  // Room for about five states of the object.
  const cache = new WatchCache<KubeObject>(storage, prefix, cachedAttributes, {
    historySize: 1000,
    historyBytes: 5.5 * size,
  });
  await cache.start();
  try {
    const startRv = cache.currentRevision;
    const revisions: number[] = [];
    for (let i = 0; i < 12; i++) {
      const updated = await storage.guaranteedUpdate<KubeObject>(key, (obj) => ({
        ...obj,
        spec: { ...obj.spec, n: i },
      }));
      revisions.push(Number(updated.object.metadata.resourceVersion));
    }
    await cache.waitUntilFresh(revisions[revisions.length - 1], FRESH_MS);
    const history = cache.sizes().get('sharedsecrets')!.historyBytes;
    expect(history).toBeLessThanOrEqual(5.5 * size);
    expect(history).toBeGreaterThan(3 * size);

    expect(() => cache.watch(prefix, startRv, { deliver: () => {}, terminate: () => {} })).toThrow(
      TooOldResourceVersion,
    );
    const seen: CacheEvent<KubeObject>[] = [];
    const stop = cache.watch(prefix, revisions[8], { deliver: (events) => seen.push(...events), terminate: () => {} });
    stop();
    expect(seen.map((e) => e.revision)).toEqual(revisions.slice(9));
    expect(seen.map((e) => e.object.spec?.n)).toEqual([9, 10, 11]);
    expect(seen[0].previous?.spec).toEqual({ ...created.spec, n: 8 });
  } finally {
    await cache.stop();
  }
});

test('a fill of more objects than one page holds all of them at one revision', async () => {
  const prefix = `/test-${randomUUID()}/management.platform.sh/`;
  const count = 2500;
  await fill(`${prefix}sharedsecrets/bench/`, count);
  const cache = new WatchCache<KubeObject>(storage, prefix, cachedAttributes);
  await cache.start();
  try {
    const { items, revision } = cache.snapshot(prefix);
    expect(items).toHaveLength(count);
    expect(new Set(items.map((o) => o.object.metadata.name)).size).toBe(count);
    expect(revision).toBe(Number((await raw.get('nothing').exec()).header.revision));
  } finally {
    await cache.stop();
  }
});

test('a cache listing again (a value it cannot read) stops at once: its lost etcd watch is not canceled twice', async () => {
  const prefix = `/test-${randomUUID()}/management.platform.sh/`;
  await storage.create(`${prefix}sharedsecrets/bench/good`, secret(1));
  // Another watch on the same etcd client keeps its watch stream open, as the server's leader election does.
  const other = await storage.watch(`/test-${randomUUID()}/other/`, String(await storage.currentRevision()), {
    events: () => {},
    progress: () => {},
    lost: () => {},
  });
  const logs: string[] = [];
  const cache = new WatchCache<KubeObject>(storage, prefix, cachedAttributes, { log: (msg) => logs.push(msg) });
  await cache.start();
  // A value that is not JSON: the watch cannot deliver it, so the cache lists again, which fails while it is there.
  await raw.put(`${prefix}sharedsecrets/bench/bad`).value('not json');
  await waitFor(
    'the cache to fail listing again',
    () => logs.some((l) => l.includes('listing again failed')),
    FRESH_MS,
  );
  expect(logs.some((l) => l.includes('listing again failed'))).toBe(true);
  // A stop that cancels the lost watch again never ends: any bound tells the two apart.
  let bound: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    cache.stop().then(() => 'stopped'),
    new Promise((r) => (bound = setTimeout(() => r(`still stopping after ${FRESH_MS / 1000} s`), FRESH_MS))),
  ]);
  clearTimeout(bound);
  expect(stopped).toBe('stopped');
  await other.close();
});

test('a cache hears the revisions of writes beside it (revisionsUnder) without reading them or delivering them', async () => {
  const root = `/test-${randomUUID()}/`;
  const prefix = `${root}management.platform.sh/`;
  await storage.create(`${prefix}sharedsecrets/bench/one`, secret(1));
  const logs: string[] = [];
  const cache = new WatchCache<KubeObject>(storage, prefix, cachedAttributes, {
    log: (msg) => logs.push(msg),
    revisionsUnder: root,
  });
  await cache.start();
  try {
    const seen: CacheEvent<KubeObject>[] = [];
    const stop = cache.watch(prefix, cache.currentRevision, { deliver: (e) => seen.push(...e), terminate: () => {} });
    // Not JSON, beside the cache's prefix (a lease, a signing key): never decoded, so no reason to list again.
    const put = await raw.put(`${root}leases/controllers`).value('not json').exec();
    const revision = Number(put.header.revision);
    await cache.waitUntilFresh(revision, FRESH_MS);
    expect(cache.currentRevision).toBe(revision);
    expect(await cache.ensureConsistent()).toBe(revision);
    const updated = await storage.guaranteedUpdate<KubeObject>(`${prefix}sharedsecrets/bench/one`, (o) => ({
      ...o,
      spec: { ...o.spec, n: 1 },
    }));
    await cache.waitUntilFresh(Number(updated.object.metadata.resourceVersion), FRESH_MS);
    stop();
    expect(seen.map((e) => e.key)).toEqual([`${prefix}sharedsecrets/bench/one`]);
    expect(logs).toEqual([]);
  } finally {
    await cache.stop();
  }
});

test('lists and watches with selectors read labels and names kept beside each JSON: objects filled and written later are selected as their decoding would be, and none is decoded to be left out', async () => {
  const root = `/test-${randomUUID()}/management.platform.sh/`;
  const prefix = `${root}sharedsecrets/bench/`;
  await fill(prefix, 300);
  // Stored values written by someone else: labels that are not a map, no name at all.
  await raw
    .put(`${prefix}odd-labels`)
    .value(JSON.stringify({ ...secret(7), metadata: { name: 'odd', labels: 'app' } }));
  await raw.put(`${prefix}no-name`).value(JSON.stringify({ ...secret(7), metadata: { labels: { app: 'app-7' } } }));
  const cache = new WatchCache<KubeObject>(storage, root, cachedAttributes);
  await cache.start();
  const reader = secretsReader(cache);
  const watched: string[] = [];
  const running = await reader.watch(
    prefix,
    { predicate: predicate(new URLSearchParams('labelSelector=app=app-7')) },
    {
      event: (type, obj) => watched.push(`${type} ${obj.metadata.name ?? '(none)'}`),
      initialEventsEnd: () => {},
      end: () => {},
    },
  );
  try {
    // Written after the fill: the same selection, through the cache's events.
    for (const i of [1007, 1008]) await storage.create(`${prefix}${i}`, secret(i));
    const moved = await storage.guaranteedUpdate<KubeObject>(`${prefix}7`, (obj) => ({
      ...obj,
      metadata: { ...obj.metadata, labels: { app: 'elsewhere' } },
    }));
    await cache.waitUntilFresh(Number(moved.object.metadata.resourceVersion), FRESH_MS);

    const all = cache.snapshot(prefix).items.map((o) => o.decode());
    for (const query of [
      'labelSelector=app=app-7',
      'labelSelector=!app',
      'fieldSelector=metadata.name=secret-8',
      'labelSelector=env=prod,team!=team-1',
    ]) {
      const selector = predicate(new URLSearchParams(query));
      const parse = jest.spyOn(JSON, 'parse');
      const { items } = await reader.list(prefix, { predicate: selector, resourceVersion: '0' });
      expect(parse).not.toHaveBeenCalled();
      parse.mockRestore();
      const names = items.map((o) => decoded(o).metadata.name ?? '(none)').sort();
      expect(names).toEqual(
        all
          .filter((o) => selector.matches(o))
          .map((o) => o.metadata.name ?? '(none)')
          .sort(),
      );
      expect(names.length).toBeGreaterThan(0);
    }
    expect(watched.sort()).toEqual(
      [
        'ADDED (none)',
        'ADDED secret-107',
        'ADDED secret-207',
        'ADDED secret-7',
        'ADDED secret-1007',
        'DELETED secret-7',
      ].sort(),
    );
  } finally {
    running.stop();
    await cache.stop();
  }
});

test('a watch of many objects sends them a chunk at a time, serving others in between, and changes made meanwhile come after them, once each', async () => {
  const root = `/test-${randomUUID()}/management.platform.sh/`;
  const prefix = `${root}sharedsecrets/bench/`;
  const count = 5000;
  await fill(prefix, count);
  const cache = new WatchCache<KubeObject>(storage, root, cachedAttributes);
  await cache.start();
  const reader = secretsReader(cache);
  const events: string[] = [];
  let write: Promise<unknown> | undefined;
  let otherWorkAt: number | undefined;
  const running = await reader.watch(
    prefix,
    {},
    {
      event: (type, obj) => {
        events.push(`${type} ${obj.metadata.name}`);
        // Other work waiting from the first event on: it runs before the last.
        if (events.length === 1) setImmediate(() => (otherWorkAt = events.length));
        // A write while the current objects are still being sent.
        if (events.length === 1000)
          write = storage.create<KubeObject>(`${prefix}late`, { ...secret(0), metadata: { name: 'late' } });
      },
      initialEventsEnd: () => {},
      end: () => {},
    },
  );
  try {
    await write;
    await waitFor('the late event', () => events.includes('ADDED late'), FRESH_MS);
    expect(otherWorkAt).toBeLessThan(count);
    expect(events.slice(0, count).every((e) => e.startsWith('ADDED secret-'))).toBe(true);
    expect(new Set(events.slice(0, count)).size).toBe(count);
    expect(events.slice(count)).toEqual(['ADDED late']);
  } finally {
    running.stop();
    await cache.stop();
  }
});
