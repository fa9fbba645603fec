/**
 * The host-cluster stand-in as a virtual cluster that signs CertificateSigningRequests (test/support/hostcluster.ts),
 * driven as a server would drive a cluster: client-node's CertificatesV1Api with the kubeconfig of kubeconfigText().
 *
 * - an approved kubernetes.io/kube-apiserver-client request gets a client certificate from the CA that the
 *   kubeconfig trusts, for the requested subject and key, lasting expirationSeconds (capped by the cluster's
 *   signing duration; one year without it);
 * - what kube refuses at create (422 with the field, 403 for system:masters) and what its signer fails later;
 * - what never gets a certificate: denied requests, other signers, a stand-in whose signer is off;
 * - the REST around it: generateName, AlreadyExists, get, list, delete, 404 approvals, outages, request counts.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ApiException, CertificatesV1Api, KubeConfig, type V1CertificateSigningRequest } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { signCertificationRequest } from '../../src/pki/forgesign.js';
import {
  KUBE_APISERVER_CLIENT_SIGNER,
  KUBECONFIG_GROUPS,
  KUBECONFIG_USERNAME,
  startHostCluster,
  type HostClusterStandIn,
} from '../support/hostcluster.js';
import { waitFor } from '../support/wait.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const YEAR_MS = 365 * 24 * HOUR_MS;
const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
const CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];

interface Request {
  keyPem: string;
  /** spec.request: base64 of the PEM. */
  request: string;
}

function rsaKeyPem(): string {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  }).privateKey;
}

/** A PKCS#10 request for CN=cn, O=orgs from a fresh key; signed by `signWith` instead to spoil the signature. */
function certificateRequest(cn: string, orgs: string[] = [], signWith?: string): Request {
  const keyPem = rsaKeyPem();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  csr.setSubject([{ name: 'commonName', value: cn }, ...orgs.map((value) => ({ name: 'organizationName', value }))]);
  signCertificationRequest(forge, csr, signWith ?? keyPem);
  return { keyPem, request: Buffer.from(forge.pki.certificationRequestToPem(csr)).toString('base64') };
}

function clientOf(host: HostClusterStandIn): CertificatesV1Api {
  const kc = new KubeConfig();
  kc.loadFromString(host.kubeconfigText());
  return kc.makeApiClient(CertificatesV1Api);
}

function csrBody(name: string, request: string, spec: Record<string, unknown> = {}): V1CertificateSigningRequest {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: { request, signerName: KUBE_APISERVER_CLIENT_SIGNER, usages: CLIENT_USAGES, ...spec },
  };
}

/** What an approver does: read, add the condition, PUT the approval subresource. */
async function decide(
  api: CertificatesV1Api,
  name: string,
  type: 'Approved' | 'Denied',
): Promise<V1CertificateSigningRequest> {
  const csr = await api.readCertificateSigningRequest({ name });
  csr.status = {
    ...csr.status,
    conditions: [
      ...(csr.status?.conditions ?? []),
      { type, status: 'True', reason: 'ByTest', message: `${type} by the test` },
    ],
  };
  return api.replaceCertificateSigningRequestApproval({ name, body: csr });
}

/** Polls as a client of a real signer must, and returns the issued certificate. */
async function issued(api: CertificatesV1Api, name: string, timeoutMs = 5000): Promise<X509Certificate> {
  const b64 = await waitFor(
    `a certificate for ${name}`,
    async () => (await api.readCertificateSigningRequest({ name })).status?.certificate,
    timeoutMs,
  );
  return new X509Certificate(Buffer.from(b64, 'base64').toString('utf8'));
}

/** The HTTP status and Status body of a request that must fail. */
async function failure(p: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    return { code: err.code, body: typeof err.body === 'string' ? JSON.parse(err.body) : err.body };
  }
  throw new Error('the request succeeded; it should have failed');
}

const fields = (body: any) => (body?.details?.causes ?? []).map((c: any) => c.field);
const lifetime = (cert: X509Certificate) => Date.parse(cert.validTo) - Date.now();

