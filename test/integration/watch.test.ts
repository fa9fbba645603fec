/**
 * WATCH of SharedSecret and Cluster over real HTTPS and a real etcd: the newline-delimited event stream,
 * starting points (initial ADDED events, a given resourceVersion, a too-old one or one etcd never reached), selectors,
 * single-object watches, timeouts, bookmarks, watch-list, surviving an etcd restart, and one etcd watch
 * shared by many clients.
 */
import { describe, test, expect, afterEach } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import type { TestServer } from '../support/server.js';
import { compactEtcd, etcdRevision, type TestEtcd } from '../support/etcd.js';
import { GROUP_PATH, eventually } from '../support/http.js';
import { closeWatches, openWatch, watchFailure, DEFAULT_WAIT_MS, type WatchEvent } from '../support/watch.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  MERGE_PATCH,
  clusterBody,
  clusterPath,
  createSecretAs,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithOwnEtcd,
} from '../support/fixtures.js';

let etcd: TestEtcd;
let ts: TestServer;
let kv: Etcd3;
/** A revision compacted (and written) before the server started: older than anything its watch cache holds. */
let compactedRevision: number;

const ALL_SECRETS = `${GROUP_PATH}/sharedsecrets`;

useServerWithOwnEtcd(
  (env) => ({ ts, etcd, kv } = env),
  async (kv) => {
    for (let i = 0; i < 10; i++) await kv.put(`/watch-test-filler/${i}`).value(String(i));
    compactedRevision = await compactEtcd(kv);
  },
);

afterEach(closeWatches);

// ---------------------------------------------------------------------------------------------------------

function expectStatusBody(status: number, body: any, code: number, reason: string, message?: string): void {
  expect({ status, body }).toMatchObject({
    status: code,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason },
  });
  if (message !== undefined) expect(body.message).toBe(message);
}

const createSecret = (ns: string, name: string, labels?: Record<string, string>) =>
  createSecretAs(ts.admin, ns, name, labels);

async function patchSecret(ns: string, name: string, patch: unknown): Promise<any> {
  const res = await ts.admin.patch(sharedSecretPath(ns, name), patch, MERGE_PATCH);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
  return res.body;
}

/** Deletes and returns the deletion's revision (the list revision right after, with no other writer). */
async function deleteSecret(ns: string, name: string): Promise<string> {
  const res = await ts.admin.delete(sharedSecretPath(ns, name));
  expect(res.status).toBe(200);
  return String(await etcdRevision(kv));
}

async function listRv(path: string): Promise<string> {
  const res = await ts.admin.get(path);
  expect(res.status).toBe(200);
  return res.body.metadata.resourceVersion;
}

const rvOf = (e: WatchEvent) => e.object.metadata.resourceVersion as string;

// ---------------------------------------------------------------------------------------------------------

