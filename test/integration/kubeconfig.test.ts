/**
 * VirtualClusterInstanceKubeConfig: .../virtualclusterinstances/<name>/kubeconfig (with or without the namespace
 * in the path) answers a kube config whose client certificate the virtual cluster issued through a CSR. The
 * virtual cluster is a second stand-in, reached through the Secret vc-<name> in the host stand-in, as vcluster
 * keeps it; its CA signs the certificate, so the answer's certificate must chain to the CA in the answer.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import yaml from 'js-yaml';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { API_VERSION, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';

const DAY = 86400;

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;

beforeAll(async () => {
  host = await startHostCluster();
  vcluster = await startHostCluster({ csrSigningDelayMs: 150 });
  const server = await startTestServerWithUsers({ root: ['system:masters'], bob: ['platform:team:dev', 'system:serviceaccounts'], carol: [] }, { kubeconfig: host.kubeconfigPath });
  ({ root, bob, carol } = server.as);
  ts = server;
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await vcluster?.stop();
}, 60_000);

const vcis = (ns: string) => `${GROUP_PATH}/namespaces/${ns}/virtualclusterinstances`;
const kubeconfigPath = (ns: string, name: string) => `${vcis(ns)}/${name}/kubeconfig`;
const anyNamespacePath = (name: string) => `${GROUP_PATH}/virtualclusterinstances/${name}/kubeconfig`;

/** A VirtualClusterInstance whose virtual cluster is `vc` (its connection Secret in the host), created as root. */
async function createInstance(ns: string, name: string, spec: Record<string, unknown> = {}, vc: HostClusterStandIn | null = vcluster): Promise<void> {
  const hostNamespace = `vcluster-${name}`;
  if (vc) host.addSecret(hostNamespace, `vc-${name}`, { config: vc.kubeconfigText() });
  const res = await root.post(vcis(ns), {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: { clusterRef: { cluster: 'eu-1', namespace: hostNamespace, virtualCluster: name }, ingressEndpoint: `https://${name}.vc.example.com`, ...spec },
  });
  expect(res.status).toBe(201);
}

interface Issued {
  config: any;
  cert: X509Certificate;
  ca: X509Certificate;
  keyPem: string;
}

function readKubeConfig(body: any): Issued {
  const config = yaml.load(body.status.kubeConfig) as any;
  const user = config.users[0].user;
  const cluster = config.clusters[0].cluster;
  return {
    config,
    cert: new X509Certificate(Buffer.from(user['client-certificate-data'], 'base64')),
    ca: new X509Certificate(Buffer.from(cluster['certificate-authority-data'], 'base64')),
    keyPem: Buffer.from(user['client-key-data'], 'base64').toString(),
  };
}

/** The virtual cluster's CSR that issued `cert`. */
function csrOf(cert: X509Certificate) {
  return vcluster.csrs().find((c) => c.status?.certificate && new X509Certificate(Buffer.from(c.status.certificate, 'base64')).serialNumber === cert.serialNumber);
}

const lifetimeSeconds = (cert: X509Certificate) => (Date.parse(cert.validTo) - Date.now()) / 1000;
const subjectOf = (cert: X509Certificate) => cert.subject.split('\n');

