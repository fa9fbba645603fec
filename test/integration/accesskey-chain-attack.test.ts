/**
 * Attacks on "a key made with an access key falls with it" (status.issuedWith, issue 43), as the holder of a leaked
 * key would make them: the goal is any credential that keeps working once the leaked key is deleted, disabled or
 * rotated past its grace. The first tests were findings (each comment says the attack, and what happens since the
 * fix: registry/serverstatus.ts puts a written null back as it puts back an absent value); the `held` tests are regressions for attacks that did not work. alice is a
 * plain user (a static token), root is system:masters, reviewer holds eu-1's TokenReview grant. One server for the
 * file (a second one, on the same etcd, for the restart), real etcd, real kubectl.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import { decodeJwt } from 'jose';
import { API_VERSION, APPLY_PATCH, GROUP, JSON_PATCH, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { kubectl, writeUserlessKubeconfig } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const keyPath = (name: string) => `${KEYS}/${name}`;
const statusPath = (name: string) => `${KEYS}/${name}/status`;
const rotatePath = (name: string) => `${KEYS}/${name}/rotate`;
const TOKENS = `${GROUP_PATH}/directclusterendpointtokens`;
const WEBHOOK = '/authenticate/direct-cluster-endpoint';
const CLUSTER = 'eu-1';

type Users = 'root' | 'alice' | 'reviewer';
let ts: TestServer & { as: Record<Users, HttpClient> };
let etcd: Etcd3;

const keyObject = (name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
  ...extra,
});

/** Creates a key (for alice unless `spec` says otherwise) with `client`; answers its value. */
async function createKey(client: HttpClient, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post(KEYS, keyObject(name, { user: 'alice', ...spec }));
  expect({ status: res.status, message: res.body.message }).toEqual({ status: 201, message: undefined });
  return res.body.spec.key as string;
}

/** A system:masters key, as an admin's CI would hold one (the leaked key of the master attacks). */
const masterKey = (name: string) => createKey(ts.as.root, name, { user: 'ops', groups: ['system:masters'] });

const etcdKey = (name: string, prefix = ts.config.etcdPrefix) => `${prefix}/${GROUP}/ownedaccesskeys/${name}`;
async function stored(name: string, prefix?: string): Promise<any> {
  const text = await etcd.get(etcdKey(name, prefix)).string();
  return text === null ? null : JSON.parse(text);
}
const uidOf = async (name: string): Promise<string> => (await stored(name)).metadata.uid;

/** A request made with `value`: a list of keys, 200 while the value works. */
const works = async (value: string, server: TestServer = ts) => (await server.client(value).get(KEYS)).status;

/** Waits until `value` is refused (401) and answers the refusal's message. */
async function refusalOf(value: string, server: TestServer = ts): Promise<string> {
  await waitFor('the value to be refused', async () => (await works(value, server)) === 401);
  return (await server.client(value).get(KEYS)).body.message as string;
}

const chainMessage = (name: string, why: string) =>
  `access key "${name}" works only while the access keys it was made with work (status.issuedWith): ${why}`;

/**
 * Waits until a key created now would not share the second of `name`'s creationTimestamp (whole seconds): two keys
 * with one value created in the same second are both refused, which is not what these tests look at.
 */
async function nextSecondAfter(name: string): Promise<void> {
  const created = Date.parse((await stored(name)).metadata.creationTimestamp);
  await waitFor('the next second', () => Date.now() >= created + 1000);
}

const deleteKey = async (name: string) => expect((await ts.as.root.delete(keyPath(name))).status).toBe(200);
const disableKey = async (name: string) =>
  expect((await ts.as.root.patch(keyPath(name), { spec: { disabled: true } }, MERGE_PATCH)).status).toBe(200);

async function tokenOf(value: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await ts
    .client(value)
    .post(TOKENS, { apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec });
  expect({ status: res.status, message: res.body.message }).toEqual({ status: 201, message: undefined });
  return res.body.status.token as string;
}

/** The TokenReview eu-1's kube-apiserver would post to the webhook. */
const review = async (token: string) =>
  (
    await ts.as.reviewer.post(`${WEBHOOK}/${CLUSTER}`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token },
    })
  ).body.status;

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: ['platform:team:web'], reviewer: [] });
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  const grant = { verbs: ['create'], subresources: ['tokenreviews'], users: ['reviewer'] };
  const cluster = await ts.as.root.post(`${GROUP_PATH}/clusters`, {
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: { name: CLUSTER },
    spec: { networkPeer: true, access: [grant] },
  });
  expect(cluster.status).toBe(201);
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
}, 60_000);

