/**
 * The signing keys of DirectClusterEndpointTokens (ES256 JWTs), shared by every replica through one etcd key.
 *
 * The key set is one JSON document `{ keys: StoredKey[] }`. Its life cycle is pure logic (planKeySet, with the
 * clock passed in); SigningKeys keeps it in etcd through storage's guaranteedUpdateValue (a compare-and-swap on the
 * key's mod revision, under the etcd health guard, measured, failing as StorageError), so replicas that race end up
 * with one key set.
 *
 * Life of a key:
 *   pending  (activeAt > now)            published in the JWKS, not used for signing yet, so verifiers that cache
 *                                        the JWKS learn it before any token signed with it reaches them;
 *   signing  (newest key with activeAt <= now);
 *   retired  (retiredAt = the successor's activeAt) still published while a token it signed may be valid;
 *   dropped  once retiredAt + maxTokenTtlMs + clockSkewMs is in the past.
 *
 * Private keys live only in etcd and in memory: nothing here logs, and no error message carries key material.
 * In etcd the document goes through the resource `signingkeys.management.platform.sh` of the encryption
 * configuration (--encryption-provider-config), so it is encrypted at rest like the objects.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { identityTransformer, type Transformer } from '../storage/encryption/transformer.js';
import type { EtcdStorage } from '../storage/etcd.js';
import type { StoredValue } from '../storage/interface.js';

export type SigningAlg = 'ES256';

export interface StoredKey {
  /** RFC 7638 thumbprint (SHA-256) of the public key. */
  kid: string;
  alg: SigningAlg;
  /** When the key was generated (RFC 3339). */
  createdAt: string;
  /** When it may start signing (RFC 3339); it is published from createdAt on. */
  activeAt: string;
  /** When a newer key took over (RFC 3339); set once. */
  retiredAt?: string;
  /** The private key as exported by jose (kty, crv, x, y, d). */
  privateJwk: JWK;
}

export interface KeySetDoc {
  keys: StoredKey[];
}

/** A freshly generated key, before planKeySet gives it its dates. */
export type NewKey = Pick<StoredKey, 'kid' | 'alg' | 'privateJwk'>;

export interface KeySetTimings {
  /** A signing key is replaced once it has been signing this long (measured from its activeAt). */
  rotationPeriodMs: number;
  /** How long a new key is published before it signs (at least the verifiers' JWKS cache time). */
  publishDelayMs: number;
  /** The longest lifetime of a token signed with these keys. */
  maxTokenTtlMs: number;
  /** Extra time a retired key stays published, for clocks that disagree. Default 60 s. */
  clockSkewMs?: number;
}

export const DEFAULT_CLOCK_SKEW_MS = 60_000;
export const DEFAULT_REFRESH_MS = 30_000;

/** The public JWK fields published for a key; everything else (notably "d") stays private. */
const PUBLIC_EC_FIELDS = ['kty', 'crv', 'x', 'y'] as const;

/** Generates an ES256 key pair; kid is the RFC 7638 thumbprint of its public key. */
export async function generateSigningKey(): Promise<NewKey> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
  return { kid, alg: 'ES256', privateJwk: await exportJWK(privateKey) };
}

const ms = (rfc3339: string) => Date.parse(rfc3339);

/** Keys ordered by activeAt (then kid, so every replica orders ties alike). */
function byActiveAt(keys: StoredKey[]): StoredKey[] {
  return [...keys].sort((a, b) => ms(a.activeAt) - ms(b.activeAt) || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0));
}

/** The key to sign with at `now`: the newest key whose activeAt has come. */
export function currentSigningKey(doc: KeySetDoc, now: Date): StoredKey | undefined {
  const active = byActiveAt(doc.keys).filter((k) => ms(k.activeAt) <= now.getTime());
  return active[active.length - 1];
}

/** True when a retired key's tokens may no longer be valid at `now`. */
function expired(key: StoredKey, now: Date, retention: Pick<KeySetTimings, 'maxTokenTtlMs' | 'clockSkewMs'>): boolean {
  if (key.retiredAt === undefined) return false;
  const until = ms(key.retiredAt) + retention.maxTokenTtlMs + (retention.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS);
  return until < now.getTime();
}

/**
 * The JWKS to publish: the public parts of every key in the document (pending, signing, retired). With
 * `retention`, retired keys whose tokens can no longer be valid at `now` are left out even before the document
 * is rewritten without them.
 */
export function publicJwks(
  doc: KeySetDoc,
  now: Date,
  retention?: Pick<KeySetTimings, 'maxTokenTtlMs' | 'clockSkewMs'>,
): { keys: JWK[] } {
  const keys = byActiveAt(doc.keys).filter((k) => !retention || !expired(k, now, retention));
  return {
    keys: keys.map((k) => {
      const jwk: JWK = {};
      for (const f of PUBLIC_EC_FIELDS) if (k.privateJwk[f] !== undefined) jwk[f] = k.privateJwk[f];
      return { ...jwk, kid: k.kid, alg: k.alg, use: 'sig' };
    }),
  };
}

