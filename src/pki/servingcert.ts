/**
 * The serving certificate of --tls-cert-file/--tls-private-key-file, reloaded when the files change (kube's
 * DynamicCertKeyPairContent): cert-manager renews the mounted Secret and new connections get the new certificate
 * without a restart. A pair whose key does not match its certificate, or that does not parse, is not served.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Logger } from '../log.js';
import { ReloadingFiles } from './reloading.js';

export interface ServingPair {
  cert: string;
  key: string;
}

/** The files' contents as a pair the TLS server can use; throws (naming no key material) when they are not one. */
export function servingPair([certPem, keyPem]: Buffer[]): ServingPair {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certPem);
  } catch (err) {
    throw new Error(`the certificate does not parse: ${(err as Error).message}`, { cause: err });
  }
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    // Node's message may quote the input; say only what is wrong.
    throw new Error('the private key does not parse (PEM expected)');
  }
  if (!leaf.checkPrivateKey(key))
    throw new Error(`the private key does not match the certificate (serial ${leaf.serialNumber})`);
  return { cert: certPem.toString('utf8'), key: keyPem.toString('utf8') };
}

/** What identifies a certificate in the log: subject, serial, validity and fingerprint. */
export function certificateFields(certPem: string): Record<string, string> {
  const cert = new X509Certificate(certPem);
  return {
    subject: cert.subject.replace(/\n/g, ', '),
    serial: cert.serialNumber,
    notBefore: cert.validFrom,
    notAfter: cert.validTo,
    sha256: cert.fingerprint256,
  };
}

export function reloadingServingCertificate(opts: {
  certFile: string;
  keyFile: string;
  intervalMs: number;
  log: Logger;
}): ReloadingFiles<ServingPair> {
  return new ReloadingFiles({
    what: 'serving certificate',
    files: [opts.certFile, opts.keyFile],
    parse: servingPair,
    describe: (pair) => certificateFields(pair.cert),
    intervalMs: opts.intervalMs,
    log: opts.log,
  });
}