describe('getting a kube config', () => {
  test('GET on the namespaced path: the ingress endpoint, the virtual cluster CA, and a client certificate it issued for the caller', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name, { owner: { user: 'bob' } });
    vcluster.resetCounts();
    const res = await bob.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({ apiVersion: API_VERSION, kind: 'VirtualClusterInstanceKubeConfig', metadata: { name, namespace: ns }, spec: { certificateTTL: DAY } });

    const { config, cert, ca, keyPem } = readKubeConfig(res.body);
    const context = `platform_${ns}_${name}`;
    expect(config).toMatchObject({ apiVersion: 'v1', kind: 'Config', 'current-context': context, contexts: [{ name: context, context: { cluster: context, user: context } }] });
    expect(config.clusters[0].cluster.server).toBe(`https://${name}.vc.example.com`);
    expect(ca.fingerprint256).toBe(new X509Certificate(vcluster.caPem).fingerprint256);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    // The certificate names bob and his own groups, not the system: ones.
    expect(subjectOf(cert)).toEqual(['CN=bob', 'O=platform:team:dev']);
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    // The key in the answer is the certificate's.
    expect(createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' }).equals(cert.publicKey.export({ type: 'spki', format: 'der' }))).toBe(true);
    expect(Math.abs(lifetimeSeconds(cert) - (DAY - 300))).toBeLessThan(120);

    // One CSR, for the kube-apiserver-client signer, asking for a day, approved by the management API.
    expect(vcluster.count('certificatesigningrequests', 'POST')).toBe(1);
    const csr = csrOf(cert);
    expect(csr?.spec).toMatchObject({ signerName: 'kubernetes.io/kube-apiserver-client', expirationSeconds: DAY, usages: expect.arrayContaining(['client auth']) });
    expect(csr?.status.conditions).toContainEqual(expect.objectContaining({ type: 'Approved', status: 'True', reason: 'PlatformKubeConfig' }));
  });

  test("the spec's path without a namespace finds the instance by name", async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    const res = await root.get(anyNamespacePath(name));
    expect(res.status).toBe(200);
    expect(res.body.metadata).toMatchObject({ name, namespace: ns });
    expect(subjectOf(readKubeConfig(res.body).cert)).toEqual(['CN=root']);
  });

  test('POST with spec.certificateTTL and GET with ?certificateTTL= set the lifetime; 0 asks for none (the signing duration)', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    const posted = await root.post(kubeconfigPath(ns, name), { apiVersion: API_VERSION, kind: 'VirtualClusterInstanceKubeConfig', spec: { certificateTTL: 3600 } });
    expect(posted.status).toBe(201);
    expect(posted.body.spec.certificateTTL).toBe(3600);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(posted.body).cert) - 3600)).toBeLessThan(60);

    const got = await root.get(`${kubeconfigPath(ns, name)}?certificateTTL=7200`);
    expect(got.status).toBe(200);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(got.body).cert) - 7200)).toBeLessThan(60);

    const none = await root.post(kubeconfigPath(ns, name), { spec: { certificateTTL: 0 } });
    expect(none.status).toBe(201);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(none.body).cert) - (365 * DAY - 300))).toBeLessThan(120);
    const unlimited = csrOf(readKubeConfig(none.body).cert);
    expect(unlimited?.spec).toBeDefined();
    expect(unlimited?.spec.expirationSeconds).toBeUndefined();
  });

  test('discovery lists virtualclusterinstances/kubeconfig with get and create', async () => {
    const res = await root.get(GROUP_PATH);
    expect(res.body.resources).toContainEqual({ name: 'virtualclusterinstances/kubeconfig', singularName: '', namespaced: true, kind: 'VirtualClusterInstanceKubeConfig', verbs: ['create', 'get'] });
  });

  test('the private key is in the answer only: nothing in etcd holds it', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    const { keyPem } = readKubeConfig((await root.get(kubeconfigPath(ns, name))).body);
    const keyLine = keyPem.split('\n')[1];
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const all = await kv.getAll().prefix(`${ts.config.etcdPrefix}/`).strings();
      for (const value of Object.values(all)) expect(value).not.toContain(keyLine);
    } finally {
      kv.close();
    }
  });
});

describe('finding the instance without a namespace', () => {
  test('a name in two namespaces is ambiguous: 409 listing both; a caller who may use only one gets that one', async () => {
    const name = uniq('vc');
    const [ns1, ns2] = [uniq('p'), uniq('p')];
    await createInstance(ns1, name);
    await root.post(vcis(ns2), { apiVersion: API_VERSION, kind: 'VirtualClusterInstance', metadata: { name }, spec: { owner: { user: 'bob' }, clusterRef: { cluster: 'eu-1', namespace: `vcluster-${name}`, virtualCluster: name }, ingressEndpoint: 'https://other.example.com' } });

    const res = await root.get(anyNamespacePath(name));
    expect(res.status).toBe(409);
    expect(res.body.reason).toBe('Conflict');
    for (const ns of [ns1, ns2]) expect(res.body.message).toContain(`/apis/management.platform.sh/v1/namespaces/${ns}/virtualclusterinstances/${name}/kubeconfig`);

    const bobs = await bob.get(anyNamespacePath(name));
    expect(bobs.status).toBe(200);
    expect(bobs.body.metadata.namespace).toBe(ns2);
    expect(readKubeConfig(bobs.body).config.clusters[0].cluster.server).toBe('https://other.example.com');
  });

  test('no instance of that name: 404 for someone allowed everywhere, 403 for others (nothing is revealed)', async () => {
    const missing = await root.get(anyNamespacePath('no-such-vc'));
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ reason: 'NotFound', details: { name: 'no-such-vc', kind: 'virtualclusterinstances' } });
    const name = uniq('vc');
    await createInstance(uniq('p'), name);
    const hidden = await carol.get(anyNamespacePath(name));
    expect(hidden.status).toBe(403);
    expect(hidden.body.message).toContain('cannot get resource "virtualclusterinstances/kubeconfig" in API group "management.platform.sh" at the cluster scope');
  });
});

describe('who may get one', () => {
  test('an access entry for the kubeconfig subresource allows exactly its verbs; others get 403', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name, { access: [{ verbs: ['get'], subresources: ['kubeconfig'], users: ['carol'] }] });
    const got = await carol.get(kubeconfigPath(ns, name));
    expect(got.status).toBe(200);
    expect(subjectOf(readKubeConfig(got.body).cert)).toEqual(['CN=carol']);
    const posted = await carol.post(kubeconfigPath(ns, name), { spec: {} });
    expect(posted.status).toBe(403);
    expect((await bob.get(kubeconfigPath(ns, name))).status).toBe(403);
  });
});

