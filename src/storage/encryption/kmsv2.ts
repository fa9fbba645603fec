/**
 * The KMS v2 envelope transformer, as kube-apiserver's (envelope/kmsv2 and encryptionconfig's kmsv2PluginProbe):
 * - The server generates a random 32-byte seed and has the plugin encrypt it once (Encrypt); every object is then
 *   encrypted locally with AES-GCM under a key derived from the seed (HKDF-SHA256 expand with 32 random bytes of
 *   info per write), the etcd key being the authenticated data. Stored: the EncryptedObject protobuf carrying the
 *   plugin's key ID, the encrypted seed and the plugin's annotations.
 * - Status is polled (every minute, every 10s while failing) and by the health check; when its key ID changes, a
 *   new seed is generated and objects written under the old key ID read as stale. While the plugin fails, writes
 *   go on with the current seed for 3 minutes after the last good Status, then are refused.
 * - Reads find the seed by its encrypted form in a cache (24h), calling Decrypt on a miss.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import { hkdfExpandSha256 } from './hkdf.js';
import { EncryptedObjectType } from './kmsv2proto.js';
import { KMSv2Service, type EncryptResponse, type StatusResponse } from './kmsv2service.js';
import type { Transformer } from './transformer.js';

export interface KMSv2ProviderConfig {
  /** The provider's name in the EncryptionConfiguration (part of the stored prefix k8s:enc:kms:v2:<name>:). */
  name: string;
  /** `unix:///path/to/socket` (kube's only supported form; `unix:/path/to/socket` is the same URL). */
  endpoint: string;
  /** Per-call timeout (EncryptionConfiguration `timeout`, default 3s as kube). */
  timeoutMs: number;
}

export interface KMSv2Transformer extends Transformer {
  /** For /healthz and /readyz checks (kube: `kms-provider-<i>`); rejects when the plugin is unhealthy. */
  health(): Promise<void>;
  /** Closes the gRPC connection and timers. */
  close(): void;
}

/**
 * A transformer for the bytes AFTER the prefix `k8s:enc:kms:v2:<name>:`. It asks the plugin for its status (and a
 * first seed) before it resolves; a plugin that is not up yet is not an error (kube lets plugins start after the
 * server): writes fail until it answers, and it is asked again every 10s.
 */
export async function newKMSv2Transformer(cfg: KMSv2ProviderConfig): Promise<KMSv2Transformer> {
  if (!(cfg.timeoutMs > 0))
    throw new Error(`KMS v2 provider ${JSON.stringify(cfg.name)}: timeout must be positive, got ${cfg.timeoutMs}ms`);
  const transformer = new KMSv2Envelope(cfg.name, cfg.endpoint, new KMSv2Service(cfg.endpoint, cfg.timeoutMs));
  await transformer.start();
  return transformer;
}

// kube's encryptionconfig constants.
const POLL_INTERVAL_MS = 60_000;
const POLL_INTERVAL_FAILING_MS = 10_000;
const WRITE_SEED_MAX_TTL_MS = 3 * 60_000;
const HEALTHY_TTL_MS = 20_000;
const UNHEALTHY_TTL_MS = 3_000;
const READ_CACHE_TTL_MS = 24 * 60 * 60_000;
// kube's envelope/kmsv2 limits.
const KEY_ID_MAX = 1024;
const ENCRYPTED_DEK_SOURCE_MAX = 1024;
const ANNOTATIONS_MAX = 32 * 1024;
// kube's aes extended-nonce transformer sizes.
const SEED_SIZE = 32;
const INFO_SIZE = 32;
const NONCE_SIZE = 12;
const TAG_SIZE = 16;

enum DEKSourceType {
  /** The DEK source is the AES-GCM key (written by kube before 1.29; read only). */
  AES_GCM_KEY = 0,
  HKDF_SHA256_XNONCE_AES_GCM_SEED = 1,
}

interface EncryptedObject {
  encryptedData: Buffer;
  keyID: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  encryptedDEKSourceType: DEKSourceType;
}

/** The seed new objects are written with, and what is stored next to them. */
interface WriteState {
  seed: Buffer;
  keyID: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  cacheKey: string;
  /** Writes are refused after this (ms since epoch) unless a Status with the same key ID extends it. */
  expiresAt: number;
}

/** A decrypted DEK source: the seed or the key objects were encrypted with. */
interface ReadKey {
  type: DEKSourceType;
  key: Buffer;
}

