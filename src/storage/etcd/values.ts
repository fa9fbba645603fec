/**
 * How values are stored: each key's value through its transformer (encryption at rest, --encryption-provider-config;
 * the key authenticated with it), and an object's as its JSON. A value that cannot be read is StorageError Internal,
 * naming the key, never the data.
 */
import { decode } from '../codec.js';
import { identityTransformer, type Transformer } from '../encryption/transformer.js';
import { StorageError, type StoredObject } from '../interface.js';

/** A stored value read back: the object, its plain bytes, and whether it should be rewritten (an old key wrote it). */
export interface Read<T> {
  object: T;
  plaintext: string;
  stale: boolean;
}

export class StoredValues {
  constructor(
    private readonly transformers: { forKey(key: string): Transformer } = { forKey: () => identityTransformer },
  ) {}

  /** The bytes stored for an object's `plaintext` under `key` (encrypted when the configuration says so). */
  toStorage(key: string, plaintext: string): Promise<Buffer> {
    return this.transform(key, plaintext, this.transformers.forKey(key));
  }

  /** The object stored under `key`. */
  async fromStorage<T extends StoredObject>(key: string, value: Buffer, revision: string): Promise<Read<T>> {
    const { value: plaintext, stale } = await this.plain(key, value);
    try {
      return { object: decode<T>(plaintext, revision), plaintext, stale };
    } catch {
      throw undecodable(key);
    }
  }

  /** The plain text stored under `key` through its transformer. */
  plain(key: string, value: Buffer): Promise<{ value: string; stale: boolean }> {
    return this.untransform(key, value, this.transformers.forKey(key));
  }

  async transform(key: string, plaintext: string, transformer: Transformer): Promise<Buffer> {
    try {
      return Buffer.from(await transformer.transformToStorage(Buffer.from(plaintext), key));
    } catch (err) {
      throw new StorageError(
        'Internal',
        key,
        `unable to transform key ${JSON.stringify(key)}: ${transformReason(err)}`,
      );
    }
  }

  async untransform(key: string, value: Buffer, transformer: Transformer): Promise<{ value: string; stale: boolean }> {
    let plain: { data: Uint8Array; stale: boolean };
    try {
      plain = await transformer.transformFromStorage(value, key);
    } catch (err) {
      throw new StorageError(
        'Internal',
        key,
        `unable to transform key ${JSON.stringify(key)}: ${transformReason(err)}`,
      );
    }
    return {
      value: Buffer.from(plain.data.buffer, plain.data.byteOffset, plain.data.byteLength).toString(),
      stale: plain.stale,
    };
  }
}

/** The stored text decoded, when it is a JSON object (text served as it is must be an object's JSON). */
export function validJson(key: string, text: string): object {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw undecodable(key);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw undecodable(key);
  return value;
}

/** JSON.parse's message quotes the value: say only where. */
function undecodable(key: string): StorageError {
  return new StorageError('Internal', key, `unable to decode key ${JSON.stringify(key)}: not a JSON object`);
}

/** Why a value could not be transformed (transformers never put data or key material in their errors). */
function transformReason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
