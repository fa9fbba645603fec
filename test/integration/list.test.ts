/**
 * LIST of SharedSecret (namespaced) and Cluster (cluster-scoped) over real HTTPS and a real etcd: label and field
 * selectors, paging with limit/continue, kube's resourceVersion / resourceVersionMatch semantics (including
 * compacted and future revisions), ListOptions validation, consistent reads and GET with a resourceVersion.
 */
import { describe, test, expect, beforeAll, afterAll } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import type { TestServer } from '../support/server.js';
import { GROUP_PATH, type HttpResponse } from '../support/http.js';
import { compactEtcd, etcdRevision } from '../support/etcd.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  GROUP,
  MERGE_PATCH,
  clusterBody,
  createSecretAs,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
  type EtcdPeek,
} from '../support/fixtures.js';

let ts: TestServer;
let peek: EtcdPeek;
let etcd: Etcd3;

useServerWithPeek((env) => ({ ts, peek } = env));

beforeAll(() => {
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
});

afterAll(() => {
  etcd?.close();
});

const ALL_SECRETS = `${GROUP_PATH}/sharedsecrets`;
const OPAQUE_TOKEN = /^[A-Za-z0-9_-]+$/;

function expectStatus(res: HttpResponse, code: number, reason: string, message?: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: code,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  if (message !== undefined) expect(res.body.message).toBe(message);
}

/** kube's 422 for ListOptions: kind ListOptions, group meta.k8s.io, no name, one Forbidden cause. */
function expectListOptionsInvalid(res: HttpResponse, field: string, detail: string): void {
  expectStatus(res, 422, 'Invalid', `ListOptions.meta.k8s.io "" is invalid: ${field}: Forbidden: ${detail}`);
  expect(res.body.details).toEqual({
    group: 'meta.k8s.io',
    kind: 'ListOptions',
    causes: [{ reason: 'FieldValueForbidden', message: `Forbidden: ${detail}`, field }],
  });
}

const createSecret = (ns: string, name: string, labels?: Record<string, string>) =>
  createSecretAs(ts.admin, ns, name, labels);

async function setDisplayName(ns: string, name: string, displayName: string): Promise<any> {
  const res = await ts.admin.patch(sharedSecretPath(ns, name), { spec: { displayName } }, MERGE_PATCH);
  expect(res.status).toBe(200);
  return res.body;
}

/** GET a list and expect 200; `query` is appended as is. */
async function list(path: string, query = ''): Promise<any> {
  const res = await ts.admin.get(query ? `${path}?${query}` : path);
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: 200,
    body: { kind: expect.stringMatching(/List$/) },
  });
  return res.body;
}

function names(listBody: any): string[] {
  return listBody.items.map((i: any) => i.metadata.name);
}

const q = (params: Record<string, string | number>) =>
  new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();

function decodeToken(token: string): any {
  return JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
}

/** Compacts etcd's history up to its current revision (moved on first by a write outside the server's prefix). */
async function compactNow(): Promise<number> {
  await etcd.put(`/list-test-filler/${uniq('k')}`).value('x');
  return compactEtcd(etcd);
}

test('a selective list of a collection gone through in slices keeps exactly the matching objects, in order', async () => {
  // 600 objects: more than the server goes through at once (storage/reader.ts), so the selector is applied over
  // several turns of the event loop, while the writes below go on.
  const ns = uniq('sliced');
  const all = Array.from({ length: 600 }, (_, i) => `s-${String(i).padStart(3, '0')}`);
  for (let i = 0; i < all.length; i += 50)
    await Promise.all(
      all.slice(i, i + 50).map((name, j) => createSecret(ns, name, { third: String((i + j) % 3 === 0) })),
    );
  const [selected, everything] = await Promise.all([
    list(sharedSecretsPath(ns), q({ labelSelector: 'third=true' })),
    list(sharedSecretsPath(ns)),
    createSecret(ns, 'z-during', { third: 'false' }),
  ]);
  expect(names(selected)).toEqual(all.filter((_, i) => i % 3 === 0));
  expect(names(everything).filter((n) => n !== 'z-during')).toEqual(all);
  const notThird = await list(
    sharedSecretsPath(ns),
    q({ labelSelector: 'third!=true', fieldSelector: 'metadata.name!=z-during' }),
  );
  expect(names(notThird)).toEqual(all.filter((_, i) => i % 3 !== 0));
  // So large a list is sent in pieces as it is encoded (chunked, as kube streams lists), a small one in one go.
  const streamed = await ts.admin.get(sharedSecretsPath(ns));
  expect([streamed.headers['transfer-encoding'], streamed.headers['content-length']]).toEqual(['chunked', undefined]);
  expect(names(streamed.body).filter((n) => n !== 'z-during')).toEqual(all);
  const small = await ts.admin.get(`${sharedSecretsPath(ns)}?${q({ fieldSelector: 'metadata.name=s-001' })}`);
  expect([small.headers['transfer-encoding'], names(small.body)]).toEqual([undefined, ['s-001']]);
}, 60_000);