describe('a null written to a server-only status field is put back', () => {
  // Attack: an admin's system:masters key leaks. With it the holder creates a second key (status.issuedWith names
  // the leaked one), then writes the new key's status with a JSON patch `replace /status/issuedWith` to null. The
  // status strategy leaves a value that is not an array "for validation to refuse" (registry/serverstatus.ts),
  // but null is not refused: the schema's pruning drops nulls of fields that are not nullable, so the stored key
  // has no issuedWith at all and stands alone. The leaked key is deleted; the copy keeps working, as
  // system:masters. Since the fix: the write keeps issuedWith as stored (docs/security.md: "no write changes or
  // removes it, system:masters' neither"), and the copy is 401 once the leaked key is deleted.
  test('a leaked master key frees its copy with a JSON patch of status.issuedWith to null', async () => {
    const leaked = uniq('admin-ci');
    const leakedValue = await masterKey(leaked);
    const copy = uniq('backdoor');
    const copyValue = await createKey(ts.client(leakedValue), copy, { user: 'ops', groups: ['system:masters'] });
    const chain = [{ name: leaked, uid: await uidOf(leaked), generation: 0 }];
    expect((await stored(copy)).status.issuedWith).toEqual(chain);

    const write = await ts
      .client(leakedValue)
      .patch(statusPath(copy), [{ op: 'replace', path: '/status/issuedWith', value: null }], JSON_PATCH);
    expect(write.status).toBeLessThan(500);

    await deleteKey(leaked);
    await waitFor('the leaked key to be refused', async () => (await works(leakedValue)) === 401);
    expect({ issuedWith: (await stored(copy)).status?.issuedWith, copy: await works(copyValue) }).toEqual({
      issuedWith: chain,
      copy: 401,
    });
  });

  // Attack: as above, with a PUT of the status subresource whose body has `status.issuedWith: null` (what
  // `kubectl replace --subresource status` sends for an edited `issuedWith: null`). Same pruning, same result: the
  // copy is freed and outlives the leaked key. Since the fix: issuedWith kept; the copy 401 once the leaked key is gone.
  test('a leaked master key frees its copy with a PUT of the status with issuedWith null', async () => {
    const leaked = uniq('admin-ci');
    const leakedValue = await masterKey(leaked);
    const copy = uniq('backdoor');
    const copyValue = await createKey(ts.client(leakedValue), copy, { user: 'ops', groups: ['system:masters'] });
    const chain = [{ name: leaked, uid: await uidOf(leaked), generation: 0 }];

    const current = (await ts.client(leakedValue).get(keyPath(copy))).body;
    const write = await ts
      .client(leakedValue)
      .put(statusPath(copy), { ...current, status: { ...current.status, issuedWith: null } });
    expect(write.status).toBeLessThan(500);

    await disableKey(leaked);
    await waitFor('the leaked key to be refused', async () => (await works(leakedValue)) === 401);
    expect({ issuedWith: (await stored(copy)).status?.issuedWith, copy: await works(copyValue) }).toEqual({
      issuedWith: chain,
      copy: 401,
    });
  });

  // Attack: the same null, on the leaked key's own rotation count. The owner notices the leak and rotates the admin
  // key (a grace of a few seconds). Within the grace the holder, still in with the old value, writes the key's
  // status with a JSON patch `replace /status/rotations` to null: pruned like issuedWith, so the stored key counts
  // no rotation (generation 0 again). The copy made before the rotation records generation 0, which is now the
  // key's current value: once the grace ends the old value is refused, but the copy keeps working as long as the
  // owner's new value does. Since the fix: the rotation fields kept as stored (the server's alone), and the copy 401 once
  // the grace of the rotation ends.
  test('a leaked master key, rotated by its owner, nulls its status.rotations: its copy outlives the rotation', async () => {
    const leaked = uniq('admin-ci');
    const leakedValue = await masterKey(leaked);
    const copy = uniq('backdoor');
    const copyValue = await createKey(ts.client(leakedValue), copy, { user: 'ops', groups: ['system:masters'] });

    const rotated = await ts.as.root.post(rotatePath(leaked), keyObject(leaked, { rotationGracePeriod: 3 }));
    expect(rotated.status).toBe(201);
    const write = await ts
      .client(leakedValue)
      .patch(statusPath(leaked), [{ op: 'replace', path: '/status/rotations', value: null }], JSON_PATCH);
    expect(write.status).toBeLessThan(500);

    expect(await refusalOf(leakedValue)).toContain(`access key "${leaked}" was rotated at`);
    expect({ rotations: (await stored(leaked)).status?.rotations, copy: await works(copyValue) }).toEqual({
      rotations: 1,
      copy: 401,
    });
  });
});

