/**
 * Attacks on access key rotation (issue 43) as a tenant would make them: alice and bob (plain users with static
 * tokens), carol (a member of team web, as bob is) and root (system:masters). Each test says the attack and what
 * should happen (each once a finding, fixed since, or an attack that held).
 * One server for the file, real etcd, an audit log at level RequestResponse and every log line captured.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { API_VERSION, APPLY_PATCH, GROUP, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, warningsOf as warnings } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { answerWhen, waitFor } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const keyPath = (name: string) => `${KEYS}/${name}`;
const rotatePath = (name: string) => `${KEYS}/${name}/rotate`;

type Users = 'root' | 'alice' | 'bob' | 'carol';
let ts: TestServer & { as: Record<Users, HttpClient> };
let admin: HttpClient;
let etcd: Etcd3;
const dir = mkdtempSync(join(tmpdir(), 'rotation-attack-'));
const auditLog = join(dir, 'audit.log');
const logLines: string[] = [];

const rotateBody = (name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
  ...extra,
});
const keyObject = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function createKey(client: HttpClient, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post(KEYS, keyObject(name, spec));
  expect(res.status).toBe(201);
  return res.body.spec.key as string;
}

const etcdKey = (name: string) => `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`;
/** The key as etcd holds it. */
async function stored(name: string): Promise<any> {
  return JSON.parse((await etcd.get(etcdKey(name)).string())!);
}
/** Waits until this server's index has the key as etcd holds it now. */
async function settled(name: string): Promise<void> {
  const { kvs } = await etcd.get(etcdKey(name)).exec();
  const revision = Number(kvs[0].mod_revision);
  await waitFor('the key to be read at its last write', async () => {
    const res = await admin.get(keyPath(name));
    return Number(res.body.metadata.resourceVersion) >= revision;
  });
}
/** A GET of a key made with `value`: 200 when the value works and may read it. */
const use = (value: string, name: string) => ts.client(value).get(keyPath(name));
/** Waits until the next whole second: keys created in the same second tie (auth/accesskeys.ts lookup). */
const nextSecond = () => sleep(1100 - (Date.now() % 1000));

