/** Signing keys shared through a real etcd: replicas racing for the first key, JWKS across replicas, rotation. */
import { afterAll, afterEach, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { SignJWT, createLocalJWKSet, jwtVerify } from 'jose';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { StorageError } from '../../src/storage/interface.js';
import { SigningKeys, type KeySetDoc, type SigningKeysOptions } from '../../src/tokens/signingkeys.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';

let etcd: TestEtcd;
const clients: Etcd3[] = [];
const storages: EtcdStorage[] = [];

beforeAll(async () => {
  etcd = await startTestEtcd();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of storages.splice(0)) await s.close();
});
afterAll(async () => {
  await etcd?.stop();
});

function client(): Etcd3 {
  const c = new Etcd3({
    hosts: etcd.endpoint,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + 5000 }),
  });
  clients.push(c);
  return c;
}

/** One replica's storage. */
function storage(endpoint = etcd.endpoint, callTimeoutMs = 5000): EtcdStorage {
  const s = new EtcdStorage({ endpoints: [endpoint], callTimeoutMs });
  storages.push(s);
  return s;
}

const HOUR = 3_600_000;
const slow: SigningKeysOptions = { rotationPeriodMs: 24 * HOUR, publishDelayMs: 600_000, maxTokenTtlMs: HOUR };

function keyName(): string {
  return `/test-${randomUUID()}/signingkeys/direct-cluster-endpoint-tokens`;
}

async function stored(key: string): Promise<{ raw: string; doc: KeySetDoc }> {
  const raw = (await client().get(key).string())!;
  return { raw, doc: JSON.parse(raw) as KeySetDoc };
}

test('two replicas racing for the first key end with one key set', async () => {
  const key = keyName();
  const a = new SigningKeys(storage(), key, slow);
  const b = new SigningKeys(storage(), key, slow);
  const signers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).signer()));
  const kids = new Set(signers.map((s) => s.kid));
  expect(kids.size).toBe(1);
  expect(signers.every((s) => s.alg === 'ES256' && s.key.type === 'private')).toBe(true);

  const { raw, doc } = await stored(key);
  expect(doc.keys.map((k) => k.kid)).toEqual([...kids]);
  // Exactly what was stored: one key, one private part, nothing else under the prefix.
  expect(Object.keys(doc)).toEqual(['keys']);
  expect(raw.match(/"d":/g)).toHaveLength(1);
  const prefix = key.slice(0, key.indexOf('/signingkeys/') + 1);
  expect(Object.keys(await client().getAll().prefix(prefix).strings())).toEqual([key]);
});

test("one replica's JWKS lists the key another signs with, and verifies its tokens", async () => {
  const key = keyName();
  const a = new SigningKeys(storage(), key, slow);
  const b = new SigningKeys(storage(), key, slow);
  const s = await a.signer();
  const jwks = await b.jwks();
  expect(jwks.keys.map((k) => k.kid)).toEqual([s.kid]);
  expect(jwks.keys[0]).not.toHaveProperty('d');
  expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });

  const token = await new SignJWT({ sub: 'cluster-a' })
    .setProtectedHeader({ alg: s.alg, kid: s.kid })
    .setExpirationTime('5m')
    .sign(s.key);
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks));
  expect(payload.sub).toBe('cluster-a');
});

test('jwks() on an empty key creates the first key, which signer() then uses', async () => {
  const key = keyName();
  const a = new SigningKeys(storage(), key, slow);
  const b = new SigningKeys(storage(), key, slow);
  const [ja, jb] = await Promise.all([a.jwks(), b.jwks()]);
  expect(ja.keys).toHaveLength(1);
  expect(jb.keys.map((k) => k.kid)).toEqual(ja.keys.map((k) => k.kid));
  expect((await b.signer()).kid).toBe(ja.keys[0].kid);
  expect((await stored(key)).doc.keys).toHaveLength(1);
});