describe('held: no write frees a key of status.issuedWith', () => {
  test("its holder's writes of the key (PUT, JSON and merge patches, apply with force) carry the status over", async () => {
    const parent = uniq('leaked');
    const parentValue = await createKey(ts.as.alice, parent);
    const child = uniq('child');
    const childValue = await createKey(ts.client(parentValue), child);
    const chain = [{ name: parent, uid: await uidOf(parent), generation: 0 }];
    const as = ts.client(parentValue);

    const current = (await as.get(keyPath(child))).body;
    const writes: [string, () => Promise<{ status: number }>][] = [
      ['PUT without status', () => as.put(keyPath(child), { ...current, status: undefined })],
      ['PUT with issuedWith null', () => as.put(keyPath(child), { ...current, status: { issuedWith: null } })],
      ['JSON patch remove', () => as.patch(keyPath(child), [{ op: 'remove', path: '/status/issuedWith' }], JSON_PATCH)],
      [
        'JSON patch replace null',
        () => as.patch(keyPath(child), [{ op: 'replace', path: '/status/issuedWith', value: null }], JSON_PATCH),
      ],
      ['merge patch null', () => as.patch(keyPath(child), { status: { issuedWith: null } }, MERGE_PATCH)],
      [
        'apply with force',
        () =>
          as.patch(
            `${keyPath(child)}?fieldManager=attacker&force=true`,
            keyObject(child, { user: 'alice', disabled: false }, { status: { issuedWith: [] } }),
            APPLY_PATCH,
          ),
      ],
    ];
    for (const [what, write] of writes) {
      const res = await write();
      expect({ what, ok: res.status < 500 }).toEqual({ what, ok: true });
      expect({ what, issuedWith: (await stored(child)).status?.issuedWith }).toEqual({ what, issuedWith: chain });
    }
    // The status subresource is not the holder's to write at all, with the key nor with a login.
    for (const client of [as, ts.client(childValue), ts.as.alice]) {
      for (const [body, type] of [
        [{ status: { issuedWith: null } }, MERGE_PATCH],
        [[{ op: 'replace', path: '/status/issuedWith', value: null }], JSON_PATCH],
      ] as const)
        expect((await client.patch(statusPath(child), body, type)).status).toBe(403);
    }
    await deleteKey(parent);
    expect(await refusalOf(childValue)).toBe(chainMessage(child, `access key "${parent}" no longer exists`));
  });

  test("root's status writes other than null (remove, [], {}, another chain, a string, apply with force) keep it", async () => {
    const parent = uniq('leaked');
    const parentValue = await createKey(ts.as.alice, parent);
    const child = uniq('child');
    const childValue = await createKey(ts.client(parentValue), child);
    const chain = [{ name: parent, uid: await uidOf(parent), generation: 0 }];
    const other = [{ name: 'nothing', uid: 'nothing', generation: 0 }];

    const writes: [string, () => Promise<{ status: number }>][] = [
      [
        'JSON patch remove',
        () => ts.as.root.patch(statusPath(child), [{ op: 'remove', path: '/status/issuedWith' }], JSON_PATCH),
      ],
      [
        'JSON patch replace []',
        () =>
          ts.as.root.patch(statusPath(child), [{ op: 'replace', path: '/status/issuedWith', value: [] }], JSON_PATCH),
      ],
      [
        'JSON patch replace /status {}',
        () => ts.as.root.patch(statusPath(child), [{ op: 'replace', path: '/status', value: {} }], JSON_PATCH),
      ],
      [
        'merge patch another chain',
        () => ts.as.root.patch(statusPath(child), { status: { issuedWith: other } }, MERGE_PATCH),
      ],
      [
        'apply of the status with force',
        () =>
          ts.as.root.patch(
            `${statusPath(child)}?fieldManager=attacker&force=true`,
            keyObject(child, {}, { status: { issuedWith: [] } }),
            APPLY_PATCH,
          ),
      ],
      [
        'apply of the status with force, no issuedWith',
        () =>
          ts.as.root.patch(
            `${statusPath(child)}?fieldManager=attacker&force=true`,
            keyObject(child, {}, { status: { rotations: 0 } }),
            APPLY_PATCH,
          ),
      ],
      [
        'merge patch another chain whose entries carry a field pruning drops',
        () =>
          ts.as.root.patch(
            statusPath(child),
            { status: { issuedWith: [{ ...other[0], extra: 'pruned' }] } },
            MERGE_PATCH,
          ),
      ],
      [
        'an entry of null (422)',
        () => ts.as.root.patch(statusPath(child), { status: { issuedWith: [null] } }, MERGE_PATCH),
      ],
      [
        'an entry whose name is null (422)',
        () =>
          ts.as.root.patch(statusPath(child), { status: { issuedWith: [{ ...other[0], name: null }] } }, MERGE_PATCH),
      ],
      [
        'a string (422)',
        () =>
          ts.as.root.patch(
            statusPath(child),
            [{ op: 'replace', path: '/status/issuedWith', value: 'none' }],
            JSON_PATCH,
          ),
      ],
    ];
    for (const [what, write] of writes) {
      const res = await write();
      expect({ what, ok: res.status < 500 }).toEqual({ what, ok: true });
      expect({ what, issuedWith: (await stored(child)).status?.issuedWith }).toEqual({ what, issuedWith: chain });
    }
    await disableKey(parent);
    expect(await refusalOf(childValue)).toBe(chainMessage(child, `access key "${parent}" is disabled`));
  });

  test('a create with a key records the chain whatever the body says: POST with a status, dry run, apply, kubectl apply', async () => {
    const parent = uniq('leaked');
    const parentValue = await createKey(ts.as.alice, parent);
    const chain = [{ name: parent, uid: await uidOf(parent), generation: 0 }];
    const as = ts.client(parentValue);

    const posted = uniq('posted');
    const res = await as.post(KEYS, keyObject(posted, { user: 'alice' }, { status: { issuedWith: [] } }));
    expect(res.status).toBe(201);
    expect((await stored(posted)).status.issuedWith).toEqual(chain);
    // A dry run stores nothing, and answers the chain it would record.
    const dry = uniq('dry');
    const dryRes = await as.post(`${KEYS}?dryRun=All`, keyObject(dry, { user: 'alice' }));
    expect(dryRes.body.status.issuedWith).toEqual(chain);
    expect(await stored(dry)).toBeNull();

    // A create by apply (server-side, or kubectl's, which reads first) needs patch or get on a name no key holds:
    // alice may not (403); a system:masters key may, and what it makes is recorded as made with it.
    const applied = uniq('applied');
    const apply = (client: HttpClient) =>
      client.patch(
        `${keyPath(applied)}?fieldManager=attacker&force=true`,
        keyObject(applied, { user: 'alice' }, { status: { issuedWith: null } }),
        APPLY_PATCH,
      );
    expect((await apply(as)).status).toBe(403);
    const master = uniq('admin-ci');
    const masterValue = await masterKey(master);
    const masterChain = [{ name: master, uid: await uidOf(master), generation: 0 }];
    const app = await apply(ts.client(masterValue));
    expect({ status: app.status, message: app.body.message }).toEqual({ status: 201, message: undefined });

    const kubectlApplied = uniq('kubectl');
    const kubectlValue = `pak_${kubectlApplied}-value`;
    const manifest = `${ts.config.dataDir}/${kubectlApplied}.yaml`;
    writeFileSync(
      manifest,
      JSON.stringify(keyObject(kubectlApplied, { user: 'alice', key: kubectlValue }, { status: { issuedWith: [] } })),
    );
    const kubeconfig = writeUserlessKubeconfig(`${ts.config.dataDir}/${kubectlApplied}.kubeconfig`, ts.server);
    const out = await kubectl(['--token', masterValue, 'apply', '-f', manifest], { kubeconfig });
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: expect.any(String) });

    for (const name of [applied, kubectlApplied])
      expect({ name, issuedWith: (await stored(name)).status?.issuedWith }).toEqual({ name, issuedWith: masterChain });
    await deleteKey(parent);
    expect(await refusalOf(res.body.spec.key)).toBe(chainMessage(posted, `access key "${parent}" no longer exists`));
    await deleteKey(master);
    expect(await refusalOf(app.body.spec.key)).toBe(chainMessage(applied, `access key "${master}" no longer exists`));
    expect(await refusalOf(kubectlValue)).toBe(chainMessage(kubectlApplied, `access key "${master}" no longer exists`));
  });
});

