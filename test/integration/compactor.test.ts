/** etcd compaction as kube-apiserver does it, against a real etcd. */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { COMPACT_REVISION_KEY, Compactor } from '../../src/storage/compactor.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { StorageError } from '../../src/storage/interface.js';
import { startTestEtcd } from '../support/etcd.js';

let etcd: Awaited<ReturnType<typeof startTestEtcd>>;
let client: Etcd3;
let storage: EtcdStorage;

beforeAll(async () => {
  etcd = await startTestEtcd();
  client = new Etcd3({ hosts: etcd.endpoint });
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
});
afterAll(async () => {
  client?.close();
  await storage?.close();
  await etcd?.stop();
});

async function revision(): Promise<number> {
  return Number((await client.get('x').exec()).header.revision);
}

async function readableAt(rev: number): Promise<boolean> {
  try {
    await client.get('k').revision(rev).exec();
    return true;
  } catch (err) {
    expect((err as Error).message).toMatch(/compacted/);
    return false;
  }
}

describe('Compactor', () => {
  test('compacts to the revision seen one round earlier, keeping one interval of history', async () => {
    const compactor = new Compactor(storage, { intervalMs: 0 });
    await client.put('k').value('1');
    const old = await revision();
    await compactor.compactOnce(); // first round only records where it is
    expect(await readableAt(old)).toBe(true);

    await client.put('k').value('2');
    const middle = await revision();
    await compactor.compactOnce(); // compacts to the first round's revision
    expect(await readableAt(old - 1)).toBe(false);
    expect(await readableAt(middle)).toBe(true);
  });

  test('two servers on one etcd compact once per round between them', async () => {
    const a = new Compactor(storage, { intervalMs: 0 });
    const b = new Compactor(storage, { intervalMs: 0 });
    const version = async () => Number((await client.get(COMPACT_REVISION_KEY).exec()).kvs[0]?.version ?? 0);
    const before = await version();
    // Newcomers first catch up with the shared count; after that, in each round (a then b) only the first claims.
    await a.compactOnce();
    await b.compactOnce();
    expect(await version()).toBe(before);
    for (let round = 1; round <= 3; round++) {
      await a.compactOnce();
      await b.compactOnce();
      expect(await version()).toBe(before + round);
    }
  });

  test('its etcd calls are storage calls: each measured, and a failure is a StorageError', async () => {
    const calls: string[] = [];
    const measured = new EtcdStorage({
      endpoints: [etcd.endpoint],
      onCall: (operation, _key, _s, failed) => calls.push(`${operation}${failed ? ' failed' : ''}`),
    });
    const dead = new EtcdStorage({ endpoints: ['127.0.0.1:1'], callTimeoutMs: 300 });
    try {
      const compactor = new Compactor(measured, { intervalMs: 0 });
      await compactor.compactOnce(); // catches up with the shared count
      await compactor.compactOnce(); // claims the round and compacts
      expect(calls).toEqual(['update', 'update', 'compact']);
      const err = await new Compactor(dead, { intervalMs: 0 }).compactOnce().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect((err as StorageError).code).toBe('Unreachable');
    } finally {
      await measured.close();
      await dead.close();
    }
  });
});
