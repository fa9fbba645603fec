/**
 * The JavaScript client's informer (@kubernetes/client-node 1.4 ListWatch) against the server: it lists, then
 * watches from the list's resourceVersion, re-watches when a stream ends and re-lists on 410. It must see
 * adds, updates and deletes, survive a forced 410 (etcd compacted under the server's watch cache) without
 * losing a change made in the gap, and keep working across an etcd restart.
 */
import { describe, test, expect, beforeAll, afterEach } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { Etcd3 } from 'etcd3';
import type { TestServer } from '../support/server.js';
import { compactEtcd, type TestEtcd } from '../support/etcd.js';
import { eventually } from '../support/http.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  GROUP,
  MERGE_PATCH,
  clusterPath,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithOwnEtcd,
} from '../support/fixtures.js';

let etcd: TestEtcd;
let ts: TestServer;
let kv: Etcd3;
let kc: k8s.KubeConfig;
let api: k8s.CustomObjectsApi;

const VERSION = 'v1';

useServerWithOwnEtcd((env) => ({ ts, etcd, kv } = env));

beforeAll(() => {
  kc = new k8s.KubeConfig();
  kc.loadFromFile(ts.kubeconfig);
  api = kc.makeApiClient(k8s.CustomObjectsApi);
});

type Obj = k8s.KubernetesObject & { spec?: any };

interface Recorded {
  informer: k8s.Informer<Obj> & k8s.ObjectCache<Obj>;
  adds: Obj[];
  updates: Obj[];
  deletes: Obj[];
  errors: unknown[];
  connects: number;
  lists: number;
}

const running: Recorded[] = [];

afterEach(async () => {
  for (const r of running.splice(0)) await r.informer.stop();
});

/** Starts an informer on `path` with `list` as its list function, recording every callback. */
async function startInformer(path: string, list: () => Promise<any>, labelSelector?: string): Promise<Recorded> {
  const rec = { adds: [], updates: [], deletes: [], errors: [], connects: 0, lists: 0 } as unknown as Recorded;
  rec.informer = k8s.makeInformer<Obj>(
    kc,
    path,
    () => {
      rec.lists += 1;
      return list();
    },
    labelSelector,
  );
  rec.informer.on('add', (o) => rec.adds.push(o));
  rec.informer.on('update', (o) => rec.updates.push(o));
  rec.informer.on('delete', (o) => rec.deletes.push(o));
  rec.informer.on('error', (err) => rec.errors.push(err));
  rec.informer.on('connect', () => (rec.connects += 1));
  running.push(rec);
  await rec.informer.start();
  return rec;
}

function secretInformer(ns: string, labelSelector?: string): Promise<Recorded> {
  return startInformer(
    sharedSecretsPath(ns),
    () =>
      api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'sharedsecrets',
        labelSelector,
      }),
    labelSelector,
  );
}

/** Polls `check` until it holds; fails with `what` and the informer's state after `timeoutMs`. */
async function until(check: () => boolean, what: string, rec?: Recorded, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      const state = rec && {
        cache: rec.informer
          .list()
          .map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}@${o.metadata?.resourceVersion}`),
        adds: rec.adds.map((o) => o.metadata?.name),
        updates: rec.updates.map((o) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`),
        deletes: rec.deletes.map((o) => o.metadata?.name),
        errors: rec.errors.map(String),
        connects: rec.connects,
        lists: rec.lists,
      };
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${state ? `; informer: ${JSON.stringify(state)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function createSecret(ns: string, name: string, labels?: Record<string, string>): Promise<any> {
  const res = await eventually(
    () => ts.admin.post(sharedSecretsPath(ns), secretBody(name, labels)),
    (r) => r.status !== 0 && r.status < 500,
    `create ${ns}/${name}`,
  );
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

async function patchSecret(ns: string, name: string, patch: unknown): Promise<any> {
  const res = await eventually(
    () => ts.admin.patch(sharedSecretPath(ns, name), patch, MERGE_PATCH),
    (r) => r.status !== 0 && r.status < 500,
    `patch ${ns}/${name}`,
  );
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
  return res.body;
}

async function deleteSecret(ns: string, name: string): Promise<void> {
  const res = await eventually(
    () => ts.admin.delete(sharedSecretPath(ns, name)),
    (r) => r.status !== 0 && r.status < 500,
    `delete ${ns}/${name}`,
  );
  expect(res.status).toBe(200);
}

const cached = (rec: Recorded, ns: string, name: string) => rec.informer.get(name, ns);

/** The informer's cache equals a fresh list of the namespace (same names and resourceVersions). */
async function expectInSync(rec: Recorded, ns: string): Promise<void> {
  const listed = await ts.admin.get(sharedSecretsPath(ns));
  const want = listed.body.items.map((o: any) => `${o.metadata.name}@${o.metadata.resourceVersion}`).sort();
  await until(
    () =>
      JSON.stringify(
        rec.informer
          .list(ns)
          .map((o) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`)
          .sort(),
      ) === JSON.stringify(want),
    `the informer cache to equal the list ${JSON.stringify(want)}`,
    rec,
  );
}