beforeAll(async () => {
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: RequestResponse\n');
  ts = await startTestServerWithUsers(
    { root: ['system:masters'], alice: [], bob: ['platform:team:web'], carol: ['platform:team:web'] },
    { verbosity: 10, auditLogPath: auditLog, auditPolicyFile: policy },
    undefined,
    createLogger((line) => logLines.push(line), { verbosity: 10 }),
  );
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  admin = ts.as.root;
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('findings', () => {
  // Attack: root issues team web's deploy pipeline a key with groups only a master may give (here system:masters).
  // carol, any member of team web, may update a team key (weaker only), so she may rotate it: the rotation is the
  // server's own write, which skips the weaken-only rules, and it answers her a fresh value of the key with all its
  // groups. She could never create such a key (403 "only members of system:masters may set spec.groups") nor
  // change its groups, yet now holds a cluster-admin credential, and the pipeline's value dies after the grace.
  // Should: 403, as an update that widened what she holds would be (a rotation answers a credential, so outside
  // system:masters only someone who could have created the key as it is may rotate it); the key unchanged.
  test('a team member cannot rotate a team key an admin issued with groups, and so cannot mint a credential with them', async () => {
    const name = uniq('teamadmin');
    await createKey(admin, name, { team: 'web', groups: ['system:masters'] });
    // What carol may not do directly:
    expect(
      (await ts.as.carol.post(KEYS, keyObject(uniq('own'), { team: 'web', groups: ['system:masters'] }))).status,
    ).toBe(403);
    expect((await ts.as.carol.patch(keyPath(name), { spec: { groups: [] } }, MERGE_PATCH)).status).toBe(403);
    const before = await stored(name);

    const res = await ts.as.carol.post(rotatePath(name), rotateBody(name));
    if (res.status === 201) {
      // Today: the new value acts as system:masters (it may create a key with groups for carol).
      await settled(name);
      const minted = await ts
        .client(res.body.spec.key)
        .post(KEYS, keyObject(uniq('bycarol'), { user: 'carol', groups: ['system:masters'] }));
      expect(minted.status).toBe(403);
    }
    expect(res.status).toBe(403);
    expect(await stored(name)).toEqual(before);
  });

  // Attack: alice's key value V leaks to bob, so alice rotates with a grace for her pipeline. bob creates a key of
  // his own with spec.key = V (client-chosen values are allowed, a copy is not refused). The authenticator looks for
  // a key whose *current* value V is before any whose *previous* value it is, so bob's newer copy now takes V over:
  // alice's pipeline, still sending V in its grace, acts as bob (its writes become bob's, bob's grants apply).
  // Should: V keeps standing for alice's key until the grace ends (the oldest key with a value wins, current or
  // previous, as auth/accesskeys.ts promises for copies: "a later copy can never take over the identity of the first").
  test("a later key with a rotated key's previous value does not take it over in its grace", async () => {
    const name = uniq('leaked');
    const v = await createKey(ts.as.alice, name);
    await nextSecond();
    expect((await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 600 }))).status).toBe(201);
    await settled(name);
    const copy = uniq('bobcopy');
    expect((await ts.as.bob.post(KEYS, keyObject(copy, { key: v }))).status).toBe(201);
    await settled(copy);
    const res = await use(v, name);
    expect(res.status).toBe(200);
    expect(warnings(res).some((w) => w.includes(`access key "${name}" was rotated`))).toBe(true);
  });

  // Attack: the holder of the value a rotation replaced (a leaked copy, or a pipeline that would rather not switch)
  // uses it in its grace to create a key of its own whose spec.key is that same value. After the grace the value
  // still works, forever, now as the copy, with no Warning that it was rotated away.
  // Should: after the grace the replaced value is 401 "was rotated ... use the new value", as the issue says;
  // a copy made later cannot keep it alive (same rule as above: the oldest key with the value decides).
  test('the replaced value does not outlive the grace through a copy of it made in the grace', async () => {
    const name = uniq('outlive');
    const old = await createKey(ts.as.alice, name);
    await nextSecond();
    const rotated = await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 2 }));
    expect(rotated.status).toBe(201);
    await settled(name);
    const copy = uniq('copy');
    expect((await ts.client(old).post(KEYS, keyObject(copy, { key: old }))).status).toBe(201);
    await settled(copy);
    // Refused once the grace ends (a copy made in it does not keep it alive), with the rotation named.
    const res = await answerWhen(
      'the replaced value to be refused after the grace',
      () => ts.client(old).get(keyPath(copy)),
      (r) => r.status !== 200,
      15_000,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(rotated.body.status.previousKeyExpirationTimestamp));
    expect(res.status).toBe(401);
    expect(res.body.message).toContain(`access key "${name}" was rotated at`);
  });

  // Attack: a rotate body that carries a key value (a user who thinks a rotation takes the value to use, or pastes
  // the old one). The rotation refuses it (422), but the audit event records the request body as sent, spec.key
  // included, in clear. A create's audited body has its spec.key removed; the rotate's does not.
  // Should: the audit event (and anything else) never holds spec.key of a rotate body.
  test('a key in a rotate body is not written to the audit log', async () => {
    const name = uniq('auditkey');
    await createKey(ts.as.alice, name);
    const secret = `pak_${'S3cr3tValueFromARotateBody'.repeat(2)}`;
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name, { key: secret }));
    expect(res.status).toBe(422);
    expect(res.text).not.toContain(secret);
    let audit = '';
    await waitFor('the audit event of the refused rotation', () => {
      audit = readFileSync(auditLog, 'utf8');
      return audit
        .split('\n')
        .some((line) => line.includes('"stage":"ResponseComplete"') && line.includes(`ownedaccesskeys/${name}/rotate`));
    });
    // Today: the ResponseComplete event's requestObject is {"spec":{"key":"pak_..."}, ...}.
    const leaking = audit
      .split('\n')
      .filter((line) => line.includes(secret))
      .map((line) => (JSON.parse(line) as { requestObject?: unknown }).requestObject);
    expect(leaking).toEqual([]);
    expect(logLines.filter((line) => line.includes(secret))).toEqual([]);
  });

  // Attack: alice puts a finalizer of her own on her key (metadata is hers to change); root deletes the key to
  // revoke it. The key is only marked as being deleted, keeps authenticating, and alice rotates it: a brand-new
  // value of a key an admin deleted, working for as long as her finalizer stays.
  // Should: a key being deleted is not rotated (409, as a disabled key: its new value is not to work either).
  test('a key being deleted is not rotated', async () => {
    const name = uniq('deleting');
    await createKey(ts.as.alice, name);
    expect(
      (await ts.as.alice.patch(keyPath(name), { metadata: { finalizers: ['alice.example/keep'] } }, MERGE_PATCH))
        .status,
    ).toBe(200);
    expect((await admin.delete(keyPath(name))).status).toBe(200);
    await settled(name);
    // With her own token: the key itself no longer authenticates once it is being deleted.
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    try {
      expect(res.status).toBe(409);
      expect(res.body.message).toContain('the key is being deleted');
    } finally {
      await admin.patch(keyPath(name), { metadata: { finalizers: null } }, MERGE_PATCH);
    }
  });

  // Attack (the same revocation, without rotating): a key an admin deleted keeps authenticating while a finalizer
  // its holder set holds it. Not new with rotation, but it is how a value outlives its revocation.
  // Should: 401 once the key has a deletionTimestamp (the authenticator refuses a key being deleted).
  test('a key an admin deleted stops working although its holder set a finalizer', async () => {
    const name = uniq('revoked');
    const value = await createKey(ts.as.alice, name);
    expect(
      (await ts.as.alice.patch(keyPath(name), { metadata: { finalizers: ['alice.example/keep'] } }, MERGE_PATCH))
        .status,
    ).toBe(200);
    expect((await admin.delete(keyPath(name))).status).toBe(200);
    await settled(name);
    const res = await use(value, name);
    try {
      expect(res.status).toBe(401);
      expect(res.body.message).toBe(`access key "${name}" is being deleted`);
    } finally {
      await admin.patch(keyPath(name), { metadata: { finalizers: null } }, MERGE_PATCH);
    }
  });

  // Attack (system:masters, or a script of theirs): a status write with status.rotations = -1. The rotation fields
  // are "the server's alone: no status write moves them, system:masters' neither", but a count of the wrong sign is
  // "of the wrong type" to keepServerStatus, left for validation, which the schema (integer, no minimum) passes.
  // The key then cannot be rotated any more, with a misleading 422 "spec.key ... field is immutable".
  // Should: 422 for the status write (rotations has a minimum of 0), and the stored count unchanged.
  test('a status write cannot set status.rotations to a negative count', async () => {
    const name = uniq('negative');
    await createKey(ts.as.alice, name);
    expect((await ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 0 }))).status).toBe(201);
    const res = await admin.patch(`${keyPath(name)}/status`, { status: { rotations: -1 } }, MERGE_PATCH);
    // Today 200, -1 is stored, and the next rotation is 422 "spec.key: Invalid value: "<redacted>": field is immutable".
    expect(res.status).toBe(422);
    expect((await stored(name)).status.rotations).toBe(1);
  });

  // Attack (robustness): a key whose stored status has a previousKeyExpirationTimestamp that is no RFC 3339 time
  // (a number here; status from an older version, a restore, a hand edit in etcd). checkRotatable reads it with
  // Date.parse, which takes 12345 for the year 12345: the key can never be rotated again ("works until 12345"),
  // and the authenticator would likewise trust such a value for a previous key.
  // Should: a timestamp of the wrong type is no grace (isDateTime, as the strategy checks it): the rotation is made.
  test('a stored grace end of the wrong type does not block rotations for ever', async () => {
    const name = uniq('wrongtype');
    await createKey(admin, name, { user: 'alice' });
    const obj = await stored(name);
    obj.status = { ...(obj.status ?? {}), previousKeyExpirationTimestamp: 12345 };
    await etcd.put(etcdKey(name)).value(JSON.stringify(obj)).exec();
    await settled(name);
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    expect(res.body.message ?? '').not.toContain('works until 12345');
    expect(res.status).toBe(201);
  });
});

