/** Leader election on an etcd lease, against a real etcd: one leader among several electors, and hand-over. */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { LeaderElector } from '../../src/controllers/leader.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { waitFor } from '../support/wait.js';

let etcd: TestEtcd;
/** The test's own view of etcd (an operator's), apart from the replicas'. */
let operator: Etcd3;

beforeAll(async () => {
  etcd = await startTestEtcd();
  operator = new Etcd3({ hosts: etcd.endpoint });
});
afterAll(async () => {
  operator?.close();
  await etcd?.stop();
});

interface Replica {
  elector: LeaderElector;
  storage: EtcdStorage;
  /** When it started and stopped leading (ms since epoch). */
  terms: { from: number; to?: number }[];
  signals: AbortSignal[];
}

const replicas: Replica[] = [];

function replica(key: string, id: string, ttl: number): Replica {
  const storage = new EtcdStorage({ endpoints: [etcd.endpoint], callTimeoutMs: 2000 });
  const r: Replica = { storage, terms: [], signals: [], elector: undefined as unknown as LeaderElector };
  r.elector = new LeaderElector({
    lock: storage.leaseLock(key),
    identity: id,
    leaseTtlSeconds: ttl,
    onStartedLeading: (signal) => {
      r.terms.push({ from: Date.now() });
      r.signals.push(signal);
    },
    onStoppedLeading: () => {
      r.terms[r.terms.length - 1].to = Date.now();
    },
  });
  replicas.push(r);
  return r;
}

afterEach(async () => {
  for (const r of replicas.splice(0)) {
    await r.elector.stop();
    await r.storage.close();
  }
});

const leaders = (rs: Replica[]) => rs.filter((r) => r.elector.isLeader());

/** No two replicas ever led at the same time (terms do not overlap). */
function expectNoOverlap(rs: Replica[]): void {
  const terms = rs
    .flatMap((r) => r.terms.map((t) => ({ from: t.from, to: t.to ?? Infinity })))
    .sort((a, b) => a.from - b.from);
  for (let i = 1; i < terms.length; i++) expect(terms[i].from).toBeGreaterThanOrEqual(terms[i - 1].to);
}

