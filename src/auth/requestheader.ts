/**
 * The front proxy's identity headers (kube's headerrequest authenticator behind its x509 verifier): kube-apiserver
 * authenticates the user, then calls us over TLS with its --proxy-client-cert-file certificate and X-Remote-User,
 * X-Remote-Uid, X-Remote-Group and X-Remote-Extra-* headers. The headers are believed only on a connection whose
 * client certificate chains to --requestheader-client-ca-file, allows client authentication and, when
 * --requestheader-allowed-names is set, has one of those CommonNames. Anything else (no certificate, another CA,
 * another name, expired) leaves the headers unread: a forged X-Remote-User authenticates nobody.
 */
import type { IncomingMessage } from 'node:http';
import type { UserInfo } from '../apimachinery/user.js';
import type { Authenticator } from './types.js';
import { ClientCertificateVerifier, parseCertificateBundle, peerCertificates, subjectNames } from './x509.js';

export interface RequestHeaderOptions {
  /** PEM bundle of the CAs that sign the front proxy's client certificate. */
  clientCaPem: string;
  /** CommonNames the front proxy's certificate may have; empty: any. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
  /** For tests: the current time in ms. */
  now?: () => number;
}

/** Requests the front proxy forwarded: its X-Forwarded-For is believed for the audit log's sourceIPs. */
const forwardedByFrontProxy = new WeakSet<IncomingMessage>();

export function authenticatedByFrontProxy(req: IncomingMessage): boolean {
  return forwardedByFrontProxy.has(req);
}

export class RequestHeaderAuthenticator implements Authenticator {
  private readonly verifier: ClientCertificateVerifier;
  private readonly allowedNames: string[];
  private readonly usernameHeaders: string[];
  private readonly uidHeaders: string[];
  private readonly groupHeaders: string[];
  private readonly extraHeaderPrefixes: string[];
  private readonly now: () => number;

  constructor(opts: RequestHeaderOptions) {
    this.verifier = new ClientCertificateVerifier(parseCertificateBundle(opts.clientCaPem, 'request header client CA'));
    this.allowedNames = opts.allowedNames.map((n) => n.trim()).filter(Boolean);
    this.usernameHeaders = headerNames(opts.usernameHeaders);
    this.uidHeaders = headerNames(opts.uidHeaders);
    this.groupHeaders = headerNames(opts.groupHeaders);
    this.extraHeaderPrefixes = headerNames(opts.extraHeaderPrefixes);
    this.now = opts.now ?? Date.now;
  }

  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    if (!this.fromFrontProxy(req)) return undefined;
    const headers = req.headersDistinct;
    const name = firstValue(headers, this.usernameHeaders);
    if (!name) return undefined;
    const uid = firstValue(headers, this.uidHeaders);
    const groups = this.groupHeaders.flatMap((h) => (headers[h] ?? []).filter((v) => v.length > 0));
    const extra: Record<string, string[]> = {};
    for (const prefix of this.extraHeaderPrefixes) {
      for (const [header, values] of Object.entries(headers)) {
        if (!header.startsWith(prefix) || !values) continue;
        const key = unescapeExtraKey(header.slice(prefix.length));
        (extra[key] ??= []).push(...values);
      }
    }
    this.clearHeaders(req);
    forwardedByFrontProxy.add(req);
    const user: UserInfo = { name, groups };
    if (uid) user.uid = uid;
    if (Object.keys(extra).length) user.extra = extra;
    return user;
  }

  /** Verifies the connection's client certificate against the CA and the allowed names. */
  private fromFrontProxy(req: IncomingMessage): boolean {
    const presented = peerCertificates(req);
    if (!presented) return false;
    const result = this.verifier.verify(presented, this.now());
    if (!result.ok) return false;
    if (!this.allowedNames.length) return true;
    return this.allowedNames.includes(subjectNames(result.chain[0]).commonName);
  }

  /** Removes every identity header, so nothing downstream reads them again (kube's ClearAuthenticationHeaders). */
  private clearHeaders(req: IncomingMessage): void {
    const exact = new Set([...this.usernameHeaders, ...this.uidHeaders, ...this.groupHeaders]);
    const isIdentity = (name: string) => {
      const lower = name.toLowerCase();
      return exact.has(lower) || this.extraHeaderPrefixes.some((p) => lower.startsWith(p));
    };
    // Read both views first: Node builds them lazily from rawHeaders and then keeps them.
    const { headers, headersDistinct } = req;
    for (const name of Object.keys(headers)) if (isIdentity(name)) delete headers[name];
    for (const name of Object.keys(headersDistinct)) if (isIdentity(name)) delete headersDistinct[name];
    const raw = req.rawHeaders;
    const kept: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) if (!isIdentity(raw[i])) kept.push(raw[i], raw[i + 1]);
    raw.splice(0, raw.length, ...kept);
  }
}

/** Node lowercases header names; configured names are matched case-insensitively, as Go's canonical keys are. */
function headerNames(names: string[]): string[] {
  return names.map((n) => n.trim().toLowerCase()).filter(Boolean);
}

function firstValue(headers: NodeJS.Dict<string[]>, names: string[]): string | undefined {
  for (const name of names) {
    const value = headers[name]?.[0];
    if (value) return value;
  }
  return undefined;
}

/**
 * kube's unescapeExtraKey over the lowercased rest of the header name: %-decoded (url.PathUnescape), or kept as
 * is when the escapes are malformed. Header names are already lowercase in Node.
 */
export function unescapeExtraKey(encoded: string): string {
  const lower = encoded.toLowerCase();
  if (/%(?![0-9a-f]{2})/i.test(lower)) return lower;
  try {
    return decodeURIComponent(lower);
  } catch {
    // Escapes that do not form UTF-8: Go keeps the bytes; keep the text as sent instead.
    return lower;
  }
}
