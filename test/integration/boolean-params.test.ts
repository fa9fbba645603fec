/**
 * Boolean query parameters over real HTTPS and a real etcd, read as kube reads them: `0` and `false` in any case are
 * false, anything else true. The official Python client sends `True`; before, its watches came back as lists and its
 * `allowWatchBookmarks=True`, `force=True` and `orphanDependents=True` were 400.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import {
  APPLY_PATCH,
  MERGE_PATCH,
  type EtcdPeek,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
} from '../support/fixtures.js';
import type { TestServer } from '../support/server.js';
import { closeWatches, openWatch } from '../support/watch.js';

let ts: TestServer;
let peek: EtcdPeek;
useServerWithPeek((env) => ({ ts, peek } = env));
afterEach(closeWatches);

const NS = 'booleans';
const HOLD = 'example.com/hold';

async function create(name: string, finalizers?: string[]): Promise<any> {
  const body = secretBody(name);
  if (finalizers) body.metadata.finalizers = finalizers;
  const res = await ts.admin.post(sharedSecretsPath(NS), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

describe('watch', () => {
  test.each(['True', 'TRUE', '1', '', 'F'])('watch=%s streams ADDED, then MODIFIED', async (value) => {
    const made = await create(uniq('w'));
    const w = await openWatch(
      ts.admin,
      `${sharedSecretsPath(NS)}?watch=${value}&fieldSelector=metadata.name%3D${made.metadata.name}`,
    );
    expect(w.status).toBe(200);
    expect(await w.nth(1)).toEqual({ type: 'ADDED', object: made });
    const patched = await ts.admin.patch(
      sharedSecretPath(NS, made.metadata.name),
      { spec: { displayName: 'changed' } },
      MERGE_PATCH,
    );
    expect(await w.nth(2)).toEqual({ type: 'MODIFIED', object: patched.body });
  });

  test.each(['false', 'False', 'FALSE', '0'])('watch=%s is a list', async (value) => {
    const made = await create(uniq('l'));
    const res = await ts.admin.get(
      `${sharedSecretsPath(NS)}?watch=${value}&fieldSelector=metadata.name%3D${made.metadata.name}`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'SharedSecretList', items: [made] });
  });

  test('allowWatchBookmarks=True and sendInitialEvents=True: the initial ADDED, then the end BOOKMARK', async () => {
    const made = await create(uniq('wl'));
    const w = await openWatch(
      ts.admin,
      `${sharedSecretsPath(NS)}?watch=True&allowWatchBookmarks=True&sendInitialEvents=True` +
        `&resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name%3D${made.metadata.name}`,
    );
    expect(w.status).toBe(200);
    const [added, bookmark] = await w.count(2);
    expect(added).toEqual({ type: 'ADDED', object: made });
    expect(bookmark.type).toBe('BOOKMARK');
    expect(bookmark.object.metadata.annotations).toMatchObject({ 'k8s.io/initial-events-end': 'true' });
  });
});

describe('force and orphanDependents', () => {
  test('force=True takes a field another manager owns; force=False leaves the conflict', async () => {
    const name = uniq('force');
    const apply = (manager: string, displayName: string, force: string) =>
      ts.admin.patch(
        `${sharedSecretPath(NS, name)}?fieldManager=${manager}&force=${force}`,
        { ...secretBody(name), spec: { ...secretBody(name).spec, displayName } },
        APPLY_PATCH,
      );
    expect((await apply('first', 'one', 'False')).status).toBe(201);
    const refused = await apply('second', 'two', 'False');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ kind: 'Status', reason: 'Conflict' });
    expect((await peek.value(peek.sharedSecretKey(NS, name))).spec.displayName).toBe('one');
    const forced = await apply('second', 'two', 'True');
    expect(forced.status).toBe(200);
    expect(forced.body.spec.displayName).toBe('two');
  });

  test('orphanDependents=True orphans; orphanDependents=False does not', async () => {
    const orphaned = await create(uniq('orphan'), [HOLD]);
    const res = await ts.admin.delete(`${sharedSecretPath(NS, orphaned.metadata.name)}?orphanDependents=True`);
    expect(res.status).toBe(200);
    expect(res.body.metadata.finalizers).toEqual([HOLD, 'orphan']);

    const kept = await create(uniq('background'), [HOLD]);
    const res2 = await ts.admin.delete(`${sharedSecretPath(NS, kept.metadata.name)}?orphanDependents=False`);
    expect(res2.status).toBe(202);
    expect(res2.body.metadata.finalizers).toEqual([HOLD]);
  });
});