describe('held: a value the holder chooses does not outlive the leaked key', () => {
  test("a child given the leaked key's own value: refused once the leaked key is rotated (no grace) or deleted", async () => {
    const leaked = uniq('leaked');
    const leakedValue = await createKey(ts.as.alice, leaked);
    // The same value, as a key of its own: the value stands for the oldest key, the leaked one.
    await nextSecondAfter(leaked);
    const copy = uniq('same-value');
    await createKey(ts.client(leakedValue), copy, { key: leakedValue });
    expect(await works(leakedValue)).toBe(200);
    const rotated = await ts.as.alice.post(rotatePath(leaked), keyObject(leaked, { rotationGracePeriod: 0 }));
    expect(rotated.status).toBe(201);
    expect(await refusalOf(leakedValue)).toContain(`access key "${leaked}" was rotated at`);
    // A second rotation forgets the value as the leaked key's previous one: it is the copy's alone now.
    await waitFor(
      'the grace to end',
      async () => Date.now() > Date.parse(rotated.body.status.previousKeyExpirationTimestamp),
    );
    const again = await ts.as.alice.post(rotatePath(leaked), keyObject(leaked, { rotationGracePeriod: 0 }));
    expect(again.status).toBe(201);
    await waitFor('the second rotation to be seen', async () => (await works(again.body.spec.key)) === 200);
    expect(await refusalOf(leakedValue)).toBe(
      chainMessage(copy, `access key "${leaked}" was rotated 2 times since; use the new value`),
    );
    await deleteKey(leaked);
    expect(await refusalOf(leakedValue)).toBe(chainMessage(copy, `access key "${leaked}" no longer exists`));
  });

  test('two children with one chosen value: both fall with the leaked key', async () => {
    const leaked = uniq('leaked');
    const leakedValue = await createKey(ts.as.alice, leaked);
    const value = `pak_chosen-${uniq('v')}`;
    const first = uniq('first');
    await createKey(ts.client(leakedValue), first, { key: value });
    await nextSecondAfter(first);
    // The second made with the first (so with its value): two keys, one value, one chain.
    await createKey(ts.client(value), uniq('second'), { key: value });
    expect(await works(value)).toBe(200);
    await deleteKey(leaked);
    expect(await refusalOf(value)).toContain(`access key "${leaked}" no longer exists`);
  });
});

