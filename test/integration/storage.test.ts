/**
 * Storage's own operations against a real etcd: dry runs that write nothing, preconditions, a raw value's guaranteed
 * update, the revision that created a key, and claims (written and deleted with their object, taken over when their holder is
 * gone).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { identityTransformer } from '../../src/storage/encryption/transformer.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import {
  ClaimTakenError,
  PreconditionFailedError,
  StorageError,
  type StoredObject,
} from '../../src/storage/interface.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';

let etcd: TestEtcd;
let storage: EtcdStorage;
/** The test's own view of etcd, to see what was really written. */
let raw: Etcd3;

beforeAll(async () => {
  etcd = await startTestEtcd();
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
  raw = new Etcd3({ hosts: etcd.endpoint });
});
afterAll(async () => {
  raw?.close();
  await storage?.close();
  await etcd?.stop();
});

const key = () => `/test-${randomUUID()}/group/things/a`;
const thing = (spec: string): StoredObject => ({ metadata: { name: 'a' } as StoredObject['metadata'], spec });

test('a dry-run create answers without a resourceVersion and writes nothing; a taken key is still KeyExists', async () => {
  const k = key();
  const answer = await storage.create(k, thing('x'), { dryRun: true });
  expect(answer).toEqual({ metadata: { name: 'a' }, spec: 'x' });
  expect(await raw.get(k).string()).toBeNull();
  await storage.create(k, thing('x'));
  const err = await storage.create(k, thing('y'), { dryRun: true }).catch((e: unknown) => e);
  expect((err as StorageError).code).toBe('KeyExists');
});

test('a dry-run update answers with what tryUpdate made and writes nothing, nor deletes', async () => {
  const k = key();
  const created = await storage.create(k, thing('x'));
  const before = await raw.get(k).exec();
  const updated = await storage.guaranteedUpdate<StoredObject>(k, (o) => ({ ...o, spec: 'y' }), { dryRun: true });
  expect(updated).toMatchObject({
    object: { spec: 'y', metadata: { resourceVersion: created.metadata.resourceVersion } },
    written: false,
    deleted: false,
  });
  const deleting = await storage.guaranteedUpdate<StoredObject>(k, (o) => o, {
    dryRun: true,
    deleteInstead: () => true,
  });
  expect(deleting).toMatchObject({ written: false, deleted: true });
  const after = await raw.get(k).exec();
  expect(after.kvs[0].mod_revision).toBe(before.kvs[0].mod_revision);
  expect(JSON.parse(after.kvs[0].value.toString()).spec).toBe('x');
});

test('an update started from a cached object that is behind etcd still applies to what etcd holds', async () => {
  const k = key();
  const stale = await storage.create(k, thing('x'));
  const current = (await storage.guaranteedUpdate<StoredObject>(k, (o) => ({ ...o, spec: 'y' }))).object;

  // A change to the stale copy loses the compare-and-swap and runs again on etcd's object.
  const seen: unknown[] = [];
  const changed = await storage.guaranteedUpdate<StoredObject>(
    k,
    (o) => {
      seen.push(o.spec);
      return { ...o, spec: `${String(o.spec)}+` };
    },
    { cached: stale },
  );
  expect(seen).toEqual(['x', 'y']);
  expect(changed.object.spec).toBe('y+');
  expect(JSON.parse((await raw.get(k).string())!).spec).toBe('y+');

  // A refusal on the stale copy (e.g. a resourceVersion the cache has not seen yet) is asked again of etcd.
  const latest = changed.object.metadata.resourceVersion;
  const checked = await storage.guaranteedUpdate<StoredObject>(
    k,
    (o) => {
      if (o.metadata.resourceVersion !== latest) throw new Error('conflict');
      return { ...o, spec: 'z' };
    },
    { cached: current },
  );
  expect(checked).toMatchObject({ written: true, object: { spec: 'z' } });

  // Nothing to write on the stale copy is no answer until etcd's object says so too.
  const same = await storage.guaranteedUpdate<StoredObject>(k, (o) => ({ ...o, spec: 'x' }), { cached: stale });
  expect(same).toMatchObject({ written: true, object: { spec: 'x' } });
  expect(JSON.parse((await raw.get(k).string())!).spec).toBe('x');

  // The cached object is never changed, and a dry run reads etcd.
  expect(stale.spec).toBe('x');
  const dry = await storage.guaranteedUpdate<StoredObject>(k, (o) => o, { cached: current, dryRun: true });
  expect(dry.object.metadata.resourceVersion).toBe(same.object.metadata.resourceVersion);
});

