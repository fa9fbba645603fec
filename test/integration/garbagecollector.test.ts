/**
 * The garbage collector against a real etcd, driving the registry as a client would: chains of three objects
 * (A owns B owns C) under each propagation policy, dangling references, recreated owners, cycles, restarts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { getEventListeners } from 'node:events';
import type { KubeObject, OwnerReference } from '../../src/apimachinery/types.js';
import { isStatusError } from '../../src/apimachinery/status.js';
import { GarbageCollector } from '../../src/controllers/garbagecollector.js';
import { LeaderElector } from '../../src/controllers/leader.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { Registry } from '../../src/registry/registry.js';
import type { PropagationPolicy } from '../../src/registry/propagation.js';
import type { Store } from '../../src/registry/store.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, clusterBody, secretBody, uniq } from '../support/fixtures.js';
import { waitFor } from '../support/wait.js';

let etcd: TestEtcd;
let storage: EtcdStorage;
let registry: Registry;
let clusters: Store;
const registryPrefix = `/test-${randomUUID()}`;
let secrets: Store;
const NS = 'gc-test';

beforeAll(async () => {
  etcd = await startTestEtcd();
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
  registry = new Registry(loadDefinitions(), storage, registryPrefix);
  await registry.start();
  clusters = registry.lookup('management.platform.sh', 'v1', 'clusters')!;
  secrets = registry.lookup('management.platform.sh', 'v1', 'sharedsecrets')!;
}, 30_000);

afterAll(async () => {
  await registry?.stop();
  await storage?.close();
  await etcd?.stop();
});

/** Running collectors, stopped after each test. */
const running: { controller: AbortController; done: Promise<void> }[] = [];

function startGc(): { controller: AbortController; done: Promise<void> } {
  const controller = new AbortController();
  const gc = new GarbageCollector(registry, { retryDelayMs: 100 });
  const r = { controller, done: gc.run(controller.signal) };
  running.push(r);
  return r;
}

afterEach(async () => {
  for (const r of running.splice(0)) {
    r.controller.abort();
    await r.done;
  }
});

function ref(owner: KubeObject, extra: Partial<OwnerReference> = {}): OwnerReference {
  return { apiVersion: API_VERSION, kind: owner.kind!, name: owner.metadata.name!, uid: owner.metadata.uid!, ...extra };
}

async function createCluster(name: string, owners: OwnerReference[] = []): Promise<KubeObject> {
  const body = clusterBody(name) as KubeObject;
  if (owners.length) body.metadata.ownerReferences = owners;
  return clusters.create(undefined, body);
}

async function createSecret(name: string, owners: OwnerReference[] = []): Promise<KubeObject> {
  const body = secretBody(name) as KubeObject;
  if (owners.length) body.metadata.ownerReferences = owners;
  return secrets.create(NS, body);
}

