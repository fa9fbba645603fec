/** The signing key set's life cycle as pure logic: first key, rotation with a publish delay, retirement, dropping. */
import { describe, expect, test } from '@jest/globals';
import { SignJWT, calculateJwkThumbprint, createLocalJWKSet, importJWK, jwtVerify, type JWK } from 'jose';
import {
  currentSigningKey,
  generateSigningKey,
  keySetChangeDue,
  planKeySet,
  publicJwks,
  type KeySetDoc,
  type KeySetTimings,
} from '../../src/tokens/signingkeys.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const SKEW = 60_000;
const opts: KeySetTimings = { rotationPeriodMs: 24 * HOUR, publishDelayMs: 10 * MIN, maxTokenTtlMs: HOUR };
const t0 = new Date('2025-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

async function plan(doc: KeySetDoc | undefined, now: Date): Promise<KeySetDoc | undefined> {
  const next = await planKeySet(doc, now, opts);
  expect(keySetChangeDue(doc, now, opts)).toBe(next !== undefined);
  return next;
}

/** A document at t0 + rotation + publish delay: the first key retired, the second signing. */
async function rotated() {
  const first = (await plan(undefined, t0))!;
  const withPending = (await plan(first, at(opts.rotationPeriodMs)))!;
  const activeAt = at(opts.rotationPeriodMs + opts.publishDelayMs);
  const retired = (await plan(withPending, activeAt))!;
  return { first, withPending, retired, activeAt, oldKid: first.keys[0].kid, newKid: withPending.keys[1].kid };
}

async function sign(doc: KeySetDoc, now: Date): Promise<string> {
  const k = currentSigningKey(doc, now)!;
  const key = await importJWK(k.privateJwk, k.alg);
  return new SignJWT({ sub: 'cluster-a' })
    .setProtectedHeader({ alg: k.alg, kid: k.kid })
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setExpirationTime(Math.floor((now.getTime() + opts.maxTokenTtlMs) / 1000))
    .sign(key);
}

describe('planKeySet', () => {
  test('no key set: one key, active at once; then nothing to do', async () => {
    const doc = (await plan(undefined, t0))!;
    expect(doc.keys).toHaveLength(1);
    const [k] = doc.keys;
    expect(k).toMatchObject({ alg: 'ES256', createdAt: t0.toISOString(), activeAt: t0.toISOString() });
    expect(k.retiredAt).toBeUndefined();
    expect(k.privateJwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(typeof k.privateJwk.d).toBe('string');
    expect(currentSigningKey(doc, t0)?.kid).toBe(k.kid);
    expect(await plan(doc, at(1))).toBeUndefined();
    expect(await plan({ keys: [] }, t0)).toMatchObject({ keys: [{ activeAt: t0.toISOString() }] });
  });

  test('kid is the RFC 7638 thumbprint of the public key', async () => {
    const k = await generateSigningKey();
    const { d: _d, ...pub } = k.privateJwk;
    expect(k.kid).toBe(await calculateJwkThumbprint(pub));
  });

  test('rotation after the period: the new key is published first and signs only from activeAt', async () => {
    const first = (await plan(undefined, t0))!;
    const oldKid = first.keys[0].kid;
    expect(await plan(first, at(opts.rotationPeriodMs - 1))).toBeUndefined();

    const now = at(opts.rotationPeriodMs);
    const doc = (await plan(first, now))!;
    expect(doc.keys).toHaveLength(2);
    const pending = doc.keys[1];
    expect(pending.kid).not.toBe(oldKid);
    expect(pending.createdAt).toBe(now.toISOString());
    expect(pending.activeAt).toBe(at(opts.rotationPeriodMs + opts.publishDelayMs).toISOString());
    expect(doc.keys[0].retiredAt).toBeUndefined();

    // Published at once, but the old key keeps signing until activeAt.
    expect(publicJwks(doc, now).keys.map((k) => k.kid)).toEqual([oldKid, pending.kid]);
    expect(currentSigningKey(doc, now)?.kid).toBe(oldKid);
    expect(currentSigningKey(doc, at(opts.rotationPeriodMs + opts.publishDelayMs - 1))?.kid).toBe(oldKid);
    expect(currentSigningKey(doc, at(opts.rotationPeriodMs + opts.publishDelayMs))?.kid).toBe(pending.kid);

    // Only one pending key at a time, however long the wait for activeAt.
    expect(await plan(doc, at(opts.rotationPeriodMs + opts.publishDelayMs - 1))).toBeUndefined();
  });

  test('the previous key is retired, once, when the pending key becomes active', async () => {
    const { retired, activeAt, oldKid, newKid } = await rotated();
    expect(retired.keys.map((k) => k.kid)).toEqual([oldKid, newKid]);
    expect(retired.keys[0].retiredAt).toBe(activeAt.toISOString());
    expect(retired.keys[1].retiredAt).toBeUndefined();
    expect(currentSigningKey(retired, activeAt)?.kid).toBe(newKid);
    expect(await plan(retired, at(opts.rotationPeriodMs + opts.publishDelayMs + 1))).toBeUndefined();
  });

  test('a retired key stays while its tokens may be valid, and goes after retiredAt + maxTokenTtl + skew', async () => {
    const { retired, activeAt, oldKid, newKid } = await rotated();
    const until = activeAt.getTime() + opts.maxTokenTtlMs + SKEW;
    expect(await plan(retired, new Date(until))).toBeUndefined();
    expect(publicJwks(retired, new Date(until), opts).keys.map((k) => k.kid)).toEqual([oldKid, newKid]);

    const dropped = (await plan(retired, new Date(until + 1)))!;
    expect(dropped.keys.map((k) => k.kid)).toEqual([newKid]);
    // A reader with the retention rule leaves it out even before the document is rewritten.
    expect(publicJwks(retired, new Date(until + 1), opts).keys.map((k) => k.kid)).toEqual([newKid]);
    // Without it, every key in the document is published.
    expect(publicJwks(retired, new Date(until + 1)).keys).toHaveLength(2);
  });

  test('clockSkewMs can be set', async () => {
    const { retired, activeAt, newKid } = await rotated();
    const next = await planKeySet(retired, new Date(activeAt.getTime() + opts.maxTokenTtlMs + 1), {
      ...opts,
      clockSkewMs: 0,
    });
    expect(next?.keys.map((k) => k.kid)).toEqual([newKid]);
  });

  test('a document left alone for long catches up in one step', async () => {
    const { withPending, oldKid, newKid } = await rotated();
    // Nobody wrote for 3 rotation periods: retire the old key, drop it, and start the next rotation.
    const now = at(3 * opts.rotationPeriodMs);
    const doc = (await plan(withPending, now))!;
    expect(doc.keys.map((k) => k.kid)).not.toContain(oldKid);
    expect(doc.keys[0]).toMatchObject({ kid: newKid });
    expect(doc.keys[0].retiredAt).toBeUndefined();
    expect(doc.keys).toHaveLength(2);
    expect(doc.keys[1].activeAt).toBe(new Date(now.getTime() + opts.publishDelayMs).toISOString());
    expect(currentSigningKey(doc, now)?.kid).toBe(newKid);
    expect(await plan(doc, now)).toBeUndefined();
  });

  test('keys that are all pending get a key that signs at once', async () => {
    const k = await generateSigningKey();
    const future = at(HOUR).toISOString();
    const doc: KeySetDoc = { keys: [{ ...k, createdAt: t0.toISOString(), activeAt: future }] };
    expect(currentSigningKey(doc, t0)).toBeUndefined();
    const next = (await plan(doc, t0))!;
    expect(currentSigningKey(next, t0)?.activeAt).toBe(t0.toISOString());
    expect(next.keys.map((x) => x.activeAt)).toEqual([t0.toISOString(), future]);
  });

  test('does not change its input', async () => {
    const { withPending } = await rotated();
    const copy = structuredClone(withPending);
    await plan(withPending, at(10 * opts.rotationPeriodMs));
    expect(withPending).toEqual(copy);
  });
});

describe('publicJwks', () => {
  test('has only public parts: kty, crv, x, y, kid, alg, use', async () => {
    const { withPending } = await rotated();
    const jwks = publicJwks(withPending, at(opts.rotationPeriodMs));
    expect(jwks.keys).toHaveLength(2);
    for (const [i, k] of jwks.keys.entries()) {
      expect(Object.keys(k).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
      expect(k).not.toHaveProperty('d');
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: withPending.keys[i].kid });
      expect(k.kid).toBe(await calculateJwkThumbprint(k as JWK));
    }
    expect(JSON.stringify(jwks)).not.toContain('"d"');
  });

  test('a token signed with the old key still verifies after rotation, until the key is dropped', async () => {
    const first = (await plan(undefined, t0))!;
    const signedAt = at(opts.rotationPeriodMs + opts.publishDelayMs - 1000);
    const withPending = (await plan(first, at(opts.rotationPeriodMs)))!;
    const token = await sign(withPending, signedAt);
    const { retired, activeAt, oldKid, newKid } = await rotatedFrom(withPending);

    const verifyAt = async (doc: KeySetDoc, now: Date) =>
      jwtVerify(token, createLocalJWKSet(publicJwks(doc, now, opts)), {
        algorithms: ['ES256'],
        currentDate: now,
      });
    const later = new Date(activeAt.getTime() + opts.maxTokenTtlMs - 2000);
    const { protectedHeader } = await verifyAt(retired, later);
    expect(protectedHeader.kid).toBe(oldKid);

    // Tokens of the new key verify against the same JWKS.
    const fresh = await sign(retired, later);
    const res = await jwtVerify(fresh, createLocalJWKSet(publicJwks(retired, later, opts)), { currentDate: later });
    expect(res.protectedHeader.kid).toBe(newKid);

    // Once dropped, the old key is unknown.
    const gone = new Date(activeAt.getTime() + opts.maxTokenTtlMs + SKEW + 1);
    const dropped = (await plan(retired, gone))!;
    await expect(
      jwtVerify(token, createLocalJWKSet(publicJwks(dropped, gone)), { currentDate: signedAt }),
    ).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });

    async function rotatedFrom(doc: KeySetDoc) {
      const activeAt = new Date(doc.keys[1].activeAt);
      return { retired: (await plan(doc, activeAt))!, activeAt, oldKid: doc.keys[0].kid, newKid: doc.keys[1].kid };
    }
  });
});