describe('refusals', () => {
  test('an instance without an ingress endpoint: 400 saying so, and nothing asked of the virtual cluster', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name, { ingressEndpoint: undefined });
    vcluster.resetCounts();
    const res = await root.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(res.body.message).toBe(`VirtualClusterInstance ${ns}/${name} has no ingress endpoint (spec.ingressEndpoint): a kube config is made only for a virtual cluster reachable through an ingress`);
    expect(vcluster.count('certificatesigningrequests')).toBe(0);
  });

  test.each([
    ['a lifetime under 10 minutes', { certificateTTL: 599 }, 422, 'spec.certificateTTL: Invalid value: 599: must be 0'],
    ['a negative lifetime', { certificateTTL: -1 }, 422, 'spec.certificateTTL: Invalid value: -1'],
    ['a lifetime that is not a number', { certificateTTL: '1d' }, 422, 'spec.certificateTTL: Invalid value: "string"'],
  ])('POST with %s: 422', async (_what, spec, code, message) => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    vcluster.resetCounts();
    const res = await root.post(kubeconfigPath(ns, name), { spec });
    expect(res.status).toBe(code);
    expect(res.body.message).toContain(message);
    expect(vcluster.count('certificatesigningrequests')).toBe(0);
  });

  test('GET with a certificateTTL that is not a whole number: 400', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    const res = await root.get(`${kubeconfigPath(ns, name)}?certificateTTL=1h`);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('the certificateTTL query parameter must be a whole number of seconds (got "1h")');
  });

  test('no connection Secret in the host: 503 naming it', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    const res = await root.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(503);
    expect(res.body.message).toBe(`the virtual cluster's connection (Secret vcluster-${name}/vc-${name} in the host cluster) does not exist; is the virtual cluster running?`);
  });

  test('a connection Secret that is no kubeconfig: 500 saying what is wrong', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    host.addSecret(`vcluster-${name}`, `vc-${name}`, { other: 'x' });
    const res = await root.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(500);
    expect(res.body.message).toContain(`Secret vcluster-${name}/vc-${name} in the host cluster has no key "config"`);
  });

  test('the virtual cluster is down: 503; back up: served again', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    await vcluster.setDown(true, 'unavailable');
    try {
      const res = await root.get(kubeconfigPath(ns, name));
      expect(res.status).toBe(503);
      expect(res.body.message).toContain('creating a CertificateSigningRequest in the virtual cluster: the host cluster answered HTTP 503');
    } finally {
      await vcluster.setDown(false);
    }
    expect((await root.get(kubeconfigPath(ns, name))).status).toBe(200);
  });

  test("a virtual cluster whose signer never signs: 504 Timeout after a bounded wait", async () => {
    const silent = await startHostCluster({ csrSigning: false });
    try {
      const ns = uniq('p');
      const name = uniq('vc');
      await createInstance(ns, name, {}, silent);
      const started = Date.now();
      const res = await root.get(kubeconfigPath(ns, name));
      expect(res.status).toBe(504);
      expect(res.body.reason).toBe('Timeout');
      expect(res.body.message).toContain('the virtual cluster did not issue the certificate within 10s');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await silent.stop();
    }
  }, 30_000);

  test('unknown instances: 404', async () => {
    const res = await root.get(kubeconfigPath('p-none', 'no-such-vc'));
    expect(res.status).toBe(404);
    expect(res.body.reason).toBe('NotFound');
  });

  test('other verbs: 405', async () => {
    const ns = uniq('p');
    const name = uniq('vc');
    await createInstance(ns, name);
    for (const method of ['PUT', 'DELETE']) {
      const res = await root.request(method, kubeconfigPath(ns, name), { body: method === 'PUT' ? {} : undefined });
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
    }
  });
});

describe('without a host cluster', () => {
  test('503 saying that none is configured', async () => {
    const plain = await startTestServer({}, ts.etcd);
    try {
      const ns = uniq('p');
      const name = uniq('vc');
      const created = await plain.admin.post(vcis(ns), { apiVersion: API_VERSION, kind: 'VirtualClusterInstance', metadata: { name }, spec: { clusterRef: { cluster: 'eu-1', namespace: 'vcluster-x' }, ingressEndpoint: 'https://vc.example.com' } });
      expect(created.status).toBe(201);
      const res = await plain.admin.get(kubeconfigPath(ns, name));
      expect(res.status).toBe(503);
      expect(res.body.message).toContain('no host cluster is configured');
    } finally {
      await plain.stop();
    }
  });
});
