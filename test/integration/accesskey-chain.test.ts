/**
 * Keys made with keys (issue 43): a key created with an access key records that value, and the values its key was
 * made with, in status.issuedWith, and works only while each of them does; so revoking a leaked key (deleting,
 * disabling, rotating it) revokes every key made with it, and what was issued to those. A request made with a key
 * rotates only that key and the keys made with it. alice is a plain user (a static token), root is system:masters.
 * One server for the file, real etcd.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { decodeJwt } from 'jose';
import { MAX_ISSUED_WITH } from '../../src/kinds/ownedaccesskey/strategy.js';
import { API_VERSION, GROUP, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, warningsOf } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const keyPath = (name: string) => `${KEYS}/${name}`;
const rotatePath = (name: string) => `${KEYS}/${name}/rotate`;

let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let etcd: Etcd3;

const keyObject = (name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
  ...extra,
});

/** Creates a key for alice with `client`; answers its value. */
async function createKey(client: HttpClient, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post(KEYS, keyObject(name, { user: 'alice', ...spec }));
  expect({ status: res.status, message: res.body.message }).toEqual({ status: 201, message: undefined });
  return res.body.spec.key as string;
}

const etcdKey = (name: string) => `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`;
async function stored(name: string): Promise<any> {
  const text = await etcd.get(etcdKey(name)).string();
  return text === null ? null : JSON.parse(text);
}

/** A request made with `value`: a list of keys, 200 while the value works. */
const list = (value: string) => ts.client(value).get(KEYS);

/** Waits until `value` is refused, and answers the refusal's message. */
async function refusalOf(value: string): Promise<string> {
  await waitFor('the value to be refused', async () => (await list(value)).status === 401);
  return (await list(value)).body.message as string;
}

const chainMessage = (name: string, why: string) =>
  `access key "${name}" works only while the access keys it was made with work (status.issuedWith): ${why}`;

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [] });
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
}, 60_000);

describe('a key made with a key', () => {
  test('records the value it was made with and says so; a key made with a login records nothing', async () => {
    const parent = uniq('ci');
    const parentValue = await createKey(ts.as.alice, parent);
    const child = uniq('deploy');
    const res = await ts.client(parentValue).post(KEYS, keyObject(child, { user: 'alice' }));
    expect(res.status).toBe(201);
    const parentUid = (await ts.as.root.get(keyPath(parent))).body.metadata.uid;
    expect(res.body.status.issuedWith).toEqual([{ name: parent, uid: parentUid, generation: 0 }]);
    expect(warningsOf(res)).toContain(
      `access key "${child}" is made with access key "${parent}" and works only as long as the value of it this request used does: once "${parent}" is deleted, disabled or expires, or that value is rotated past its grace, both are refused (status.issuedWith)`,
    );
    expect((await stored(child)).status.issuedWith).toEqual([{ name: parent, uid: parentUid, generation: 0 }]);
    expect((await list(res.body.spec.key)).status).toBe(200);
    expect((await stored(parent)).status?.issuedWith).toBeUndefined();
  });

  test('is refused once the key it was made with is deleted, naming it', async () => {
    const parent = uniq('leaked');
    const child = uniq('persist');
    const childValue = await createKey(ts.client(await createKey(ts.as.alice, parent)), child);
    expect((await list(childValue)).status).toBe(200);
    expect((await ts.as.root.delete(keyPath(parent))).status).toBe(200);
    expect(await refusalOf(childValue)).toBe(chainMessage(child, `access key "${parent}" no longer exists`));
    // The same name created again is another key: the child stays refused.
    await createKey(ts.as.alice, parent);
    expect((await list(childValue)).status).toBe(401);
  });

  test('is refused while the key it was made with is disabled, and works again once it is enabled', async () => {
    const parent = uniq('paused');
    const child = uniq('child');
    const childValue = await createKey(ts.client(await createKey(ts.as.alice, parent)), child);
    const disable = (disabled: boolean) =>
      ts.as.root.patch(keyPath(parent), { spec: { disabled } }, MERGE_PATCH).then((r) => r.status);
    expect(await disable(true)).toBe(200);
    expect(await refusalOf(childValue)).toBe(chainMessage(child, `access key "${parent}" is disabled`));
    expect(await disable(false)).toBe(200);
    await waitFor('the child to work again', async () => (await list(childValue)).status === 200);
  });

  test('works through the grace of a rotation of the key it was made with, and is refused after it', async () => {
    const parent = uniq('rotated');
    const parentValue = await createKey(ts.as.alice, parent);
    const child = uniq('child');
    const childValue = await createKey(ts.client(parentValue), child);
    const graced = await ts.as.alice.post(rotatePath(parent), keyObject(parent, { rotationGracePeriod: 3600 }));
    expect(graced.status).toBe(201);
    await waitFor('the rotation to be seen', async () => (await list(graced.body.spec.key)).status === 200);
    expect((await list(childValue)).status).toBe(200);

    // Another pair, rotated with no grace: the value the child was made with stops at once, and the child with it.
    const other = uniq('rotated-now');
    const otherChild = uniq('child');
    const otherChildValue = await createKey(ts.client(await createKey(ts.as.alice, other)), otherChild);
    const now = await ts.as.alice.post(rotatePath(other), keyObject(other, { rotationGracePeriod: 0 }));
    expect(now.status).toBe(201);
    expect(await refusalOf(otherChildValue)).toBe(
      chainMessage(
        otherChild,
        `access key "${other}" was rotated at ${now.body.status.lastRotationTimestamp}; its previous value stopped working at ${now.body.status.previousKeyExpirationTimestamp}; use the new value`,
      ),
    );
  });

  test('a key made with a key made with a key falls with the first; a chain is at most eight long', async () => {
    const names = Array.from({ length: MAX_ISSUED_WITH + 1 }, (_, i) => uniq(`link${i}`));
    const values = [await createKey(ts.as.alice, names[0])];
    for (let i = 1; i < names.length; i++) values.push(await createKey(ts.client(values[i - 1]), names[i]));
    const last = names.length - 1;
    expect((await stored(names[last])).status.issuedWith.map((v: { name: string }) => v.name)).toEqual(
      names.slice(0, last).reverse(),
    );

    const tooLong = uniq('link-too-many');
    const res = await ts.client(values[last]).post(KEYS, keyObject(tooLong, { user: 'alice' }));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect(res.body.message).toContain(
      `this request's access key "${names[last]}" was made with an access key, which was made with one, and so on: a key made with it would depend on ${MAX_ISSUED_WITH + 1} keys, and at most ${MAX_ISSUED_WITH} are allowed`,
    );
    expect(await stored(tooLong)).toBeNull();

    // The chain's first key disabled: the last is refused, naming it.
    expect((await ts.as.root.patch(keyPath(names[0]), { spec: { disabled: true } }, MERGE_PATCH)).status).toBe(200);
    expect(await refusalOf(values[last])).toBe(chainMessage(names[last], `access key "${names[0]}" is disabled`));
  });

  test('a direct token asked with it ends no later than the key it was made with', async () => {
    const parentValue = await createKey(ts.as.alice, uniq('short'), { ttl: 600 });
    const childValue = await createKey(ts.client(parentValue), uniq('long'));
    const res = await ts.client(childValue).post(`${GROUP_PATH}/directclusterendpointtokens`, {
      apiVersion: API_VERSION,
      kind: 'DirectClusterEndpointToken',
      spec: { ttl: 3600 },
    });
    expect(res.status).toBe(201);
    const { exp, iat } = decodeJwt(res.body.status.token);
    expect(exp! - iat!).toBeLessThanOrEqual(600);
  });
});

