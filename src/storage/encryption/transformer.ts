/**
 * Value transformers (after kube's k8s.io/apiserver/pkg/storage/value): what turns an object's bytes into what is
 * stored in etcd and back. The prefix a transformer writes says which one wrote a value, so every configured one
 * can read while only the first writes.
 */

/** One value transformer, as kube's value.Transformer (k8s.io/apiserver/pkg/storage/value). */
export interface Transformer {
  /** Encrypts `plaintext`; `dataCtx` is authenticated data: the etcd key the value is stored under. */
  transformToStorage(plaintext: Uint8Array, dataCtx: string): Promise<Uint8Array>;
  /** Decrypts; `stale` is true when the value should be rewritten (not written by the current write key/provider). */
  transformFromStorage(stored: Uint8Array, dataCtx: string): Promise<{ data: Uint8Array; stale: boolean }>;
}

/** A transformer and the prefix its values carry (stripped before it reads, added after it writes). */
export interface PrefixTransformer {
  prefix: string;
  transformer: Transformer;
}

/** The prefix of every encrypted value: identity refuses to read such a value as plain data. */
const ENCRYPTED_PREFIX = Buffer.from('k8s:enc:');

/**
 * Reads with the first transformer whose prefix the value has (a failure moves on to the next match: the same
 * provider may be listed twice, with the new key first); writes with the first. A value read by any but the first
 * is stale. `noMatch` is the error when none can read it.
 */
export class PrefixTransformers implements Transformer {
  private readonly prefixes: { prefix: Buffer; transformer: Transformer }[];

  constructor(
    transformers: PrefixTransformer[],
    private readonly noMatch: string,
  ) {
    if (!transformers.length) throw new Error('PrefixTransformers needs at least one transformer');
    this.prefixes = transformers.map((t) => ({ prefix: Buffer.from(t.prefix), transformer: t.transformer }));
  }

  async transformFromStorage(stored: Uint8Array, dataCtx: string): Promise<{ data: Uint8Array; stale: boolean }> {
    const value = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    const errors: string[] = [];
    for (const [i, { prefix, transformer }] of this.prefixes.entries()) {
      if (!value.subarray(0, prefix.length).equals(prefix)) continue;
      try {
        const result = await transformer.transformFromStorage(value.subarray(prefix.length), dataCtx);
        return { data: result.data, stale: result.stale || i !== 0 };
      } catch (err) {
        // identity (the empty prefix) failing only means the value is encrypted: another may read it.
        if (prefix.length) errors.push((err as Error).message);
      }
    }
    throw new TransformError(errors.length ? errors.join(', ') : this.noMatch);
  }

  async transformToStorage(plaintext: Uint8Array, dataCtx: string): Promise<Uint8Array> {
    const { prefix, transformer } = this.prefixes[0];
    return Buffer.concat([prefix, await transformer.transformToStorage(plaintext, dataCtx)]);
  }
}

/** Plain bytes both ways; refuses to read an encrypted value as plain (kube's identity EncryptCheckTransformer). */
export const identityTransformer: Transformer = {
  async transformToStorage(plaintext) {
    return plaintext;
  },
  async transformFromStorage(stored) {
    if (
      Buffer.from(stored.buffer, stored.byteOffset, Math.min(stored.byteLength, ENCRYPTED_PREFIX.length)).equals(
        ENCRYPTED_PREFIX,
      )
    ) {
      throw new TransformError('identity transformer tried to read encrypted data');
    }
    return { data: stored, stale: false };
  },
};

/** A value could not be read or written by the configured transformers. The message never holds key material. */
export class TransformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransformError';
  }
}
