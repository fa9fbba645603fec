/** etcd compaction as kube-apiserver does it, against a real etcd. */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { COMPACT_REVISION_KEY, Compactor } from '../../src/storage/compactor.js';
import { startTestEtcd } from '../support/etcd.js';

let etcd: Awaited<ReturnType<typeof startTestEtcd>>;
let client: Etcd3;

beforeAll(async () => {
  etcd = await startTestEtcd();
  client = new Etcd3({ hosts: etcd.endpoint });
});
afterAll(async () => {
  client?.close();
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
    const compactor = new Compactor(client, { intervalMs: 0 });
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
    const a = new Compactor(client, { intervalMs: 0 });
    const b = new Compactor(client, { intervalMs: 0 });
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
});