describe('stream format and starting point', () => {
  test('watch=true without resourceVersion: ADDED for existing objects, then MODIFIED and DELETED live', async () => {
    const ns = uniq('w-basic');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const b = await createSecret(ns, `b-${uniq('s')}`);

    const w = await openWatch(ts.admin, sharedSecretsPath(ns));
    expect(w.status).toBe(200);
    expect(w.headers['content-type']).toMatch(/^application\/json/);
    expect(w.headers['transfer-encoding']).toBe('chunked');

    const initial = await w.count(2);
    expect(initial).toEqual([
      { type: 'ADDED', object: a },
      { type: 'ADDED', object: b },
    ]);

    const patched = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'changed' } });
    const modified = await w.nth(3);
    expect(modified).toEqual({ type: 'MODIFIED', object: patched });

    const deleteRv = await deleteSecret(ns, b.metadata.name);
    const deleted = await w.nth(4);
    expect(deleted.type).toBe('DELETED');
    // The last stored state, at the deletion's revision.
    expect(deleted.object).toEqual({ ...b, metadata: { ...b.metadata, resourceVersion: deleteRv } });
    expect(Number(rvOf(deleted))).toBeGreaterThan(Number(patched.metadata.resourceVersion));

    // One compact JSON object per line, every line newline-terminated, each with kind and apiVersion.
    expect(w.partial).toBe('');
    for (const line of w.lines) {
      expect(line).toBe(JSON.stringify(JSON.parse(line)));
      expect(JSON.parse(line).object).toMatchObject({ kind: 'SharedSecret', apiVersion: API_VERSION });
    }
    await w.quiet(300);
  });

  test.each([['watch=1'], ['watch=true&resourceVersion=0'], ['watch=1&resourceVersion=0']])(
    '%s also starts with ADDED for existing objects',
    async (query) => {
      const ns = uniq('w-rv0');
      const a = await createSecret(ns, uniq('s'));
      const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?${query}`);
      expect(w.status).toBe(200);
      const [first] = await w.count(1);
      expect(first).toEqual({ type: 'ADDED', object: a });
      const b = await createSecret(ns, `zz-${uniq('s')}`);
      expect(await w.nth(2)).toEqual({ type: 'ADDED', object: b });
      await w.quiet(200);
    },
  );

  test('from a given resourceVersion: only later events, with no ADDED for what existed', async () => {
    const ns = uniq('w-from');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const a2 = await patchSecret(ns, a.metadata.name, { metadata: { labels: { step: '2' } } });
    const b = await createSecret(ns, `b-${uniq('s')}`);
    const deleteRv = await deleteSecret(ns, a.metadata.name);

    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${a.metadata.resourceVersion}`);
    expect(w.status).toBe(200);
    const events = await w.count(3);
    expect(events.map((e) => [e.type, e.object.metadata.name, rvOf(e)])).toEqual([
      ['MODIFIED', a.metadata.name, a2.metadata.resourceVersion],
      ['ADDED', b.metadata.name, b.metadata.resourceVersion],
      ['DELETED', a.metadata.name, deleteRv],
    ]);
    expect(events[0].object).toEqual(a2);
    expect(events[2].object.metadata.labels).toEqual({ step: '2' });

    // Then live.
    const c = await createSecret(ns, `c-${uniq('s')}`);
    expect(await w.nth(4)).toEqual({ type: 'ADDED', object: c });
    await w.quiet(200);

    // From the latest revision: nothing until the next change.
    const w2 = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${c.metadata.resourceVersion}`);
    await w2.quiet(300);
    const c2 = await patchSecret(ns, c.metadata.name, { spec: { displayName: 'x' } });
    expect(await w2.nth(1)).toEqual({ type: 'MODIFIED', object: c2 });
  });

  test('DELETED carries the last state with the deletion revision as resourceVersion (cluster-scoped too)', async () => {
    const name = uniq('w-del-cl');
    const created = await ts.admin.post(CLUSTERS_PATH, clusterBody(name));
    expect(created.status).toBe(201);
    const w = await openWatch(ts.admin, `${CLUSTERS_PATH}?resourceVersion=${created.body.metadata.resourceVersion}`);
    const del = await ts.admin.delete(clusterPath(name));
    expect(del.status).toBe(200);
    const deleteRv = String(await etcdRevision(kv));
    const ev = await w.nth(1);
    expect(ev.type).toBe('DELETED');
    expect(ev.object).toEqual({ ...created.body, metadata: { ...created.body.metadata, resourceVersion: deleteRv } });
    expect(Number(deleteRv)).toBeGreaterThan(Number(created.body.metadata.resourceVersion));
  });

  test('a cluster-wide watch of sharedsecrets sees every namespace; a namespaced one only its own', async () => {
    const nsA = uniq('w-wide-a');
    const nsB = uniq('w-wide-b');
    const rv = await listRv(ALL_SECRETS);
    const wide = await openWatch(ts.admin, `${ALL_SECRETS}?resourceVersion=${rv}`);
    const onlyA = await openWatch(ts.admin, `${sharedSecretsPath(nsA)}?resourceVersion=${rv}`);
    const a = await createSecret(nsA, uniq('s'));
    const b = await createSecret(nsB, uniq('s'));
    const mine = (e: WatchEvent) => [nsA, nsB].includes(e.object.metadata.namespace);
    await wide.find((e) => e.object.metadata.name === b.metadata.name, 'the nsB object');
    expect(wide.events.filter(mine)).toEqual([
      { type: 'ADDED', object: a },
      { type: 'ADDED', object: b },
    ]);
    expect(await onlyA.nth(1)).toEqual({ type: 'ADDED', object: a });
    await onlyA.quiet(300);
  });

  test('a watch with Accept as=PartialObjectMetadata streams metadata-only objects', async () => {
    const ns = uniq('w-pom');
    const rv = await listRv(sharedSecretsPath(ns));
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${rv}`, {
      headers: { Accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' },
    });
    expect(w.status).toBe(200);
    const a = await createSecret(ns, uniq('s'), { x: 'y' });
    const ev = await w.nth(1);
    expect(ev).toEqual({
      type: 'ADDED',
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: a.metadata },
    });
  });
});