describe('label selectors', () => {
  const ns = uniq('labels');
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => `${n}-${uniq('sel')}`);

  beforeAll(async () => {
    await createSecret(ns, a, { env: 'prod', tier: 'web' });
    await createSecret(ns, b, { env: 'dev', tier: 'db' });
    await createSecret(ns, c, { env: 'staging' });
    await createSecret(ns, d);
  });

  test.each([
    ['env=prod', ['a']],
    ['env==prod', ['a']],
    ['env!=prod', ['b', 'c', 'd']],
    ['env in (prod,dev)', ['a', 'b']],
    ['env notin (prod,dev)', ['c', 'd']],
    ['tier', ['a', 'b']],
    ['!tier', ['c', 'd']],
    ['env=prod,tier=web', ['a']],
    ['env,!tier', ['c']],
    ['env=none', []],
  ])('labelSelector=%s', async (selector, expected) => {
    const byLetter: Record<string, string> = { a, b, c, d };
    const body = await list(sharedSecretsPath(ns), q({ labelSelector: selector }));
    expect(names(body)).toEqual(expected.map((l) => byLetter[l]));
    expect(body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
  });

  test('a label selector on a cluster-scoped list (clusters)', async () => {
    const team = uniq('team');
    const x = uniq('cl');
    const y = uniq('cl');
    for (const [name, labels] of [
      [x, { team, role: 'hub' }],
      [y, { team, role: 'spoke' }],
    ] as const) {
      const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, labels));
      expect(res.status).toBe(201);
    }
    expect(names(await list(CLUSTERS_PATH, q({ labelSelector: `team=${team}` }))).sort()).toEqual([x, y].sort());
    expect(names(await list(CLUSTERS_PATH, q({ labelSelector: `team=${team},role!=hub` })))).toEqual([y]);
    expect(names(await list(CLUSTERS_PATH, q({ labelSelector: `team=${team},role in (hub)` })))).toEqual([x]);
  });

  test.each([['env in (prod'], ['env=prod,'], ['!'], ['env@=x'], ['a b']])(
    'bad label selector syntax %j is 400 BadRequest',
    async (selector) => {
      const res = await ts.admin.get(`${sharedSecretsPath(ns)}?${q({ labelSelector: selector })}`);
      expectStatus(res, 400, 'BadRequest');
      expect(res.body.message).not.toBe('');
    },
  );
});