describe('a stand-in with its signer on (default options)', () => {
  let host: HostClusterStandIn;
  let api: CertificatesV1Api;

  beforeAll(async () => {
    host = await startHostCluster();
    api = clientOf(host);
  });
  afterAll(async () => {
    await host?.stop();
  });

  test('an approved kube-apiserver-client request gets a client certificate from the CA the kubeconfig trusts', async () => {
    const { keyPem, request } = certificateRequest('vc-alice', ['team-a', 'team-b']);
    host.resetCounts();
    const created = await api.createCertificateSigningRequest({
      body: csrBody('alice', request, { expirationSeconds: 3600 }),
    });
    // The requester is the caller, whatever the body says.
    expect(created.spec).toMatchObject({
      username: KUBECONFIG_USERNAME,
      groups: [...KUBECONFIG_GROUPS],
      expirationSeconds: 3600,
    });
    expect(created.metadata).toMatchObject({
      name: 'alice',
      uid: expect.any(String),
      resourceVersion: expect.any(String),
    });
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.status?.certificate).toBeUndefined();
    expect(host.count('certificatesigningrequests', 'POST')).toBe(1);

    const approved = await decide(api, 'alice', 'Approved');
    expect(approved.status?.conditions).toEqual([
      expect.objectContaining({
        type: 'Approved',
        status: 'True',
        reason: 'ByTest',
        lastUpdateTime: expect.any(Date),
        lastTransitionTime: expect.any(Date),
      }),
    ]);
    expect(host.count('certificatesigningrequests', 'PUT')).toBe(1);

    const cert = await issued(api, 'alice');
    const ca = new X509Certificate(host.caPem);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(cert.subject.split('\n')).toEqual(['CN=vc-alice', 'O=team-a', 'O=team-b']);
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual([CLIENT_AUTH_OID]);
    // 1h is short-lived for kube's signer: notAfter is not backdated, notBefore is (5 minutes, for clock skew).
    expect(Math.abs(lifetime(cert) - HOUR_MS)).toBeLessThan(MINUTE_MS);
    expect(Math.abs(Date.now() - Date.parse(cert.validFrom) - 5 * MINUTE_MS)).toBeLessThan(MINUTE_MS);
    expect(host.csrs().find((c) => c.metadata.name === 'alice')?.status?.certificate).toEqual(expect.any(String));
  });

  test('without expirationSeconds the certificate lasts the cluster signing duration, one year', async () => {
    const { request } = certificateRequest('vc-bob');
    await api.createCertificateSigningRequest({ body: csrBody('bob', request) });
    await decide(api, 'bob', 'Approved');
    const cert = await issued(api, 'bob');
    expect(Math.abs(lifetime(cert) - YEAR_MS)).toBeLessThan(10 * MINUTE_MS);
  });

  test('generateName names the request; a taken name is AlreadyExists; get, list and delete work', async () => {
    const { request } = certificateRequest('vc-gen');
    const made = await api.createCertificateSigningRequest({
      body: { ...csrBody('', request), metadata: { generateName: 'vc-gen-' } },
    });
    const name = made.metadata!.name!;
    expect(name).toMatch(/^vc-gen-.{5}$/);
    expect((await api.readCertificateSigningRequest({ name })).metadata?.uid).toBe(made.metadata?.uid);

    const taken = await failure(api.createCertificateSigningRequest({ body: csrBody(name, request) }));
    expect(taken.code).toBe(409);
    expect(taken.body).toMatchObject({
      reason: 'AlreadyExists',
      message: `certificatesigningrequests.certificates.k8s.io "${name}" already exists`,
    });

    const list = await api.listCertificateSigningRequest();
    expect(list.items.map((c) => c.metadata?.name)).toContain(name);

    await api.deleteCertificateSigningRequest({ name });
    expect((await failure(api.readCertificateSigningRequest({ name }))).code).toBe(404);
    expect(host.csrs().map((c) => c.metadata.name)).not.toContain(name);
  });

  test('kube refuses bad requests with 422 and the field at fault', async () => {
    const { request } = certificateRequest('vc-refused');
    const short = await failure(
      api.createCertificateSigningRequest({ body: csrBody('short', request, { expirationSeconds: 599 }) }),
    );
    expect(short.code).toBe(422);
    expect(short.body).toMatchObject({
      reason: 'Invalid',
      details: { causes: [{ field: 'spec.expirationSeconds', reason: 'FieldValueInvalid' }] },
    });
    expect(short.body.message).toContain(
      'spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)',
    );
    // The shortest duration kube takes is accepted.
    await api.createCertificateSigningRequest({ body: csrBody('ten-minutes', request, { expirationSeconds: 600 }) });

    const notPem = await failure(
      api.createCertificateSigningRequest({ body: csrBody('not-pem', Buffer.from('hello').toString('base64')) }),
    );
    expect(notPem.code).toBe(422);
    expect(fields(notPem.body)).toEqual(['spec.request']);
    expect(notPem.body.message).toContain('PEM block type must be CERTIFICATE REQUEST');

    const certificateNotRequest = await failure(
      api.createCertificateSigningRequest({ body: csrBody('a-cert', Buffer.from(host.caPem).toString('base64')) }),
    );
    expect(fields(certificateNotRequest.body)).toEqual(['spec.request']);

    const spoiled = certificateRequest('vc-spoiled', [], rsaKeyPem());
    const badSignature = await failure(
      api.createCertificateSigningRequest({ body: csrBody('bad-signature', spoiled.request) }),
    );
    expect(badSignature.code).toBe(422);
    expect(fields(badSignature.body)).toEqual(['spec.request']);

    const bare = await failure(
      api.createCertificateSigningRequest({
        body: { metadata: { name: 'bare' }, spec: { request } } as V1CertificateSigningRequest,
      }),
    );
    expect(bare.code).toBe(422);
    expect(fields(bare.body)).toEqual(['spec.usages', 'spec.signerName']);

    const unknownUsage = await failure(
      api.createCertificateSigningRequest({
        body: csrBody('odd-usage', request, { usages: ['client auth', 'flying'] }),
      }),
    );
    expect(fields(unknownUsage.body)).toEqual(['spec.usages[1]']);
    expect(unknownUsage.body.details.causes[0].reason).toBe('FieldValueNotSupported');

    expect(host.csrs().map((c) => c.metadata.name)).toEqual(
      expect.not.arrayContaining(['short', 'not-pem', 'a-cert', 'bad-signature', 'bare', 'odd-usage']),
    );
  });

  test('a client certificate for system:masters is forbidden at create (certificatesubjectrestriction)', async () => {
    const { request } = certificateRequest('vc-root', ['system:masters']);
    const res = await failure(api.createCertificateSigningRequest({ body: csrBody('root', request) }));
    expect(res.code).toBe(403);
    expect(res.body.message).toBe(
      'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed',
    );
  });

  test('usages that do not fit a client certificate are accepted, then failed by the signer without a certificate', async () => {
    // kube checks these in kube-controller-manager's signer, not at create: a client sees Failed, never a 422.
    const { request } = certificateRequest('vc-server');
    await api.createCertificateSigningRequest({
      body: csrBody('server-auth', request, { usages: ['digital signature', 'key encipherment', 'server auth'] }),
    });
    await api.createCertificateSigningRequest({
      body: csrBody('no-client-auth', request, { usages: ['digital signature'] }),
    });
    await decide(api, 'server-auth', 'Approved');
    await decide(api, 'no-client-auth', 'Approved');
    const failed = async (name: string) =>
      waitFor(`${name} to fail`, async () =>
        (await api.readCertificateSigningRequest({ name })).status?.conditions?.find((c) => c.type === 'Failed'),
      );
    expect(await failed('server-auth')).toMatchObject({
      status: 'True',
      reason: 'SignerValidationFailure',
      message: 'invalid usage for client certificate: server auth',
    });
    expect(await failed('no-client-auth')).toMatchObject({
      message: 'missing required usage for client certificate: client auth',
    });
    expect((await api.readCertificateSigningRequest({ name: 'server-auth' })).status?.certificate).toBeUndefined();
  });

  test('a denied request and a request for another signer get no certificate', async () => {
    const { request } = certificateRequest('vc-nope');
    await api.createCertificateSigningRequest({ body: csrBody('denied', request) });
    await api.createCertificateSigningRequest({
      body: csrBody('other-signer', request, { signerName: 'example.com/my-signer' }),
    });
    const denied = await decide(api, 'denied', 'Denied');
    expect(denied.status?.conditions?.map((c) => c.type)).toEqual(['Denied']);
    await decide(api, 'other-signer', 'Approved');
    // A request approved after them is signed; by then the signer has passed them by.
    await api.createCertificateSigningRequest({ body: csrBody('control', request) });
    await decide(api, 'control', 'Approved');
    await issued(api, 'control');
    expect((await api.readCertificateSigningRequest({ name: 'denied' })).status?.certificate).toBeUndefined();
    expect((await api.readCertificateSigningRequest({ name: 'other-signer' })).status?.certificate).toBeUndefined();
  });

  test('approvals: 404 for an unknown name; Approved and Denied together, or taking an approval back, are invalid', async () => {
    const body = csrBody('ghost', certificateRequest('vc-ghost').request);
    expect((await failure(api.replaceCertificateSigningRequestApproval({ name: 'ghost', body }))).code).toBe(404);

    await api.createCertificateSigningRequest({ body: csrBody('torn', body.spec.request) });
    const csr = await api.readCertificateSigningRequest({ name: 'torn' });
    csr.status = {
      conditions: [
        { type: 'Approved', status: 'True', reason: 'A' },
        { type: 'Denied', status: 'True', reason: 'B' },
      ],
    };
    const both = await failure(api.replaceCertificateSigningRequestApproval({ name: 'torn', body: csr }));
    expect(both.code).toBe(422);
    expect(fields(both.body)).toEqual(['status.conditions[1].type']);

    const approved = await decide(api, 'torn', 'Approved');
    await issued(api, 'torn');
    // The signer's write moved the resourceVersion on: a stale body conflicts, as with kube.
    approved.status = { ...approved.status, conditions: [] };
    expect((await failure(api.replaceCertificateSigningRequestApproval({ name: 'torn', body: approved }))).code).toBe(
      409,
    );
    const current = await api.readCertificateSigningRequest({ name: 'torn' });
    current.status = { ...current.status, conditions: [] };
    const takenBack = await failure(api.replaceCertificateSigningRequestApproval({ name: 'torn', body: current }));
    expect(takenBack.code).toBe(422);
    expect(takenBack.body.message).toContain('updates may not remove a condition of type "Approved"');
  });

  test('an outage reaches the CSR paths too; the kubeconfig text is what a vc-<name> Secret holds', async () => {
    await host.setDown(true, 'unavailable');
    try {
      expect((await failure(api.listCertificateSigningRequest())).code).toBe(503);
    } finally {
      await host.setDown(false);
    }
    expect((await api.listCertificateSigningRequest()).kind).toBe('CertificateSigningRequestList');

    const doc = yaml.load(host.kubeconfigText()) as any;
    expect(doc).toMatchObject({ apiVersion: 'v1', kind: 'Config', 'current-context': expect.any(String) });
    expect(doc.clusters).toEqual([
      {
        name: expect.any(String),
        cluster: { server: host.url, 'certificate-authority-data': Buffer.from(host.caPem).toString('base64') },
      },
    ]);
    expect(doc.users).toEqual([{ name: expect.any(String), user: { token: host.token } }]);
    expect(doc.contexts.map((c: any) => c.name)).toEqual([doc['current-context']]);
  });
});