describe('selectors', () => {
  test('labelSelector: ADDED when an object starts matching, DELETED with the old labels when it stops', async () => {
    const ns = uniq('w-label');
    const name = uniq('s');
    const rv = await listRv(sharedSecretsPath(ns));
    const w = await openWatch(
      ts.admin,
      `${sharedSecretsPath(ns)}?resourceVersion=${rv}&labelSelector=${encodeURIComponent('app=web')}`,
    );
    expect(w.status).toBe(200);

    const other = await createSecret(ns, `other-${uniq('s')}`, { app: 'db' }); // never matches
    const created = await createSecret(ns, name, { app: 'db' }); // not yet matching
    const matching = await patchSecret(ns, name, { metadata: { labels: { app: 'web' } } });
    const stillMatching = await patchSecret(ns, name, { spec: { displayName: 'still web' } });
    const leaving = await patchSecret(ns, name, { metadata: { labels: { app: 'api' } } });
    await patchSecret(ns, other.metadata.name, { spec: { displayName: 'ignored' } });
    const back = await patchSecret(ns, name, { metadata: { labels: { app: 'web' } } });
    const deleteRv = await deleteSecret(ns, name);

    const events = await w.count(5);
    expect(events.map((e) => [e.type, e.object.metadata.labels?.app, rvOf(e)])).toEqual([
      ['ADDED', 'web', matching.metadata.resourceVersion],
      ['MODIFIED', 'web', stillMatching.metadata.resourceVersion],
      // The old (still matching) state, at the revision of the change that made it stop matching.
      ['DELETED', 'web', leaving.metadata.resourceVersion],
      ['ADDED', 'web', back.metadata.resourceVersion],
      ['DELETED', 'web', deleteRv],
    ]);
    expect(events[0].object).toEqual(matching);
    expect(events[2].object).toEqual({
      ...stillMatching,
      metadata: { ...stillMatching.metadata, resourceVersion: leaving.metadata.resourceVersion },
    });
    expect(created.metadata.labels).toEqual({ app: 'db' });
    await w.quiet(300);
  });

  test('labelSelector with initial events: ADDED only for matching objects', async () => {
    const ns = uniq('w-label-init');
    const web = await createSecret(ns, `a-${uniq('s')}`, { app: 'web' });
    await createSecret(ns, `b-${uniq('s')}`, { app: 'db' });
    await createSecret(ns, `c-${uniq('s')}`);
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?labelSelector=${encodeURIComponent('app in (web)')}`);
    expect(await w.nth(1)).toEqual({ type: 'ADDED', object: web });
    await w.quiet(300);
  });

  test('fieldSelector metadata.name (kubectl get NAME -w, kubectl wait --for=delete)', async () => {
    const ns = uniq('w-field');
    const name = uniq('target');
    const target = await createSecret(ns, name);
    const bystander = await createSecret(ns, `${name}-not`);

    // kubectl get NAME -w: watch without resourceVersion, one ADDED for the object, then its changes only.
    const getW = await openWatch(
      ts.admin,
      `${sharedSecretsPath(ns)}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`,
    );
    expect(await getW.nth(1)).toEqual({ type: 'ADDED', object: target });

    // kubectl wait --for=delete: list with the field selector, then watch from the list's resourceVersion.
    const listed = await ts.admin.get(
      `${sharedSecretsPath(ns)}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`,
    );
    expect(listed.body.items).toEqual([target]);
    const waitW = await openWatch(
      ts.admin,
      `${sharedSecretsPath(ns)}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}&resourceVersion=${listed.body.metadata.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=30`,
    );

    await patchSecret(ns, bystander.metadata.name, { spec: { displayName: 'not watched' } });
    const modified = await patchSecret(ns, name, { spec: { displayName: 'watched' } });
    const deleteRv = await deleteSecret(ns, name);
    await ts.admin.delete(sharedSecretPath(ns, bystander.metadata.name));

    const getEvents = await getW.count(3);
    expect(getEvents.map((e) => [e.type, e.object.metadata.name, rvOf(e)])).toEqual([
      ['ADDED', name, target.metadata.resourceVersion],
      ['MODIFIED', name, modified.metadata.resourceVersion],
      ['DELETED', name, deleteRv],
    ]);
    const waitEvents = await waitW.count(2);
    expect(waitEvents.map((e) => [e.type, e.object.metadata.name, rvOf(e)])).toEqual([
      ['MODIFIED', name, modified.metadata.resourceVersion],
      ['DELETED', name, deleteRv],
    ]);
    await getW.quiet(300);
    expect(waitW.events.filter((e) => e.type !== 'BOOKMARK')).toHaveLength(2);
  });

  test('GET .../sharedsecrets/<name>?watch=true watches that one object', async () => {
    const ns = uniq('w-named');
    const name = uniq('one');
    const obj = await createSecret(ns, name);
    const sibling = await createSecret(ns, `${name}x`);
    const w = await openWatch(ts.admin, `${sharedSecretPath(ns, name)}?watch=true`);
    expect(w.status).toBe(200);
    expect(await w.nth(1)).toEqual({ type: 'ADDED', object: obj });
    await patchSecret(ns, sibling.metadata.name, { spec: { displayName: 'sibling' } });
    const patched = await patchSecret(ns, name, { spec: { displayName: 'one' } });
    expect(await w.nth(2)).toEqual({ type: 'MODIFIED', object: patched });
    const deleteRv = await deleteSecret(ns, name);
    const del = await w.nth(3);
    expect([del.type, rvOf(del)]).toEqual(['DELETED', deleteRv]);
    await w.quiet(300);

    // From a resourceVersion, with watch=1, and on a cluster-scoped object.
    const clName = uniq('one-cl');
    const cl = await ts.admin.post(CLUSTERS_PATH, clusterBody(clName));
    expect(cl.status).toBe(201);
    const wc = await openWatch(
      ts.admin,
      `${clusterPath(clName)}?watch=1&resourceVersion=${cl.body.metadata.resourceVersion}`,
    );
    expect(wc.status).toBe(200);
    const other = await ts.admin.post(CLUSTERS_PATH, clusterBody(`${clName}-other`));
    expect(other.status).toBe(201);
    const upd = await ts.admin.patch(clusterPath(clName), { spec: { displayName: 'changed' } }, MERGE_PATCH);
    expect(upd.status).toBe(200);
    expect(await wc.nth(1)).toEqual({ type: 'MODIFIED', object: upd.body });
    await wc.quiet(200);
  });

  test('an unsupported field selector on a watch is 400; so is a bad label selector', async () => {
    const field = await watchFailure(
      ts.admin,
      `${sharedSecretsPath('default')}?fieldSelector=${encodeURIComponent('spec.x=1')}`,
    );
    expectStatusBody(
      field.status,
      field.body,
      400,
      'BadRequest',
      '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    const label = await watchFailure(
      ts.admin,
      `${sharedSecretsPath('default')}?labelSelector=${encodeURIComponent('a in (b')}`,
    );
    expectStatusBody(label.status, label.body, 400, 'BadRequest');
  });
});

describe('timeouts and bookmarks', () => {
  test('timeoutSeconds=1 ends the stream cleanly after about a second', async () => {
    const ns = uniq('w-timeout');
    const a = await createSecret(ns, uniq('s'));
    const started = Date.now();
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?timeoutSeconds=1`);
    expect(w.status).toBe(200);
    await w.end(8000);
    const took = Date.now() - started;
    expect(w.endedCleanly).toBe(true);
    expect(w.error).toBeUndefined();
    expect(w.partial).toBe('');
    expect(w.events).toEqual([{ type: 'ADDED', object: a }]);
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
  });

  test('allowWatchBookmarks with timeoutSeconds=5 gets a BOOKMARK (resourceVersion only) before the end', async () => {
    const ns = uniq('w-bookmark');
    const rv = await listRv(sharedSecretsPath(ns));
    const started = Date.now();
    const w = await openWatch(
      ts.admin,
      `${sharedSecretsPath(ns)}?resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=5`,
    );
    expect(w.status).toBe(200);
    const created = await createSecret(ns, uniq('s'));
    const bookmark = await w.find((e) => e.type === 'BOOKMARK', 'a BOOKMARK', 8000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(bookmark.object).toEqual({
      kind: 'SharedSecret',
      apiVersion: API_VERSION,
      metadata: { resourceVersion: expect.stringMatching(/^[0-9]+$/) },
    });
    expect(Number(rvOf(bookmark))).toBeGreaterThanOrEqual(Number(created.metadata.resourceVersion));
    await w.end(8000);
    expect(w.endedCleanly).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4500);
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
  }, 20_000);

  test('without allowWatchBookmarks there is no BOOKMARK', async () => {
    const ns = uniq('w-nobookmark');
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?timeoutSeconds=5`);
    await w.end(8000);
    expect(w.endedCleanly).toBe(true);
    expect(w.events).toEqual([]);
  }, 20_000);
});

describe('watch-list (sendInitialEvents)', () => {
  test('ADDED sorted by namespace/name, a BOOKMARK marking the end of initial events, then live events', async () => {
    const base = uniq('w-wl');
    // "base-b/aa" sorts before "base/zz" as text; both before "base/zz"'s later siblings.
    const nsA = base;
    const nsB = `${base}-b`;
    const made = [
      await createSecret(nsA, 'zz'),
      await createSecret(nsB, 'aa'),
      await createSecret(nsA, 'mm'),
      await createSecret(nsA, 'aa'),
    ];
    const query = 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
    const w = await openWatch(ts.admin, `${ALL_SECRETS}?${query}`);
    expect(w.status).toBe(200);
    const end = await w.find((e) => e.type === 'BOOKMARK', 'the initial-events-end BOOKMARK');
    const initial = w.events.slice(0, w.events.indexOf(end));
    expect(initial.every((e) => e.type === 'ADDED')).toBe(true);
    const keys = initial.map((e) => `${e.object.metadata.namespace}/${e.object.metadata.name}`);
    expect([...keys].sort()).toEqual(keys);
    // Same objects and order as a list.
    const listed = await ts.admin.get(ALL_SECRETS);
    expect(initial.map((e) => e.object)).toEqual(listed.body.items);
    const mine = keys.filter((k) => k.startsWith(base));
    expect(mine).toEqual([`${nsB}/aa`, `${nsA}/aa`, `${nsA}/mm`, `${nsA}/zz`].sort());
    expect(mine).toHaveLength(made.length);

    expect(end.object).toMatchObject({
      kind: 'SharedSecret',
      apiVersion: API_VERSION,
      metadata: {
        resourceVersion: expect.stringMatching(/^[0-9]+$/),
        annotations: { 'k8s.io/initial-events-end': 'true' },
      },
    });
    const blueprint = end.object.metadata.annotations['kubernetes.io/initial-events-list-blueprint'];
    if (blueprint !== undefined)
      expect(JSON.parse(Buffer.from(blueprint, 'base64').toString('utf8'))).toMatchObject({
        kind: 'SharedSecretList',
        apiVersion: API_VERSION,
        items: [],
      });
    for (const e of initial) expect(Number(rvOf(e))).toBeLessThanOrEqual(Number(rvOf(end)));
    for (const m of made) expect(Number(rvOf(end))).toBeGreaterThanOrEqual(Number(m.metadata.resourceVersion));

    const live = await createSecret(nsA, 'bb');
    const liveEvent = await w.find(
      (e) => e.object.metadata?.name === 'bb' && e.object.metadata?.namespace === nsA,
      'the live event',
      DEFAULT_WAIT_MS,
      initial.length + 1,
    );
    expect(liveEvent).toEqual({ type: 'ADDED', object: live });
  });

  test('watch-list in one namespace with a resourceVersion: initial state not older than it, then the end BOOKMARK', async () => {
    const ns = uniq('w-wl-ns');
    const b = await createSecret(ns, 'b');
    const a = await createSecret(ns, 'a');
    const w = await openWatch(
      ts.admin,
      `${sharedSecretsPath(ns)}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${b.metadata.resourceVersion}`,
    );
    expect(w.status).toBe(200);
    const events = await w.count(3);
    expect(events.slice(0, 2)).toEqual([
      { type: 'ADDED', object: a },
      { type: 'ADDED', object: b },
    ]);
    expect(events[2].type).toBe('BOOKMARK');
    expect(events[2].object.metadata.annotations).toMatchObject({ 'k8s.io/initial-events-end': 'true' });
    expect(Number(rvOf(events[2]))).toBeGreaterThanOrEqual(Number(a.metadata.resourceVersion));
  });

  test('sendInitialEvents without resourceVersionMatch=NotOlderThan is 422', async () => {
    const res = await watchFailure(
      ts.admin,
      `${sharedSecretsPath('default')}?sendInitialEvents=true&allowWatchBookmarks=true`,
    );
    expectStatusBody(
      res.status,
      res.body,
      422,
      'Invalid',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    );
    expect(res.body.details).toEqual({
      group: 'meta.k8s.io',
      kind: 'ListOptions',
      causes: [
        {
          reason: 'FieldValueForbidden',
          message: 'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
          field: 'resourceVersionMatch',
        },
      ],
    });
  });

  test('resourceVersionMatch on a watch without sendInitialEvents is 422', async () => {
    const res = await watchFailure(
      ts.admin,
      `${sharedSecretsPath('default')}?resourceVersionMatch=NotOlderThan&resourceVersion=0`,
    );
    expectStatusBody(
      res.status,
      res.body,
      422,
      'Invalid',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
    expect(res.body.details.causes).toEqual([
      {
        reason: 'FieldValueForbidden',
        message: 'Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
        field: 'resourceVersionMatch',
      },
    ]);
  });
});

describe('too old and too new resourceVersions', () => {
  test('a compacted starting resourceVersion: HTTP 200, exactly one ERROR event (410 Expired), then the stream ends', async () => {
    const old = compactedRevision - 3;
    for (const path of [sharedSecretsPath(uniq('w-old')), CLUSTERS_PATH, `${ALL_SECRETS}?labelSelector=a%3Db`]) {
      const w = await openWatch(ts.admin, `${path}${path.includes('?') ? '&' : '?'}resourceVersion=${old}`);
      expect(w.status).toBe(200);
      await w.end();
      expect(w.endedCleanly).toBe(true);
      expect(w.events).toHaveLength(1);
      expect(w.events[0]).toEqual({
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: expect.stringMatching(new RegExp(`^too old resource version: ${old} \\([0-9]+\\)$`)),
          reason: 'Expired',
          code: 410,
        },
      });
    }
  });

  test('a resourceVersion etcd never reached (as after a restore from a snapshot) is 410 Expired at once: list again', async () => {
    const current = await etcdRevision(kv);
    const future = current + 1_000_000;
    const w = await openWatch(ts.admin, `${sharedSecretsPath('default')}?resourceVersion=${future}`);
    expect(w.status).toBe(200);
    await w.end();
    expect(w.endedCleanly).toBe(true);
    expect(w.events).toEqual([
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: expect.stringMatching(new RegExp(`^too large resource version: ${future}, current: [0-9]+: `)),
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });

  test('a non-numeric resourceVersion on a watch is 400', async () => {
    const res = await watchFailure(ts.admin, `${sharedSecretsPath('default')}?resourceVersion=abc`);
    expectStatusBody(res.status, res.body, 400, 'BadRequest');
    expect(res.body.message).toMatch(/^invalid resource version: /);
  });
});

describe('one etcd watch for many clients', () => {
  async function etcdWatchers(): Promise<number> {
    const text = await (await fetch(`${etcd.endpoint}/metrics`)).text();
    const m = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
    if (!m) throw new Error('etcd_debugging_mvcc_watcher_total not in etcd metrics');
    return Number(m[1]);
  }

  test('50 concurrent watches all get the same event, and add no etcd watches', async () => {
    const ns = uniq('w-fanout');
    const rv = await listRv(sharedSecretsPath(ns));
    const before = await etcdWatchers();
    expect(before).toBeGreaterThanOrEqual(1); // the server's own watch cache
    const streams = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        openWatch(
          ts.admin,
          i % 2 === 0
            ? `${sharedSecretsPath(ns)}?resourceVersion=${rv}`
            : `${ALL_SECRETS}?resourceVersion=${rv}&fieldSelector=metadata.namespace%3D${ns}`,
        ),
      ),
    );
    expect(streams.map((s) => s.status)).toEqual(streams.map(() => 200));
    expect(await etcdWatchers()).toBe(before);

    // etcd itself still takes writes promptly with all these clients attached.
    const started = Date.now();
    for (let i = 0; i < 20; i++) await kv.put(`/watch-test-filler/fanout-${i}`).value(String(i));
    expect(Date.now() - started).toBeLessThan(5000);

    const created = await createSecret(ns, uniq('s'));
    const patched = await patchSecret(ns, created.metadata.name, { spec: { displayName: 'fan' } });
    const got = await Promise.all(streams.map((s) => s.count(2)));
    for (const events of got) {
      expect(events).toEqual([
        { type: 'ADDED', object: created },
        { type: 'MODIFIED', object: patched },
      ]);
    }
    for (const s of streams) s.close();
    // Closing the clients does not leave etcd watches behind either.
    expect(await etcdWatchers()).toBeLessThanOrEqual(before);
  });
});

describe('etcd restart', () => {
  test('a watch survives an etcd restart under it: later events arrive, none twice', async () => {
    const ns = uniq('w-restart');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${a.metadata.resourceVersion}`);
    const wAll = await openWatch(ts.admin, sharedSecretsPath(ns)); // with initial events
    const a2 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'before restart' } });
    expect(await w.nth(1)).toEqual({ type: 'MODIFIED', object: a2 });
    await wAll.count(2);

    await etcd.restart();

    const bName = `b-${uniq('s')}`;
    const b = await eventually(
      () => ts.admin.post(sharedSecretsPath(ns), secretBody(bName)),
      (r) => r.status === 201 || r.status === 409,
      'create after the restart',
    );
    const bObj = b.status === 201 ? b.body : (await ts.admin.get(sharedSecretPath(ns, bName))).body;
    const a3 = await patchSecret(ns, a.metadata.name, { spec: { displayName: 'after restart' } });

    await w.find(
      (e) => e.object.metadata.resourceVersion === a3.metadata.resourceVersion,
      'the event after the restart',
      20_000,
    );
    await w.quiet(500);
    expect(w.events.map((e) => [e.type, e.object.metadata.name, rvOf(e)])).toEqual([
      ['MODIFIED', a.metadata.name, a2.metadata.resourceVersion],
      ['ADDED', bName, bObj.metadata.resourceVersion],
      ['MODIFIED', a.metadata.name, a3.metadata.resourceVersion],
    ]);
    expect(w.ended).toBe(false);

    await wAll.find(
      (e) => rvOf(e) === a3.metadata.resourceVersion,
      'the event after the restart (second watch)',
      20_000,
    );
    const rvs = wAll.events.map((e) => Number(rvOf(e)));
    expect(new Set(rvs).size).toBe(rvs.length);
    expect(wAll.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'ADDED', 'MODIFIED']);

    // New watches and lists work as before.
    const w2 = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${a.metadata.resourceVersion}`);
    const replay = await w2.count(3);
    expect(replay.map(rvOf)).toEqual([a2, bObj, a3].map((o) => o.metadata.resourceVersion));
    const listed = await ts.admin.get(sharedSecretsPath(ns));
    expect(listed.body.items.map((o: any) => o.metadata.resourceVersion)).toEqual([
      a3.metadata.resourceVersion,
      bObj.metadata.resourceVersion,
    ]);
  }, 60_000);

  // Runs last: it compacts etcd under the server's watch cache.
  test('etcd compacted past the watch cache while etcd restarts: clients following the protocol lose nothing, new watches work', async () => {
    const ns = uniq('w-compact-restart');
    const a = await createSecret(ns, `a-${uniq('s')}`);
    const w = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${a.metadata.resourceVersion}`);

    // Writes the cache does not watch move etcd past the cache's last revision; then compact and restart, so
    // the cache's etcd watch resumes from a compacted revision.
    await kv.put(`/watch-test-filler/${uniq('k')}`).value('1');
    await kv.put(`/watch-test-filler/${uniq('k')}`).value('2');
    await compactEtcd(kv);
    await etcd.restart();

    const bName = `b-${uniq('s')}`;
    const b = await eventually(
      () => ts.admin.post(sharedSecretsPath(ns), secretBody(bName)),
      (r) => r.status === 201,
      'create after the restart',
    );

    // A reflector: follow the stream; when it ends, watch again from the last resourceVersion; on 410, list.
    let stream = w;
    let rv = a.metadata.resourceVersion as string;
    let relisted = false;
    let seen = false;
    for (const deadline = Date.now() + 20_000; !seen;) {
      if (Date.now() > deadline) {
        throw new Error(
          `the create after the restart never reached the client (relisted: ${relisted}; last stream: ${JSON.stringify(stream.summary())}, ended: ${stream.ended})`,
        );
      }
      seen = stream.events.some((e) => e.object?.metadata?.name === bName);
      if (seen) break;
      const error = stream.events.find((e) => e.type === 'ERROR');
      if (error) {
        expect(error.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
        const listed = await ts.admin.get(sharedSecretsPath(ns));
        relisted = true;
        seen = listed.body.items.some((o: any) => o.metadata.name === bName);
        rv = listed.body.metadata.resourceVersion;
        stream = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${rv}`);
        continue;
      }
      if (stream.ended) {
        rv = stream.events.length ? rvOf(stream.events[stream.events.length - 1]) : rv;
        stream = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${rv}`);
        continue;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(b.body.metadata.name).toBe(bName);

    // A new watch without resourceVersion is served (no 504) and delivers live events.
    const fresh = await openWatch(ts.admin, sharedSecretsPath(ns), { timeoutMs: 15_000 });
    expect({
      status: fresh.status,
      body: fresh.status === 200 ? undefined : await fresh.end().then(() => fresh.body),
    }).toEqual({ status: 200, body: undefined });
    await fresh.count(2);
    const c = await createSecret(ns, `c-${uniq('s')}`);
    expect(await fresh.nth(3)).toEqual({ type: 'ADDED', object: c });

    // And a list right after a write is served promptly again (not after a 3 s wait for a stuck cache).
    const started = Date.now();
    const listed = await ts.admin.get(sharedSecretsPath(ns));
    expect(listed.body.items.map((o: any) => o.metadata.name)).toEqual([a.metadata.name, bName, c.metadata.name]);
    expect(Date.now() - started).toBeLessThan(2000);
  }, 90_000);
});
