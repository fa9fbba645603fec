/**
 * AES-GCM and AES-CBC as kube's value/encrypt/aes stores them, with Node's crypto:
 * GCM: a random 12-byte nonce, then the ciphertext and its 16-byte tag; the etcd key is authenticated data.
 * CBC: a random 16-byte IV, then the PKCS#7-padded ciphertext (no authentication, as kube's).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { TransformError, type Transformer } from './transformer.js';

const GCM_NONCE = 12;
const GCM_TAG = 16;
const BLOCK = 16;

function aesName(
  key: Uint8Array,
  mode: 'gcm' | 'cbc',
): 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm' | 'aes-128-cbc' | 'aes-192-cbc' | 'aes-256-cbc' {
  if (![16, 24, 32].includes(key.length)) throw new Error(`AES keys are 16, 24 or 32 bytes, not ${key.length}`);
  return `aes-${key.length * 8}-${mode}` as ReturnType<typeof aesName>;
}

export function gcmTransformer(key: Uint8Array): Transformer {
  const algorithm = aesName(key, 'gcm') as 'aes-256-gcm';
  return {
    async transformToStorage(plaintext, dataCtx) {
      const nonce = randomBytes(GCM_NONCE);
      const cipher = createCipheriv(algorithm, key, nonce, { authTagLength: GCM_TAG });
      cipher.setAAD(Buffer.from(dataCtx));
      return Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    },
    async transformFromStorage(stored, dataCtx) {
      if (stored.length < GCM_NONCE + GCM_TAG)
        throw new TransformError('the stored data was shorter than the required size');
      const data = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
      const decipher = createDecipheriv(algorithm, key, data.subarray(0, GCM_NONCE), { authTagLength: GCM_TAG });
      decipher.setAAD(Buffer.from(dataCtx));
      decipher.setAuthTag(data.subarray(data.length - GCM_TAG));
      try {
        return {
          data: Buffer.concat([decipher.update(data.subarray(GCM_NONCE, data.length - GCM_TAG)), decipher.final()]),
          stale: false,
        };
      } catch {
        throw new TransformError('cipher: message authentication failed');
      }
    },
  };
}

export function cbcTransformer(key: Uint8Array): Transformer {
  const algorithm = aesName(key, 'cbc') as 'aes-256-cbc';
  return {
    async transformToStorage(plaintext) {
      const iv = randomBytes(BLOCK);
      const cipher = createCipheriv(algorithm, key, iv); // PKCS#7 padding, as kube's
      return Buffer.concat([iv, cipher.update(plaintext), cipher.final()]);
    },
    async transformFromStorage(stored) {
      if (stored.length < BLOCK) throw new TransformError('the stored data was shorter than the required size');
      if ((stored.length - BLOCK) % BLOCK !== 0)
        throw new TransformError('the stored data is not a multiple of the block size');
      const data = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
      const decipher = createDecipheriv(algorithm, key, data.subarray(0, BLOCK));
      try {
        return { data: Buffer.concat([decipher.update(data.subarray(BLOCK)), decipher.final()]), stale: false };
      } catch {
        throw new TransformError('invalid padding on input');
      }
    },
  };
}