describe('informer', () => {
  test('sees the initial list, then add, update and delete', async () => {
    const ns = uniq('inf');
    const first = await createSecret(ns, `a-${uniq('s')}`);
    const rec = await secretInformer(ns);
    await until(() => !!cached(rec, ns, first.metadata.name), 'the listed object', rec);
    expect(rec.adds.map((o) => o.metadata?.name)).toEqual([first.metadata.name]);
    expect(cached(rec, ns, first.metadata.name)).toEqual(first);

    const added = await createSecret(ns, `b-${uniq('s')}`);
    await until(() => rec.adds.some((o) => o.metadata?.name === added.metadata.name), 'the add', rec);
    expect(cached(rec, ns, added.metadata.name)).toEqual(added);

    const updated = await patchSecret(ns, first.metadata.name, { spec: { displayName: 'updated' } });
    await until(
      () => rec.updates.some((o) => o.metadata?.resourceVersion === updated.metadata.resourceVersion),
      'the update',
      rec,
    );
    expect(cached(rec, ns, first.metadata.name)).toEqual(updated);

    await deleteSecret(ns, added.metadata.name);
    await until(() => rec.deletes.some((o) => o.metadata?.name === added.metadata.name), 'the delete', rec);
    expect(cached(rec, ns, added.metadata.name)).toBeUndefined();
    expect(rec.deletes[0]).toMatchObject({
      kind: 'SharedSecret',
      metadata: { name: added.metadata.name, namespace: ns },
    });

    // Objects of other namespaces never show up.
    await createSecret(uniq('inf-other'), uniq('s'));
    await new Promise((r) => setTimeout(r, 300));
    expect(rec.informer.list().map((o) => o.metadata?.namespace)).toEqual([ns]);
    expect(rec.errors).toEqual([]);
    expect(rec.lists).toBe(1);
    await expectInSync(rec, ns);
  });

  test('with a label selector: an object that stops matching is deleted from the cache, one that starts matching is added', async () => {
    const ns = uniq('inf-sel');
    const name = uniq('s');
    await createSecret(ns, name, { team: 'blue' });
    const rec = await secretInformer(ns, 'team=blue');
    await until(() => !!cached(rec, ns, name), 'the matching object', rec);

    await patchSecret(ns, name, { metadata: { labels: { team: 'red' } } });
    await until(() => !cached(rec, ns, name), 'the object to leave the cache', rec);
    expect(rec.deletes.map((o) => [o.metadata?.name, o.metadata?.labels?.team])).toEqual([[name, 'blue']]);

    const back = await patchSecret(ns, name, { metadata: { labels: { team: 'blue' } } });
    await until(
      () => cached(rec, ns, name)?.metadata?.resourceVersion === back.metadata.resourceVersion,
      'the object to come back',
      rec,
    );
    expect(rec.adds.map((o) => o.metadata?.name)).toEqual([name, name]);
    expect(rec.errors).toEqual([]);
  });

  test('a cluster-scoped informer (clusters)', async () => {
    const rec = await startInformer(CLUSTERS_PATH, () =>
      api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'clusters' }),
    );
    const name = uniq('cl');
    const res = await ts.admin.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name },
      spec: {
        displayName: name,
        config: { secretName: 'kubeconfig', secretNamespace: 'platform' },
        managementNamespace: 'platform-system',
      },
    });
    expect(res.status).toBe(201);
    await until(() => !!rec.informer.get(name), 'the cluster', rec);
    expect(rec.informer.get(name)).toEqual(res.body);
    expect((await ts.admin.delete(clusterPath(name))).status).toBe(200);
    await until(() => !rec.informer.get(name), 'the cluster to go', rec);
    expect(rec.errors).toEqual([]);
  });

  test('keeps working across an etcd restart (no relist needed, nothing lost, no error)', async () => {
    const ns = uniq('inf-restart');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const rec = await secretInformer(ns);
    await until(() => !!cached(rec, ns, a.metadata.name), 'the listed object', rec);

    await etcd.restart();

    const b = await createSecret(ns, `b-${uniq('s')}`);
    const a2 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'after restart' } });
    await until(() => !!cached(rec, ns, b.metadata.name), 'the add after the restart', rec, 20_000);
    await until(
      () => cached(rec, ns, a.metadata.name)?.metadata?.resourceVersion === a2.metadata.resourceVersion,
      'the update after the restart',
      rec,
      20_000,
    );
    await deleteSecret(ns, a.metadata.name);
    await until(() => !cached(rec, ns, a.metadata.name), 'the delete after the restart', rec);

    expect(rec.errors).toEqual([]);
    // Each change exactly once.
    expect(rec.adds.map((o) => o.metadata?.name)).toEqual([a.metadata.name, b.metadata.name]);
    expect(rec.updates.map((o) => o.metadata?.resourceVersion)).toEqual([a2.metadata.resourceVersion]);
    expect(rec.deletes.map((o) => o.metadata?.name)).toEqual([a.metadata.name]);
    await expectInSync(rec, ns);
  }, 60_000);

  test('across a compaction under the watch cache (410): re-lists, keeps delivering, and loses no change made in the gap', async () => {
    const ns = uniq('inf-410');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const gone = await createSecret(ns, `g-${uniq('s')}`);
    const rec = await secretInformer(ns);
    await until(() => rec.informer.list(ns).length === 2, 'the listed objects', rec);
    const a1 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'before' } });
    await until(
      () => cached(rec, ns, a.metadata.name)?.metadata?.resourceVersion === a1.metadata.resourceVersion,
      'the first update',
      rec,
    );
    expect(rec.lists).toBe(1);

    // Move etcd past the last revision the server's watch cache has seen (with writes it does not watch),
    // compact everything, and restart etcd: the cache's etcd watch resumes from a compacted revision, so
    // the cache lists again and ends its watchers; the informer re-watches from its old resourceVersion and
    // must get 410 and re-list.
    await kv.put(`/informer-test-filler/${uniq('k')}`).value('1');
    await kv.put(`/informer-test-filler/${uniq('k')}`).value('2');
    await compactEtcd(kv);
    await etcd.restart();

    // Changes made while the informer is cut off or re-listing.
    const a2 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'in the gap' } });
    await deleteSecret(ns, gone.metadata.name);
    const c = await createSecret(ns, `c-${uniq('s')}`);

    await until(() => rec.lists >= 2, 'a re-list after the 410', rec, 20_000);
    await until(
      () => cached(rec, ns, a.metadata.name)?.metadata?.resourceVersion === a2.metadata.resourceVersion,
      'the update made in the gap',
      rec,
    );
    await until(() => !cached(rec, ns, gone.metadata.name), 'the delete made in the gap', rec);
    await until(() => !!cached(rec, ns, c.metadata.name), 'the add made in the gap', rec);

    // And it keeps delivering afterwards.
    const d = await createSecret(ns, `d-${uniq('s')}`);
    const a3 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'after' } });
    await until(() => !!cached(rec, ns, d.metadata.name), 'an add after the re-list', rec);
    await until(
      () => cached(rec, ns, a.metadata.name)?.metadata?.resourceVersion === a3.metadata.resourceVersion,
      'an update after the re-list',
      rec,
    );
    expect(rec.errors).toEqual([]);
    expect(rec.deletes.map((o) => o.metadata?.name)).toEqual([gone.metadata.name]);
    await expectInSync(rec, ns);
  }, 60_000);
});