async function getCluster(name: string): Promise<KubeObject | undefined> {
  try {
    return await clusters.get(undefined, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return undefined;
    throw err;
  }
}

async function exists(name: string): Promise<boolean> {
  return !!(await getCluster(name));
}

async function setOwners(name: string, owners: OwnerReference[]): Promise<KubeObject> {
  return clusters.update(undefined, name, {
    patch: (obj) => {
      obj.metadata.ownerReferences = owners;
      return obj;
    },
  });
}

async function deleteWithPolicy(name: string, propagationPolicy?: PropagationPolicy): Promise<void> {
  await clusters.delete(undefined, name, { propagationPolicy });
}

/** A chain A owns B owns C (Clusters), with blockOwnerDeletion on both references if asked. */
async function chain(block = false): Promise<[KubeObject, KubeObject, KubeObject]> {
  const a = await createCluster(uniq('a'));
  const b = await createCluster(uniq('b'), [ref(a, block ? { blockOwnerDeletion: true } : {})]);
  const c = await createCluster(uniq('c'), [ref(b, block ? { blockOwnerDeletion: true } : {})]);
  return [a, b, c];
}

/** Records the order in which Clusters are deleted (DELETED events of a registry watch). */
async function recordDeletions(): Promise<{ names: string[]; stop(): void }> {
  const names: string[] = [];
  const w = await clusters.watch(
    undefined,
    { resourceVersion: String(await storage.currentRevision()) },
    {
      event: (type, obj) => {
        if (type === 'DELETED') names.push(obj.metadata.name!);
      },
      initialEventsEnd: () => {},
      end: () => {},
    },
  );
  return { names, stop: () => w.stop() };
}

describe('GarbageCollector', () => {
  test('Background: deleting A deletes B, then C', async () => {
    startGc();
    const [a, b, c] = await chain();
    await deleteWithPolicy(a.metadata.name!);
    await waitFor(
      'B and C to be collected',
      async () => !(await exists(b.metadata.name!)) && !(await exists(c.metadata.name!)),
    );
  }, 20_000);

  test('Orphan: A goes, B and C stay, B without its reference to A', async () => {
    startGc();
    const [a, b, c] = await chain();
    await deleteWithPolicy(a.metadata.name!, 'Orphan');
    await waitFor('A to be gone', async () => !(await exists(a.metadata.name!)));
    const bNow = await getCluster(b.metadata.name!);
    const cNow = await getCluster(c.metadata.name!);
    expect(bNow?.metadata.uid).toBe(b.metadata.uid);
    expect(bNow?.metadata.ownerReferences).toBeUndefined();
    expect(cNow?.metadata.ownerReferences).toEqual([ref(b)]);
    // And they stay.
    await new Promise((r) => setTimeout(r, 500));
    expect(await exists(b.metadata.name!)).toBe(true);
    expect(await exists(c.metadata.name!)).toBe(true);
  }, 20_000);

  test('Orphan keeps other owners: only the reference to the orphaning owner is removed', async () => {
    startGc();
    const a = await createCluster(uniq('a'));
    const other = await createCluster(uniq('other'));
    const b = await createCluster(uniq('b'), [ref(a), ref(other)]);
    await deleteWithPolicy(a.metadata.name!, 'Orphan');
    await waitFor('A to be gone', async () => !(await exists(a.metadata.name!)));
    expect((await getCluster(b.metadata.name!))?.metadata.ownerReferences).toEqual([ref(other)]);
  }, 20_000);

  test('Foreground: C, then B, then A (blockOwnerDeletion on both references)', async () => {
    startGc();
    const [a, b, c] = await chain(true);
    const deletions = await recordDeletions();
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    // A waits, readable, with deletionTimestamp, while its dependents go.
    const aNow = await getCluster(a.metadata.name!);
    expect(aNow?.metadata.deletionTimestamp).toBeDefined();
    await waitFor('A to be gone', async () => !(await exists(a.metadata.name!)));
    await waitFor('three deletions', () => deletions.names.length === 3);
    deletions.stop();
    expect(deletions.names).toEqual([c.metadata.name, b.metadata.name, a.metadata.name]);
  }, 20_000);

  test('Foreground without blockOwnerDeletion: dependents are still deleted', async () => {
    startGc();
    const [a, b, c] = await chain(false);
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    await waitFor(
      'all three gone',
      async () =>
        !(await exists(a.metadata.name!)) && !(await exists(b.metadata.name!)) && !(await exists(c.metadata.name!)),
    );
  }, 20_000);

  test('Foreground: a dependent with another, living owner stays and loses the reference', async () => {
    startGc();
    const a = await createCluster(uniq('a'));
    const other = await createCluster(uniq('other'));
    const b = await createCluster(uniq('b'), [ref(a, { blockOwnerDeletion: true }), ref(other)]);
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    await waitFor('A to be gone', async () => !(await exists(a.metadata.name!)));
    const bNow = await getCluster(b.metadata.name!);
    expect(bNow?.metadata.uid).toBe(b.metadata.uid);
    expect(bNow?.metadata.ownerReferences).toEqual([ref(other)]);
  }, 20_000);

  test('a dangling ownerReference (the owner uid never existed) gets the dependent deleted, across kinds', async () => {
    startGc();
    const ghost: OwnerReference = { apiVersion: API_VERSION, kind: 'Cluster', name: uniq('ghost'), uid: randomUUID() };
    const dep = await createCluster(uniq('dep'), [ghost]);
    const secret = await createSecret(uniq('s'), [ghost]);
    const unknownKind = await createCluster(uniq('dep'), [
      { apiVersion: 'example.com/v1', kind: 'Nope', name: 'x', uid: randomUUID() },
    ]);
    await waitFor(
      'dependents of the ghost to be collected',
      async () => !(await exists(dep.metadata.name!)) && !(await exists(unknownKind.metadata.name!)),
    );
    await waitFor('the secret to be collected', async () => {
      try {
        await secrets.get(NS, secret.metadata.name!);
        return false;
      } catch (err) {
        return isStatusError(err, 'NotFound');
      }
    });
  }, 20_000);

  test('a recreated owner (same name, new uid) does not keep an old dependent alive; the new one is kept', async () => {
    const name = uniq('owner');
    const old = await createCluster(name);
    const dep = await createCluster(uniq('dep'), [ref(old)]);
    // Owner deleted and recreated while no collector runs.
    await clusters.delete(undefined, name);
    const recreated = await createCluster(name);
    expect(recreated.metadata.uid).not.toBe(old.metadata.uid);
    const newDep = await createCluster(uniq('dep'), [ref(recreated)]);
    startGc();
    await waitFor('the old dependent to be collected', async () => !(await exists(dep.metadata.name!)));
    expect(await exists(name)).toBe(true);
    expect(await exists(newDep.metadata.name!)).toBe(true);
  }, 20_000);

  test('objects with a living owner are never deleted; an owned object in another kind is kept too', async () => {
    startGc();
    const a = await createCluster(uniq('a'));
    const b = await createCluster(uniq('b'), [ref(a)]);
    const s = await createSecret(uniq('s'), [ref(a)]);
    await new Promise((r) => setTimeout(r, 800));
    expect(await exists(b.metadata.name!)).toBe(true);
    expect((await secrets.get(NS, s.metadata.name!)).metadata.uid).toBe(s.metadata.uid);
  }, 20_000);

  test('cycles do not wedge it: A and B own each other, foreground deletion of A removes both', async () => {
    startGc();
    const a = await createCluster(uniq('a'));
    const b = await createCluster(uniq('b'), [ref(a, { blockOwnerDeletion: true })]);
    await setOwners(a.metadata.name!, [ref(b, { blockOwnerDeletion: true })]);
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    await waitFor('both gone', async () => !(await exists(a.metadata.name!)) && !(await exists(b.metadata.name!)));
  }, 20_000);

  test('an object being deleted is not deleted again: its finalizers are left alone', async () => {
    startGc();
    const dep = await createCluster(uniq('dep'), [
      { apiVersion: API_VERSION, kind: 'Cluster', name: 'gone', uid: randomUUID() },
    ]);
    // Someone else's finalizer holds it; once deleted, the collector must not touch it.
    await clusters.update(undefined, dep.metadata.name!, {
      patch: (obj) => {
        obj.metadata.finalizers = ['example.com/hold'];
        return obj;
      },
    });
    await waitFor(
      'the collector to delete it (deletionTimestamp set)',
      async () => !!(await getCluster(dep.metadata.name!))?.metadata.deletionTimestamp,
    );
    const before = await getCluster(dep.metadata.name!);
    await new Promise((r) => setTimeout(r, 500));
    const after = await getCluster(dep.metadata.name!);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(after?.metadata.finalizers).toEqual(['example.com/hold']);
    await clusters.update(undefined, dep.metadata.name!, {
      patch: (obj) => {
        delete obj.metadata.finalizers;
        return obj;
      },
    });
    expect(await exists(dep.metadata.name!)).toBe(false);
  }, 20_000);

  test('idempotent across a restart: work left by a stopped collector is finished by the next one', async () => {
    const [a, b, c] = await chain(true);
    // The owner was marked for foreground deletion while no collector ran (e.g. between two leaders).
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    const first = startGc();
    first.controller.abort();
    await first.done;
    expect(await exists(a.metadata.name!)).toBe(true);
    startGc();
    await waitFor(
      'all three gone',
      async () =>
        !(await exists(a.metadata.name!)) && !(await exists(b.metadata.name!)) && !(await exists(c.metadata.name!)),
    );
  }, 20_000);

  test('two collectors at once (a leader hand-over overlapping) still converge without errors', async () => {
    startGc();
    startGc();
    const [a, b, c] = await chain(true);
    await deleteWithPolicy(a.metadata.name!, 'Foreground');
    await waitFor(
      'all three gone',
      async () =>
        !(await exists(a.metadata.name!)) && !(await exists(b.metadata.name!)) && !(await exists(c.metadata.name!)),
    );
  }, 20_000);

  test('a running collector keeps one abort listener per watched resource (plus the worker and the resync) on its signal, and none once stopped', async () => {
    const gc = startGc();
    const [a, b, c] = await chain();
    await deleteWithPolicy(a.metadata.name!);
    await waitFor(
      'B and C to be collected',
      async () => !(await exists(b.metadata.name!)) && !(await exists(c.metadata.name!)),
    );
    // A long-running server's leader signal must not gather listeners: one per resource watch, one for the worker and
    // one for the resync timer.
    const resources = registry.definitions.length;
    expect(getEventListeners(gc.controller.signal, 'abort').length).toBeLessThanOrEqual(resources + 2);
    gc.controller.abort();
    await gc.done;
    expect(getEventListeners(gc.controller.signal, 'abort')).toHaveLength(0);
  }, 20_000);

  test('under leader election on two replicas: only the leader collects, and the other takes over when it stops', async () => {
    // A second replica: its own storage client and registry on the same etcd prefix.
    const storage2 = new EtcdStorage({ endpoints: [etcd.endpoint] });
    const registry2 = new Registry(loadDefinitions(), storage2, registryPrefix);
    await registry2.start();
    const key = `${registryPrefix}/leases/controllers`;
    const leading: string[] = [];
    const make = (id: string, reg: Registry, client: EtcdStorage) =>
      new LeaderElector({
        lock: client.leaseLock(key),
        identity: id,
        leaseTtlSeconds: 2,
        onStartedLeading: (signal) => {
          leading.push(id);
          return new GarbageCollector(reg, { retryDelayMs: 100 }).run(signal);
        },
        onStoppedLeading: () => {},
      });
    const e1 = make('one', registry, storage);
    const e2 = make('two', registry2, storage2);
    try {
      e1.start();
      await waitFor('a leader', () => e1.isLeader() || e2.isLeader());
      e2.start();
      const [first, second] = e1.isLeader() ? [e1, e2] : [e2, e1];
      const [a1, b1, c1] = await chain();
      await deleteWithPolicy(a1.metadata.name!);
      await waitFor(
        'collected by the first leader',
        async () => !(await exists(b1.metadata.name!)) && !(await exists(c1.metadata.name!)),
      );
      expect(second.isLeader()).toBe(false);
      await first.stop();
      await waitFor('the other to lead', () => second.isLeader(), 3000);
      const [a2, b2, c2] = await chain(true);
      await deleteWithPolicy(a2.metadata.name!, 'Foreground');
      await waitFor(
        'collected by the second leader',
        async () =>
          !(await exists(a2.metadata.name!)) &&
          !(await exists(b2.metadata.name!)) &&
          !(await exists(c2.metadata.name!)),
      );
      expect(leading).toHaveLength(2);
      expect(new Set(leading).size).toBe(2);
    } finally {
      await e1.stop();
      await e2.stop();
      await registry2.stop();
      await storage2.close();
    }
  }, 30_000);
});

/**
 * References stored before the API checked them (or written by the server itself): the collector looks an owner up
 * as kube's does, by kind, namespace and name, and takes it for absent unless it has the reference's uid.
 */
describe('owners are looked up by kind, namespace and name, with the uid', () => {
  const HOLD = 'example.com/hold';

  async function getSecret(namespace: string, name: string): Promise<KubeObject | undefined> {
    try {
      return await secrets.get(namespace, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  async function release(name: string): Promise<void> {
    await clusters
      .update(undefined, name, {
        patch: (obj) => {
          delete obj.metadata.finalizers;
          return obj;
        },
      })
      .catch((err) => {
        if (!isStatusError(err, 'NotFound')) throw err;
      });
  }

  test("a reference with one object's name and another's uid points to no owner: the dependent is collected", async () => {
    startGc();
    const named = await createCluster(uniq('named'));
    const other = await createCluster(uniq('other'));
    const dep = await createCluster(uniq('dep'), [{ ...ref(named), uid: other.metadata.uid! }]);
    await waitFor('the dependent to be collected', async () => !(await exists(dep.metadata.name!)));
    expect(await exists(named.metadata.name!)).toBe(true);
    expect(await exists(other.metadata.name!)).toBe(true);
  }, 20_000);

  test("a blocking reference that only carries the owner's uid does not hold its foreground deletion", async () => {
    startGc();
    const owner = await createCluster(uniq('owner'));
    const named = await createCluster(uniq('named'));
    // Held by a finalizer of its own, so that it would hold the owner for as long as the test lasts.
    const body = clusterBody(uniq('dep')) as KubeObject;
    body.metadata.finalizers = [HOLD];
    body.metadata.ownerReferences = [{ ...ref(named), uid: owner.metadata.uid!, blockOwnerDeletion: true }];
    const dep = await clusters.create(undefined, body);
    try {
      await deleteWithPolicy(owner.metadata.name!, 'Foreground');
      await waitFor('the owner to be gone', async () => !(await exists(owner.metadata.name!)), 10_000);
      expect(await exists(named.metadata.name!)).toBe(true);
    } finally {
      await release(dep.metadata.name!);
    }
  }, 20_000);

  test('a blocking reference by kind, name and uid still holds it until the dependent is gone', async () => {
    startGc();
    const owner = await createCluster(uniq('owner'));
    const body = clusterBody(uniq('dep')) as KubeObject;
    body.metadata.finalizers = [HOLD];
    body.metadata.ownerReferences = [ref(owner, { blockOwnerDeletion: true })];
    const dep = await clusters.create(undefined, body);
    await deleteWithPolicy(owner.metadata.name!, 'Foreground');
    await waitFor(
      'the dependent to be deleted',
      async () => !!(await getCluster(dep.metadata.name!))?.metadata.deletionTimestamp,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await exists(owner.metadata.name!)).toBe(true);
    await release(dep.metadata.name!);
    await waitFor('the owner to be gone', async () => !(await exists(owner.metadata.name!)));
  }, 20_000);

  test("a namespaced owner is looked up in the dependent's namespace only", async () => {
    startGc();
    const owner = await createSecret(uniq('owner'));
    const body = secretBody(uniq('dep')) as KubeObject;
    body.metadata.ownerReferences = [ref(owner)];
    const elsewhere = await secrets.create(`${NS}-other`, body);
    const here = await createSecret(uniq('dep'), [ref(owner)]);
    await waitFor(
      'the dependent in the other namespace to be collected',
      async () => !(await getSecret(`${NS}-other`, elsewhere.metadata.name!)),
    );
    expect((await getSecret(NS, here.metadata.name!))?.metadata.uid).toBe(here.metadata.uid);
    expect(await getSecret(NS, owner.metadata.name!)).toBeDefined();
  }, 20_000);

  test('a cluster-scoped object with a namespaced owner is left alone, as kube leaves it', async () => {
    startGc();
    const ghost = await createCluster(uniq('dep'), [
      { apiVersion: API_VERSION, kind: 'SharedSecret', name: uniq('ghost'), uid: randomUUID() },
    ]);
    const collected = await createCluster(uniq('dep'), [
      { apiVersion: API_VERSION, kind: 'Cluster', name: uniq('ghost'), uid: randomUUID() },
    ]);
    await waitFor(
      'the one with a cluster-scoped owner to be collected',
      async () => !(await exists(collected.metadata.name!)),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await exists(ghost.metadata.name!)).toBe(true);
    await clusters.delete(undefined, ghost.metadata.name!);
  }, 20_000);
});