describe('LeaderElector', () => {
  test('three electors on one etcd: exactly one leads, and keeps leading', async () => {
    const key = `/test-${randomUUID()}/leases/controllers`;
    // A TTL of 6 s renews every 2 s and steps down only when no renewal landed for 5 s: a busy machine (CI runs
    // many suites at once) delays a keepalive by seconds, and a leader that gives up then is right, not stable.
    const ttl = 6;
    const rs = [replica(key, 'a', ttl), replica(key, 'b', ttl), replica(key, 'c', ttl)];
    for (const r of rs) r.elector.start();
    const leader = await waitFor('a leader', () => leaders(rs).length === 1 && leaders(rs)[0], 5000);
    // Several lease renewals later, still the same single leader.
    const end = Date.now() + 4500;
    while (Date.now() < end) {
      // Identities, not the replicas: a failing deep comparison would walk the etcd clients' streams.
      expect(leaders(rs).map((r) => r.elector.identity)).toEqual([leader.elector.identity]);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(leader.terms).toHaveLength(1);
    expect(leader.signals[0].aborted).toBe(false);
    const holder = await operator.get(key).string();
    expect(holder).toBe(leader.elector.identity);
    expectNoOverlap(rs);
  }, 20_000);

  test('stop() hands over at once: the lease is revoked, another elector leads', async () => {
    const key = `/test-${randomUUID()}/leases/controllers`;
    const ttl = 3;
    const rs = [replica(key, 'a', ttl), replica(key, 'b', ttl), replica(key, 'c', ttl)];
    for (const r of rs) r.elector.start();
    const first = await waitFor('a leader', () => leaders(rs).length === 1 && leaders(rs)[0], 5000);
    const stoppedAt = Date.now();
    await first.elector.stop();
    expect(first.signals[0].aborted).toBe(true);
    expect(first.elector.isLeader()).toBe(false);
    const rest = rs.filter((r) => r !== first);
    const second = await waitFor('a new leader', () => leaders(rest).length === 1 && leaders(rest)[0], ttl * 1000);
    // Well before the TTL: revocation deleted the key and the others were watching it.
    expect(Date.now() - stoppedAt).toBeLessThan(1500);
    expect(await operator.get(key).string()).toBe(second.elector.identity);
    expectNoOverlap(rs);
  }, 20_000);

  test('a leader that dies (no revoke) is replaced within about the TTL, and it stops leading on its own', async () => {
    const key = `/test-${randomUUID()}/leases/controllers`;
    const ttl = 2;
    const rs = [replica(key, 'a', ttl), replica(key, 'b', ttl), replica(key, 'c', ttl)];
    for (const r of rs) r.elector.start();
    const first = await waitFor('a leader', () => leaders(rs).length === 1 && leaders(rs)[0], 5000);
    const diedAt = Date.now();
    // The process loses etcd: its client is gone, keepalives fail, nothing is revoked.
    await first.storage.close();
    const rest = rs.filter((r) => r !== first);
    const second = await waitFor(
      'a new leader',
      () => leaders(rest).length === 1 && leaders(rest)[0],
      ttl * 1000 + 3000,
    );
    expect(Date.now() - diedAt).toBeLessThan(ttl * 1000 + 2500);
    // The dead one noticed by itself (before etcd could hand the key over).
    expect(first.signals[0].aborted).toBe(true);
    expect(first.elector.isLeader()).toBe(false);
    expect(second.signals.at(-1)!.aborted).toBe(false);
    expectNoOverlap(rs);
  }, 20_000);

  test('a revoked lease (e.g. by an operator) makes the leader step down and campaign again', async () => {
    const key = `/test-${randomUUID()}/leases/controllers`;
    const ttl = 2;
    const rs = [replica(key, 'a', ttl), replica(key, 'b', ttl)];
    for (const r of rs) r.elector.start();
    const first = await waitFor('a leader', () => leaders(rs).length === 1 && leaders(rs)[0], 5000);
    const res = await operator.get(key).exec();
    const revokedAt = Date.now();
    await operator.leaseClient.leaseRevoke({ ID: res.kvs[0].lease });
    // It watches its key, so it notices the deletion at once rather than at the next renewal.
    await waitFor('the old leader to step down', () => first.signals[0].aborted, ttl * 1000 + 1000);
    expect(Date.now() - revokedAt).toBeLessThan(500);
    await waitFor('a leader again', () => leaders(rs).length === 1, ttl * 1000 + 2000);
    // (No overlap check here: an outside revocation frees the key before the old leader can hear of it.)
  }, 20_000);

  test('its etcd calls are storage calls: each measured, and a lease etcd no longer has renews to 0 s', async () => {
    const key = `/test-${randomUUID()}/leases/controllers`;
    const calls = new Set<string>();
    const storage = new EtcdStorage({
      endpoints: [etcd.endpoint],
      onCall: (operation, callKey) => calls.add(`${operation} ${callKey}`),
    });
    try {
      const elector = new LeaderElector({
        lock: storage.leaseLock(key),
        identity: 'a',
        leaseTtlSeconds: 1,
        onStartedLeading: () => {},
        onStoppedLeading: () => {},
      });
      elector.start();
      await waitFor('a leader', () => elector.isLeader(), 5000);
      await waitFor('a renewal', () => calls.has(`get ${key}`), 3000);
      await elector.stop();
      expect([...calls].sort()).toEqual(
        ['create', 'get', 'leaseGrant', 'leaseKeepAlive', 'leaseRevoke', 'watch'].map((op) => `${op} ${key}`),
      );

      const lock = storage.leaseLock(key);
      const lease = await lock.grant(5);
      expect((await lock.acquire('b', lease)).acquired).toBe(true);
      expect(await lease.keepAlive()).toBeGreaterThan(0);
      const res = await operator.get(key).exec();
      await operator.leaseClient.leaseRevoke({ ID: res.kvs[0].lease });
      expect(await lease.keepAlive()).toBe(0);
      expect(await lock.holder()).toBeUndefined();
    } finally {
      await storage.close();
    }
  }, 20_000);
});