describe('attacks that held (regression tests)', () => {
  // Attack: learn whether bob's key exists, is disabled or is in a grace from the errors of a rotation of it, or
  // whether the body is checked before the caller is (a bad grace answering 422 would say the name is a key).
  // Held: every one is the same 403, naming only the name asked; nothing is written.
  test("someone else's key: the same 403 whether it exists, is disabled, is in a grace, or the body is bad", async () => {
    const plain = uniq('bobs');
    await createKey(ts.as.bob, plain);
    const disabled = uniq('bobsoff');
    await createKey(ts.as.bob, disabled, { disabled: true });
    const inGrace = uniq('bobsgrace');
    await createKey(ts.as.bob, inGrace);
    expect((await ts.as.bob.post(rotatePath(inGrace), rotateBody(inGrace, { rotationGracePeriod: 600 }))).status).toBe(
      201,
    );
    const missing = uniq('nosuch');
    const before = await Promise.all([plain, disabled, inGrace].map(stored));
    const answers = await Promise.all([
      ts.as.alice.post(rotatePath(plain), rotateBody(plain)),
      ts.as.alice.post(rotatePath(disabled), rotateBody(disabled)),
      ts.as.alice.post(rotatePath(inGrace), rotateBody(inGrace)),
      ts.as.alice.post(rotatePath(missing), rotateBody(missing)),
      ts.as.alice.post(rotatePath(plain), rotateBody(plain, { rotationGracePeriod: -1 })),
      ts.as.alice.request('POST', rotatePath(missing), {}),
    ]);
    const names = [plain, disabled, inGrace, missing, plain, missing];
    answers.forEach((res, i) => {
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(
        `ownedaccesskeys.management.platform.sh "${names[i]}" is forbidden: User "alice" cannot create resource "ownedaccesskeys/rotate" in API group "management.platform.sh" at the cluster scope`,
      );
    });
    expect(await Promise.all([plain, disabled, inGrace].map(stored))).toEqual(before);
  });

  // Attack: race rotations so that two succeed (the second ending the first's grace, or two values both new).
  // Held: one 201, the others 409; the status counts one rotation.
  test('concurrent rotations: one is made, the others are 409', async () => {
    const name = uniq('race');
    await createKey(ts.as.alice, name);
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() => ts.as.alice.post(rotatePath(name), rotateBody(name, { rotationGracePeriod: 600 }))),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    expect((await stored(name)).status.rotations).toBe(1);
  });

  // Attack: widen or lengthen through the write the server makes: metadata (labels, annotations, finalizers,
  // ownerReferences, managedFields) and a status (rotations, a grace end in 2099) in the rotate body, then the
  // same status through a create and a forced server-side apply of the main resource.
  // Held: none of it is stored; the grace is the one asked (0), and the status is the server's.
  test('metadata and status in the body, a create or a forced apply do not reach the stored key', async () => {
    const name = uniq('widen');
    await createKey(ts.as.alice, name);
    const before = await stored(name);
    const res = await ts.as.alice.post(
      rotatePath(name),
      rotateBody(
        name,
        { rotationGracePeriod: 0 },
        {
          metadata: {
            name,
            labels: { a: 'b' },
            annotations: { x: 'y' },
            finalizers: ['alice.example/keep'],
            ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'default', uid: 'u' }],
            managedFields: [],
          },
          status: { rotations: 0, previousKeyExpirationTimestamp: '2099-01-01T00:00:00Z' },
        },
      ),
    );
    expect(res.status).toBe(201);
    const after = await stored(name);
    for (const field of ['labels', 'annotations', 'finalizers', 'ownerReferences'])
      expect(after.metadata[field]).toEqual(before.metadata[field]);
    expect(after.status.rotations).toBe(1);
    expect(after.status.previousKeyExpirationTimestamp).toBe(after.status.lastRotationTimestamp);

    const far = {
      rotations: 5,
      previousKey: `sha256:${'2'.repeat(64)}`,
      previousKeyExpirationTimestamp: '2099-01-01T00:00:00Z',
    };
    const created = uniq('withstatus');
    const c = await ts.as.alice.post(KEYS, { ...keyObject(created, {}), status: far });
    expect(c.status).toBe(201);
    expect((await stored(created)).status?.previousKey).toBeUndefined();
    const applied = await ts.as.alice.patch(
      `${keyPath(name)}?fieldManager=attacker&force=true`,
      { apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name }, status: far },
      APPLY_PATCH,
    );
    expect(applied.status).toBe(200);
    expect((await stored(name)).status).toEqual(after.status);
  });

  // Attack: watch one's own key during a rotation, hoping the server's write shows the new value or a hash.
  // Held: no event carries spec.key, status.previousKey or any sha256 hash.
  test('a watch of the key sees neither the new value nor a hash', async () => {
    const name = uniq('watched');
    await createKey(ts.as.alice, name);
    const chunks: string[] = [];
    const req = ts.as.alice.open('GET', `${KEYS}?watch=true&fieldSelector=metadata.name=${name}`);
    req.on('response', (res) => res.on('data', (c) => chunks.push(String(c))));
    req.on('error', () => {});
    req.end();
    await waitFor('the ADDED event', () => chunks.join('').includes('"ADDED"'));
    const res = await ts.as.alice.post(rotatePath(name), rotateBody(name));
    expect(res.status).toBe(201);
    await waitFor('the MODIFIED event', () => chunks.join('').includes('"MODIFIED"'));
    req.destroy();
    const events = chunks.join('');
    expect(events).not.toContain(res.body.spec.key);
    expect(events).not.toMatch(/sha256:|previousKey"/);
    // Nor a list, from the cache or etcd, nor a Table.
    for (const [query, accept] of [
      ['', 'application/json'],
      ['?resourceVersion=0', 'application/json'],
      ['', 'application/json;as=Table;v=v1;g=meta.k8s.io'],
    ]) {
      const list = await ts.as.alice.get(`${KEYS}${query}`, { headers: { Accept: accept } });
      expect(list.status).toBe(200);
      expect(list.text).toContain(name);
      expect(list.text).not.toMatch(/sha256:|previousKey"|pak_/);
    }
  });
});
