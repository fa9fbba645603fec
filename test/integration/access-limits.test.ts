/**
 * The limits of `spec.access` (maxItems in the CRDs: 64 entries, 16 verbs and 16 subresources, 32 users and 32
 * teams per entry) as a client meets them: every write path answers kube's 422 with `Too many: N: must have at most
 * M items` and leaves stored data as it was; the OpenAPI documents publish them; and an object stored above them
 * (before they existed) stays readable, writable where its list is left as it was, and deletable, as kube 1.33's
 * CRD validation ratcheting has it.
 */
import { describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import type { HttpResponse } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import {
  API_VERSION,
  APPLY_PATCH,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH,
  clusterBody,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
  virtualClusterInstancesPath,
  type EtcdPeek,
} from '../support/fixtures.js';

let ts: TestServer;
let peek: EtcdPeek;

useServerWithPeek((env) => ({ ts, peek } = env));

const NS = 'limits';
/** What kube adds when a size error keeps the CRD's rules from running. */
const RULES_NOT_CHECKED = {
  reason: 'FieldValueInvalid',
  message:
    'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
  field: '<nil>',
};

const entries = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ verbs: ['get'], users: [`user-${from + i}`] }));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
/** Verbs and subresources are lowercase words: `${prefix}a`, `${prefix}b`, ... */
const letters = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}${String.fromCharCode(97 + i)}`);

const tooMany = (field: string, actual: number, max: number) => ({
  reason: 'FieldValueTooMany',
  message: `Too many: ${actual}: must have at most ${max} items`,
  field,
});

/** kube's 422 for `kind` `name` with these causes (and the note that the rules were not run). */
function expectTooMany(res: HttpResponse, kind: string, name: string, causes: ReturnType<typeof tooMany>[]): void {
  const all = [...causes, RULES_NOT_CHECKED];
  expect({ status: res.status, body: res.body }).toEqual({
    status: 422,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${kind}.${GROUP} "${name}" is invalid: [${all.map((c) => `${c.field}: ${c.message}`).join(', ')}]`,
      reason: 'Invalid',
      details: { name, group: GROUP, kind, causes: all },
      code: 422,
    },
  });
}

async function createSecret(name: string, access: unknown[]): Promise<{ body: any; revision: string }> {
  const body = secretBody(name);
  body.spec.access = access;
  const res = await ts.admin.post(sharedSecretsPath(NS), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return { body: res.body, revision: (await peek.entry(peek.sharedSecretKey(NS, name)))!.modRevision };
}

/** The stored SharedSecret is still the one written at `revision`. */
async function expectUnchanged(name: string, before: { body: any; revision: string }): Promise<void> {
  expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.modRevision).toBe(before.revision);
  expect((await ts.admin.get(sharedSecretPath(NS, name))).body).toEqual(before.body);
}