describe('a stand-in whose signer is off', () => {
  let host: HostClusterStandIn;
  afterAll(async () => {
    await host?.stop();
  });

  test('an approved request is never signed', async () => {
    host = await startHostCluster({ csrSigning: false });
    const api = clientOf(host);
    await api.createCertificateSigningRequest({ body: csrBody('waiting', certificateRequest('vc-waiting').request) });
    await decide(api, 'waiting', 'Approved');
    await new Promise((r) => setTimeout(r, 500));
    const csr = await api.readCertificateSigningRequest({ name: 'waiting' });
    expect(csr.status?.conditions?.map((c) => c.type)).toEqual(['Approved']);
    expect(csr.status?.certificate).toBeUndefined();
  });
});

describe('a stand-in with a slow signer and a two-hour signing duration', () => {
  let host: HostClusterStandIn;
  afterAll(async () => {
    await host?.stop();
  });

  test('the certificate comes after the delay, and lasts no longer than the cluster allows', async () => {
    host = await startHostCluster({ csrSigningDelayMs: 400, clusterSigningDurationSeconds: 2 * 60 * 60 });
    const api = clientOf(host);
    await api.createCertificateSigningRequest({
      body: csrBody('slow', certificateRequest('vc-slow').request, { expirationSeconds: 24 * 60 * 60 }),
    });
    const approved = await decide(api, 'slow', 'Approved');
    const approvedAt = Date.now();
    expect(approved.status?.certificate).toBeUndefined();
    expect((await api.readCertificateSigningRequest({ name: 'slow' })).status?.certificate).toBeUndefined();
    const cert = await issued(api, 'slow');
    expect(Date.now() - approvedAt).toBeGreaterThanOrEqual(300);
    // A day was asked for; the cluster signs two hours at most.
    expect(Math.abs(lifetime(cert) - 2 * HOUR_MS)).toBeLessThan(MINUTE_MS);
  });
});
