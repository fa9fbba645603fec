import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { Agent } from 'node:https';
import {
  ClientCertAuthenticator,
  parseCertificateBundle,
  subjectNames,
  verifyClientCertificate,
} from '../../src/auth/x509.js';
import { callAuthServer, makeCa, makeCert, startAuthServer, type AuthServer, type TestCert } from '../support/certs.js';

const DAY = 86_400_000;
let clientCa: TestCert;
let secondCa: TestCert;
let otherCa: TestCert;
let server: AuthServer;

beforeAll(async () => {
  clientCa = makeCa('client-ca');
  secondCa = makeCa('second-client-ca');
  otherCa = makeCa('other-ca');
  const bundle = `${clientCa.certPem}\n${secondCa.certPem}`;
  server = await startAuthServer(new ClientCertAuthenticator({ caPem: bundle }), [
    clientCa.certPem,
    secondCa.certPem,
    otherCa.certPem,
  ]);
});

afterAll(async () => {
  await server?.stop();
});

describe('ClientCertAuthenticator', () => {
  test('CN is the user, O values are the groups, the fingerprint is the credential id', async () => {
    const cert = makeCert({ commonName: 'alice', organizations: ['dev', 'system:masters'], issuer: clientCa });
    const reply = await callAuthServer(server, { client: cert });
    const fingerprint = new X509Certificate(cert.certPem).fingerprint256.replace(/:/g, '').toLowerCase();
    expect(reply).toMatchObject({ status: 200 });
    expect(reply.user).toEqual({
      name: 'alice',
      groups: ['dev', 'system:masters'],
      extra: { 'authentication.kubernetes.io/credential-id': [`X509SHA256=${fingerprint}`] },
    });
  });

  test('any CA of the bundle; names outside ASCII survive', async () => {
    const cert = makeCert({ commonName: 'jöhn@example.com', organizations: ['équipe'], issuer: secondCa });
    expect((await callAuthServer(server, { client: cert })).user).toMatchObject({
      name: 'jöhn@example.com',
      groups: ['équipe'],
    });
  });

  test('no certificate, or one from another CA: no opinion, so other authenticators may try', async () => {
    expect(await callAuthServer(server)).toMatchObject({ status: 200, user: null });
    const foreign = makeCert({ commonName: 'alice', issuer: otherCa });
    expect(await callAuthServer(server, { client: foreign })).toMatchObject({ status: 200, user: null });
  });

  test('expired, or not for client authentication, from the CA: an authentication error', async () => {
    const expired = makeCert({
      commonName: 'alice',
      issuer: clientCa,
      notBefore: new Date(Date.now() - 2 * DAY),
      notAfter: new Date(Date.now() - DAY),
    });
    expect(await callAuthServer(server, { client: expired })).toMatchObject({
      status: 401,
      error: expect.stringMatching(/expired/),
    });
    const serverOnly = makeCert({ commonName: 'alice', issuer: clientCa, usage: 'serverAuth' });
    expect(await callAuthServer(server, { client: serverOnly })).toMatchObject({
      status: 401,
      error: expect.stringMatching(/client authentication/),
    });
  });

  test('a connection whose certificate expires while it stays open is refused from its next request on', async () => {
    const cert = makeCert({
      commonName: 'alice',
      organizations: ['dev'],
      issuer: clientCa,
      notBefore: new Date(Date.now() - DAY),
      notAfter: new Date(Date.now() + DAY),
    });
    let now = Date.now();
    const clocked = await startAuthServer(new ClientCertAuthenticator({ caPem: clientCa.certPem, now: () => now }), [
      clientCa.certPem,
    ]);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await callAuthServer(clocked, { client: cert, agent });
      const second = await callAuthServer(clocked, { client: cert, agent });
      expect(second.clientPort).toBe(first.clientPort);
      expect([first.user, second.user]).toEqual([
        expect.objectContaining({ name: 'alice', groups: ['dev'] }),
        expect.objectContaining({ name: 'alice', groups: ['dev'] }),
      ]);
      now += 2 * DAY;
      const expired = await callAuthServer(clocked, { client: cert, agent });
      expect(expired).toMatchObject({ status: 401, error: expect.stringMatching(/has expired/) });
      now -= 3 * DAY;
      expect(await callAuthServer(clocked, { client: cert, agent })).toMatchObject({
        status: 401,
        error: expect.stringMatching(/is not valid before/),
      });
    } finally {
      agent.destroy();
      await clocked.stop();
    }
  });

  test('a certificate without a CommonName names nobody', async () => {
    const cert = makeCert({ commonName: '', issuer: clientCa });
    expect(await callAuthServer(server, { client: cert })).toMatchObject({ status: 200, user: null });
  });
});

describe('verifyClientCertificate', () => {
  test('dates, chain and usage', () => {
    const roots = parseCertificateBundle(clientCa.certPem);
    const leaf = new X509Certificate(makeCert({ commonName: 'bob', issuer: clientCa }).certPem);
    expect(verifyClientCertificate([leaf], roots)).toMatchObject({ ok: true });
    expect(verifyClientCertificate([leaf], roots, Date.now() - 2 * DAY)).toMatchObject({
      ok: false,
      failure: 'notYetValid',
    });
    expect(verifyClientCertificate([leaf], roots, Date.now() + 2 * DAY)).toMatchObject({
      ok: false,
      failure: 'expired',
    });
    expect(verifyClientCertificate([leaf], parseCertificateBundle(otherCa.certPem))).toMatchObject({
      ok: false,
      failure: 'untrusted',
    });
    // An intermediate that is not a CA cannot sign.
    const notCa = makeCert({ commonName: 'not-a-ca', issuer: clientCa });
    const below = new X509Certificate(makeCert({ commonName: 'carol', issuer: notCa }).certPem);
    expect(verifyClientCertificate([below, new X509Certificate(notCa.certPem)], roots)).toMatchObject({
      ok: false,
      failure: 'untrusted',
    });
  });

  test('subjectNames reads CN and every O', () => {
    const cert = new X509Certificate(
      makeCert({ commonName: 'dave', organizations: ['a', 'b,c'], issuer: clientCa }).certPem,
    );
    expect(subjectNames(cert)).toEqual({ commonName: 'dave', organizations: ['a', 'b,c'] });
  });
});
