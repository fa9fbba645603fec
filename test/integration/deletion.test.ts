/**
 * Deletion over HTTPS against a real server (with its garbage collector) and a real etcd:
 *
 * - DeleteOptions as a JSON or YAML body and as query parameters: preconditions (409 with kube's messages, nothing
 *   changed), propagationPolicy / orphanDependents (bad values and both together 422), dryRun;
 * - the finalizers a policy puts on the object (`orphan`, `foregroundDeletion`), also on a repeated DELETE, and the
 *   deletionTimestamp that never moves and that clients cannot set, clear or change;
 * - each propagation policy on a chain of three objects A ← B ← C, carried out by the garbage collector;
 * - blockOwnerDeletion: allowed only to a caller who may delete the owner (422 otherwise).
 *
 * The garbage collector's own cases (cycles, restarts, recreated owners) are in garbagecollector.test.ts; several
 * replicas in replicas.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_VERSION,
  EtcdPeek,
  JSON_PATCH,
  MERGE_PATCH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { closeWatches, openWatch } from '../support/watch.js';

const TOKENS = { root: `root-${randomBytes(24).toString('hex')}`, bob: `bob-${randomBytes(24).toString('hex')}` };
const NS = 'deletion';
const HOLD = 'example.com/hold';

let ts: TestServer;
let peek: EtcdPeek;
let dir: string;
let root: HttpClient;
let bob: HttpClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'deletion-'));
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${TOKENS.root},root,uid-root,"system:masters"\n${TOKENS.bob},bob,uid-bob\n`, {
    mode: 0o600,
  });
  ts = await startTestServer({ tokenAuthFile: tokenFile });
  peek = new EtcdPeek(ts);
  root = ts.client(TOKENS.root);
  bob = ts.client(TOKENS.bob);
}, 120_000);

afterEach(closeWatches);

afterAll(async () => {
  peek?.close();
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

// ---------------------------------------------------------------------------------------------------------------

async function create(
  name: string,
  meta: Record<string, unknown> = {},
  spec: Record<string, unknown> = {},
): Promise<any> {
  const body = secretBody(name);
  body.metadata = { ...body.metadata, ...meta };
  body.spec = { ...body.spec, ...spec };
  const res = await root.post(sharedSecretsPath(NS), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

const path = (name: string, query = '') => `${sharedSecretPath(NS, name)}${query}`;
const stored = (name: string) => peek.value(peek.sharedSecretKey(NS, name));
const ref = (owner: any, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'SharedSecret',
  name: owner.metadata.name,
  uid: owner.metadata.uid,
  ...extra,
});
const deleteOptions = (opts: Record<string, unknown>) => ({
  body: { kind: 'DeleteOptions', apiVersion: 'v1', ...opts },
});

function expectStatus(res: HttpResponse, code: number, reason: string, message?: string): void {
  expect({ status: res.status, kind: res.body?.kind, code: res.body?.code, reason: res.body?.reason }).toEqual({
    status: code,
    kind: 'Status',
    code,
    reason,
  });
  if (message !== undefined) expect(res.body.message).toBe(message);
}

const gone = (name: string) =>
  waitFor(`${name} to be gone`, async () => (await root.get(path(name))).status === 404, 15_000);

// ---------------------------------------------------------------------------------------------------------------

describe('DeleteOptions', () => {
  test("preconditions that do not match: 409 with kube's messages, and the object stays as it was", async () => {
    const obj = await create(uniq('pre'));
    const name = obj.metadata.name;
    const before = await peek.entry(peek.sharedSecretKey(NS, name));

    const uid = await root.delete(path(name), deleteOptions({ preconditions: { uid: 'not-the-uid' } }));
    expectStatus(
      uid,
      409,
      'Conflict',
      `Operation cannot be fulfilled on SharedSecret.management.platform.sh "${name}": the UID in the precondition (not-the-uid) does not match the UID in record (${obj.metadata.uid}). The object might have been deleted and then recreated`,
    );
    const rv = await root.delete(path(name), deleteOptions({ preconditions: { resourceVersion: '1' } }));
    expectStatus(
      rv,
      409,
      'Conflict',
      `Operation cannot be fulfilled on SharedSecret.management.platform.sh "${name}": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${obj.metadata.resourceVersion}). The object might have been modified`,
    );
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toEqual(before);

    // Matching ones delete it.
    const ok = await root.delete(
      path(name),
      deleteOptions({ preconditions: { uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion } }),
    );
    expect({ status: ok.status, kind: ok.body.kind, result: ok.body.status }).toEqual({
      status: 200,
      kind: 'Status',
      result: 'Success',
    });
    expect(await stored(name)).toBeUndefined();
  });

  test.each([
    [
      'a propagationPolicy kube does not know',
      '?propagationPolicy=Sideways',
      undefined,
      'propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"',
    ],
    [
      'the same in the body',
      '',
      { propagationPolicy: 'sideways' },
      'propagationPolicy: Unsupported value: "sideways": supported values: "Foreground", "Background", "Orphan", "nil"',
    ],
    [
      'orphanDependents together with a policy',
      '?orphanDependents=true&propagationPolicy=Orphan',
      undefined,
      'propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set',
    ],
    [
      'orphanDependents that is not a boolean',
      '',
      { orphanDependents: 'yes' },
      'orphanDependents: Invalid value: "yes": must be true or false',
    ],
  ])('%s: 422, nothing deleted', async (_what, query, body, cause) => {
    const obj = await create(uniq('bad-opts'));
    const before = await stored(obj.metadata.name);
    const res = await root.delete(path(obj.metadata.name, query), body ? deleteOptions(body) : {});
    expectStatus(res, 422, 'Invalid');
    expect(res.body.message).toBe(`DeleteOptions.meta.k8s.io "" is invalid: ${cause}`);
    expect(await stored(obj.metadata.name)).toEqual(before);
  });

  test('a YAML body is read like a JSON one', async () => {
    const obj = await create(uniq('yaml'), { finalizers: [HOLD] });
    const yaml = `kind: DeleteOptions\napiVersion: v1\npropagationPolicy: Orphan\npreconditions:\n  uid: ${obj.metadata.uid}\n`;
    const res = await root.request('DELETE', path(obj.metadata.name), { body: yaml, contentType: 'application/yaml' });
    expect(res.status).toBe(200);
    expect(res.body.metadata.finalizers).toEqual([HOLD, 'orphan']);
  });

  test('dryRun=All with a policy answers what would happen and changes nothing', async () => {
    const obj = await create(uniq('dry'));
    const before = await stored(obj.metadata.name);
    const res = await root.delete(path(obj.metadata.name, '?dryRun=All&propagationPolicy=Foreground'));
    expect(res.status).toBe(200);
    expect(res.body.metadata).toMatchObject({ finalizers: ['foregroundDeletion'], deletionGracePeriodSeconds: 0 });
    expect(res.body.metadata.deletionTimestamp).toBeDefined();
    expect(await stored(obj.metadata.name)).toEqual(before);

    const plain = await root.delete(path(obj.metadata.name, '?dryRun=All'));
    expect(plain.status).toBe(200);
    expect(await stored(obj.metadata.name)).toEqual(before);
  });
});

describe('the finalizers a DELETE sets, and deletionTimestamp', () => {
  test('Orphan and Foreground put their finalizer on; a repeated DELETE switches it; the timestamp never moves', async () => {
    const obj = await create(uniq('switch'), { finalizers: [HOLD] });
    const name = obj.metadata.name;

    const orphan = await root.delete(path(name, '?propagationPolicy=Orphan'));
    expect(orphan.status).toBe(200);
    expect(orphan.body.metadata).toMatchObject({
      finalizers: [HOLD, 'orphan'],
      deletionGracePeriodSeconds: 0,
      generation: 2,
    });
    const since = orphan.body.metadata.deletionTimestamp;
    expect(since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // Wait past the second, so a moved timestamp would show.
    await new Promise((r) => setTimeout(r, 1100));
    const fg = await root.delete(path(name), deleteOptions({ propagationPolicy: 'Foreground' }));
    expect(fg.body.metadata).toMatchObject({
      finalizers: [HOLD, 'foregroundDeletion'],
      deletionTimestamp: since,
      generation: 2,
    });
    const byBool = await root.delete(path(name, '?orphanDependents=true'));
    expect(byBool.body.metadata).toMatchObject({ finalizers: [HOLD, 'orphan'], deletionTimestamp: since });
    const background = await root.delete(path(name, '?propagationPolicy=Background'));
    expect(background.body.metadata).toMatchObject({ finalizers: [HOLD], deletionTimestamp: since });
    // No policy: the finalizers stay as they are.
    const again = await root.delete(path(name));
    expect(again.body.metadata).toMatchObject({
      finalizers: [HOLD],
      deletionTimestamp: since,
      resourceVersion: background.body.metadata.resourceVersion,
    });

    // Readable and listable meanwhile.
    expect((await root.get(path(name))).body.metadata.deletionTimestamp).toBe(since);
    const list = await root.get(sharedSecretsPath(NS));
    expect(list.body.items.map((o: any) => o.metadata.name)).toContain(name);

    // The last finalizer's removal deletes it; a watcher sees DELETED.
    const watch = await openWatch(
      root,
      `${sharedSecretsPath(NS)}?watch=true&fieldSelector=metadata.name=${name}&resourceVersion=${again.body.metadata.resourceVersion}`,
    );
    const removed = await root.patch(path(name), { metadata: { finalizers: null } }, MERGE_PATCH);
    expect(removed.status).toBe(200);
    const deleted = await watch.find((e) => e.type === 'DELETED');
    expect(deleted.object.metadata.name).toBe(name);
    expect(await stored(name)).toBeUndefined();
  });

  test("an object whose only finalizer is the policy's own is kept until the garbage collector takes it off", async () => {
    const obj = await create(uniq('fg-alone'));
    const res = await root.delete(path(obj.metadata.name, '?propagationPolicy=Foreground'));
    expect(res.status).toBe(200);
    expect(res.body.metadata.finalizers).toEqual(['foregroundDeletion']);
    await gone(obj.metadata.name);

    const orphan = await create(uniq('orphan-alone'));
    const res2 = await root.delete(path(orphan.metadata.name, '?propagationPolicy=Orphan'));
    expect(res2.body.metadata.finalizers).toEqual(['orphan']);
    await gone(orphan.metadata.name);
  });

  test('orphanDependents=false on an object that stays: 202 Accepted with the object, as kube answers old clients', async () => {
    const obj = await create(uniq('accepted'), { finalizers: [HOLD] });
    const res = await root.delete(path(obj.metadata.name, '?orphanDependents=false'));
    expect(res.status).toBe(202);
    expect(res.body.metadata).toMatchObject({ name: obj.metadata.name, finalizers: [HOLD] });
    expect(res.body.metadata.deletionTimestamp).toBeDefined();
    expect((await root.delete(path(obj.metadata.name))).status).toBe(200);
  });

  test('a Background DELETE of an object held only by `orphan` deletes it at once', async () => {
    // The orphan finalizer set at creation means "orphan my dependents" even when DELETE names no policy.
    const obj = await create(uniq('bg-now'), { finalizers: ['orphan'] });
    const res = await root.delete(path(obj.metadata.name, '?propagationPolicy=Background'));
    expect({ status: res.status, kind: res.body.kind }).toEqual({ status: 200, kind: 'Status' });
    expect(await stored(obj.metadata.name)).toBeUndefined();
  });

  test('clients cannot set, clear or change deletionTimestamp and deletionGracePeriodSeconds', async () => {
    const made = await create(uniq('ts'), {
      deletionTimestamp: '2030-01-01T00:00:00Z',
      deletionGracePeriodSeconds: 30,
      finalizers: [HOLD],
    });
    expect(made.metadata.deletionTimestamp).toBeUndefined();
    expect(made.metadata.deletionGracePeriodSeconds).toBeUndefined();
    const name = made.metadata.name;

    const set = await root.patch(path(name), { metadata: { deletionTimestamp: '2030-01-01T00:00:00Z' } }, MERGE_PATCH);
    expectStatus(set, 422, 'Invalid');
    expect(set.body.message).toContain(
      'metadata.deletionTimestamp: Invalid value: 2030-01-01 00:00:00 +0000 UTC: field is immutable',
    );

    const deleting = (await root.delete(path(name))).body;
    const before = await stored(name);
    // Once set, a write that moves it keeps the stored one, as kube's BeforeUpdate does; nothing is written.
    const later = await root.patch(
      path(name),
      { metadata: { deletionTimestamp: '2099-01-01T00:00:00Z' } },
      MERGE_PATCH,
    );
    expect(later.status).toBe(200);
    expect(later.body.metadata.deletionTimestamp).toBe(deleting.metadata.deletionTimestamp);
    expect(await stored(name)).toEqual(before);
    const grace = await root.patch(path(name), { metadata: { deletionGracePeriodSeconds: 60 } }, MERGE_PATCH);
    expectStatus(grace, 422, 'Invalid');
    expect(grace.body.message).toContain('metadata.deletionGracePeriodSeconds: Invalid value: 60: field is immutable');
    // A PUT without them keeps them (kube copies them from the stored object).
    const { deletionTimestamp: _t, deletionGracePeriodSeconds: _g, ...meta } = deleting.metadata;
    const put = await root.put(path(name), { ...deleting, metadata: meta });
    expect(put.status).toBe(200);
    expect(put.body.metadata).toMatchObject({
      deletionTimestamp: deleting.metadata.deletionTimestamp,
      deletionGracePeriodSeconds: 0,
    });
    expect((await stored(name)).metadata.deletionTimestamp).toBe(before.metadata.deletionTimestamp);

    const add = await root.patch(
      path(name),
      [{ op: 'add', path: '/metadata/finalizers/-', value: 'example.com/late' }],
      JSON_PATCH,
    );
    expectStatus(add, 422, 'Invalid');
    expect(add.body.message).toContain(
      'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted',
    );
    expect((await root.patch(path(name), { metadata: { finalizers: [] } }, MERGE_PATCH)).status).toBe(200);
    await gone(name);
  });
});

describe('propagation policies on a chain A ← B ← C', () => {
  /** A owns B owns C; blockOwnerDeletion on both references if asked. */
  async function chain(block = false): Promise<[any, any, any]> {
    const tag = uniq('chain');
    const a = await create(`${tag}-a`);
    const b = await create(`${tag}-b`, { ownerReferences: [ref(a, block ? { blockOwnerDeletion: true } : {})] });
    const c = await create(`${tag}-c`, { ownerReferences: [ref(b, block ? { blockOwnerDeletion: true } : {})] });
    return [a, b, c];
  }
  const nameOf = (o: any) => o.metadata.name as string;

  test('Background (the default): A goes at once, then B, then C', async () => {
    const [a, b, c] = await chain();
    const res = await root.delete(path(nameOf(a)));
    expect({ status: res.status, kind: res.body.kind }).toEqual({ status: 200, kind: 'Status' });
    expect(await stored(nameOf(a))).toBeUndefined();
    await gone(nameOf(b));
    await gone(nameOf(c));
  });

  test('Orphan: A goes, B stays without its owner reference, C stays owned by B', async () => {
    const [a, b, c] = await chain();
    const res = await root.delete(path(nameOf(a), '?propagationPolicy=Orphan'));
    expect(res.body.metadata.finalizers).toEqual(['orphan']);
    await gone(nameOf(a));
    const bNow = (await root.get(path(nameOf(b)))).body;
    expect(bNow.metadata.ownerReferences).toBeUndefined();
    expect(bNow.metadata.deletionTimestamp).toBeUndefined();
    const cNow = (await root.get(path(nameOf(c)))).body;
    expect(cNow.metadata.ownerReferences).toEqual([ref(b)]);
  });

  test('Foreground with blockOwnerDeletion: C goes first, then B, then A; A is readable while it waits', async () => {
    const [a, b, c] = await chain(true);
    const list = await root.get(sharedSecretsPath(NS));
    const watch = await openWatch(
      root,
      `${sharedSecretsPath(NS)}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    const res = await root.delete(path(nameOf(a)), deleteOptions({ propagationPolicy: 'Foreground' }));
    expect(res.body.metadata.finalizers).toEqual(['foregroundDeletion']);
    await watch.find((e) => e.type === 'DELETED' && e.object.metadata.name === nameOf(a), 'A deleted');
    const order = watch.events.filter((e) => e.type === 'DELETED').map((e) => e.object.metadata.name);
    expect(order).toEqual([nameOf(c), nameOf(b), nameOf(a)]);
    // On the way, A and B were marked in the foreground before they went.
    const marked = watch.events
      .filter((e) => e.type === 'MODIFIED' && e.object.metadata.finalizers?.includes('foregroundDeletion'))
      .map((e) => e.object.metadata.name);
    expect(marked).toEqual(expect.arrayContaining([nameOf(a), nameOf(b)]));
  });

  test('kubectl-style orphanDependents=false is Background', async () => {
    const [a, b, c] = await chain();
    const res = await root.delete(path(nameOf(a), '?orphanDependents=false'));
    expect(res.body.kind).toBe('Status');
    await gone(nameOf(b));
    await gone(nameOf(c));
  });

  test('a dependent whose owner reference has a uid no object has is deleted, though an object of that name exists', async () => {
    const owner = await create(uniq('owner'));
    const dep = await create(uniq('dep'), {
      ownerReferences: [{ ...ref(owner), uid: '00000000-0000-0000-0000-000000000000' }],
    });
    await gone(dep.metadata.name);
    expect((await root.get(path(owner.metadata.name))).status).toBe(200);
  });
});

describe('blockOwnerDeletion needs delete permission on the owner', () => {
  let mine: any;
  let deletable: any;
  let untouchable: any;

  beforeAll(async () => {
    // bob may read, change and delete `mine` (so he may set its ownerReferences) and delete `deletable`;
    // `untouchable` gives him nothing.
    deletable = await create(uniq('deletable'), {}, { access: [{ verbs: ['delete'], users: ['bob'] }] });
    untouchable = await create(uniq('untouchable'));
    mine = await create(
      uniq('mine'),
      {},
      { access: [{ verbs: ['get', 'update', 'patch', 'delete'], users: ['bob'] }] },
    );
  });

  const setOwners = (owners: unknown[]) =>
    bob.patch(path(mine.metadata.name), { metadata: { ownerReferences: owners } }, MERGE_PATCH);

  test('without it: 422 naming the field and the missing permission, and nothing changes', async () => {
    const before = await stored(mine.metadata.name);
    const res = await setOwners([ref(untouchable, { blockOwnerDeletion: true })]);
    expectStatus(res, 422, 'Invalid');
    expect(res.body.message).toBe(
      `SharedSecret.management.platform.sh "${mine.metadata.name}" is invalid: metadata.ownerReferences[0].blockOwnerDeletion: Forbidden: ` +
        `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't delete: ` +
        `User "bob" cannot delete sharedsecrets.management.platform.sh "${untouchable.metadata.name}" in the namespace "${NS}"`,
    );
    expect(res.body.details.causes).toEqual([
      expect.objectContaining({
        reason: 'FieldValueForbidden',
        field: 'metadata.ownerReferences[0].blockOwnerDeletion',
      }),
    ]);
    expect(await stored(mine.metadata.name)).toEqual(before);
  });

  test('an owner of a kind this server does not serve: 422', async () => {
    const res = await setOwners([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u-1', blockOwnerDeletion: true },
    ]);
    expectStatus(res, 422, 'Invalid');
    expect(res.body.message).toContain('no resource of this server has apiVersion "v1" and kind "ConfigMap"');
  });

  test('with it, or without blockOwnerDeletion, the reference is set', async () => {
    const plain = await setOwners([ref(untouchable), ref(deletable, { blockOwnerDeletion: true })]);
    expect(plain.status).toBe(200);
    expect(plain.body.metadata.ownerReferences).toEqual([
      ref(untouchable),
      ref(deletable, { blockOwnerDeletion: true }),
    ]);
  });

  test("a blocking reference someone else set does not stop bob's other changes", async () => {
    // The admin (system:masters) may set any.
    const byRoot = await root.patch(
      path(mine.metadata.name),
      { metadata: { ownerReferences: [ref(untouchable, { blockOwnerDeletion: true })] } },
      MERGE_PATCH,
    );
    expect(byRoot.status).toBe(200);
    const labelled = await bob.patch(path(mine.metadata.name), { metadata: { labels: { by: 'bob' } } }, MERGE_PATCH);
    expect(labelled.status).toBe(200);
    expect(labelled.body.metadata.ownerReferences).toEqual([ref(untouchable, { blockOwnerDeletion: true })]);
  });
});

