/**
 * Self-signed serving certificate, like kube-apiserver's fallback when no --tls-cert-file is given:
 * a long-lived local CA plus a shorter-lived serving certificate signed by it. The CA is kept
 * across restarts so kubeconfigs that embed it keep working when the serving cert is re-issued.
 */
import { generateKeyPairSync, randomBytes, X509Certificate, createPrivateKey } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import type Forge from 'node-forge';
import { lazyRequire } from '../lazyrequire.js';
import { signCertificate } from './forgesign.js';

export interface ServingCertificate {
  certPem: string;
  keyPem: string;
  caPem: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CA_VALIDITY_DAYS = 3650;
const SERVING_VALIDITY_DAYS = 365;
// Re-issue early so a long-running server never crosses the expiry date unnoticed.
const RENEW_BEFORE_MS = 30 * DAY_MS;
// Tolerate small clock differences between this machine and clients.
const BACKDATE_MS = 5 * 60 * 1000;
const ALWAYS_HOSTS = ['localhost', '127.0.0.1', '::1'];
// Loaded only when a certificate is issued: a restart with valid ones on disk never needs it.
const loadForge = lazyRequire<typeof Forge>('node-forge');

export async function ensureServingCertificate(opts: {
  certDir: string;
  hosts: string[];
}): Promise<ServingCertificate> {
  const files = {
    caCert: path.join(opts.certDir, 'ca.crt'),
    caKey: path.join(opts.certDir, 'ca.key'),
    cert: path.join(opts.certDir, 'apiserver.crt'),
    key: path.join(opts.certDir, 'apiserver.key'),
  };
  const hosts = normalizeHosts([...ALWAYS_HOSTS, ...opts.hosts]);
  await fs.mkdir(opts.certDir, { recursive: true, mode: 0o700 });

  let ca = await loadCa(files.caCert, files.caKey);
  if (!ca) {
    ca = createCa();
    await writeAtomic(files.caKey, ca.keyPem, 0o600);
    await writeAtomic(files.caCert, ca.certPem, 0o644);
  }

  const existing = await loadServing(files.cert, files.key, ca.certPem, hosts);
  if (existing) return { ...existing, caPem: ca.certPem };

  const serving = createServing(ca, hosts);
  await writeAtomic(files.key, serving.keyPem, 0o600);
  await writeAtomic(files.cert, serving.certPem, 0o644);
  return { ...serving, caPem: ca.certPem };
}

interface Pair {
  certPem: string;
  keyPem: string;
}

/** Dedupes and splits hosts; bracketed IPv6 ("[::1]") is accepted since it appears in URLs. */
function normalizeHosts(raw: string[]): { dns: string[]; ips: string[] } {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const entry of raw) {
    const h = entry.trim().replace(/^\[(.*)\]$/, '$1');
    if (!h) continue;
    if (isIP(h)) ips.add(h);
    else dns.add(h.toLowerCase());
  }
  return { dns: [...dns], ips: [...ips] };
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Returns the stored CA if it is readable, matches its key and is not about to expire. */
async function loadCa(certFile: string, keyFile: string): Promise<Pair | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(certFile), readOptional(keyFile)]);
  if (!certPem || !keyPem) return undefined;
  try {
    const cert = new X509Certificate(certPem);
    if (!cert.ca || !cert.checkPrivateKey(createPrivateKey(keyPem))) return undefined;
    // A CA near expiry cannot sign a useful serving cert: start over rather than fail later.
    if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return undefined;
    return { certPem, keyPem };
  } catch {
    return undefined;
  }
}

/** Returns the stored serving pair if it is signed by this CA, covers every host and is not expiring. */
async function loadServing(
  certFile: string,
  keyFile: string,
  caPem: string,
  hosts: { dns: string[]; ips: string[] },
): Promise<Pair | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(certFile), readOptional(keyFile)]);
  if (!certPem || !keyPem) return undefined;
  try {
    const cert = new X509Certificate(certPem);
    if (!cert.verify(new X509Certificate(caPem).publicKey)) return undefined;
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return undefined;
    if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return undefined;
    // subject 'never': only SANs count, as in Go's TLS client.
    if (hosts.dns.some((h) => cert.checkHost(h, { subject: 'never' }) === undefined)) return undefined;
    if (hosts.ips.some((ip) => cert.checkIP(ip) === undefined)) return undefined;
    return { certPem, keyPem };
  } catch {
    return undefined;
  }
}

/** RSA keys from node:crypto: native and fast, unlike forge's pure-JS generator. */
function newKeyPair(): { publicKey: Forge.pki.rsa.PublicKey; keyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { publicKey: loadForge().pki.publicKeyFromPem(publicKey), keyPem: privateKey };
}

/** 128-bit random serial; top bit cleared so the DER INTEGER is positive, next bit set so it is minimal. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x40;
  return bytes.toString('hex');
}

function validity(cert: Forge.pki.Certificate, days: number): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + days * DAY_MS);
}

/**
 * forge writes names as PrintableString by default, which cannot hold '@'; Go (kubectl, helm)
 * then rejects the whole certificate. UTF8String is what Go itself writes for such names.
 */
function commonName(value: string): Forge.pki.CertificateField[] {
  // @types/node-forge mistypes valueTagClass as asn1.Class; forge reads it as an asn1.Type.
  return [{ name: 'commonName', value, valueTagClass: loadForge().asn1.Type.UTF8 as unknown as Forge.asn1.Class }];
}

function createCa(): Pair {
  const forge = loadForge();
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  validity(cert, CA_VALIDITY_DAYS);
  const subject = commonName(`platform-management-ca@${Math.floor(Date.now() / 1000)}`);
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  signCertificate(forge, cert, keys.keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

function createServing(ca: Pair, hosts: { dns: string[]; ips: string[] }): Pair {
  const forge = loadForge();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  validity(cert, SERVING_VALIDITY_DAYS);
  cert.setSubject(commonName('localhost'));
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectKeyIdentifier' },
    // forge's `keyIdentifier: true` would hash this cert's own key, so pass the CA's explicitly.
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
    {
      name: 'subjectAltName',
      altNames: [
        ...hosts.dns.map((value) => ({ type: 2, value })), // dNSName
        ...hosts.ips.map((ip) => ({ type: 7, ip })), // iPAddress
      ],
    },
  ]);
  signCertificate(forge, cert, ca.keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

/** Write then rename, so a crash never leaves a truncated key or certificate behind. */
async function writeAtomic(file: string, data: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await fs.writeFile(tmp, data, { mode });
  await fs.rename(tmp, file);
}
