/**
 * NaCl secretbox (XSalsa20-Poly1305) as kube's value/encrypt/secretbox stores it: a random 24-byte nonce, then the
 * box (16-byte Poly1305 tag and ciphertext). Node's crypto has no XSalsa20, so the cipher is @noble/ciphers'
 * (audited, dependency-free), not written here.
 */
import { randomBytes } from 'node:crypto';
import { xsalsa20poly1305 } from '@noble/ciphers/salsa.js';
import { TransformError, type Transformer } from './transformer.js';

const NONCE = 24;
const OVERHEAD = 16;

export function secretboxTransformer(key: Uint8Array): Transformer {
  if (key.length !== 32) throw new Error(`secretbox keys are 32 bytes, not ${key.length}`);
  return {
    async transformToStorage(plaintext) {
      const nonce = randomBytes(NONCE);
      return Buffer.concat([nonce, xsalsa20poly1305(key, nonce).encrypt(plaintext)]);
    },
    async transformFromStorage(stored) {
      if (stored.length < NONCE + OVERHEAD)
        throw new TransformError('the stored data was shorter than the required size');
      try {
        return { data: xsalsa20poly1305(key, stored.subarray(0, NONCE)).decrypt(stored.subarray(NONCE)), stale: false };
      } catch {
        throw new TransformError('secretbox: message authentication failed');
      }
    },
  };
}