describe('held: rotations', () => {
  test("the leaked key rotates itself and its children only; each new value falls with the leaked key's deletion", async () => {
    const leaked = uniq('leaked');
    const leakedValue = await createKey(ts.as.alice, leaked);
    const child = uniq('child');
    await createKey(ts.client(leakedValue), child);
    const grandchild = uniq('grandchild');
    const childValue0 = await createKey(ts.client(leakedValue), uniq('sibling'));
    await createKey(ts.client(childValue0), grandchild);
    const own = uniq('laptop');
    await createKey(ts.as.alice, own);
    const team = uniq('team');
    await createKey(ts.as.alice, team, { user: undefined, team: 'web' });

    const rotate = (value: string, name: string) =>
      ts.client(value).post(rotatePath(name), keyObject(name, { rotationGracePeriod: 86_400 }));
    expect((await rotate(leakedValue, own)).status).toBe(403);
    expect((await rotate(leakedValue, team)).status).toBe(403);
    const newChild = await rotate(leakedValue, child);
    expect(newChild.status).toBe(201);
    const newGrandchild = await rotate(leakedValue, grandchild);
    expect(newGrandchild.status).toBe(201);
    // The leaked key rotated by its holder with the longest grace: the owner cannot rotate it during the grace,
    // but disabling or deleting it stops every value.
    const newLeaked = await rotate(leakedValue, leaked);
    expect(newLeaked.status).toBe(201);
    expect((await ts.as.alice.post(rotatePath(leaked), keyObject(leaked))).status).toBe(409);
    for (const v of [newChild, newGrandchild, newLeaked])
      await waitFor('the new value to work', async () => (await works(v.body.spec.key)) === 200);
    expect((await stored(grandchild)).status.issuedWith.map((v: { name: string }) => v.name)).toEqual([
      expect.any(String),
      leaked,
    ]);

    await deleteKey(leaked);
    for (const v of [newChild, newGrandchild, newLeaked]) expect(await refusalOf(v.body.spec.key)).toBeTruthy();
    expect(await refusalOf(leakedValue)).toBeTruthy();
  });

  test('a system:masters key mints keys that fall with it, and may not rotate a key it did not make', async () => {
    const master = uniq('admin-ci');
    const masterValue = await masterKey(master);
    const independent = uniq('independent');
    await createKey(ts.as.root, independent, { user: 'ops' });
    expect(
      (await ts.client(masterValue).post(rotatePath(independent), keyObject(independent, { rotationGracePeriod: 0 })))
        .status,
    ).toBe(403);
    const minted = uniq('minted');
    const mintedValue = await createKey(ts.client(masterValue), minted, { user: 'bob', groups: ['system:masters'] });
    const teamKey = uniq('minted-team');
    const teamValue = await createKey(ts.client(masterValue), teamKey, { user: undefined, team: 'web' });
    // What system:masters may do to a key (enable it, lengthen its ttl, change its owner) keeps the chain.
    expect(
      (
        await ts
          .client(masterValue)
          .patch(keyPath(minted), { spec: { user: 'carol', ttl: null, disabled: false } }, MERGE_PATCH)
      ).status,
    ).toBe(200);
    const rotated = await ts
      .client(masterValue)
      .post(rotatePath(master), keyObject(master, { rotationGracePeriod: 0 }));
    expect(rotated.status).toBe(201);
    for (const v of [mintedValue, teamValue])
      expect(await refusalOf(v)).toContain(`access key "${master}" was rotated at`);
  });

  // A key does not carry its user's team groups (only spec.groups and platform:user:<user>), so alice's key may not
  // make a team key at all; a team key may, and what it makes falls with it, also once a member's login rotated it.
  test("a team key made with a team key falls with it, also once a team member's login rotated it", async () => {
    const refused = await ts
      .client(await createKey(ts.as.alice, uniq('alice-ci')))
      .post(KEYS, keyObject(uniq('web'), { team: 'web' }));
    expect(refused.status).toBe(403);

    const leaked = uniq('web-leaked');
    const leakedValue = await createKey(ts.as.alice, leaked, { user: undefined, team: 'web' });
    const team = uniq('web-ci');
    await createKey(ts.client(leakedValue), team, { user: undefined, team: 'web' });
    const rotated = await ts.as.alice.post(rotatePath(team), keyObject(team, { rotationGracePeriod: 0 }));
    expect(rotated.status).toBe(201);
    expect(rotated.body.status.issuedWith).toEqual([{ name: leaked, uid: await uidOf(leaked), generation: 0 }]);
    await waitFor('the new value to work', async () => (await works(rotated.body.spec.key)) === 200);
    await disableKey(leaked);
    expect(await refusalOf(rotated.body.spec.key)).toBe(chainMessage(team, `access key "${leaked}" is disabled`));
  });
});