describe("status.issuedWith is the server's", () => {
  test('a create cannot set it, and no write frees a key of it, root neither', async () => {
    const parent = uniq('parent');
    const parentValue = await createKey(ts.as.alice, parent);
    const uid = (await ts.as.root.get(keyPath(parent))).body.metadata.uid;

    // A key created with a login, claiming to be made with nothing in particular: no issuedWith is kept.
    const plain = uniq('plain');
    const made = await ts.as.alice.post(
      KEYS,
      keyObject(plain, { user: 'alice' }, { status: { issuedWith: [{ name: 'x', uid: 'y', generation: 0 }] } }),
    );
    expect(made.status).toBe(201);
    expect((await stored(plain)).status?.issuedWith).toBeUndefined();

    const child = uniq('child');
    const childValue = await createKey(ts.client(parentValue), child);
    const chain = [{ name: parent, uid, generation: 0 }];
    for (const [client, body] of [
      [ts.as.root, { status: { issuedWith: [] } }],
      [ts.as.root, { status: { issuedWith: null } }],
      [ts.as.root, { status: null }],
    ] as const) {
      const res = await client.patch(`${keyPath(child)}/status`, body, MERGE_PATCH);
      expect(res.status).toBe(200);
      expect(res.body.status.issuedWith).toEqual(chain);
    }
    // Its holder may not write the status at all, and a write of the key carries the status over.
    expect(
      (await ts.as.alice.patch(`${keyPath(child)}/status`, { status: { issuedWith: [] } }, MERGE_PATCH)).status,
    ).toBe(403);
    const current = (await ts.as.alice.get(keyPath(child))).body;
    const put = await ts.as.alice.put(keyPath(child), { ...current, status: {} });
    expect(put.status).toBe(200);
    expect((await stored(child)).status.issuedWith).toEqual(chain);

    expect((await ts.as.root.delete(keyPath(parent))).status).toBe(200);
    expect(await refusalOf(childValue)).toBe(chainMessage(child, `access key "${parent}" no longer exists`));
  });
});

describe('a request made with a key rotates only that key and the keys made with it', () => {
  test('its own key and its child: rotated; a key its user made otherwise, or its parent: 403, unchanged', async () => {
    const parent = uniq('ci');
    const parentValue = await createKey(ts.as.alice, parent);
    const child = uniq('child');
    const childValue = await createKey(ts.client(parentValue), child);
    const own = uniq('laptop');
    await createKey(ts.as.alice, own);

    const rotate = (value: string, name: string) =>
      ts.client(value).post(rotatePath(name), keyObject(name, { rotationGracePeriod: 60 }));
    const before = (await stored(own)).spec.key;
    const refused = await rotate(parentValue, own);
    expect({ status: refused.status, reason: refused.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect(refused.body.message).toContain(
      `a request made with access key "${parent}" may rotate only that key and the keys made with it (status.issuedWith): the new value would outlive "${parent}"; rotate it with another credential`,
    );
    expect((await stored(own)).spec.key).toBe(before);
    expect((await stored(own)).status?.rotations).toBeUndefined();
    expect((await rotate(childValue, parent)).status).toBe(403);

    expect((await rotate(parentValue, child)).status).toBe(201);
    expect((await rotate(parentValue, parent)).status).toBe(201);
    // alice herself (her login) rotates any key of hers.
    expect((await ts.as.alice.post(rotatePath(own), keyObject(own))).status).toBe(201);
  });
});