describe('writes beyond the limits are refused, on every write path, and change nothing', () => {
  test('create with 65 entries: 422 Too many at spec.access, nothing stored; dry run the same', async () => {
    const name = uniq('lim-create');
    const body = secretBody(name);
    body.spec.access = entries(65);
    for (const query of ['?dryRun=All', '']) {
      const res = await ts.admin.post(`${sharedSecretsPath(NS)}${query}`, body);
      expectTooMany(res, 'SharedSecret', name, [tooMany('spec.access', 65, 64)]);
    }
    expect((await ts.admin.get(sharedSecretPath(NS, name))).status).toBe(404);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeUndefined();
    // 64 entries are fine.
    body.spec.access = entries(64);
    expect((await ts.admin.post(sharedSecretsPath(NS), body)).status).toBe(201);
  });

  test('an entry with 33 users, 33 teams, 17 verbs and 17 subresources: one cause for each', async () => {
    const name = uniq('lim-entry');
    const body = secretBody(name);
    body.spec.access = [
      { verbs: ['get'], users: ['ok'] },
      {
        verbs: letters('verb', 17),
        subresources: letters('sub', 17),
        users: names('user', 33),
        teams: names('team', 33),
      },
    ];
    expectTooMany(await ts.admin.post(sharedSecretsPath(NS), body), 'SharedSecret', name, [
      tooMany('spec.access[1].verbs', 17, 16),
      tooMany('spec.access[1].subresources', 17, 16),
      tooMany('spec.access[1].users', 33, 32),
      tooMany('spec.access[1].teams', 33, 32),
    ]);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeUndefined();
  });

  test('a JSON patch adding the 65th entry, or a 33rd user: 422, unchanged; dry run the same', async () => {
    const name = uniq('lim-jsonpatch');
    const before = await createSecret(name, [...entries(63), { verbs: ['list'], users: names('u', 32) }]);
    const path = sharedSecretPath(NS, name);
    const add65th = [{ op: 'add', path: '/spec/access/-', value: { verbs: ['get'], users: ['one-more'] } }];
    const add33rd = [{ op: 'add', path: '/spec/access/63/users/-', value: 'one-more' }];
    for (const query of ['?dryRun=All', '']) {
      expectTooMany(await ts.admin.patch(`${path}${query}`, add65th, JSON_PATCH), 'SharedSecret', name, [
        tooMany('spec.access', 65, 64),
      ]);
      expectTooMany(await ts.admin.patch(`${path}${query}`, add33rd, JSON_PATCH), 'SharedSecret', name, [
        tooMany('spec.access[63].users', 33, 32),
      ]);
    }
    await expectUnchanged(name, before);
  });

  test('a merge patch and a PUT with 2,000 entries (the review’s 79 kB PATCH): 422, unchanged', async () => {
    const name = uniq('lim-flood');
    const before = await createSecret(name, entries(1));
    const path = sharedSecretPath(NS, name);
    const flood = entries(2000);
    expectTooMany(await ts.admin.patch(path, { spec: { access: flood } }, MERGE_PATCH), 'SharedSecret', name, [
      tooMany('spec.access', 2000, 64),
    ]);
    const put = structuredClone(before.body);
    put.spec.access = flood;
    expectTooMany(await ts.admin.put(path, put), 'SharedSecret', name, [tooMany('spec.access', 2000, 64)]);
    await expectUnchanged(name, before);
  });

  test('server-side apply, creating or updating: 422, nothing stored or changed', async () => {
    const name = uniq('lim-apply');
    const apply = (access: unknown[], query = '') =>
      ts.admin.patch(
        `${sharedSecretPath(NS, name)}?fieldManager=limits-test${query}`,
        { ...secretBody(name), spec: { ...secretBody(name).spec, access } },
        APPLY_PATCH,
      );
    expectTooMany(await apply(entries(65)), 'SharedSecret', name, [tooMany('spec.access', 65, 64)]);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeUndefined();

    const first = await apply(entries(2));
    expect(first.status).toBe(201);
    const before = { body: first.body, revision: (await peek.entry(peek.sharedSecretKey(NS, name)))!.modRevision };
    expectTooMany(await apply(entries(100), '&dryRun=All'), 'SharedSecret', name, [tooMany('spec.access', 100, 64)]);
    expectTooMany(await apply(entries(100)), 'SharedSecret', name, [tooMany('spec.access', 100, 64)]);
    await expectUnchanged(name, before);
  });

  test.each([
    ['Cluster', CLUSTERS_PATH, () => clusterBody(uniq('lim-cluster'))],
    [
      'Project',
      PROJECTS_PATH,
      () => ({ apiVersion: API_VERSION, kind: 'Project', metadata: { name: uniq('lim-project') }, spec: {} }),
    ],
    [
      'VirtualClusterInstance',
      virtualClusterInstancesPath(NS),
      () => ({
        apiVersion: API_VERSION,
        kind: 'VirtualClusterInstance',
        metadata: { name: uniq('lim-vci') },
        spec: { clusterRef: { cluster: 'eu', namespace: 'vc-a', virtualCluster: uniq('a') } },
      }),
    ],
  ])('a %s has the same limits', async (kind, collection, make) => {
    const body: any = make();
    body.spec.access = [...entries(64), { verbs: ['get'], users: names('u', 33) }];
    expectTooMany(await ts.admin.post(collection, body), kind, body.metadata.name, [
      tooMany('spec.access', 65, 64),
      tooMany('spec.access[64].users', 33, 32),
    ]);
    expect((await ts.admin.get(`${collection}/${body.metadata.name}`)).status).toBe(404);
  });
});