describe('held: chains, races, restarts', () => {
  test('in a chain of five, deleting the middle key refuses the keys after it and only those', async () => {
    const names = Array.from({ length: 5 }, (_, i) => uniq(`link${i}`));
    const values = [await createKey(ts.as.alice, names[0])];
    for (let i = 1; i < names.length; i++) values.push(await createKey(ts.client(values[i - 1]), names[i]));
    await deleteKey(names[2]);
    for (const i of [3, 4])
      expect(await refusalOf(values[i])).toBe(chainMessage(names[i], `access key "${names[2]}" no longer exists`));
    for (const i of [0, 1]) expect(await works(values[i])).toBe(200);
    // The middle created again under its name is another key: the rest stay refused.
    await createKey(ts.as.alice, names[2]);
    for (const i of [3, 4]) expect(await works(values[i])).toBe(401);
  });

  test('children created while the leaked key is being disabled, deleted or rotated are recorded and refused', async () => {
    for (const revoke of ['disable', 'delete', 'rotate'] as const) {
      const leaked = uniq(`leaked-${revoke}`);
      const leakedValue = await createKey(ts.as.alice, leaked);
      const creates = Array.from({ length: 12 }, (_, i) =>
        ts.client(leakedValue).post(KEYS, keyObject(uniq(`race-${i}`), { user: 'alice' })),
      );
      const revoked =
        revoke === 'disable'
          ? ts.as.root.patch(keyPath(leaked), { spec: { disabled: true } }, MERGE_PATCH)
          : revoke === 'delete'
            ? ts.as.root.delete(keyPath(leaked))
            : ts.as.alice.post(rotatePath(leaked), keyObject(leaked, { rotationGracePeriod: 0 }));
      const [results, revocation] = await Promise.all([Promise.all(creates), revoked]);
      expect(revocation.status).toBeLessThan(300);
      const made = results.filter((r) => r.status === 201);
      for (const r of results) expect([201, 401]).toContain(r.status);
      for (const r of made) {
        expect((await stored(r.body.metadata.name)).status.issuedWith[0].name).toBe(leaked);
        expect(await refusalOf(r.body.spec.key)).toContain(`access key "${leaked}"`);
      }
    }
  });

  test('a restarted server enforces the chain from etcd: the child works, and is refused once the parent is disabled', async () => {
    const users = { root: ['system:masters'], alice: [] as string[] };
    let first: (TestServer & { as: Record<'root' | 'alice', HttpClient> }) | undefined;
    let second: typeof first;
    try {
      first = await startTestServerWithUsers(users, {}, ts.etcd);
      const prefix = first.config.etcdPrefix;
      const parent = uniq('leaked');
      const parentValue = await createKey(first.as.alice, parent);
      const childValue = await createKey(first.client(parentValue), uniq('child'));
      const grandValue = await createKey(first.client(childValue), uniq('grandchild'));
      await first.stop();
      first = undefined;
      second = await startTestServerWithUsers(users, { etcdPrefix: prefix }, ts.etcd);
      expect(await works(grandValue, second)).toBe(200);
      expect((await second.as.root.patch(keyPath(parent), { spec: { disabled: true } }, MERGE_PATCH)).status).toBe(200);
      expect(await refusalOf(grandValue, second)).toContain(`access key "${parent}" is disabled`);
      expect(await refusalOf(childValue, second)).toContain(`access key "${parent}" is disabled`);
      expect((await stored(parent, prefix)).spec.disabled).toBe(true);
    } finally {
      await first?.stop();
      await second?.stop();
    }
  }, 120_000);
});