test('rotation across two replicas: a second key, published before it signs, then the first retired', async () => {
  const key = keyName();
  // The replicas' clock, moved by the test: the key pending for 500 ms is looked at within them however busy the
  // machine is.
  let now = Date.now();
  const opts: SigningKeysOptions = {
    rotationPeriodMs: 1500,
    publishDelayMs: 500,
    maxTokenTtlMs: 60_000,
    now: () => new Date(now),
  };
  const a = new SigningKeys(storage(), key, opts);
  // B keeps the default refreshMs (30 s): it learns of A's rotation from etcd, when its own update (due too) reads the key or loses the race.
  const b = new SigningKeys(storage(), key, opts);
  const first = (await a.signer()).kid;
  expect((await b.signer()).kid).toBe(first);
  const oldToken = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: first })
    .setExpirationTime('1m')
    .sign((await a.signer()).key);

  now += 1600;
  // Both replicas find rotation due at once; one pending key comes out of it, and neither signs with it yet.
  const during = await Promise.all([a.signer(), b.signer(), a.signer(), b.signer()]);
  expect(new Set(during.map((s) => s.kid))).toEqual(new Set([first]));
  const pendingDoc = (await stored(key)).doc;
  expect(pendingDoc.keys).toHaveLength(2);
  const second = pendingDoc.keys[1].kid;
  expect(second).not.toBe(first);
  expect(Date.parse(pendingDoc.keys[1].activeAt) - Date.parse(pendingDoc.keys[1].createdAt)).toBe(500);
  expect((await b.jwks()).keys.map((k) => k.kid)).toEqual([first, second]);

  now = Date.parse(pendingDoc.keys[1].activeAt) + 50;
  const after = await Promise.all([a.signer(), b.signer()]);
  expect(after.map((s) => s.kid)).toEqual([second, second]);

  const { raw, doc } = await stored(key);
  expect(doc.keys.map((k) => k.kid)).toEqual([first, second]);
  expect(doc.keys[0].retiredAt).toBe(pendingDoc.keys[1].activeAt);
  expect(doc.keys[1].retiredAt).toBeUndefined();
  expect(raw.match(/"d":/g)).toHaveLength(2);

  // The JWKS of either replica lists both, and a token of the retired key still verifies.
  const jwks = await a.jwks();
  expect(jwks.keys.map((k) => k.kid)).toEqual([first, second]);
  expect((await jwtVerify(oldToken, createLocalJWKSet(jwks))).protectedHeader.kid).toBe(first);
});

test('a retired key is dropped from etcd and the JWKS after its tokens expired', async () => {
  const key = keyName();
  let now = Date.parse('2025-01-01T00:00:00Z');
  const opts: SigningKeysOptions = {
    rotationPeriodMs: 5000,
    publishDelayMs: 100,
    maxTokenTtlMs: 1000,
    clockSkewMs: 0,
    refreshMs: 0,
    now: () => new Date(now),
  };
  const a = new SigningKeys(storage(), key, opts);
  const b = new SigningKeys(storage(), key, opts);
  const first = (await a.signer()).kid;
  now += 5000;
  await b.signer(); // pending key
  now += 100;
  const second = (await a.signer()).kid; // active; first retired at this time
  expect(second).not.toBe(first);
  now += 1000;
  expect((await b.jwks()).keys.map((k) => k.kid)).toEqual([first, second]);
  now += 1;
  // Past retiredAt + maxTokenTtl: left out of the JWKS at once, and out of etcd by the next signer().
  expect((await b.jwks()).keys.map((k) => k.kid)).toEqual([second]);
  expect((await stored(key)).doc.keys).toHaveLength(2);
  expect((await b.signer()).kid).toBe(second);
  expect((await stored(key)).doc.keys.map((k) => k.kid)).toEqual([second]);
});

test('a malformed document fails without quoting it', async () => {
  const key = keyName();
  await client().put(key).value('{"keys":[{"d":"SECRET-MATERIAL"');
  const a = new SigningKeys(storage(), key, slow);
  const err = await a.signer().catch((e: Error) => e);
  expect(err).toBeInstanceOf(Error);
  expect((err as Error).message).toContain('does not hold JSON');
  expect((err as Error).message).not.toContain('SECRET');
  await expect(a.jwks()).rejects.toThrow(/does not hold JSON/);
});

test('etcd errors propagate as storage errors', async () => {
  const a = new SigningKeys(storage('127.0.0.1:1', 300), keyName(), slow);
  for (const call of [() => a.signer(), () => a.jwks()]) {
    const err = await call().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).code).toBe('Unreachable');
  }
});