test('the OpenAPI documents publish the limits as maxItems', async () => {
  const v3 = await ts.admin.get(`/openapi/v3/apis/${GROUP}/v1`);
  const v2 = await ts.admin.get('/openapi/v2');
  for (const [doc, schemas] of [
    ['v3', v3.body.components.schemas],
    ['v2', v2.body.definitions],
  ]) {
    const access = schemas['sh.platform.management.v1.SharedSecret'].properties.spec.properties.access;
    const item = access.items.properties;
    expect({
      doc,
      entries: access.maxItems,
      verbs: item.verbs.maxItems,
      subresources: item.subresources.maxItems,
      users: item.users.maxItems,
      teams: item.teams.maxItems,
    }).toEqual({ doc, entries: 64, verbs: 16, subresources: 16, users: 32, teams: 32 });
  }
});

describe('an object stored above the limits, before they existed', () => {
  /** A SharedSecret with `n` entries (and one of 40 users), written to etcd behind the server's back. */
  async function legacy(n: number): Promise<{ name: string; path: string; body: any }> {
    const name = uniq('lim-legacy');
    await createSecret(name, entries(1));
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const stored = await peek.value(peek.sharedSecretKey(NS, name));
      stored.spec.access = [...entries(n - 1), { verbs: ['list'], users: names('many', 40) }];
      await kv.put(peek.sharedSecretKey(NS, name)).value(JSON.stringify(stored));
    } finally {
      kv.close();
    }
    const path = sharedSecretPath(NS, name);
    for (;;) {
      const res = await ts.admin.get(path);
      if (res.body.spec.access.length === n) return { name, path, body: res.body };
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test('is read whole; writes that leave spec.access as it was pass, with no warning (as kube ratchets)', async () => {
    const { path, body } = await legacy(100);
    expect(body.spec.access).toHaveLength(100);
    const list = await ts.admin.get(sharedSecretsPath(NS));
    expect(list.body.items.find((o: any) => o.metadata.name === body.metadata.name).spec.access).toHaveLength(100);

    const labelled = await ts.admin.patch(path, { metadata: { labels: { a: 'b' } } }, MERGE_PATCH);
    expect({ status: labelled.status, warning: labelled.headers.warning }).toEqual({ status: 200, warning: undefined });
    const renamed = await ts.admin.patch(path, { spec: { displayName: 'renamed' } }, MERGE_PATCH);
    expect(renamed.status).toBe(200);
    const put = await ts.admin.put(path, { ...renamed.body, spec: { ...renamed.body.spec, description: 'd' } });
    expect(put.status).toBe(200);
    const status = await ts.admin.put(`${path}/status`, { ...put.body, status: { conditions: [] } });
    expect(status.status).toBe(200);
    expect((await ts.admin.get(path)).body.spec.access).toEqual(body.spec.access);
  });

  test('a change to spec.access must bring it within the limits: one entry fewer is still refused, 64 pass', async () => {
    const { name, path } = await legacy(70);
    const before = { body: (await ts.admin.get(path)).body, revision: '' };
    before.revision = (await peek.entry(peek.sharedSecretKey(NS, name)))!.modRevision;
    const dropFirst = [{ op: 'remove', path: '/spec/access/0' }];
    // The list changed, so nothing in it is paired with what was (kube's lists are atomic): every excess counts.
    expectTooMany(await ts.admin.patch(path, dropFirst, JSON_PATCH), 'SharedSecret', name, [
      tooMany('spec.access', 69, 64),
      tooMany('spec.access[68].users', 40, 32),
    ]);
    await expectUnchanged(name, before);
    // Within the limits: 63 of the short entries and the long one cut to 32 users.
    const fixed = [...entries(63), { verbs: ['list'], users: names('many', 32) }];
    const res = await ts.admin.patch(path, { spec: { access: fixed } }, MERGE_PATCH);
    expect({ status: res.status, access: res.body.spec?.access }).toEqual({ status: 200, access: fixed });
  });

  test('is deleted as any other', async () => {
    const { name, path } = await legacy(200);
    expect((await ts.admin.delete(path)).status).toBe(200);
    expect((await ts.admin.get(path)).status).toBe(404);
    expect(await peek.entry(peek.sharedSecretKey(NS, name))).toBeUndefined();
  });
});