describe('held: direct tokens', () => {
  test("a child's token asked during the parent's rotation grace ends with the grace and is refused after it", async () => {
    const parent = uniq('leaked');
    const parentValue = await createKey(ts.as.alice, parent);
    const childValue = await createKey(ts.client(parentValue), uniq('child'));
    const before = await tokenOf(childValue, { ttl: 3600 });
    const rotated = await ts.as.alice.post(rotatePath(parent), keyObject(parent, { rotationGracePeriod: 5 }));
    expect(rotated.status).toBe(201);
    await waitFor('the rotation to be seen', async () => (await works(rotated.body.spec.key)) === 200);
    const during = await tokenOf(childValue, { ttl: 3600 });
    const until = Date.parse(rotated.body.status.previousKeyExpirationTimestamp) / 1000;
    expect(decodeJwt(during).exp).toBeLessThanOrEqual(Math.ceil(until));
    expect((await review(during)).authenticated).toBe(true);
    await refusalOf(childValue);
    for (const token of [before, during]) expect((await review(token)).authenticated).toBe(false);
  });

  test("a token asked with a grandchild is refused once the chain's first key is deleted", async () => {
    const parent = uniq('leaked');
    const parentValue = await createKey(ts.as.alice, parent);
    const childValue = await createKey(ts.client(parentValue), uniq('child'));
    const grandValue = await createKey(ts.client(childValue), uniq('grandchild'));
    const token = await tokenOf(grandValue, { ttl: 3600 });
    expect((await review(token)).authenticated).toBe(true);
    await deleteKey(parent);
    await refusalOf(grandValue);
    expect(await review(token)).toMatchObject({
      authenticated: false,
      error: expect.stringContaining(`access key "${parent}" no longer exists`),
    });
  });
});
