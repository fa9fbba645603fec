/**
 * Client certificates, as kube-apiserver's x509 authenticator (--client-ca-file): the TLS client certificate must
 * chain to the CA bundle, be within its validity dates and allow client authentication; its CommonName is the user,
 * its Organizations the groups. The verification helpers here are shared with the request-header authenticator.
 */
import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type Forge from 'node-forge';
import type { UserInfo } from '../apimachinery/user.js';
import { lazyRequire } from '../lazyrequire.js';
import { AuthenticationError, type Authenticator } from './types.js';

const loadForge = lazyRequire<typeof Forge>('node-forge');

/** extendedKeyUsage values Go's x509.Verify accepts for ExtKeyUsageClientAuth. */
const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
const ANY_EXTENDED_KEY_USAGE_OID = '2.5.29.37.0';
const MAX_CHAIN_LENGTH = 8;
/** kube's user.CredentialIDKey; the x509 authenticator sets it to "X509SHA256=<fingerprint>". */
export const CREDENTIAL_ID_KEY = 'authentication.kubernetes.io/credential-id';

/** Every certificate of a PEM bundle; throws when there is none or one does not parse. */
export function parseCertificateBundle(pem: string, what = 'CA bundle'): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) throw new Error(`${what} holds no PEM certificate`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`${what}: certificate ${i + 1} does not parse: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** What each connection presented, read once: Node hands out the sent chain only on the first read. */
const presentedByConnection = new WeakMap<object, X509Certificate[] | undefined>();

/**
 * The one object of a request's connection: its socket, or over HTTP/2 its session (there req.socket is a stand-in
 * made for each stream, which passes on the connection's getPeerCertificate).
 */
function connectionOf(req: IncomingMessage): object {
  return (req as IncomingMessage & { stream?: { session?: object } }).stream?.session ?? req.socket;
}

/**
 * The certificates the TLS client presented, leaf first, then the intermediates it sent; undefined when the
 * connection is not TLS or carries no client certificate. The server must ask for one (`requestCert: true`).
 */
export function peerCertificates(req: IncomingMessage): X509Certificate[] | undefined {
  const socket = req.socket as Partial<TLSSocket> | undefined;
  if (!socket || typeof socket.getPeerCertificate !== 'function') return undefined;
  const connection = connectionOf(req);
  if (presentedByConnection.has(connection)) return presentedByConnection.get(connection);
  const chain = readPeerChain(socket as TLSSocket);
  presentedByConnection.set(connection, chain);
  return chain;
}

function readPeerChain(socket: TLSSocket): X509Certificate[] | undefined {
  // getPeerCertificate(true) links what the peer sent through issuerCertificate (a self-signed end links to
  // itself). Read it before anything else: after getPeerX509Certificate() Node no longer returns the links.
  let detailed: DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  if (!detailed?.raw) return undefined;
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  while (detailed?.raw && chain.length < MAX_CHAIN_LENGTH) {
    const cert = new X509Certificate(detailed.raw);
    if (seen.has(cert.fingerprint256)) break;
    seen.add(cert.fingerprint256);
    chain.push(cert);
    detailed = detailed.issuerCertificate;
  }
  return chain;
}

export type VerifyFailure = 'untrusted' | 'expired' | 'notYetValid' | 'usage';

export type VerifyResult =
  { ok: true; chain: X509Certificate[] } | { ok: false; failure: VerifyFailure; message: string };

/**
 * Go's `leaf.Verify(x509.VerifyOptions{Roots, Intermediates, KeyUsages: [ClientAuth]})`: a chain from the leaf
 * through presented intermediates (which must be CAs) to a root of the bundle, checked signature by signature;
 * every certificate of the chain within its dates; and, where a certificate restricts extendedKeyUsage, clientAuth
 * (or anyExtendedKeyUsage) among them.
 */
export function verifyClientCertificate(
  presented: X509Certificate[],
  roots: X509Certificate[],
  now = Date.now(),
): VerifyResult {
  const [leaf, ...intermediates] = presented;
  const chain = buildChain(leaf, intermediates, roots);
  if (!chain)
    return { ok: false, failure: 'untrusted', message: `certificate ${describe(leaf)} is not signed by a trusted CA` };
  for (const cert of chain) {
    if (now < Date.parse(cert.validFrom))
      return {
        ok: false,
        failure: 'notYetValid',
        message: `certificate ${describe(cert)} is not valid before ${cert.validFrom}`,
      };
    if (now > Date.parse(cert.validTo))
      return {
        ok: false,
        failure: 'expired',
        message: `certificate ${describe(cert)} has expired (valid until ${cert.validTo})`,
      };
  }
  for (const cert of chain) {
    const usages = extendedKeyUsages(cert);
    if (usages && !usages.includes(CLIENT_AUTH_OID) && !usages.includes(ANY_EXTENDED_KEY_USAGE_OID)) {
      return {
        ok: false,
        failure: 'usage',
        message: `certificate ${describe(cert)} is not allowed for client authentication`,
      };
    }
  }
  return { ok: true, chain };
}

/**
 * verifyClientCertificate, remembered per connection (whose presented chain peerCertificates reads once) for one CA
 * bundle: the signatures are checked once per connection, the dates at every request, so a certificate that expires
 * while its connection stays open is refused from then on. A failure is not remembered.
 */
export class ClientCertificateVerifier {
  private readonly verified = new WeakMap<X509Certificate[], { chain: X509Certificate[]; from: number; to: number }>();

  constructor(private readonly roots: X509Certificate[]) {}

  verify(presented: X509Certificate[], now: number): VerifyResult {
    const known = this.verified.get(presented);
    if (known && now >= known.from && now <= known.to) return { ok: true, chain: known.chain };
    const result = verifyClientCertificate(presented, this.roots, now);
    if (result.ok) {
      const from = Math.max(...result.chain.map((c) => Date.parse(c.validFrom)));
      const to = Math.min(...result.chain.map((c) => Date.parse(c.validTo)));
      this.verified.set(presented, { chain: result.chain, from, to });
    }
    return result;
  }
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

function buildChain(
  leaf: X509Certificate,
  intermediates: X509Certificate[],
  roots: X509Certificate[],
): X509Certificate[] | undefined {
  const chain = [leaf];
  let current = leaf;
  while (chain.length <= MAX_CHAIN_LENGTH) {
    // A bundle may hold the presented certificate itself (Go accepts a leaf that is one of the roots).
    if (roots.some((r) => r.fingerprint256 === current.fingerprint256)) return chain;
    const root = roots.find((r) => issuedBy(current, r));
    if (root) return [...chain, root];
    const next = intermediates.find((i) => i.ca && !chain.includes(i) && issuedBy(current, i));
    if (!next) return undefined;
    chain.push(next);
    current = next;
  }
  return undefined;
}

/** OIDs of the extendedKeyUsage extension; undefined when the certificate has none (no restriction). */
function extendedKeyUsages(cert: X509Certificate): string[] | undefined {
  // Node 20 calls it keyUsage; later versions add extKeyUsage.
  const c = cert as X509Certificate & { extKeyUsage?: string[]; keyUsage?: string[] };
  const usages = c.extKeyUsage ?? c.keyUsage;
  return Array.isArray(usages) ? usages : undefined;
}

function describe(cert: X509Certificate): string {
  const { commonName } = subjectNames(cert);
  return commonName ? `"${commonName}"` : `with serial ${cert.serialNumber}`;
}

/** Each certificate's subject names, decoded once (a connection's certificate serves all its requests). */
const namesByCertificate = new WeakMap<X509Certificate, { commonName: string; organizations: string[] }>();

/** Subject CommonName (the last one, as Go's pkix.Name keeps) and every Organization, decoded from the DER. */
export function subjectNames(cert: X509Certificate): { commonName: string; organizations: string[] } {
  let names = namesByCertificate.get(cert);
  if (!names) namesByCertificate.set(cert, (names = decodeSubjectNames(cert)));
  return { commonName: names.commonName, organizations: [...names.organizations] };
}

function decodeSubjectNames(cert: X509Certificate): { commonName: string; organizations: string[] } {
  const out = { commonName: '', organizations: [] as string[] };
  const forge = loadForge();
  try {
    const asn1 = forge.asn1.fromDer(forge.util.createBuffer(cert.raw.toString('binary')));
    const tbs = (asn1.value as Forge.asn1.Asn1[])[0].value as Forge.asn1.Asn1[];
    // [0] EXPLICIT version is optional; then serial, signature, issuer, validity, subject.
    const offset = tbs[0].tagClass === forge.asn1.Class.CONTEXT_SPECIFIC ? 1 : 0;
    const subject = tbs[offset + 4];
    for (const attr of (forge.pki as unknown as RdnReader).RDNAttributesAsArray(subject)) {
      const value = decodeString(attr.value, attr.valueTagClass);
      if (value === undefined) continue;
      if (attr.type === '2.5.4.3') out.commonName = value;
      else if (attr.type === '2.5.4.10') out.organizations.push(value);
    }
  } catch {
    // An unreadable subject names nobody.
  }
  return out;
}

/** forge.pki.RDNAttributesAsArray, which @types/node-forge does not declare. */
interface RdnReader {
  RDNAttributesAsArray(rdn: Forge.asn1.Asn1): Array<{ type: string; value: string; valueTagClass: number }>;
}

/** ASN.1 string types to text (forge hands over the raw bytes as a binary string). */
function decodeString(bytes: string, tag: number): string | undefined {
  const forge = loadForge();
  const T = forge.asn1.Type;
  switch (tag) {
    case T.UTF8:
      return forge.util.decodeUtf8(bytes);
    case T.BMPSTRING:
      return Buffer.from(bytes, 'binary').swap16().toString('utf16le');
    case T.PRINTABLESTRING:
    case T.IA5STRING:
    case 20: // TeletexString
    case 26: // VisibleString
      return Buffer.from(bytes, 'binary').toString('latin1');
    case 28: {
      // UniversalString: UTF-32BE
      const buf = Buffer.from(bytes, 'binary');
      let text = '';
      for (let i = 0; i + 3 < buf.length; i += 4) text += String.fromCodePoint(buf.readUInt32BE(i));
      return text;
    }
    default:
      return undefined;
  }
}

export interface ClientCertAuthenticatorOptions {
  /** PEM bundle of the CAs whose client certificates are accepted (the contents of --client-ca-file). */
  caPem: string;
  /** For tests: the current time in ms. */
  now?: () => number;
}

/**
 * A certificate from another CA (or none) gives undefined, so other authenticators may still accept the request;
 * a certificate from the CA that is expired, not yet valid or not for client authentication is an
 * AuthenticationError; a good one without a CommonName gives undefined (as kube's CommonNameUserConversion).
 */
export class ClientCertAuthenticator implements Authenticator {
  private readonly verifier: ClientCertificateVerifier;
  private readonly now: () => number;

  constructor(opts: ClientCertAuthenticatorOptions) {
    this.verifier = new ClientCertificateVerifier(parseCertificateBundle(opts.caPem, 'client CA'));
    this.now = opts.now ?? Date.now;
  }

  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const presented = peerCertificates(req);
    if (!presented) return undefined;
    const result = this.verifier.verify(presented, this.now());
    if (!result.ok) {
      if (result.failure === 'untrusted') return undefined;
      throw new AuthenticationError(`verifying client certificate failed: ${result.message}`);
    }
    const leaf = result.chain[0];
    const { commonName, organizations } = subjectNames(leaf);
    if (!commonName) return undefined;
    return {
      name: commonName,
      groups: organizations,
      extra: { [CREDENTIAL_ID_KEY]: [`X509SHA256=${leaf.fingerprint256.replace(/:/g, '').toLowerCase()}`] },
    };
  }
}