describe('field selectors', () => {
  const ns = uniq('fields');
  const other = uniq('fields-other');
  const [a, b] = ['a', 'b'].map((n) => `${n}-${uniq('fs')}`);
  const elsewhere = uniq('fs-elsewhere');

  beforeAll(async () => {
    await createSecret(ns, a);
    await createSecret(ns, b);
    await createSecret(other, elsewhere);
  });

  test.each([
    ['metadata.name=', 'a', ['a']],
    ['metadata.name==', 'a', ['a']],
    ['metadata.name!=', 'a', ['b']],
    ['metadata.namespace=', 'ns', ['a', 'b']],
    ['metadata.namespace==', 'ns', ['a', 'b']],
    ['metadata.namespace!=', 'ns', []],
  ])('in a namespace: %s%s', async (prefix, value, expected) => {
    const byLetter: Record<string, string> = { a, b, ns };
    const body = await list(sharedSecretsPath(ns), q({ fieldSelector: `${prefix}${byLetter[value]}` }));
    expect(names(body)).toEqual(expected.map((l) => byLetter[l]));
  });

  test('across namespaces: metadata.namespace =, ==, != and combined with metadata.name', async () => {
    const pairs = (body: any) => body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`);
    expect(pairs(await list(ALL_SECRETS, q({ fieldSelector: `metadata.namespace=${other}` })))).toEqual([
      `${other}/${elsewhere}`,
    ]);
    expect(pairs(await list(ALL_SECRETS, q({ fieldSelector: `metadata.namespace==${ns}` })))).toEqual([
      `${ns}/${a}`,
      `${ns}/${b}`,
    ]);
    const notNs = pairs(await list(ALL_SECRETS, q({ fieldSelector: `metadata.namespace!=${ns}` })));
    expect(notNs).toContain(`${other}/${elsewhere}`);
    expect(notNs.filter((p: string) => p.startsWith(`${ns}/`))).toEqual([]);
    expect(
      pairs(await list(ALL_SECRETS, q({ fieldSelector: `metadata.namespace=${ns},metadata.name!=${a}` }))),
    ).toEqual([`${ns}/${b}`]);
    expect(pairs(await list(ALL_SECRETS, q({ fieldSelector: `metadata.name=${elsewhere}` })))).toEqual([
      `${other}/${elsewhere}`,
    ]);
  });

  test('metadata.name on a cluster-scoped list', async () => {
    const name = uniq('fs-cluster');
    expect((await ts.admin.post(CLUSTERS_PATH, clusterBody(name))).status).toBe(201);
    expect(names(await list(CLUSTERS_PATH, q({ fieldSelector: `metadata.name=${name}` })))).toEqual([name]);
    expect(names(await list(CLUSTERS_PATH, q({ fieldSelector: `metadata.name!=${name}` })))).not.toContain(name);
  });

  test('field and label selectors together are ANDed', async () => {
    const nsx = uniq('fl');
    const x = uniq('x');
    const y = uniq('y');
    await createSecret(nsx, x, { keep: 'yes' });
    await createSecret(nsx, y, { keep: 'yes' });
    expect(
      names(await list(sharedSecretsPath(nsx), q({ labelSelector: 'keep=yes', fieldSelector: `metadata.name!=${x}` }))),
    ).toEqual([y]);
  });

  test("an unsupported field is 400 with kube's message", async () => {
    const res = await ts.admin.get(`${sharedSecretsPath(ns)}?${q({ fieldSelector: 'spec.displayName=x' })}`);
    expectStatus(
      res,
      400,
      'BadRequest',
      '"spec.displayName" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    const cl = await ts.admin.get(`${CLUSTERS_PATH}?${q({ fieldSelector: 'status.phase!=Ready' })}`);
    expectStatus(
      cl,
      400,
      'BadRequest',
      '"status.phase" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
  });

  test.each([['metadata.name'], ['metadata.name=a=b'], ['metadata.name=a\\x'], ['=a']])(
    'bad field selector syntax %j is 400 BadRequest',
    async (selector) => {
      const res = await ts.admin.get(`${sharedSecretsPath(ns)}?${q({ fieldSelector: selector })}`);
      expectStatus(res, 400, 'BadRequest');
      expect(res.body.message).not.toBe('');
    },
  );
});

describe('paging with limit and continue', () => {
  test('5 objects with limit=2: three pages at one resourceVersion, remainingItemCount 3 then 1, opaque tokens', async () => {
    const ns = uniq('paging');
    const all = ['p1', 'p2', 'p3', 'p4', 'p5'].map((p) => `${p}-${uniq('page')}`);
    for (const name of all) await createSecret(ns, name);

    const page1 = await list(sharedSecretsPath(ns), 'limit=2');
    expect(names(page1)).toEqual(all.slice(0, 2));
    expect(page1.metadata.remainingItemCount).toBe(3);
    expect(page1.metadata.continue).toMatch(OPAQUE_TOKEN);
    const rv = page1.metadata.resourceVersion;
    expect(rv).toMatch(/^[0-9]+$/);
    expect(decodeToken(page1.metadata.continue)).toMatchObject({
      v: 'meta.k8s.io/v1',
      rv: Number(rv),
      start: expect.any(String),
    });

    // A write between pages is not seen by later pages: they are read at the first page's revision.
    const late = `p9-${uniq('late')}`;
    await createSecret(ns, late);
    await setDisplayName(ns, all[3], 'changed between pages');

    const page2 = await list(sharedSecretsPath(ns), q({ limit: 2, continue: page1.metadata.continue }));
    expect(names(page2)).toEqual(all.slice(2, 4));
    expect(page2.metadata.resourceVersion).toBe(rv);
    expect(page2.metadata.remainingItemCount).toBe(1);
    expect(page2.metadata.continue).toMatch(OPAQUE_TOKEN);
    expect(page2.items[1].spec.displayName).toBe(`Secret ${all[3]}`);

    const page3 = await list(sharedSecretsPath(ns), q({ limit: 2, continue: page2.metadata.continue }));
    expect(names(page3)).toEqual(all.slice(4));
    expect(page3.metadata.resourceVersion).toBe(rv);
    expect(page3.metadata.continue).toBeUndefined();
    expect(page3.metadata.remainingItemCount).toBeUndefined();

    // A fresh list sees the late writes.
    const fresh = await list(sharedSecretsPath(ns));
    expect(names(fresh)).toEqual([...all, late]);
  });

  test('limit equal to the number of objects: one page without continue', async () => {
    const ns = uniq('paging-exact');
    for (const n of ['a', 'b']) await createSecret(ns, `${n}-${uniq('x')}`);
    const page = await list(sharedSecretsPath(ns), 'limit=2');
    expect(page.items).toHaveLength(2);
    expect(page.metadata.continue).toBeUndefined();
    expect(page.metadata.remainingItemCount).toBeUndefined();
  });

  test('paging a cluster-wide list of sharedsecrets visits every object once', async () => {
    const nsA = uniq('pg-a');
    const nsB = uniq('pg-b');
    const mine = [`${nsA}/${uniq('s')}`, `${nsA}/${uniq('s')}`, `${nsB}/${uniq('s')}`];
    for (const p of mine) await createSecret(p.split('/')[0], p.split('/')[1]);
    const seen: string[] = [];
    let token: string | undefined;
    let rv: string | undefined;
    for (let i = 0; i < 1000; i++) {
      const body = await list(ALL_SECRETS, q(token ? { limit: 2, continue: token } : { limit: 2 }));
      rv ??= body.metadata.resourceVersion;
      expect(body.metadata.resourceVersion).toBe(rv);
      seen.push(...body.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`));
      token = body.metadata.continue;
      if (!token) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(mine));
    expect(seen).toEqual((await list(ALL_SECRETS)).items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`));
  });

  test('selector + limit: pages hold only matching objects and carry no remainingItemCount', async () => {
    const ns = uniq('paging-sel');
    const all = ['a', 'b', 'c', 'd', 'e', 'f'].map((p) => `${p}-${uniq('ps')}`);
    for (const [i, name] of all.entries()) await createSecret(ns, name, { parity: i % 2 === 0 ? 'even' : 'odd' });
    const even = all.filter((_, i) => i % 2 === 0);

    const page1 = await list(sharedSecretsPath(ns), q({ labelSelector: 'parity=even', limit: 2 }));
    expect(names(page1)).toEqual(even.slice(0, 2));
    expect(page1.metadata.continue).toMatch(OPAQUE_TOKEN);
    expect(page1.metadata.remainingItemCount).toBeUndefined();

    const page2 = await list(
      sharedSecretsPath(ns),
      q({ labelSelector: 'parity=even', limit: 2, continue: page1.metadata.continue }),
    );
    expect(names(page2)).toEqual(even.slice(2));
    expect(page2.metadata.resourceVersion).toBe(page1.metadata.resourceVersion);
    expect(page2.metadata.remainingItemCount).toBeUndefined();
    const rest = page2.metadata.continue
      ? names(
          await list(
            sharedSecretsPath(ns),
            q({ labelSelector: 'parity=even', limit: 2, continue: page2.metadata.continue }),
          ),
        )
      : [];
    expect(rest).toEqual([]);

    // A field selector with a limit, too.
    const byName = await list(sharedSecretsPath(ns), q({ fieldSelector: `metadata.name!=${all[0]}`, limit: 3 }));
    expect(names(byName)).toEqual(all.slice(1, 4));
    expect(byName.metadata.continue).toMatch(OPAQUE_TOKEN);
    expect(byName.metadata.remainingItemCount).toBeUndefined();
  });

  test('a continue token whose revision was compacted is 410 Expired carrying a fresh continue token', async () => {
    const ns = uniq('paging-compact');
    const all = ['a', 'b', 'c', 'd'].map((p) => `${p}-${uniq('pc')}`);
    for (const name of all) await createSecret(ns, name);
    const page1 = await list(sharedSecretsPath(ns), 'limit=2');
    expect(page1.metadata.continue).toBeDefined();
    await setDisplayName(ns, all[2], 'after page 1');
    await compactNow();

    const res = await ts.admin.get(`${sharedSecretsPath(ns)}?${q({ limit: 2, continue: page1.metadata.continue })}`);
    expectStatus(
      res,
      410,
      'Expired',
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    );
    const fresh = res.body.metadata?.continue;
    expect(fresh).toMatch(OPAQUE_TOKEN);
    expect(decodeToken(fresh)).toEqual({
      v: 'meta.k8s.io/v1',
      rv: -1,
      start: decodeToken(page1.metadata.continue).start,
    });

    // The new token continues from the latest data.
    const rest = await list(sharedSecretsPath(ns), q({ limit: 2, continue: fresh }));
    expect(names(rest)).toEqual(all.slice(2));
    expect(rest.items[0].spec.displayName).toBe('after page 1');
  });

  test.each([
    ['not base64 JSON', 'garbage!!'],
    ['base64 of junk', Buffer.from('hello').toString('base64url')],
    ['wrong version', Buffer.from(JSON.stringify({ v: 'x', rv: 5, start: 'a\u0000' })).toString('base64url')],
    [
      'escaping the prefix',
      Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 5, start: '../other/a' })).toString('base64url'),
    ],
    ['rv 0', Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 0, start: 'a\u0000' })).toString('base64url')],
  ])('a garbage continue token (%s) is 400 invalid continue token', async (_why, token) => {
    const res = await ts.admin.get(`${sharedSecretsPath('default')}?${q({ limit: 2, continue: token })}`);
    expectStatus(res, 400, 'BadRequest');
    expect(res.body.message).toMatch(/^invalid continue token: /);
  });

  test('resourceVersion with continue is 400', async () => {
    const ns = uniq('paging-rv');
    for (const n of ['a', 'b', 'c']) await createSecret(ns, `${n}-${uniq('x')}`);
    const page1 = await list(sharedSecretsPath(ns), 'limit=1');
    const res = await ts.admin.get(
      `${sharedSecretsPath(ns)}?${q({ limit: 1, continue: page1.metadata.continue, resourceVersion: page1.metadata.resourceVersion })}`,
    );
    expectStatus(res, 400, 'BadRequest', 'specifying resource version is not allowed when using continue');
  });

  test('resourceVersionMatch with continue is 422', async () => {
    const ns = uniq('paging-rvm');
    for (const n of ['a', 'b']) await createSecret(ns, `${n}-${uniq('x')}`);
    const page1 = await list(sharedSecretsPath(ns), 'limit=1');
    const res = await ts.admin.get(
      `${sharedSecretsPath(ns)}?${q({ limit: 1, continue: page1.metadata.continue, resourceVersion: page1.metadata.resourceVersion, resourceVersionMatch: 'Exact' })}`,
    );
    expectListOptionsInvalid(
      res,
      'resourceVersionMatch',
      'resourceVersionMatch is forbidden when continue is provided',
    );
  });
});

describe('ListOptions validation', () => {
  test('resourceVersionMatch without resourceVersion is 422 (ListOptions.meta.k8s.io)', async () => {
    for (const match of ['NotOlderThan', 'Exact']) {
      const res = await ts.admin.get(`${sharedSecretsPath('default')}?resourceVersionMatch=${match}`);
      expectListOptionsInvalid(
        res,
        'resourceVersionMatch',
        'resourceVersionMatch is forbidden unless resourceVersion is provided',
      );
    }
  });

  test('resourceVersionMatch=Exact with resourceVersion=0 is 422', async () => {
    const res = await ts.admin.get(`${sharedSecretsPath('default')}?resourceVersion=0&resourceVersionMatch=Exact`);
    expectListOptionsInvalid(
      res,
      'resourceVersionMatch',
      'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
    );
  });

  test('sendInitialEvents on a list is 422', async () => {
    for (const value of ['true', 'false']) {
      const res = await ts.admin.get(`${CLUSTERS_PATH}?sendInitialEvents=${value}`);
      expectListOptionsInvalid(res, 'sendInitialEvents', 'sendInitialEvents is forbidden for list');
    }
  });

  test('an unknown resourceVersionMatch is 422 Unsupported value', async () => {
    const res = await ts.admin.get(`${sharedSecretsPath('default')}?resourceVersion=1&resourceVersionMatch=Latest`);
    expectStatus(res, 422, 'Invalid');
    expect(res.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueNotSupported', field: 'resourceVersionMatch' }),
    ]);
  });

  test.each([['abc'], ['-1'], ['1.5'], ['12a']])(
    'a non-numeric resourceVersion %j is 400 invalid resource version',
    async (rv) => {
      for (const path of [sharedSecretsPath('default'), CLUSTERS_PATH]) {
        const res = await ts.admin.get(`${path}?${q({ resourceVersion: rv })}`);
        expectStatus(res, 400, 'BadRequest');
        expect(res.body.message).toMatch(/^invalid resource version: /);
      }
      const exact = await ts.admin.get(
        `${sharedSecretsPath('default')}?${q({ resourceVersion: rv, resourceVersionMatch: 'Exact' })}`,
      );
      expectStatus(exact, 400, 'BadRequest');
      expect(exact.body.message).toMatch(/^invalid resource version: /);
    },
  );
});

describe('resourceVersion semantics', () => {
  test('resourceVersion=0 returns everything and ignores limit', async () => {
    const ns = uniq('rv0');
    const all = ['a', 'b', 'c'].map((p) => `${p}-${uniq('rv0')}`);
    for (const name of all) await createSecret(ns, name);
    // The cache may lag a write by a moment with rv=0 ("any"); it must catch up quickly.
    let body: any;
    for (const deadline = Date.now() + 5000; ;) {
      body = await list(sharedSecretsPath(ns), 'resourceVersion=0&limit=1');
      if (body.items.length === 3 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(names(body)).toEqual(all);
    expect(body.metadata.continue).toBeUndefined();
    expect(body.metadata.remainingItemCount).toBeUndefined();
    expect(body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
  });

  test('resourceVersion=N (NotOlderThan, with and without the match) includes every write up to N', async () => {
    const ns = uniq('rvn');
    const name = uniq('rvn');
    await createSecret(ns, name);
    const updated = await setDisplayName(ns, name, 'v2');
    const rv = updated.metadata.resourceVersion;
    for (const query of [
      q({ resourceVersion: rv }),
      q({ resourceVersion: rv, resourceVersionMatch: 'NotOlderThan' }),
    ]) {
      const body = await list(sharedSecretsPath(ns), query);
      expect(Number(body.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(rv));
      expect(body.items.map((o: any) => [o.metadata.name, o.spec.displayName, o.metadata.resourceVersion])).toEqual([
        [name, 'v2', rv],
      ]);
    }
    // An older N is served too (not older than N), with the latest state.
    const older = await list(
      sharedSecretsPath(ns),
      q({ resourceVersion: Number(rv) - 1, resourceVersionMatch: 'NotOlderThan' }),
    );
    expect(Number(older.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(rv));
    expect(older.items[0].spec.displayName).toBe('v2');
  });

  test('resourceVersion=N a little ahead of the server waits for N (up to ~3 s) instead of failing', async () => {
    const ns = uniq('rv-wait');
    const name = uniq('wait');
    const next = (await etcdRevision(etcd)) + 1;
    const pending = ts.admin.get(`${sharedSecretsPath(ns)}?resourceVersion=${next}`);
    await new Promise((r) => setTimeout(r, 300));
    const created = await createSecret(ns, name);
    expect(Number(created.metadata.resourceVersion)).toBe(next);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(Number(res.body.metadata.resourceVersion)).toBeGreaterThanOrEqual(next);
    expect(names(res.body)).toEqual([name]);
  });

  test('resourceVersionMatch=Exact at an older revision returns the state at that revision', async () => {
    const ns = uniq('exact');
    const name = uniq('exact');
    const other = `zz-${uniq('exact')}`;
    const created = await createSecret(ns, name);
    const r1 = created.metadata.resourceVersion;
    await setDisplayName(ns, name, 'v2');
    await createSecret(ns, other);
    expect((await ts.admin.delete(sharedSecretPath(ns, name))).status).toBe(200);

    const exact = await list(sharedSecretsPath(ns), q({ resourceVersion: r1, resourceVersionMatch: 'Exact' }));
    expect(exact.metadata.resourceVersion).toBe(r1);
    expect(exact.items.map((o: any) => [o.metadata.name, o.spec.displayName, o.metadata.resourceVersion])).toEqual([
      [name, `Secret ${name}`, r1],
    ]);

    // With a limit and no match, resourceVersion=N is the legacy exact read too (and pages at N).
    const legacy = await list(sharedSecretsPath(ns), q({ resourceVersion: r1, limit: 10 }));
    expect(legacy.metadata.resourceVersion).toBe(r1);
    expect(names(legacy)).toEqual([name]);

    // The present, for comparison.
    expect(names(await list(sharedSecretsPath(ns)))).toEqual([other]);
  });

  test('resourceVersionMatch=Exact at a compacted revision is 410 Expired', async () => {
    const ns = uniq('exact-compact');
    const created = await createSecret(ns, uniq('ec'));
    await setDisplayName(ns, created.metadata.name, 'v2');
    await compactNow();
    const res = await ts.admin.get(
      `${sharedSecretsPath(ns)}?${q({ resourceVersion: created.metadata.resourceVersion, resourceVersionMatch: 'Exact' })}`,
    );
    expectStatus(res, 410, 'Expired', 'The resourceVersion for the provided list is too old.');
    const legacy = await ts.admin.get(
      `${sharedSecretsPath(ns)}?${q({ resourceVersion: created.metadata.resourceVersion, limit: 5 })}`,
    );
    expectStatus(legacy, 410, 'Expired', 'The resourceVersion for the provided list is too old.');
  });

  test('a resourceVersion far in the future is 504 Timeout with cause ResourceVersionTooLarge (after ~3 s)', async () => {
    const current = Number((await list(sharedSecretsPath('default'))).metadata.resourceVersion);
    const future = current + 1_000_000;
    const started = Date.now();
    const res = await ts.admin.get(`${sharedSecretsPath('default')}?resourceVersion=${future}`);
    const took = Date.now() - started;
    expectStatus(res, 504, 'Timeout');
    expect(res.body.message).toMatch(new RegExp(`^Timeout: Too large resource version: ${future}, current: [0-9]+$`));
    expect(res.body.details.causes).toEqual([expect.objectContaining({ reason: 'ResourceVersionTooLarge' })]);
    expect(took).toBeGreaterThanOrEqual(2500);
    expect(took).toBeLessThan(15_000);
  }, 30_000);

  test('Exact at a future revision is 504 ResourceVersionTooLarge too', async () => {
    const current = Number((await list(CLUSTERS_PATH)).metadata.resourceVersion);
    const future = current + 1_000_000;
    const res = await ts.admin.get(`${CLUSTERS_PATH}?resourceVersion=${future}&resourceVersionMatch=Exact`);
    expectStatus(res, 504, 'Timeout');
    expect(res.body.message).toMatch(new RegExp(`^Timeout: Too large resource version: ${future}, current: [0-9]+$`));
    expect(res.body.details.causes).toEqual([expect.objectContaining({ reason: 'ResourceVersionTooLarge' })]);
  }, 30_000);

  test('a list right after a write always contains that write (consistent read, 50 rounds, no sleep)', async () => {
    const ns = uniq('consistent');
    const counter = uniq('counter');
    await createSecret(ns, counter);
    const failures: string[] = [];
    for (let i = 0; i < 50; i++) {
      const name = `obj-${String(i).padStart(2, '0')}-${uniq('c')}`;
      const created = await createSecret(ns, name);
      const patched = await setDisplayName(ns, counter, `round ${i}`);
      const paths = i % 2 === 0 ? [sharedSecretsPath(ns)] : [ALL_SECRETS];
      for (const path of paths) {
        const body = await list(path);
        const got = body.items.find((o: any) => o.metadata.namespace === ns && o.metadata.name === name);
        const cnt = body.items.find((o: any) => o.metadata.namespace === ns && o.metadata.name === counter);
        if (!got || got.metadata.resourceVersion !== created.metadata.resourceVersion)
          failures.push(`round ${i}: ${name} missing from ${path}`);
        if (cnt?.spec.displayName !== `round ${i}`)
          failures.push(`round ${i}: counter shows ${cnt?.spec.displayName} in ${path}`);
        if (Number(body.metadata.resourceVersion) < Number(patched.metadata.resourceVersion)) {
          failures.push(
            `round ${i}: list rv ${body.metadata.resourceVersion} < write rv ${patched.metadata.resourceVersion}`,
          );
        }
      }
      // A GET without resourceVersion is always current, too.
      const got = await ts.admin.get(sharedSecretPath(ns, counter));
      if (got.body?.spec?.displayName !== `round ${i}`)
        failures.push(`round ${i}: GET shows ${got.body?.spec?.displayName}`);
    }
    expect(failures).toEqual([]);
  }, 60_000);

  test('a list right after a write made directly in etcd (outside the server) contains it', async () => {
    const ns = uniq('direct');
    const name = uniq('direct');
    const created = await createSecret(ns, name);
    const stored = await peek.value(peek.sharedSecretKey(ns, name));
    for (let i = 0; i < 10; i++) {
      stored.spec.displayName = `direct ${i}`;
      await etcd.put(peek.sharedSecretKey(ns, name)).value(JSON.stringify(stored));
      const body = await list(sharedSecretsPath(ns));
      expect(body.items[0].spec.displayName).toBe(`direct ${i}`);
      expect(Number(body.items[0].metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    }
  });
});

describe('list shapes', () => {
  test('a cluster-wide list of sharedsecrets spans namespaces, sorted by namespace then name', async () => {
    const nsA = `a-${uniq('wide')}`;
    const nsB = `b-${uniq('wide')}`;
    const x = uniq('x');
    const y = uniq('y');
    await createSecret(nsB, x);
    await createSecret(nsA, y);
    const body = await list(ALL_SECRETS);
    expect(body).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecretList' });
    const pairs = body.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`);
    expect(pairs).toEqual(expect.arrayContaining([`${nsA}/${y}`, `${nsB}/${x}`]));
    expect(pairs.indexOf(`${nsA}/${y}`)).toBeLessThan(pairs.indexOf(`${nsB}/${x}`));
    for (const item of body.items) {
      expect(item).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecret' });
      expect(Number(item.metadata.resourceVersion)).toBeLessThanOrEqual(Number(body.metadata.resourceVersion));
    }
    // Both read paths (cache and etcd pages) agree.
    const paged = await list(ALL_SECRETS, 'limit=100000');
    expect(paged.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(pairs);
  });

  test('an empty list has items: [] on every read path', async () => {
    const ns = uniq('empty');
    for (const query of [
      '',
      'limit=5',
      'resourceVersion=0',
      'labelSelector=none%3Dhere',
      'fieldSelector=metadata.name%3Dnope',
    ]) {
      const res = await ts.admin.get(query ? `${sharedSecretsPath(ns)}?${query}` : sharedSecretsPath(ns));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecretList', items: [] });
      expect(res.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      expect(res.text).toContain('"items":[]');
    }
    const clusters = await ts.admin.get(`${CLUSTERS_PATH}?labelSelector=${encodeURIComponent(`nothing=${uniq('n')}`)}`);
    expect(clusters.body).toMatchObject({ kind: 'ClusterList', items: [] });
    expect(clusters.text).toContain('"items":[]');
  });

  test('a PartialObjectMetadataList list holds only metadata', async () => {
    const ns = uniq('pom');
    const name = uniq('pom');
    await createSecret(ns, name, { a: 'b' });
    const res = await ts.admin.get(sharedSecretsPath(ns), {
      headers: { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      kind: 'PartialObjectMetadataList',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: expect.stringMatching(/^[0-9]+$/) },
    });
    expect(res.body.items).toEqual([
      {
        kind: 'PartialObjectMetadata',
        apiVersion: 'meta.k8s.io/v1',
        metadata: expect.objectContaining({ name, namespace: ns, labels: { a: 'b' } }),
      },
    ]);
  });
});