interface Step {
  keys: StoredKey[];
  changed: boolean;
  /** A new key is due, to become active at this time. */
  newKeyActiveAt?: Date;
}

/** The rules of planKeySet without the key generation: retire, drop, and say whether a new key is due. */
function step(current: KeySetDoc | undefined, now: Date, opts: KeySetTimings): Step {
  const t = now.getTime();
  let changed = false;
  const keys = byActiveAt(current?.keys ?? []).map((k) => ({ ...k }));
  const active = keys.filter((k) => ms(k.activeAt) <= t);
  // (c) every active key but the newest was taken over when its successor became active.
  for (let i = 0; i < active.length - 1; i++) {
    if (active[i].retiredAt === undefined) {
      active[i].retiredAt = active[i + 1].activeAt;
      changed = true;
    }
  }
  // (d) drop retired keys whose tokens have all expired.
  const kept = keys.filter((k) => !expired(k, now, opts));
  if (kept.length !== keys.length) changed = true;
  // (a) no key signs yet: one that is active at once. (b) the signing key is old and nothing is pending:
  // one that is published now and signs after publishDelayMs.
  const signing = kept.filter((k) => ms(k.activeAt) <= t).pop();
  const pending = kept.some((k) => ms(k.activeAt) > t);
  let newKeyActiveAt: Date | undefined;
  if (!signing) newKeyActiveAt = now;
  else if (!pending && t - ms(signing.activeAt) >= opts.rotationPeriodMs)
    newKeyActiveAt = new Date(t + opts.publishDelayMs);
  return { keys: kept, changed, newKeyActiveAt };
}

/** True when planKeySet would return a new document at `now` (cheap: generates no key). */
export function keySetChangeDue(current: KeySetDoc | undefined, now: Date, opts: KeySetTimings): boolean {
  const s = step(current, now, opts);
  return s.changed || s.newKeyActiveAt !== undefined;
}

/**
 * The next key set document at `now`, or undefined when nothing must change. Applies, in one go: retirement of
 * keys a newer key took over, dropping of retired keys past maxTokenTtlMs + clockSkewMs, and a new key (from
 * `newKey`) when no key signs yet (active at once) or the signing key is older than rotationPeriodMs and no key
 * is pending (active after publishDelayMs). Keys come out ordered by activeAt.
 */
export async function planKeySet(
  current: KeySetDoc | undefined,
  now: Date,
  opts: KeySetTimings,
  newKey: () => Promise<NewKey> = generateSigningKey,
): Promise<KeySetDoc | undefined> {
  const s = step(current, now, opts);
  if (!s.changed && s.newKeyActiveAt === undefined) return undefined;
  const keys = s.keys;
  if (s.newKeyActiveAt) {
    const k = await newKey();
    keys.push({
      kid: k.kid,
      alg: k.alg,
      createdAt: now.toISOString(),
      activeAt: s.newKeyActiveAt.toISOString(),
      privateJwk: k.privateJwk,
    });
  }
  return { keys: byActiveAt(keys) };
}

// ---------------------------------------------------------------------------------------------------------------
// etcd-backed key set

export interface SigningKeysOptions extends KeySetTimings {
  /** How long signer() trusts its cached copy of the document before reading etcd again. Default 30 s. */
  refreshMs?: number;
  now?: () => Date;
  /** How the document is stored (encryption at rest); default: plain. */
  transformer?: Transformer;
}

export interface Signer {
  kid: string;
  alg: SigningAlg;
  key: CryptoKey;
}

interface Snapshot {
  doc: KeySetDoc;
  modRevision: string;
  /** When it was read or written (ms, on opts.now's clock). */
  readAt: number;
  /** Written with an encryption key or provider that no longer writes: to be written again. */
  stale?: boolean;
}

/** What the signing keys need of storage: one value, read and updated whole. */
export type SigningKeysStorage = Pick<EtcdStorage, 'getValue' | 'guaranteedUpdateValue'>;

export class SigningKeys {
  private readonly timings: KeySetTimings;
  private readonly refreshMs: number;
  private readonly now: () => Date;
  private cache?: Snapshot;
  private syncing?: Promise<Snapshot>;
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  private readonly transformer: Transformer;

  constructor(
    private readonly storage: SigningKeysStorage,
    /** e.g. `${etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens` */
    private readonly key: string,
    opts: SigningKeysOptions,
  ) {
    this.timings = {
      rotationPeriodMs: opts.rotationPeriodMs,
      publishDelayMs: opts.publishDelayMs,
      maxTokenTtlMs: opts.maxTokenTtlMs,
      clockSkewMs: opts.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS,
    };
    this.refreshMs = opts.refreshMs ?? DEFAULT_REFRESH_MS;
    this.now = opts.now ?? (() => new Date());
    this.transformer = opts.transformer ?? identityTransformer;
  }