describe("blockOwnerDeletion on a reference whose uid is not the named object's", () => {
  const APPLY_PATCH = 'application/apply-patch+yaml';
  let x: any;
  let deletable: any;

  beforeAll(async () => {
    // bob may only read X, and may delete `deletable`.
    x = await create(uniq('x'), {}, { access: [{ verbs: ['get'], users: ['bob'] }] });
    deletable = await create(uniq('deletable'), {}, { access: [{ verbs: ['delete'], users: ['bob'] }] });
  });

  /** A dependent bob may change (and delete), held by a finalizer so that a blocking reference on it would hold its owner. */
  const dependent = () =>
    create(
      uniq('dep'),
      { finalizers: [HOLD] },
      { access: [{ verbs: ['get', 'update', 'patch', 'delete'], users: ['bob'] }] },
    );
  const misnamed = (dep: any, uid: string, named: any) =>
    `SharedSecret.management.platform.sh "${dep.metadata.name}" is invalid: metadata.ownerReferences[0].uid: Invalid value: "${uid}": ` +
    `is not the uid of the SharedSecret "${named.metadata.name}" in the namespace "${NS}" this reference names; ` +
    `the garbage collector looks an owner up by kind, name and uid, so a reference with blockOwnerDeletion must name its owner by all three`;

  test("the uid of an object bob may only read, with the name of one he may delete: 422 on every path, and X's deletion is not held", async () => {
    const dep = await dependent();
    const before = await stored(dep.metadata.name);
    const owners = [{ ...ref(deletable), uid: x.metadata.uid, blockOwnerDeletion: true }];
    const merge = await bob.patch(path(dep.metadata.name), { metadata: { ownerReferences: owners } }, MERGE_PATCH);
    expectStatus(merge, 422, 'Invalid', misnamed(dep, x.metadata.uid, deletable));
    expect(merge.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueInvalid', field: 'metadata.ownerReferences[0].uid' }),
    ]);
    const json = await bob.patch(
      path(dep.metadata.name),
      [{ op: 'add', path: '/metadata/ownerReferences', value: owners }],
      JSON_PATCH,
    );
    expectStatus(json, 422, 'Invalid', misnamed(dep, x.metadata.uid, deletable));
    const put = await bob.put(path(dep.metadata.name), {
      ...dep,
      metadata: { ...dep.metadata, ownerReferences: owners },
    });
    expectStatus(put, 422, 'Invalid', misnamed(dep, x.metadata.uid, deletable));
    const config = {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: dep.metadata.name, namespace: NS, ownerReferences: owners },
    };
    const apply = await bob.patch(path(dep.metadata.name, '?fieldManager=bob'), JSON.stringify(config), APPLY_PATCH);
    expectStatus(apply, 422, 'Invalid', misnamed(dep, x.metadata.uid, deletable));
    expect(await stored(dep.metadata.name)).toEqual(before);

    // Nothing blocks X: deleted in the foreground, it goes.
    const res = await root.delete(path(x.metadata.name), deleteOptions({ propagationPolicy: 'Foreground' }));
    expect(res.status).toBe(200);
    await gone(x.metadata.name);
    x = await create(uniq('x'), {}, { access: [{ verbs: ['get'], users: ['bob'] }] });
  });

  test('the uid of an object of that name in another namespace: 422', async () => {
    const dep = await dependent();
    const twin = secretBody(deletable.metadata.name);
    const other = await root.post(sharedSecretsPath(`${NS}-twin`), twin);
    expect(other.status).toBe(201);
    const res = await bob.patch(
      path(dep.metadata.name),
      {
        metadata: { ownerReferences: [{ ...ref(deletable), uid: other.body.metadata.uid, blockOwnerDeletion: true }] },
      },
      MERGE_PATCH,
    );
    expectStatus(res, 422, 'Invalid', misnamed(dep, other.body.metadata.uid, deletable));
  });

  test('the uid of an object of another kind: 422', async () => {
    const project = await root.post('/apis/management.platform.sh/v1/projects', {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: uniq('proj') },
      spec: {},
    });
    expect(project.status).toBe(201);
    const dep = await dependent();
    const res = await bob.patch(
      path(dep.metadata.name),
      {
        metadata: {
          ownerReferences: [{ ...ref(deletable), uid: project.body.metadata.uid, blockOwnerDeletion: true }],
        },
      },
      MERGE_PATCH,
    );
    expectStatus(res, 422, 'Invalid', misnamed(dep, project.body.metadata.uid, deletable));
  });

  test('a uid no object has: 422 as well; where bob may not delete the named object, only that is said', async () => {
    const dep = await dependent();
    const absent = { ...ref(deletable), uid: '00000000-0000-0000-0000-00000000abcd', blockOwnerDeletion: true };
    expectStatus(
      await bob.patch(path(dep.metadata.name), { metadata: { ownerReferences: [absent] } }, MERGE_PATCH),
      422,
      'Invalid',
      misnamed(dep, absent.uid, deletable),
    );
    const forbidden = await bob.patch(
      path(dep.metadata.name),
      {
        metadata: {
          ownerReferences: [{ ...absent, name: x.metadata.name, uid: '00000000-0000-0000-0000-00000000abce' }],
        },
      },
      MERGE_PATCH,
    );
    expectStatus(forbidden, 422, 'Invalid');
    expect(forbidden.body.details.causes).toEqual([
      expect.objectContaining({
        reason: 'FieldValueForbidden',
        field: 'metadata.ownerReferences[0].blockOwnerDeletion',
      }),
    ]);
  });

  test('a matching reference to an object bob may delete is set', async () => {
    const dep = await dependent();
    const res = await bob.patch(
      path(dep.metadata.name),
      { metadata: { ownerReferences: [ref(deletable, { blockOwnerDeletion: true })] } },
      MERGE_PATCH,
    );
    expect(res.status).toBe(200);
    expect(res.body.metadata.ownerReferences).toEqual([ref(deletable, { blockOwnerDeletion: true })]);
  });
});