describe('GET with a resourceVersion', () => {
  test('resourceVersion=0 returns the object (any version), N returns one not older than N', async () => {
    const ns = uniq('get-rv');
    const name = uniq('get');
    const created = await createSecret(ns, name);
    const got0 = await ts.admin.get(`${sharedSecretPath(ns, name)}?resourceVersion=0`);
    expect(got0.status).toBe(200);
    expect(got0.body).toMatchObject({
      kind: 'SharedSecret',
      metadata: { name, namespace: ns, uid: created.metadata.uid },
    });

    const updated = await setDisplayName(ns, name, 'v2');
    const gotN = await ts.admin.get(
      `${sharedSecretPath(ns, name)}?resourceVersion=${updated.metadata.resourceVersion}`,
    );
    expect(gotN.status).toBe(200);
    expect(gotN.body).toEqual(updated);

    const missing = await ts.admin.get(`${sharedSecretPath(ns, uniq('missing'))}?resourceVersion=0`);
    expectStatus(missing, 404, 'NotFound');
    expect(missing.body.details).toMatchObject({ group: GROUP, kind: 'sharedsecrets' });

    const bad = await ts.admin.get(`${sharedSecretPath(ns, name)}?resourceVersion=x`);
    expectStatus(bad, 400, 'BadRequest');
    expect(bad.body.message).toMatch(/^invalid resource version: /);
  });

  test('GET of a cluster with resourceVersion=0', async () => {
    const name = uniq('get-cl');
    const created = await ts.admin.post(CLUSTERS_PATH, clusterBody(name));
    expect(created.status).toBe(201);
    const got = await ts.admin.get(`${CLUSTERS_PATH}/${name}?resourceVersion=0`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ kind: 'Cluster', metadata: { name, uid: created.body.metadata.uid } });
  });
});
