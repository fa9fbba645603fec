import { test, expect, beforeAll, afterAll } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { promises as fs } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import forge from 'node-forge';
import path from 'node:path';
import { ensureServingCertificate } from '../../src/pki/selfsigned.js';

let tmp: string;

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'selfsigned-test-'));
});

afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  return path.join(tmp, name);
}

test('serving certificate chains to the CA and carries the SANs', async () => {
  const certDir = await freshDir('chain');
  const { certPem, keyPem, caPem } = await ensureServingCertificate({
    certDir,
    hosts: ['api.example.test', '10.1.2.3', 'fd00::1'],
  });
  const ca = new X509Certificate(caPem);
  const cert = new X509Certificate(certPem);

  expect(ca.ca).toBe(true);
  expect(ca.subject).toMatch(/^CN=platform-management-ca@\d+$/);
  expect(ca.verify(ca.publicKey)).toBe(true);
  expect(cert.ca).toBe(false);
  expect(cert.subject).toBe('CN=localhost');
  expect(cert.checkIssued(ca)).toBe(true);
  expect(cert.verify(ca.publicKey)).toBe(true);
  expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // extKeyUsage serverAuth
  expect(keyPem).toMatch(/PRIVATE KEY/);
  expect(BigInt('0x' + cert.serialNumber)).toBeGreaterThan(0n);

  for (const host of ['localhost', 'api.example.test']) {
    expect(cert.checkHost(host, { subject: 'never' })).toBe(host);
  }
  for (const ip of ['127.0.0.1', '::1', '10.1.2.3', 'fd00::1']) {
    expect(cert.checkIP(ip)).toBe(ip);
  }
  expect(cert.checkHost('other.example.test')).toBeUndefined();

  // Roughly one year for the serving cert, ten for the CA.
  const days = (x: X509Certificate) => (Date.parse(x.validTo) - Date.now()) / 86_400_000;
  expect(days(cert)).toBeGreaterThan(360);
  expect(days(cert)).toBeLessThan(370);
  expect(days(ca)).toBeGreaterThan(3600);

  const st = async (f: string) => (await fs.stat(path.join(certDir, f))).mode & 0o777;
  expect(await st('.')).toBe(0o700);
  expect(await st('ca.key')).toBe(0o600);
  expect(await st('apiserver.key')).toBe(0o600);
  expect((await fs.readdir(certDir)).sort()).toEqual(['apiserver.crt', 'apiserver.key', 'ca.crt', 'ca.key']);
});

test('names are UTF8String, which Go accepts with an @ in the CA name', async () => {
  const { certPem, caPem } = await ensureServingCertificate({ certDir: await freshDir('utf8'), hosts: [] });
  const ca = forge.pki.certificateFromPem(caPem);
  const cert = forge.pki.certificateFromPem(certPem);
  for (const name of [ca.subject, ca.issuer, cert.subject, cert.issuer]) {
    expect(name.getField('CN').valueTagClass).toBe(forge.asn1.Type.UTF8);
  }
  // Byte-identical issuer and CA subject, which chain building compares.
  expect(cert.issuer.hash).toBe(ca.subject.hash);
});

test('files are reused across calls', async () => {
  const certDir = await freshDir('reuse');
  const first = await ensureServingCertificate({ certDir, hosts: ['a.example.test'] });
  const second = await ensureServingCertificate({ certDir, hosts: ['a.example.test', '127.0.0.1'] });
  expect(second).toEqual(first);
});

test('a new host re-issues the serving certificate from the same CA', async () => {
  const certDir = await freshDir('newhost');
  const first = await ensureServingCertificate({ certDir, hosts: [] });
  const second = await ensureServingCertificate({ certDir, hosts: ['b.example.test', '192.0.2.7'] });
  expect(second.caPem).toBe(first.caPem);
  expect(second.certPem).not.toBe(first.certPem);
  expect(second.keyPem).not.toBe(first.keyPem);
  const cert = new X509Certificate(second.certPem);
  expect(cert.verify(new X509Certificate(first.caPem).publicKey)).toBe(true);
  expect(cert.checkHost('b.example.test')).toBe('b.example.test');
  expect(cert.checkIP('192.0.2.7')).toBe('192.0.2.7');
  expect(await fs.readFile(path.join(certDir, 'apiserver.crt'), 'utf8')).toBe(second.certPem);
});

test('an unreadable CA makes a fresh CA and serving certificate', async () => {
  const certDir = await freshDir('badca');
  const first = await ensureServingCertificate({ certDir, hosts: [] });
  await fs.writeFile(path.join(certDir, 'ca.key'), 'garbage');
  const second = await ensureServingCertificate({ certDir, hosts: [] });
  expect(second.caPem).not.toBe(first.caPem);
  expect(new X509Certificate(second.certPem).verify(new X509Certificate(second.caPem).publicKey)).toBe(true);
});

test('a TLS client trusting only the CA completes a handshake', async () => {
  const { certPem, keyPem, caPem } = await ensureServingCertificate({ certDir: await freshDir('tls'), hosts: [] });
  const server = https.createServer({ cert: certPem, key: keyPem }, (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const body = await new Promise<string>((resolve, reject) => {
      const req = https.get(
        { host: '127.0.0.1', port, path: '/', ca: caPem, servername: 'localhost', agent: false },
        (res) => {
          let data = '';
          res.on('data', (c: Buffer) => (data += c.toString()));
          res.on('end', () => resolve(data));
        },
      );
      req.on('error', reject);
    });
    expect(body).toBe('ok');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