describe('ownerReferences can be added or changed only by a caller who may delete the object', () => {
  const APPLY_PATCH = 'application/apply-patch+yaml';
  const MADE_UP = '00000000-0000-0000-0000-0000000000c8';
  let owner: any;
  let other: any;

  beforeAll(async () => {
    owner = await create(uniq('owner'));
    other = await create(uniq('other'));
  });

  /** An object bob may read and change but not delete, with the owners root gave it. */
  const updatable = (ownerReferences?: unknown[]) =>
    create(uniq('upd'), ownerReferences ? { ownerReferences } : {}, {
      access: [{ verbs: ['get', 'update', 'patch'], users: ['bob'] }],
    });
  const forbidden = (obj: any) =>
    `SharedSecret.management.platform.sh "${obj.metadata.name}" is invalid: metadata.ownerReferences: Forbidden: ` +
    `cannot add or change ownerReferences on an object you can't delete (the garbage collector deletes an object whose owners are all gone; removing them all is allowed): ` +
    `User "bob" cannot delete sharedsecrets.management.platform.sh "${obj.metadata.name}" in the namespace "${NS}"`;
  const expectForbidden = (res: HttpResponse, obj: any) => {
    expectStatus(res, 422, 'Invalid', forbidden(obj));
    expect(res.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueForbidden', field: 'metadata.ownerReferences' }),
    ]);
  };

  test('bob, who cannot DELETE it, cannot have the garbage collector delete it with a made-up owner: 422 on every path', async () => {
    const obj = await updatable();
    expectStatus(await bob.delete(path(obj.metadata.name)), 403, 'Forbidden');
    const before = await stored(obj.metadata.name);
    const owners = [{ ...ref(owner), uid: MADE_UP }];
    expectForbidden(
      await bob.patch(path(obj.metadata.name), { metadata: { ownerReferences: owners } }, MERGE_PATCH),
      obj,
    );
    expectForbidden(
      await bob.patch(path(obj.metadata.name, '?dryRun=All'), { metadata: { ownerReferences: owners } }, MERGE_PATCH),
      obj,
    );
    expectForbidden(
      await bob.patch(
        path(obj.metadata.name),
        [{ op: 'add', path: '/metadata/ownerReferences', value: owners }],
        JSON_PATCH,
      ),
      obj,
    );
    expectForbidden(
      await bob.put(path(obj.metadata.name), { ...obj, metadata: { ...obj.metadata, ownerReferences: owners } }),
      obj,
    );
    const config = {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: obj.metadata.name, namespace: NS, ownerReferences: owners },
    };
    expectForbidden(
      await bob.patch(path(obj.metadata.name, '?fieldManager=bob'), JSON.stringify(config), APPLY_PATCH),
      obj,
    );
    // A real owner is refused as well: any reference makes the object collectable once its owner goes.
    expectForbidden(
      await bob.patch(path(obj.metadata.name), { metadata: { ownerReferences: [ref(owner)] } }, MERGE_PATCH),
      obj,
    );
    expect(await stored(obj.metadata.name)).toEqual(before);
  });

  test('changing an existing reference, or removing only some, is refused; the references stay as they were', async () => {
    const obj = await updatable([ref(owner), ref(other)]);
    const before = await stored(obj.metadata.name);
    expectForbidden(
      await bob.patch(
        path(obj.metadata.name),
        { metadata: { ownerReferences: [ref(owner), { ...ref(other), uid: MADE_UP }] } },
        MERGE_PATCH,
      ),
      obj,
    );
    expectForbidden(
      await bob.patch(
        path(obj.metadata.name),
        { metadata: { ownerReferences: [ref(owner), ref(other, { controller: true })] } },
        MERGE_PATCH,
      ),
      obj,
    );
    // What remains may be owners already gone (the collector has not caught up yet): then the object would go.
    expectForbidden(
      await bob.patch(path(obj.metadata.name), [{ op: 'remove', path: '/metadata/ownerReferences/0' }], JSON_PATCH),
      obj,
    );
    expect(await stored(obj.metadata.name)).toEqual(before);
  });

  test('other changes, the same references in another order, and removing them all are allowed', async () => {
    const obj = await updatable([ref(owner), ref(other)]);
    const labelled = await bob.patch(path(obj.metadata.name), { metadata: { labels: { by: 'bob' } } }, MERGE_PATCH);
    expect(labelled.status).toBe(200);
    expect(labelled.body.metadata.ownerReferences).toEqual([ref(owner), ref(other)]);
    const reordered = await bob.put(path(obj.metadata.name), {
      ...labelled.body,
      metadata: { ...labelled.body.metadata, ownerReferences: [ref(other), ref(owner)] },
    });
    expect(reordered.status).toBe(200);
    const removed = await bob.patch(path(obj.metadata.name), { metadata: { ownerReferences: null } }, MERGE_PATCH);
    expect(removed.status).toBe(200);
    expect(removed.body.metadata.ownerReferences).toBeUndefined();
    // Without owners it is never collected: its old owner's deletion leaves it.
    const gone1 = await create(uniq('owner'));
    const kept = await updatable([ref(gone1)]);
    expect(
      (await bob.patch(path(kept.metadata.name), { metadata: { ownerReferences: null } }, MERGE_PATCH)).status,
    ).toBe(200);
    expect((await root.delete(path(gone1.metadata.name))).status).toBe(200);
    await gone(gone1.metadata.name);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await root.get(path(kept.metadata.name))).status).toBe(200);
  });

  test('a caller who may delete the object may set them', async () => {
    const obj = await create(uniq('del'), {}, { access: [{ verbs: ['get', 'patch', 'delete'], users: ['bob'] }] });
    const res = await bob.patch(path(obj.metadata.name), { metadata: { ownerReferences: [ref(owner)] } }, MERGE_PATCH);
    expect(res.status).toBe(200);
    expect(res.body.metadata.ownerReferences).toEqual([ref(owner)]);
  });
});

