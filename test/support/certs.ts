/**
 * Certificates for TLS tests (node-forge, RSA keys from node:crypto), and a real HTTPS server that asks for
 * client certificates and runs an authenticator on each request.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createServer, request, type Agent, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import forge from 'node-forge';
import { signCertificate } from '../../src/pki/forgesign.js';
import { AuthenticationError, type Authenticator } from '../../src/auth/types.js';

export interface TestCert {
  certPem: string;
  keyPem: string;
}

export interface CertOptions {
  commonName: string;
  organizations?: string[];
  /** Signs with this CA; without it the certificate is self-signed. */
  issuer?: TestCert;
  isCa?: boolean;
  /** extendedKeyUsage; 'none' leaves the extension out. Default clientAuth (serverAuth for `ips`). */
  usage?: 'clientAuth' | 'serverAuth' | 'none';
  ips?: string[];
  notBefore?: Date;
  notAfter?: Date;
}

const DAY = 24 * 60 * 60 * 1000;

export function makeCert(opts: CertOptions): TestCert {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  cert.serialNumber = serial.toString('hex');
  cert.validity.notBefore = opts.notBefore ?? new Date(Date.now() - 60_000);
  cert.validity.notAfter = opts.notAfter ?? new Date(Date.now() + DAY);
  const utf8 = forge.asn1.Type.UTF8 as unknown as forge.asn1.Class;
  cert.setSubject([
    { name: 'commonName', value: opts.commonName, valueTagClass: utf8 },
    ...(opts.organizations ?? []).map((value) => ({ name: 'organizationName', value, valueTagClass: utf8 })),
  ]);
  const issuerCert = opts.issuer ? forge.pki.certificateFromPem(opts.issuer.certPem) : cert;
  cert.setIssuer(opts.issuer ? issuerCert.subject.attributes : cert.subject.attributes);
  const usage = opts.usage ?? (opts.ips ? 'serverAuth' : 'clientAuth');
  const extensions: any[] = opts.isCa
    ? [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
      ]
    : [
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      ];
  if (!opts.isCa && usage !== 'none') extensions.push({ name: 'extKeyUsage', [usage]: true });
  if (opts.ips) extensions.push({ name: 'subjectAltName', altNames: opts.ips.map((ip) => ({ type: 7, ip })) });
  cert.setExtensions(extensions);
  signCertificate(forge, cert, opts.issuer ? opts.issuer.keyPem : privateKey);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: privateKey };
}

export const makeCa = (commonName: string) => makeCert({ commonName, isCa: true });

export interface AuthServer {
  url: string;
  /** The CA of the serving certificate, for clients. */
  caPem: string;
  stop(): Promise<void>;
}

export interface AuthReply {
  status: number;
  /** The user, or null when the authenticator had nothing to say. */
  user?: unknown;
  error?: string;
  /** The request headers left after authentication. */
  headers?: Record<string, unknown>;
  rawHeaders?: string[];
  /** The client's port as the server saw it, to tell a reused connection. */
  clientPort?: number;
}

/** HTTPS on loopback with requestCert and the given client CAs; each request answers what `authenticator` made of it. */
export async function startAuthServer(authenticator: Authenticator, clientCaPems: string[]): Promise<AuthServer> {
  const ca = makeCa('test-serving-ca');
  const serving = makeCert({ commonName: 'localhost', issuer: ca, ips: ['127.0.0.1'] });
  const server: Server = createServer(
    { cert: serving.certPem, key: serving.keyPem, ca: clientCaPems, requestCert: true, rejectUnauthorized: false },
    async (req: IncomingMessage, res) => {
      let reply: Omit<AuthReply, 'status'>;
      try {
        const user = await authenticator.authenticate(req);
        res.statusCode = 200;
        reply = {
          user: user ?? null,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          clientPort: req.socket.remotePort,
        };
      } catch (err) {
        res.statusCode = err instanceof AuthenticationError ? 401 : 500;
        reply = { error: (err as Error).message };
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(reply));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caPem: ca.certPem,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** GET / with an optional client certificate (and chain) and headers, given as [name, value] pairs so they may repeat. */
export function callAuthServer(
  server: AuthServer,
  opts: { client?: TestCert; chain?: string[]; headers?: Array<[string, string]>; agent?: Agent } = {},
): Promise<AuthReply> {
  return new Promise((resolve, reject) => {
    // Repeated names become one array value: Node then sends one header line per value.
    const headers: Record<string, string[]> = {};
    for (const [name, value] of opts.headers ?? []) (headers[name] ??= []).push(value);
    const req = request(
      `${server.url}/`,
      {
        method: 'GET',
        ca: server.caPem,
        cert: opts.client ? [opts.client.certPem, ...(opts.chain ?? [])].join('\n') : undefined,
        key: opts.client?.keyPem,
        headers,
        agent: opts.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, ...JSON.parse(text) });
          } catch {
            reject(new Error(`HTTP ${res.statusCode}: ${text}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
