/**
 * What fuzz.test.ts found, one test each, on an in-process server: answers that were a 500, or writes that went
 * through where kube refuses them (a client relying on the refusal would have lost data or stored garbage).
 */
import { describe, expect, test } from '@jest/globals';
import type { EtcdPeek } from '../support/fixtures.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  MERGE_PATCH,
  clusterBody,
  clusterPath,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
} from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import type { TestServer } from '../support/server.js';

let ts: TestServer;
let peek: EtcdPeek;
useServerWithPeek((env) => ({ ts, peek } = env));

const APPLY = 'application/apply-patch+yaml';

describe('deletecollection', () => {
  test('preconditions hold for every object: one that does not hold is 409 and deletes nothing', async () => {
    const ns = uniq('dc');
    for (const name of ['a', 'b', 'c'])
      expect((await ts.admin.post(sharedSecretsPath(ns), secretBody(name))).status).toBe(201);
    for (const preconditions of [{ uid: '00000000-0000-0000-0000-000000000000' }, { resourceVersion: '1' }]) {
      const res = await ts.admin.delete(sharedSecretsPath(ns), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions },
      });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    }
    const left = await ts.admin.get(sharedSecretsPath(ns));
    expect(left.body.items.map((o: any) => o.metadata.name)).toEqual(['a', 'b', 'c']);
    // Without preconditions it deletes them all.
    expect((await ts.admin.delete(sharedSecretsPath(ns))).status).toBe(200);
    expect((await ts.admin.get(sharedSecretsPath(ns))).body.items).toEqual([]);
  });
});

describe('server-side apply', () => {
  test('a wrongly typed field in the configuration is 400 BadRequest, not 500', async () => {
    const ns = uniq('apply');
    const name = uniq('s');
    const config = (spec: string) =>
      `apiVersion: ${API_VERSION}\nkind: SharedSecret\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n${spec}\n`;
    for (const spec of ['  displayName: [1, 2]', '  data: 5', '  access: {a: 1}']) {
      const res = await ts.admin.patch(`${sharedSecretPath(ns, name)}?fieldManager=fuzz`, config(spec), APPLY);
      expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 400, reason: 'BadRequest' });
      expect(res.body.message).toMatch(/^failed to create typed patch object/);
    }
    expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
  });
});

describe('wrongly typed metadata the server sets itself', () => {
  const invalidAt = (res: { status: number; body: any }, field: string) => {
    expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 422, reason: 'Invalid' });
    expect(res.body.details.causes).toContainEqual(expect.objectContaining({ reason: 'FieldValueTypeInvalid', field }));
  };

  test('is refused on create, even where the server would overwrite it', async () => {
    const ns = uniq('meta');
    for (const [field, value] of [
      ['generation', 'abc'],
      ['selfLink', 42],
      ['uid', true],
      ['deletionGracePeriodSeconds', 'x'],
      ['creationTimestamp', 7],
    ] as const) {
      const name = uniq('s');
      const body = secretBody(name);
      body.metadata[field] = value;
      invalidAt(await ts.admin.post(sharedSecretsPath(ns), body), `metadata.${field}`);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    }
    // A cluster-scoped kind has no namespace, but a namespace of the wrong type is still wrong.
    const cluster = clusterBody(uniq('c'));
    cluster.metadata.namespace = true;
    invalidAt(await ts.admin.post(CLUSTERS_PATH, cluster), 'metadata.namespace');
    expect(await peek.value(peek.clusterKey(cluster.metadata.name))).toBeUndefined();
  });

  test('is refused on update, merge patch and apply, and nothing changes', async () => {
    const ns = uniq('meta');
    const name = uniq('s');
    const made = (await ts.admin.post(sharedSecretsPath(ns), secretBody(name))).body;
    const before = await peek.entry(peek.sharedSecretKey(ns, name));
    invalidAt(
      await ts.admin.put(sharedSecretPath(ns, name), { ...made, metadata: { ...made.metadata, generation: 'abc' } }),
      'metadata.generation',
    );
    invalidAt(
      await ts.admin.patch(sharedSecretPath(ns, name), { metadata: { selfLink: 42 } }, MERGE_PATCH),
      'metadata.selfLink',
    );
    invalidAt(
      await ts.admin.patch(
        `${sharedSecretPath(ns, name)}/status`,
        [{ op: 'add', path: '/metadata/finalizers', value: 'x' }],
        'application/json-patch+json',
      ),
      'metadata.finalizers',
    );
    const apply = `apiVersion: ${API_VERSION}\nkind: SharedSecret\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n  generation: abc\n`;
    invalidAt(
      await ts.admin.patch(`${sharedSecretPath(ns, name)}?fieldManager=fuzz`, apply, APPLY),
      'metadata.generation',
    );
    const cluster = (await ts.admin.post(CLUSTERS_PATH, clusterBody(uniq('c')))).body;
    invalidAt(
      await ts.admin.patch(clusterPath(cluster.metadata.name), { metadata: { namespace: 42 } }, MERGE_PATCH),
      'metadata.namespace',
    );
    expect(await peek.entry(peek.sharedSecretKey(ns, name))).toEqual(before);
  });
});

describe('owned access keys', () => {
  test('a wrongly typed spec.user is refused, not replaced by the caller', async () => {
    for (const user of [42, true, { a: 'b' }, ['x']]) {
      const name = uniq('key');
      const res = await ts.admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
        apiVersion: API_VERSION,
        kind: 'OwnedAccessKey',
        metadata: { name },
        spec: { user },
      });
      expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details.causes).toContainEqual(
        expect.objectContaining({ reason: 'FieldValueTypeInvalid', field: 'spec.user' }),
      );
    }
    // Not given at all, it is still the caller.
    const made = await ts.admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name: uniq('key') },
      spec: {},
    });
    expect(made.status).toBe(201);
    expect(typeof made.body.spec.user).toBe('string');
  });
});