class KMSv2Envelope implements KMSv2Transformer {
  private state: WriteState | undefined;
  /** The API version of the first healthy Status: it must not change (kube). */
  private version: string | undefined;
  private lastCheck: { problem?: string; at: number; ttl: number } | undefined;
  private probing: Promise<string | undefined> | undefined;
  private readonly readKeys = new Map<string, { key: Promise<ReadKey>; expiresAt: number }>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly name: string,
    private readonly endpoint: string,
    private readonly service: KMSv2Service,
  ) {}

  /** kube's primeAndProbeKMSv2: one check inline, then a poll that speeds up while the plugin fails. */
  async start(): Promise<void> {
    this.schedule(await this.probe());
  }

  private schedule(problem: string | undefined): void {
    if (this.closed) return;
    this.timer = setTimeout(
      () => void this.probe().then((p) => this.schedule(p)),
      problem ? POLL_INTERVAL_FAILING_MS : POLL_INTERVAL_MS,
    );
    this.timer.unref();
  }

  health(): Promise<void> {
    return this.check();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.service.close();
  }

  async transformToStorage(plaintext: Uint8Array, dataCtx: string): Promise<Uint8Array> {
    const state = this.writeState();
    this.keepWriteSeedReadable(state);
    const info = randomBytes(INFO_SIZE);
    const nonce = randomBytes(NONCE_SIZE);
    const cipher = createCipheriv('aes-256-gcm', hkdfExpandSha256(state.seed, info), nonce, {
      authTagLength: TAG_SIZE,
    });
    cipher.setAAD(Buffer.from(dataCtx));
    const encryptedData = Buffer.concat([info, nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    const stored: EncryptedObject = {
      encryptedData,
      keyID: state.keyID,
      encryptedDEKSource: state.encryptedDEKSource,
      annotations: state.annotations,
      encryptedDEKSourceType: DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED,
    };
    return EncryptedObjectType.encode(EncryptedObjectType.fromObject(stored)).finish();
  }

  async transformFromStorage(stored: Uint8Array, dataCtx: string): Promise<{ data: Uint8Array; stale: boolean }> {
    const object = this.decode(stored);
    // kube reads only once it has a write state: staleness is judged against the current key ID.
    const state = this.currentState();
    const cacheKey = readCacheKey(object);
    let key = this.readKeys.get(cacheKey);
    if (!key || key.expiresAt <= Date.now()) {
      key = this.cacheReadKey(cacheKey, this.decryptDEKSource(object));
    }
    const data = openObject(await key.key, object.encryptedData, dataCtx);
    if (!data)
      throw this.error(`the value stored at ${dataCtx} failed to decrypt: cipher: message authentication failed`);
    return {
      data,
      stale:
        object.keyID !== state.keyID || object.encryptedDEKSourceType !== DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED,
    };
  }

  private async decryptDEKSource(object: EncryptedObject): Promise<ReadKey> {
    const request = { ciphertext: object.encryptedDEKSource, keyID: object.keyID, annotations: object.annotations };
    const key = await this.service.decrypt(randomUUID(), request).catch((err: Error) => {
      throw this.error(err.message);
    });
    const type = object.encryptedDEKSourceType;
    if (
      type === DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED
        ? key.length < SEED_SIZE
        : ![16, 24, 32].includes(key.length)
    ) {
      throw this.error(
        `the plugin's Decrypt returned a ${key.length}-byte ${type === DEKSourceType.AES_GCM_KEY ? 'key' : 'seed'}, which cannot be right for this object`,
      );
    }
    return { type, key };
  }

  /** As kube, every write keeps its seed in the read cache: reading what this server wrote never calls Decrypt. */
  private keepWriteSeedReadable(state: WriteState): void {
    const entry = this.readKeys.get(state.cacheKey);
    if (entry) entry.expiresAt = Date.now() + READ_CACHE_TTL_MS;
    else
      this.cacheReadKey(
        state.cacheKey,
        Promise.resolve({ type: DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED, key: state.seed }),
      );
  }

  /** Caches a DEK source being decrypted (so concurrent reads of objects sharing it call Decrypt once). */
  private cacheReadKey(cacheKey: string, key: Promise<ReadKey>): { key: Promise<ReadKey>; expiresAt: number } {
    const now = Date.now();
    for (const [k, entry] of this.readKeys) if (entry.expiresAt <= now) this.readKeys.delete(k);
    const entry = { key, expiresAt: now + READ_CACHE_TTL_MS };
    this.readKeys.set(cacheKey, entry);
    key.catch(() => {
      if (this.readKeys.get(cacheKey) === entry) this.readKeys.delete(cacheKey);
    });
    return entry;
  }

  private decode(stored: Uint8Array): EncryptedObject {
    let object: EncryptedObject;
    try {
      object = EncryptedObjectType.toObject(EncryptedObjectType.decode(stored), {
        defaults: true,
        enums: Number,
      }) as EncryptedObject;
    } catch (err) {
      throw this.error(`the stored value is not a KMS v2 EncryptedObject: ${(err as Error).message}`);
    }
    const problem = encryptedObjectProblem(object);
    if (problem) throw this.error(`the stored value is not a valid KMS v2 EncryptedObject: ${problem}`);
    return object;
  }

  private currentState(): WriteState {
    if (this.state) return this.state;
    throw this.error(
      `no data encryption key yet (it needs a healthy Status and an Encrypt from the plugin)${this.lastProblem()}`,
    );
  }

  /** kube's ValidateEncryptCapability: a seed is used for writes only while Status keeps confirming its key ID. */
  private writeState(): WriteState {
    const state = this.currentState();
    if (Date.now() > state.expiresAt) {
      const since = new Date(state.expiresAt - WRITE_SEED_MAX_TTL_MS).toISOString();
      throw this.error(
        `writes are refused: the plugin has not confirmed the key ID since ${since}${this.lastProblem()}`,
      );
    }
    return state;
  }

  /** kube's kmsv2PluginProbe.check: rejects saying what is wrong with the plugin. */
  private async check(): Promise<void> {
    const problem = await this.probe();
    if (problem) throw this.error(problem);
  }

  /** Status and rotation if needed, one at a time; the outcome is reused for 20s when healthy, 3s when not (kube). */
  private probe(): Promise<string | undefined> {
    if (this.probing) return this.probing;
    const last = this.lastCheck;
    if (last && Date.now() - last.at < last.ttl) return Promise.resolve(last.problem);
    this.probing = this.statusAndMaybeRotate().then((problem) => {
      this.lastCheck = { problem, at: Date.now(), ttl: problem ? UNHEALTHY_TTL_MS : HEALTHY_TTL_MS };
      this.probing = undefined;
      return problem;
    });
    return this.probing;
  }

  /** What is wrong with the plugin, or undefined when it is healthy and the write seed matches its key ID. */
  private async statusAndMaybeRotate(): Promise<string | undefined> {
    let status: StatusResponse;
    try {
      status = await this.service.status();
    } catch (err) {
      return (err as Error).message;
    }
    const problems = this.statusProblems(status);
    if (!problems.length) {
      try {
        await this.rotateOnKeyIDChange(status.keyID);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    return problems.length ? `the plugin is not healthy: ${problems.join('; ')}` : undefined;
  }

  private statusProblems(status: StatusResponse): string[] {
    const problems: string[] = [];
    if (status.healthz !== 'ok') problems.push(`got unexpected healthz status: ${status.healthz}`);
    if (status.version !== 'v2' && status.version !== 'v2beta1') {
      problems.push(`expected KMSv2 API version v2, got ${JSON.stringify(status.version)}`);
    } else {
      this.version ??= status.version;
      if (status.version !== this.version) {
        problems.push(
          `KMSv2 API version should not change after the initial status response version ${this.version}, got ${status.version}`,
        );
      }
    }
    const keyIDProblem = keyIDProblemOf(status.keyID);
    if (keyIDProblem)
      problems.push(`got invalid KMSv2 KeyID hash ${JSON.stringify(hashOf(status.keyID))}: ${keyIDProblem}`);
    return problems;
  }

  /**
   * kube's rotateDEKOnKeyIDChange: an unchanged key ID extends the current seed's write window; a new one gets a new
   * seed encrypted by the plugin. On failure the current seed stays (writes coast until it expires).
   */
  private async rotateOnKeyIDChange(statusKeyID: string): Promise<void> {
    const expiresAt = Date.now() + WRITE_SEED_MAX_TTL_MS;
    if (this.state && this.state.keyID === statusKeyID) {
      this.state.expiresAt = expiresAt;
      return;
    }
    const failed = (why: string) =>
      new Error(`failed to rotate DEK to key ID hash ${JSON.stringify(hashOf(statusKeyID))}: ${why}`);
    const seed = randomBytes(SEED_SIZE);
    let res: EncryptResponse;
    try {
      res = await this.service.encrypt(randomUUID(), seed);
    } catch (err) {
      throw failed((err as Error).message);
    }
    const { ciphertext: encryptedDEKSource, keyID, annotations } = res;
    const written = {
      encryptedDEKSource,
      keyID,
      annotations,
      encryptedDEKSourceType: DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED,
    };
    const problem =
      encryptedObjectProblem({ ...written, encryptedData: Buffer.from([0]) }) ??
      (keyID !== statusKeyID
        ? `Encrypt returned key ID hash ${JSON.stringify(hashOf(keyID))}, Status ${JSON.stringify(hashOf(statusKeyID))}`
        : undefined);
    if (problem) throw failed(problem);
    this.state = { seed, ...written, cacheKey: readCacheKey(written), expiresAt };
  }

  /** ": <why the last health check failed>", or "". */
  private lastProblem(): string {
    return this.lastCheck?.problem ? `: ${this.lastCheck.problem}` : '';
  }

  private error(message: string): Error {
    return new Error(`KMS v2 provider ${JSON.stringify(this.name)} (${this.endpoint}): ${message}`);
  }
}

/** Decrypts encryptedData with a decrypted DEK source; undefined when authentication fails (tampered, wrong key or dataCtx). */
function openObject(readKey: ReadKey, encryptedData: Buffer, dataCtx: string): Buffer | undefined {
  let key = readKey.key;
  let data = encryptedData;
  if (readKey.type === DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED) {
    if (data.length < INFO_SIZE) return undefined;
    key = hkdfExpandSha256(key, data.subarray(0, INFO_SIZE));
    data = data.subarray(INFO_SIZE);
  }
  if (data.length < NONCE_SIZE + TAG_SIZE) return undefined;
  const algorithm = `aes-${key.length * 8}-gcm` as 'aes-256-gcm';
  const decipher = createDecipheriv(algorithm, key, data.subarray(0, NONCE_SIZE), { authTagLength: TAG_SIZE });
  decipher.setAAD(Buffer.from(dataCtx));
  decipher.setAuthTag(data.subarray(data.length - TAG_SIZE));
  try {
    return Buffer.concat([decipher.update(data.subarray(NONCE_SIZE, data.length - TAG_SIZE)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/** kube's ValidateEncryptedObject: what is wrong with an object read or about to be written, or undefined. */
function encryptedObjectProblem(o: EncryptedObject): string | undefined {
  if (
    o.encryptedDEKSourceType !== DEKSourceType.AES_GCM_KEY &&
    o.encryptedDEKSourceType !== DEKSourceType.HKDF_SHA256_XNONCE_AES_GCM_SEED
  ) {
    return `unknown encryptedDEKSourceType: ${o.encryptedDEKSourceType}`;
  }
  if (!o.encryptedData.length) return 'encrypted data is empty';
  if (!o.encryptedDEKSource.length) return 'encrypted DEK source is empty';
  if (o.encryptedDEKSource.length > ENCRYPTED_DEK_SOURCE_MAX) {
    return `encrypted DEK source is ${o.encryptedDEKSource.length} bytes, which exceeds the max size of ${ENCRYPTED_DEK_SOURCE_MAX}`;
  }
  const keyIDProblem = keyIDProblemOf(o.keyID);
  if (keyIDProblem) return `invalid key ID: ${keyIDProblem}`;
  return annotationsProblem(o.annotations);
}

function keyIDProblemOf(keyID: string): string | undefined {
  if (!keyID) return 'keyID is empty';
  const size = Buffer.byteLength(keyID);
  if (size > KEY_ID_MAX) return `keyID is ${size} bytes, which exceeds the max size of ${KEY_ID_MAX}`;
  return undefined;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Annotation keys are fully qualified domain names (kube's IsFullyQualifiedDomainName); 32 KiB in all at most. */
function annotationsProblem(annotations: Record<string, Buffer>): string | undefined {
  let size = 0;
  for (const [key, value] of Object.entries(annotations)) {
    const labels = key.split('.');
    if (key.length > 253 || labels.length < 2 || !labels.every((l) => l.length <= 63 && DNS_LABEL.test(l))) {
      return `annotation key ${JSON.stringify(key)} must be a fully qualified domain name (lower case, at least two labels, e.g. version.kms.example.com)`;
    }
    size += Buffer.byteLength(key) + value.length;
  }
  if (size > ANNOTATIONS_MAX)
    return `total size of annotations is ${size}, which exceeds the max size of ${ANNOTATIONS_MAX}`;
  return undefined;
}

/** kube's generateCacheKey: the DEK source type, encrypted DEK source, key ID and sorted annotations, length-prefixed. */
function readCacheKey(
  o: Pick<EncryptedObject, 'encryptedDEKSourceType' | 'encryptedDEKSource' | 'keyID' | 'annotations'>,
): string {
  const parts: Buffer[] = [Buffer.from([o.encryptedDEKSourceType])];
  const add = (b: Buffer) => parts.push(u32(b.length), b);
  add(o.encryptedDEKSource);
  add(Buffer.from(o.keyID));
  for (const key of Object.keys(o.annotations).sort()) {
    add(Buffer.from(key));
    add(o.annotations[key]);
  }
  return Buffer.concat(parts).toString('base64');
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** Key IDs appear in messages only as hashes, as kube logs them. */
function hashOf(keyID: string): string {
  return keyID ? `sha256:${createHash('sha256').update(keyID).digest('hex')}` : '';
}