test('preconditions: checked before tryUpdate, on a stale cached object asked again of etcd; failing, which one', async () => {
  const k = key();
  const uid = randomUUID();
  const stale = await storage.create(k, { ...thing('x'), metadata: { name: 'a', uid } as StoredObject['metadata'] });
  const current = (await storage.guaranteedUpdate<StoredObject>(k, (o) => ({ ...o, spec: 'y' }))).object;
  const rv = current.metadata.resourceVersion!;
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as PreconditionFailedError,
    );

  // The stale copy has an older resourceVersion: etcd's object holds the precondition.
  let tried = 0;
  const updated = await storage.guaranteedUpdate<StoredObject>(k, (o) => (tried++, { ...o, spec: 'z' }), {
    cached: stale,
    preconditions: { uid, resourceVersion: rv },
  });
  expect(updated).toMatchObject({ written: true, object: { spec: 'z' } });
  expect(tried).toBe(1);

  // Failing on etcd's object too: tryUpdate never runs, and the error says which precondition and what is stored.
  const wrongUid = await failure(
    storage.guaranteedUpdate<StoredObject>(k, (o) => (tried++, o), { preconditions: { uid: 'other' } }),
  );
  expect(wrongUid).toBeInstanceOf(PreconditionFailedError);
  expect(wrongUid).toMatchObject({ code: 'InvalidObj', precondition: 'uid', expected: 'other', actual: uid });
  expect(wrongUid!.message).toBe(`Precondition failed: UID in precondition: other, UID in object meta: ${uid}`);
  expect(tried).toBe(1);
  const latest = updated.object.metadata.resourceVersion!;
  const wrongRv = await failure(storage.delete(k, { preconditions: { uid, resourceVersion: rv } }));
  expect(wrongRv).toMatchObject({ precondition: 'resourceVersion', expected: rv, actual: latest });
  expect(wrongRv!.message).toBe(
    `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in object meta: ${latest}`,
  );
  expect(JSON.parse((await raw.get(k).string())!).spec).toBe('z');

  // Holding, the delete goes through.
  await storage.delete(k, { preconditions: { uid, resourceVersion: latest } });
  expect(await raw.get(k).string()).toBeNull();
});

test('a raw value is created when absent, updated by compare-and-swap, and left alone when unchanged', async () => {
  const k = key();
  expect(await storage.getValue(k, identityTransformer)).toBeUndefined();
  const seen: (string | undefined)[] = [];
  const first = await storage.guaranteedUpdateValue(k, identityTransformer, (current) => {
    seen.push(current?.value);
    return 'one';
  });
  expect(first).toMatchObject({ value: 'one', written: true });
  expect(seen).toEqual([undefined]);
  // Racing updates each run again on the winner's value: none is lost.
  await Promise.all(
    Array.from({ length: 8 }, () =>
      storage.guaranteedUpdateValue(k, identityTransformer, (current) => `${current!.value}+`),
    ),
  );
  expect(await raw.get(k).string()).toBe(`one${'+'.repeat(8)}`);
  const same = await storage.guaranteedUpdateValue(k, identityTransformer, (current) => current!.value);
  expect(same.written).toBe(false);
  expect((await storage.getValue(k, identityTransformer))?.revision).toBe(same.revision);
});