describe('deletecollection', () => {
  test('deletes what the label and field selectors pick, in that namespace only; finalized ones stay, marked', async () => {
    const tag = uniq('dc');
    const other = `${NS}-other`;
    const mk = async (ns: string, name: string, labels: Record<string, string>, finalizers?: string[]) => {
      const body = secretBody(name, labels);
      if (finalizers) body.metadata.finalizers = finalizers;
      expect((await root.post(sharedSecretsPath(ns), body)).status).toBe(201);
    };
    await mk(NS, `${tag}-1`, { tag, tier: 'gold' });
    await mk(NS, `${tag}-2`, { tag, tier: 'gold' }, [HOLD]);
    await mk(NS, `${tag}-3`, { tag, tier: 'silver' });
    await mk(NS, `${tag}-4`, { tag, tier: 'gold' });
    await mk(other, `${tag}-1`, { tag, tier: 'gold' });

    const selected = `labelSelector=${encodeURIComponent(`tag=${tag},tier=gold`)}&fieldSelector=${encodeURIComponent(`metadata.name!=${tag}-4`)}`;
    const dry = await root.delete(`${sharedSecretsPath(NS)}?${selected}&dryRun=All`);
    expect(dry.status).toBe(200);
    expect(dry.body.items.map((o: any) => o.metadata.name)).toEqual([`${tag}-1`, `${tag}-2`]);
    expect(await stored(`${tag}-1`)).toBeDefined();

    const res = await root.delete(`${sharedSecretsPath(NS)}?${selected}`);
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe('SharedSecretList');
    expect(res.body.items.map((o: any) => [o.metadata.name, !!o.metadata.deletionTimestamp])).toEqual([
      [`${tag}-1`, false],
      [`${tag}-2`, true],
    ]);
    const left = await root.get(`${sharedSecretsPath(NS)}?labelSelector=tag=${tag}`);
    expect(left.body.items.map((o: any) => o.metadata.name)).toEqual([`${tag}-2`, `${tag}-3`, `${tag}-4`]);
    expect((await root.get(sharedSecretPath(other, `${tag}-1`))).status).toBe(200);
    await root.patch(path(`${tag}-2`), { metadata: { finalizers: null } }, MERGE_PATCH);
  });

  test('the propagation policy applies to each object', async () => {
    const tag = uniq('dc-orphan');
    const owner = await create(`${tag}-owner`, { labels: { tag } });
    const dep = await create(`${tag}-dep`, { ownerReferences: [ref(owner)] });
    const res = await root.delete(`${sharedSecretsPath(NS)}?labelSelector=tag=${tag}&propagationPolicy=Orphan`);
    expect(res.body.items.map((o: any) => o.metadata.finalizers)).toEqual([['orphan']]);
    await gone(owner.metadata.name);
    const kept = await root.get(path(dep.metadata.name));
    expect(kept.status).toBe(200);
    expect(kept.body.metadata.ownerReferences).toBeUndefined();
  });

  test('a bad selector is 400 and deletes nothing', async () => {
    const obj = await create(uniq('dc-bad'));
    const res = await root.delete(`${sharedSecretsPath(NS)}?labelSelector=${encodeURIComponent('tier in (gold')}`);
    expectStatus(res, 400, 'BadRequest');
    expect(await stored(obj.metadata.name)).toBeDefined();
  });
});

describe('ownerReferences validation', () => {
  test.each([
    [
      'a reference without uid',
      [{ apiVersion: API_VERSION, kind: 'SharedSecret', name: 'a' }],
      'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ],
    [
      'two controllers',
      [
        { apiVersion: API_VERSION, kind: 'SharedSecret', name: 'a', uid: 'u1', controller: true },
        { apiVersion: API_VERSION, kind: 'SharedSecret', name: 'b', uid: 'u2', controller: true },
      ],
      'Only one reference can have Controller set to true',
    ],
  ])('%s: 422, nothing stored', async (_what, owners, message) => {
    const name = uniq('refs');
    const body = secretBody(name);
    body.metadata.ownerReferences = owners;
    const res = await root.post(sharedSecretsPath(NS), body);
    expectStatus(res, 422, 'Invalid');
    expect(res.body.message).toContain(message);
    expect(await stored(name)).toBeUndefined();
  });
});