  /** Writes the document again if an old encryption key or provider wrote it (as a no-op update of an object does). */
  async rewrite(): Promise<void> {
    const snap = await this.read();
    if (snap?.stale) await this.sync();
  }

  /** The key to sign with now (creating, rotating or retiring keys in etcd when due). */
  async signer(): Promise<Signer> {
    const now = this.now();
    let snap = this.cache;
    if (!snap || now.getTime() - snap.readAt >= this.refreshMs) snap = await this.sync();
    else if (keySetChangeDue(snap.doc, now, this.timings)) snap = await this.sync();
    const key = currentSigningKey(snap.doc, this.now());
    if (!key) throw new Error(`signing keys: no signing key in ${this.key}`);
    return { kid: key.kid, alg: key.alg, key: await this.importKey(key) };
  }

  /** The public keys to publish, read fresh from etcd (the first key is created when there is none). */
  async jwks(): Promise<{ keys: JWK[] }> {
    let snap = await this.read();
    if (!snap) snap = await this.sync();
    else this.remember(snap);
    return publicJwks(snap.doc, this.now(), this.timings);
  }

  /** Brings the document up to date in etcd; one run at a time per instance (concurrent callers share it). */
  private sync(): Promise<Snapshot> {
    if (!this.syncing) {
      this.syncing = this.update().finally(() => {
        this.syncing = undefined;
      });
    }
    return this.syncing;
  }

  /** Plans from what etcd holds, again after a lost race (usually nothing is left to do then). */
  private async update(): Promise<Snapshot> {
    let doc!: KeySetDoc;
    let readAt = 0;
    const stored = await this.storage.guaranteedUpdateValue(this.key, this.transformer, async (current) => {
      const now = this.now();
      readAt = now.getTime();
      const snap = current && this.parse(current);
      // planKeySet always returns a document when there is none. Returned unchanged, a document is written again
      // only when stale, under the encryption key that writes now.
      const next = await planKeySet(snap?.doc, now, this.timings);
      doc = next ?? snap!.doc;
      return next ? JSON.stringify(next) : current!.value;
    });
    return this.remember({ doc, modRevision: stored.revision, readAt });
  }

  private async read(): Promise<Snapshot | undefined> {
    const stored = await this.storage.getValue(this.key, this.transformer);
    return stored && this.parse(stored);
  }

  /** Keeps the newest snapshot seen, and forgets imported keys no longer in it. */
  private remember(snap: Snapshot): Snapshot {
    if (!this.cache || BigInt(snap.modRevision) >= BigInt(this.cache.modRevision)) {
      this.cache = snap;
      const kids = new Set(snap.doc.keys.map((k) => k.kid));
      for (const kid of this.imported.keys()) if (!kids.has(kid)) this.imported.delete(kid);
    }
    return snap;
  }

  private importKey(key: StoredKey): Promise<CryptoKey> {
    let p = this.imported.get(key.kid);
    if (!p) {
      p = importJWK(key.privateJwk, key.alg).then(
        (k) => {
          if (k instanceof Uint8Array) throw new Error(`signing keys: key ${key.kid} is not an ${key.alg} key`);
          return k;
        },
        // jose's message could describe the JWK: keep only the kid.
        () => {
          throw new Error(`signing keys: cannot import key ${key.kid} from ${this.key}`);
        },
      );
      p.catch(() => this.imported.delete(key.kid));
      this.imported.set(key.kid, p);
    }
    return p;
  }

  /** Parses a stored document; errors never quote the value (JSON.parse's message would show key material). */
  private parse(stored: StoredValue): Snapshot {
    let doc: unknown;
    try {
      doc = JSON.parse(stored.value);
    } catch {
      throw new Error(`signing keys: ${this.key} does not hold JSON`);
    }
    if (!isKeySetDoc(doc)) throw new Error(`signing keys: ${this.key} does not hold a valid key set`);
    return { doc, modRevision: stored.revision, readAt: this.now().getTime(), stale: stored.stale };
  }
}

function isKeySetDoc(doc: unknown): doc is KeySetDoc {
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as KeySetDoc).keys)) return false;
  const date = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v));
  return (doc as KeySetDoc).keys.every(
    (k) =>
      typeof k === 'object' &&
      k !== null &&
      typeof k.kid === 'string' &&
      k.alg === 'ES256' &&
      date(k.createdAt) &&
      date(k.activeAt) &&
      (k.retiredAt === undefined || date(k.retiredAt)) &&
      typeof k.privateJwk === 'object' &&
      k.privateJwk !== null,
  );
}