test('the revision that created what is at a key stays through updates; created again, it is later; absent, none', async () => {
  const k = key();
  expect(await storage.createRevision(k)).toBeUndefined();
  const created = await storage.create(k, thing('x'));
  expect(await storage.createRevision(k)).toBe(created.metadata.resourceVersion);
  await storage.guaranteedUpdate<StoredObject>(k, (current) => ({ ...current, spec: 'y' }));
  expect(await storage.createRevision(k)).toBe(created.metadata.resourceVersion);
  const deleted = await storage.delete(k);
  expect(await storage.createRevision(k)).toBeUndefined();
  const again = await storage.create(k, thing('z'));
  expect(Number(await storage.createRevision(k))).toBeGreaterThan(Number(deleted.metadata.resourceVersion));
  expect(await storage.createRevision(k)).toBe(again.metadata.resourceVersion);
});

describe('claims', () => {
  const withUid = (uid: string): StoredObject => ({ metadata: { name: 'a', uid } as StoredObject['metadata'] });
  const claimKey = () => `/test-${randomUUID()}/claims/group/things/one`;
  const holderOf = async (claim: string) => {
    const value = await raw.get(claim).string();
    return value === null ? undefined : JSON.parse(value);
  };

  test('written with the object, naming its key and uid; a second object claiming it is ClaimTakenError naming the first, and not written', async () => {
    const claim = claimKey();
    const [first, second] = [key(), key()];
    await storage.create(first, withUid('u1'), { claims: [claim] });
    expect(await holderOf(claim)).toEqual({ key: first, uid: 'u1' });
    for (const dryRun of [true, false]) {
      const err = await storage.create(second, withUid('u2'), { claims: [claim], dryRun }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ClaimTakenError);
      expect(err).toMatchObject({ code: 'ClaimTaken', key: claim, holder: { key: first, uid: 'u1' } });
    }
    expect(await raw.get(second).string()).toBeNull();
    expect(await holderOf(claim)).toEqual({ key: first, uid: 'u1' });
  });

  test('a taken key is KeyExists before any claim, and writes no claim', async () => {
    const k = key();
    await storage.create(k, withUid('u1'));
    const claim = claimKey();
    const err = await storage.create(k, withUid('u2'), { claims: [claim] }).catch((e: unknown) => e);
    expect((err as StorageError).code).toBe('KeyExists');
    expect(await raw.get(claim).string()).toBeNull();
  });

  test('deleted with its holder, by delete and by an update that deletes instead; never one another object holds', async () => {
    const claim = claimKey();
    const k = key();
    await storage.create(k, withUid('u1'), { claims: [claim] });
    await storage.delete(k, { claims: () => [claim] });
    expect(await raw.get(claim).string()).toBeNull();

    await storage.create(k, withUid('u2'), { claims: [claim] });
    const res = await storage.guaranteedUpdate<StoredObject>(k, (o) => o, {
      deleteInstead: () => true,
      claims: () => [claim],
    });
    expect(res.deleted).toBe(true);
    expect(await raw.get(claim).string()).toBeNull();

    // An object that does not hold the claim (one stored without it) leaves it to its holder.
    const holder = key();
    const other = key();
    await storage.create(holder, withUid('u3'), { claims: [claim] });
    await storage.create(other, withUid('u4'));
    await storage.delete(other, { claims: () => [claim] });
    expect(await holderOf(claim)).toEqual({ key: holder, uid: 'u3' });
  });

  test('a claim whose holder is gone, or of another uid, or that names nothing, is taken over', async () => {
    const gone = key();
    const replaced = key();
    await storage.create(replaced, withUid('new'));
    for (const value of [
      JSON.stringify({ key: gone, uid: 'u1' }),
      JSON.stringify({ key: replaced, uid: 'old' }),
      'not a claim',
    ]) {
      const claim = claimKey();
      await raw.put(claim).value(value);
      const k = key();
      await storage.create(k, withUid('mine'), { claims: [claim], dryRun: true });
      expect(await raw.get(claim).string()).toBe(value);
      await storage.create(k, withUid('mine'), { claims: [claim] });
      expect(await holderOf(claim)).toEqual({ key: k, uid: 'mine' });
    }
  });
});
