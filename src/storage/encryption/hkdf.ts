import { createHmac } from 'node:crypto';

/**
 * HKDF-Expand (RFC 5869 section 2.3) with SHA-256, for one 32-byte block: T(1) = HMAC(PRK, info || 0x01). KMS v2
 * uses its seed as the pseudorandom key directly (expand only, no extract, as kube's hkdf.Expand), which node's
 * hkdf() (extract then expand) does not offer.
 */
export function hkdfExpandSha256(prk: Buffer, info: Buffer): Buffer {
  return createHmac('sha256', prk)
    .update(info)
    .update(Buffer.from([1]))
    .digest();
}
