/**
 * SHA-256 with RSA signatures for the certificates and certificate requests node-forge builds, made by node:crypto
 * (OpenSSL) instead of forge's own RSA. forge's is JavaScript: tens of milliseconds of the event loop a signature in
 * a plain Node process, and seconds inside a VM context on Node 21 and later (its jsbn picks its slowest arithmetic
 * when a global `navigator` exists). forge still writes the ASN.1 around the signature, as its own sign() would.
 */
import { sign, type KeyLike } from 'node:crypto';
import type Forge from 'node-forge';

/** forge's builders of the signed part (its sign() uses them), missing from @types/node-forge. */
interface ToBeSigned {
  getTBSCertificate(cert: Forge.pki.Certificate): Forge.asn1.Asn1;
  getCertificationRequestInfo(csr: Forge.pki.CertificateSigningRequest): Forge.asn1.Asn1;
}

/** Signs `cert` with `key` (an RSA private key: PEM or KeyObject). */
export function signCertificate(forge: typeof Forge, cert: Forge.pki.Certificate, key: KeyLike): void {
  cert.signatureOid = cert.siginfo.algorithmOid = forge.pki.oids.sha256WithRSAEncryption;
  cert.tbsCertificate = (forge.pki as unknown as ToBeSigned).getTBSCertificate(cert);
  cert.signature = rsaSha256(forge, cert.tbsCertificate, key);
}

/** Signs `csr` with `key` (the private key of the request's public key). */
export function signCertificationRequest(
  forge: typeof Forge,
  csr: Forge.pki.CertificateSigningRequest,
  key: KeyLike,
): void {
  csr.signatureOid = csr.siginfo.algorithmOid = forge.pki.oids.sha256WithRSAEncryption;
  const info = (forge.pki as unknown as ToBeSigned).getCertificationRequestInfo(csr);
  csr.certificationRequestInfo = info;
  csr.signature = rsaSha256(forge, info, key);
}

/** forge keeps DER and signatures as binary strings. */
function rsaSha256(forge: typeof Forge, signed: Forge.asn1.Asn1, key: KeyLike): string {
  const der = Buffer.from(forge.asn1.toDer(signed).getBytes(), 'binary');
  return sign('sha256', der, key).toString('binary');
}
