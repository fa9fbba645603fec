/**
 * Who holds each kube-system uid (src/controllers/clusteruidholders.ts), in a real etcd, as two replicas see it
 * when both decide at once (a leader change): every write is a compare-and-swap on what its writer read, so one
 * decided on an entry the other changed is refused and learns the stored entry, and letting a gone holder go never
 * undoes a newer holder. What a Cluster's cluster answered (tenant's text) is one key whatever it holds.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ClusterUidHolders, HolderChanged } from '../../src/controllers/clusteruidholders.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';

let etcd: TestEtcd;
let storage: EtcdStorage;

beforeAll(async () => {
  etcd = await startTestEtcd();
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
});
afterAll(async () => {
  await storage?.close();
  await etcd?.stop();
});

/** Two replicas' views of one server's holders, each read from storage. */
async function replicas(): Promise<[ClusterUidHolders, ClusterUidHolders, () => Promise<ClusterUidHolders>]> {
  const prefix = `/test-${randomUUID()}`;
  const next = async () => {
    const holders = new ClusterUidHolders(storage, prefix);
    await holders.load();
    return holders;
  };
  return [await next(), await next(), next];
}

test('a hold decided on what another replica changed is refused, and that replica then has the stored holder', async () => {
  const [a, b, restarted] = await replicas();
  await a.hold('kube-1', { name: 'first', uid: 'c1' });
  await expect(b.hold('kube-1', { name: 'second', uid: 'c2' })).rejects.toBeInstanceOf(HolderChanged);
  expect(b.get('kube-1')).toEqual({ name: 'first', uid: 'c1' });
  expect(b.mayHold('kube-1', 'c2', '1')).toBe(false);
  expect((await restarted()).get('kube-1')).toEqual({ name: 'first', uid: 'c1' });
});

test('a late release of a holder never undoes the newer one another replica gave the uid to', async () => {
  const [a, b, restarted] = await replicas();
  await a.hold('kube-1', { name: 'first', uid: 'c1' });
  const b2 = await restarted();
  const goneAt = await storage.currentRevision();
  // Both see the first go; b gives the uid to a Cluster created after that before a has stored the release.
  a.gone({ name: 'first', uid: 'c1' }, goneAt);
  b2.gone({ name: 'first', uid: 'c1' }, goneAt);
  expect(b2.mayHold('kube-1', 'c3', String(Number(goneAt) + 1))).toBe(true);
  await b2.hold('kube-1', { name: 'third', uid: 'c3' });
  await a.save();
  expect(a.get('kube-1')).toEqual({ name: 'third', uid: 'c3' });
  expect((await restarted()).get('kube-1')).toEqual({ name: 'third', uid: 'c3' });
  // The other replica, which never saw any of it, refuses the newer Cluster's hold on what it read.
  await expect(b.hold('kube-1', { name: 'fourth', uid: 'c4' })).rejects.toBeInstanceOf(HolderChanged);
});

test('only a Cluster created after its holder went may hold a uid, and the release outlives the process', async () => {
  const [a, , restarted] = await replicas();
  await a.hold('kube-1', { name: 'first', uid: 'c1' });
  expect(a.mayHold('kube-1', 'c2', '1')).toBe(false);
  a.gone({ name: 'first', uid: 'c1' }, '100');
  await a.save();
  const later = await restarted();
  expect(later.get('kube-1')).toEqual({ name: 'first', uid: 'c1', goneAt: '100' });
  expect(later.mayHold('kube-1', 'c2', '100')).toBe(false);
  expect(later.mayHold('kube-1', 'c2', '101')).toBe(true);
  expect(later.mayHold('kube-1', 'c2', undefined)).toBe(false);
});

test('a Cluster recorded before holders were stored, found gone, leaves its uid held until then', async () => {
  const [a, , restarted] = await replicas();
  a.gone({ name: 'old', uid: 'c0' }, '50', 'kube-1');
  expect(a.mayHold('kube-1', 'c1', '50')).toBe(false);
  await a.save();
  const later = await restarted();
  expect(later.get('kube-1')).toEqual({ name: 'old', uid: 'c0', goneAt: '50' });
  expect(later.mayHold('kube-1', 'c1', '51')).toBe(true);
});

test('whatever a cluster answers is one entry of its own (slashes, percent signs)', async () => {
  const [a, , restarted] = await replicas();
  await a.hold('a/b', { name: 'first', uid: 'c1' });
  await a.hold('a%2Fb', { name: 'second', uid: 'c2' });
  const later = await restarted();
  expect(later.get('a/b')).toEqual({ name: 'first', uid: 'c1' });
  expect(later.get('a%2Fb')).toEqual({ name: 'second', uid: 'c2' });
  expect(later.get('a')).toBeUndefined();
});
