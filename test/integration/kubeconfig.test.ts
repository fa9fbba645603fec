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
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, CLUSTERS_PATH, uniq, virtualClusterInstancesPath as vcis } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { HEALTH_INTERVAL_MS, clusterPhase, connectCluster } from '../support/connectedclusters.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';
import { createLogger } from '../../src/log.js';

const DAY = 86400;

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
let sa: HttpClient;
/** Where an exec plugin would leave its mark. */
let scratch: string;
/** The server's log lines. */
const logged: string[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
  host = await startHostCluster();
  vcluster = await startHostCluster({ csrSigningDelayMs: 150 });
  const users = {
    root: ['system:masters'],
    bob: ['platform:team:dev', 'system:serviceaccounts'],
    carol: [],
    'system:serviceaccount:default:builder': ['system:serviceaccounts'],
  };
  const server = await startTestServerWithUsers(
    users,
    { kubeconfig: host.kubeconfigPath, clusterHealthIntervalMs: HEALTH_INTERVAL_MS },
    undefined,
    createLogger((line) => logged.push(line)),
  );
  ({ root, bob, carol } = server.as);
  // The virtual clusters are in the host stand-in: the local Cluster eu-1.
  await connectCluster(root, host, 'eu-1', host);
  sa = server.as['system:serviceaccount:default:builder'];
  ts = server;
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await vcluster?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 60_000);

const kubeconfigPath = (ns: string, name: string) => `${vcis(ns)}/${name}/kubeconfig`;
const anyNamespacePath = (name: string) => `${GROUP_PATH}/virtualclusterinstances/${name}/kubeconfig`;

/** A VirtualClusterInstance whose virtual cluster is `vc` (its connection Secret in the host), created as root. */
async function createInstance(
  ns: string,
  name: string,
  spec: Record<string, unknown> = {},
  vc: HostClusterStandIn | null = vcluster,
): Promise<void> {
  const hostNamespace = `vcluster-${name}`;
  if (vc) host.addSecret(hostNamespace, `vc-${name}`, { config: vc.kubeconfigText() });
  const res = await root.post(vcis(ns), {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: {
      clusterRef: { cluster: 'eu-1', namespace: hostNamespace, virtualCluster: name },
      ingressEndpoint: `https://${name}.vc.example.com`,
      ...spec,
    },
  });
  expect(res.status).toBe(201);
}

/**
 * `vc`'s connection kubeconfig with fields of its cluster and user entries changed (undefined removes one), and
 * top-level fields replaced: what a tenant who can write the Secret might store.
 */
function connectionWith(
  vc: HostClusterStandIn,
  change: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; [top: string]: unknown },
): string {
  const { cluster = {}, user = {}, ...top } = change;
  const config = yaml.load(vc.kubeconfigText()) as any;
  const merge = (into: Record<string, unknown>, fields: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(fields))
      if (v === undefined) delete into[k];
      else into[k] = v;
  };
  merge(config.clusters[0].cluster, cluster);
  merge(config.users[0].user, user);
  // An exec plugin replaces the token, so the plugin alone would have to make the connection work.
  if (user.exec) delete config.users[0].user.token;
  merge(config, top);
  return yaml.dump(config);
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
  return vcluster
    .csrs()
    .find(
      (c) =>
        c.status?.certificate &&
        new X509Certificate(Buffer.from(c.status.certificate, 'base64')).serialNumber === cert.serialNumber,
    );
}

/**
 * The virtual cluster cannot be reached: the caller gets the one 503 that tells nothing of the host's Secrets,
 * and the server's log says why (`detail`) for operators.
 */
function expectUnavailable(res: { status: number; body: any }, name: string, detail: string): void {
  expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 503, reason: 'ServiceUnavailable' });
  expect(res.body.message).toBe(
    "the virtual cluster's connection is not available; is the virtual cluster running? (the server's log has the details)",
  );
  expect(loggedAbout(name).join('\n')).toContain(detail);
}

/** The reasons the server logged for the instance or virtual cluster `name`. */
function loggedAbout(name: string): string[] {
  return logged
    .map((line) => JSON.parse(line))
    .filter((l) => `${l.instance} ${l.reason}`.includes(name))
    .map((l) => `${l.msg}: ${l.reason}`);
}

const lifetimeSeconds = (cert: X509Certificate) => (Date.parse(cert.validTo) - Date.now()) / 1000;
const subjectOf = (cert: X509Certificate) => cert.subject.split('\n');

describe('getting a kube config', () => {
  test('GET on the namespaced path: the ingress endpoint, the virtual cluster CA, and a client certificate it issued for the caller', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, { owner: { user: 'bob' } });
    vcluster.resetCounts();
    const res = await bob.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      metadata: { name, namespace: ns },
      spec: { certificateTTL: DAY },
    });

    const { config, cert, ca, keyPem } = readKubeConfig(res.body);
    const context = `platform_${ns}_${name}`;
    expect(config).toMatchObject({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': context,
      contexts: [{ name: context, context: { cluster: context, user: context } }],
    });
    expect(config.clusters[0].cluster.server).toBe(`https://${name}.vc.example.com`);
    expect(ca.fingerprint256).toBe(new X509Certificate(vcluster.caPem).fingerprint256);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    // The certificate names bob and his own groups, not the system: ones.
    expect(subjectOf(cert)).toEqual(['CN=bob', 'O=platform:team:dev']);
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    // The key in the answer is the certificate's.
    expect(
      createPublicKey(createPrivateKey(keyPem))
        .export({ type: 'spki', format: 'der' })
        .equals(cert.publicKey.export({ type: 'spki', format: 'der' })),
    ).toBe(true);
    expect(Math.abs(lifetimeSeconds(cert) - (DAY - 300))).toBeLessThan(120);

    // One CSR, for the kube-apiserver-client signer, asking for a day, approved by the management API.
    expect(vcluster.count('certificatesigningrequests', 'POST')).toBe(1);
    const csr = csrOf(cert);
    expect(csr?.spec).toMatchObject({
      signerName: 'kubernetes.io/kube-apiserver-client',
      expirationSeconds: DAY,
      usages: expect.arrayContaining(['client auth']),
    });
    expect(csr?.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'Approved', status: 'True', reason: 'PlatformKubeConfig' }),
    );
  });

  test("the spec's path without a namespace finds the instance by name", async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    const res = await root.get(anyNamespacePath(name));
    expect(res.status).toBe(200);
    expect(res.body.metadata).toMatchObject({ name, namespace: ns });
    expect(subjectOf(readKubeConfig(res.body).cert)).toEqual(['CN=root']);
  });

  test('POST with spec.certificateTTL and GET with ?certificateTTL= set the lifetime; 0 asks for none (the signing duration)', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    const posted = await root.post(kubeconfigPath(ns, name), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec: { certificateTTL: 3600 },
    });
    expect(posted.status).toBe(201);
    expect(posted.body.spec.certificateTTL).toBe(3600);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(posted.body).cert) - 3600)).toBeLessThan(60);

    const got = await root.get(`${kubeconfigPath(ns, name)}?certificateTTL=7200`);
    expect(got.status).toBe(200);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(got.body).cert) - 7200)).toBeLessThan(60);

    const none = await root.post(kubeconfigPath(ns, name), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec: { certificateTTL: 0 },
    });
    expect(none.status).toBe(201);
    expect(Math.abs(lifetimeSeconds(readKubeConfig(none.body).cert) - (365 * DAY - 300))).toBeLessThan(120);
    const unlimited = csrOf(readKubeConfig(none.body).cert);
    expect(unlimited?.spec).toBeDefined();
    expect(unlimited?.spec.expirationSeconds).toBeUndefined();
  });

  test('outside system:masters the lifetime is at most --kubeconfig-max-certificate-ttl (default 7 days): longer is cut with a Warning, 0 is 422; the answer says notAfter', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, { owner: { user: 'bob' } });
    vcluster.resetCounts();
    const none = await bob.post(kubeconfigPath(ns, name), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec: { certificateTTL: 0 },
    });
    expect(none.status).toBe(422);
    expect(none.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect(none.body.message).toContain(
      "spec.certificateTTL: Invalid value: 0: 0 (the virtual cluster's own signing duration) is for system:masters only",
    );
    expect((await bob.get(`${kubeconfigPath(ns, name)}?certificateTTL=0`)).status).toBe(422);
    expect(vcluster.count('certificatesigningrequests')).toBe(0);

    const long = await bob.get(`${kubeconfigPath(ns, name)}?certificateTTL=${14 * DAY}`);
    expect(long.status).toBe(200);
    expect(long.headers.warning).toContain(
      `spec.certificateTTL: set to ${7 * DAY}, the longest life of a kube config's certificate outside system:masters`,
    );
    expect(long.body.spec.certificateTTL).toBe(7 * DAY);
    const { cert } = readKubeConfig(long.body);
    expect(Math.abs(lifetimeSeconds(cert) - (7 * DAY - 300))).toBeLessThan(120);
    expect(long.body.status.certificateNotAfter).toBe(new Date(cert.validTo).toISOString().replace(/\.\d{3}Z$/, 'Z'));

    const short = await bob.get(`${kubeconfigPath(ns, name)}?certificateTTL=3600`);
    expect(short.status).toBe(200);
    expect(short.headers.warning).toBeUndefined();
    expect(short.body.spec.certificateTTL).toBe(3600);
  });

  test('discovery lists virtualclusterinstances/kubeconfig with get and create', async () => {
    const res = await root.get(GROUP_PATH);
    expect(res.body.resources).toContainEqual({
      name: 'virtualclusterinstances/kubeconfig',
      singularName: '',
      namespaced: true,
      kind: 'VirtualClusterInstanceKubeConfig',
      verbs: ['create', 'get'],
    });
  });

  test('the private key is in the answer only: nothing in etcd holds it', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
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
    host.addNamespace(ns1);
    host.addNamespace(ns2);
    await createInstance(ns1, name);
    // Another virtual cluster of the same name, in another host namespace (one instance per virtual cluster).
    const otherNamespace = `vcluster-other-${name}`;
    host.addSecret(otherNamespace, `vc-${name}`, { config: vcluster.kubeconfigText() });
    const other = await root.post(vcis(ns2), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name },
      spec: {
        owner: { user: 'bob' },
        clusterRef: { cluster: 'eu-1', namespace: otherNamespace, virtualCluster: name },
        ingressEndpoint: 'https://other.example.com',
      },
    });
    expect(other.status).toBe(201);

    const res = await root.get(anyNamespacePath(name));
    expect(res.status).toBe(409);
    expect(res.body.reason).toBe('Conflict');
    for (const ns of [ns1, ns2])
      expect(res.body.message).toContain(
        `/apis/management.platform.sh/v1/namespaces/${ns}/virtualclusterinstances/${name}/kubeconfig`,
      );

    const bobs = await bob.get(anyNamespacePath(name));
    expect(bobs.status).toBe(200);
    expect(bobs.body.metadata.namespace).toBe(ns2);
    expect(readKubeConfig(bobs.body).config.clusters[0].cluster.server).toBe('https://other.example.com');
  });

  test('no instance of that name: 404 for someone allowed everywhere, 403 for others (nothing is revealed)', async () => {
    const missing = await root.get(anyNamespacePath('no-such-vc'));
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      reason: 'NotFound',
      details: { name: 'no-such-vc', kind: 'virtualclusterinstances' },
    });
    const name = uniq('vc');
    const ns = uniq('p');
    host.addNamespace(ns);
    await createInstance(ns, name);
    const hidden = await carol.get(anyNamespacePath(name));
    expect(hidden.status).toBe(403);
    expect(hidden.body.message).toContain(
      'cannot get resource "virtualclusterinstances/kubeconfig" in API group "management.platform.sh" at the cluster scope',
    );
  });
});

describe('who may get one', () => {
  test('an access entry for the kubeconfig subresource allows exactly its verbs; others get 403', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, { access: [{ verbs: ['get'], subresources: ['kubeconfig'], users: ['carol'] }] });
    const got = await carol.get(kubeconfigPath(ns, name));
    expect(got.status).toBe(200);
    expect(subjectOf(readKubeConfig(got.body).cert)).toEqual(['CN=carol']);
    const posted = await carol.post(kubeconfigPath(ns, name), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec: {},
    });
    expect(posted.status).toBe(403);
    expect((await bob.get(kubeconfigPath(ns, name))).status).toBe(403);
  });

  test('a caller named system:... (here a host ServiceAccount) gets none, even for its own instance: 403, nothing asked of the virtual cluster', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    const account = 'system:serviceaccount:default:builder';
    await createInstance(ns, name, { owner: { user: account } });
    vcluster.resetCounts();
    // Before the fix: 200 with CN=system:serviceaccount:default:builder, that account's identity in the virtual cluster.
    for (const res of [
      await sa.get(kubeconfigPath(ns, name)),
      await sa.post(kubeconfigPath(ns, name), {
        apiVersion: API_VERSION,
        kind: 'VirtualClusterInstanceKubeConfig',
        spec: {},
      }),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
      expect(res.body.message).toBe(
        `virtualclusterinstances.management.platform.sh "${name}" is forbidden: User "${account}" cannot get a kube config: its certificate would carry this system: identity into the virtual cluster; kube configs are issued to users, not to Kubernetes' own identities`,
      );
    }
    expect(vcluster.count('certificatesigningrequests')).toBe(0);
    expect((await bob.get(kubeconfigPath(ns, name))).status).toBe(403);
  });
});

describe('refusals', () => {
  test('an instance without an ingress endpoint: 400 saying so, and nothing asked of the virtual cluster', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, { ingressEndpoint: undefined });
    vcluster.resetCounts();
    const res = await root.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(res.body.message).toBe(
      `VirtualClusterInstance ${ns}/${name} has no ingress endpoint (spec.ingressEndpoint): a kube config is made only for a virtual cluster reachable through an ingress`,
    );
    expect(vcluster.count('certificatesigningrequests')).toBe(0);
  });

  test.each([
    ['a lifetime under 10 minutes', { certificateTTL: 599 }, 422, 'spec.certificateTTL: Invalid value: 599: must be 0'],
    ['a negative lifetime', { certificateTTL: -1 }, 422, 'spec.certificateTTL: Invalid value: -1'],
    ['a lifetime that is not a number', { certificateTTL: '1d' }, 422, 'spec.certificateTTL: Invalid value: "string"'],
    // Dropped unread, the misspelt lifetime would give a certificate of the default day instead of ten minutes.
    ['a misspelt lifetime', { certificateTtl: 600 }, 422, 'spec.certificateTtl: Forbidden: unknown field'],
  ])('POST with %s: 422', async (_what, spec, code, message) => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    vcluster.resetCounts();
    const res = await root.post(kubeconfigPath(ns, name), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec,
    });
    expect(res.status).toBe(code);
    expect(res.body.message).toContain(message);
    expect(vcluster.count('certificatesigningrequests')).toBe(0);
  });

  test('GET with a certificateTTL that is not a whole number: 400', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    const res = await root.get(`${kubeconfigPath(ns, name)}?certificateTTL=1h`);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('the certificateTTL query parameter must be a whole number of seconds (got "1h")');
  });

  test('no connection Secret, or one without its key: the same 503 (no oracle for Secrets in host namespaces), the detail logged', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const missing = uniq('vc');
    await createInstance(ns, missing, {}, null);
    const keyless = uniq('vc');
    await createInstance(ns, keyless, {}, null);
    host.addSecret(`vcluster-${keyless}`, `vc-${keyless}`, { other: 'x' });
    const [a, b] = [await root.get(kubeconfigPath(ns, missing)), await root.get(kubeconfigPath(ns, keyless))];
    expectUnavailable(
      a,
      missing,
      `the virtual cluster's connection (Secret vcluster-${missing}/vc-${missing} in Cluster "eu-1") does not exist`,
    );
    expectUnavailable(b, keyless, `Secret vcluster-${keyless}/vc-${keyless} in Cluster "eu-1" has no key "config"`);
    expect(b.body).toEqual(a.body);
  });

  test('a connection whose user runs an exec plugin: 503, the Secret and the field logged, and the command never runs', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    const marker = join(scratch, `${name}-ran`);
    // A plugin that would also work: it prints the virtual cluster's own token, so before the fix this was a 200.
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: vcluster.token },
    });
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      command: '/bin/sh',
      args: ['-c', `touch '${marker}'; echo '${credential}'`],
      interactiveMode: 'Never',
    };
    host.addSecret(`vcluster-${name}`, `vc-${name}`, { config: connectionWith(vcluster, { user: { exec } }) });
    vcluster.resetCounts();

    const res = await root.get(kubeconfigPath(ns, name));
    expectUnavailable(
      res,
      name,
      `Secret vcluster-${name}/vc-${name} in Cluster "eu-1", key "config": the kubeconfig may not use users[0].user.exec (it runs a command)`,
    );
    expect(existsSync(marker)).toBe(false);
    expect(vcluster.requests).toEqual([]);
  });

  test.each([
    [
      'a token read from a file',
      { user: { 'token-file': '/etc/hostname' } },
      'users[0].user.token-file (it reads a file)',
    ],
    ["client-go's tokenFile", { user: { tokenFile: '/etc/hostname' } }, 'users[0].user.tokenFile (it reads a file)'],
    [
      'an auth-provider plugin',
      { user: { 'auth-provider': { name: 'oidc', config: { 'id-token': 'x' } } } },
      'users[0].user.auth-provider (it runs an authentication plugin)',
    ],
    [
      'a client key file',
      { user: { 'client-certificate': '/etc/ssl/cert.pem', 'client-key': '/etc/ssl/private/key.pem' } },
      'users[0].user.client-certificate (it reads a file); users[0].user.client-key (it reads a file)',
    ],
    [
      'a CA file',
      { cluster: { 'certificate-authority': '/etc/ssl/certs/ca-certificates.crt' } },
      'clusters[0].cluster.certificate-authority (it reads a file)',
    ],
    [
      'a proxy',
      { cluster: { 'proxy-url': 'http://127.0.0.1:3128' } },
      'clusters[0].cluster.proxy-url (it sends requests through another server)',
    ],
    [
      'no TLS verification',
      { cluster: { 'insecure-skip-tls-verify': true } },
      "clusters[0].cluster.insecure-skip-tls-verify (it does not check the server's certificate",
    ],
    [
      'basic authentication',
      { user: { username: 'admin', password: 'hunter2' } },
      'users[0].user.username (basic authentication, which kube-apiserver no longer accepts); users[0].user.password',
    ],
    ['impersonation', { user: { as: 'system:admin' } }, 'users[0].user.as (impersonation acts as another user)'],
    [
      'an unknown field',
      { user: { colour: 'blue' } },
      'users[0].user.colour (not a field a stored kubeconfig may use)',
    ],
  ])(
    'a connection with %s: 503, the field logged, nothing asked of the virtual cluster',
    async (_what, change, refused) => {
      const ns = uniq('p');
      host.addNamespace(ns);
      const name = uniq('vc');
      await createInstance(ns, name, {}, null);
      host.addSecret(`vcluster-${name}`, `vc-${name}`, { config: connectionWith(vcluster, change) });
      vcluster.resetCounts();
      const res = await root.get(kubeconfigPath(ns, name));
      expectUnavailable(res, name, `key "config": the kubeconfig may not use ${refused}`);
      expectUnavailable(
        res,
        name,
        'A stored kubeconfig is data: it may hold only server, certificate-authority-data and tls-server-name',
      );
      // Field names only: no value of the kubeconfig is repeated, in the answer or the log.
      const lines = loggedAbout(name).join('\n');
      for (const secret of ['hunter2', '/etc/', vcluster.token]) expect(lines).not.toContain(secret);
      expect(vcluster.requests).toEqual([]);
    },
  );

  test.each([
    [
      'a plain-http server',
      { cluster: { server: 'http://127.0.0.1:1' } },
      'clusters[0].cluster.server must be an https URL',
    ],
    [
      'a user and password in the server URL (basic authentication by another name)',
      { cluster: { server: 'https://bob:hunter2@127.0.0.1:1' } },
      'clusters[0].cluster.server must be an https URL without a user name, password, query or fragment',
    ],
    [
      'no CA',
      { cluster: { 'certificate-authority-data': undefined } },
      "the kubeconfig's cluster has no certificate-authority-data",
    ],
    [
      'no credential',
      { user: { token: undefined } },
      'users[0].user has no credential (client-certificate-data with client-key-data, or token)',
    ],
    [
      'a certificate without its key',
      { user: { 'client-certificate-data': 'eA==' } },
      'users[0].user needs both client-certificate-data and client-key-data',
    ],
    ['no current context', { 'current-context': undefined }, 'the kubeconfig has no current-context'],
  ])('a connection with %s: 503, what is wrong logged', async (_what, change, message) => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    host.addSecret(`vcluster-${name}`, `vc-${name}`, { config: connectionWith(vcluster, change) });
    const res = await root.get(kubeconfigPath(ns, name));
    expectUnavailable(res, name, `key "config": ${message}`);
  });

  test("a connection that is not YAML: 503, the parser's reason logged, not the text", async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    host.addSecret(`vcluster-${name}`, `vc-${name}`, { config: 'token: "s3cret\n  bad: [' });
    const res = await root.get(kubeconfigPath(ns, name));
    expectUnavailable(
      res,
      name,
      `Secret vcluster-${name}/vc-${name} in Cluster "eu-1", key "config": not a kubeconfig:`,
    );
    expect(logged.join('\n')).not.toContain('s3cret');
  });

  test('harmless extras (extensions, tls-server-name, insecure-skip-tls-verify: false) are accepted', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    const change = {
      cluster: {
        extensions: [{ name: 'x', extension: {} }],
        'tls-server-name': '127.0.0.1',
        'insecure-skip-tls-verify': false,
      },
      user: { extensions: [] },
    };
    host.addSecret(`vcluster-${name}`, `vc-${name}`, { config: connectionWith(vcluster, change) });
    const res = await root.get(kubeconfigPath(ns, name));
    expect(res.status).toBe(200);
    expect(subjectOf(readKubeConfig(res.body).cert)).toEqual(['CN=root']);
  });

  test("a tls-server-name other than the server's host is what the certificate is checked against: one it does not name is 503", async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name, {}, null);
    host.addSecret(`vcluster-${name}`, `vc-${name}`, {
      config: connectionWith(vcluster, { cluster: { 'tls-server-name': 'other.example' } }),
    });
    const res = await root.get(kubeconfigPath(ns, name));
    expectUnavailable(res, name, 'ERR_TLS_CERT_ALTNAME_INVALID');
  });

  test('the virtual cluster is down: 503; back up: served again', async () => {
    const ns = uniq('p');
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    await vcluster.setDown(true, 'unavailable');
    try {
      const res = await root.get(kubeconfigPath(ns, name));
      expect({ status: res.status, message: res.body.message }).toEqual({
        status: 503,
        message:
          "the virtual cluster's connection is not available; is the virtual cluster running? (the server's log has the details)",
      });
      expect(loggedAbout(name).join('\n')).toContain(
        'creating a CertificateSigningRequest in the virtual cluster: the host cluster answered HTTP 503',
      );
    } finally {
      await vcluster.setDown(false);
    }
    expect((await root.get(kubeconfigPath(ns, name))).status).toBe(200);
  });

  test('a virtual cluster whose signer never signs: 504 Timeout after a bounded wait', async () => {
    const silent = await startHostCluster({ csrSigning: false });
    try {
      const ns = uniq('p');
      host.addNamespace(ns);
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
    host.addNamespace(ns);
    const name = uniq('vc');
    await createInstance(ns, name);
    for (const method of ['PUT', 'DELETE']) {
      const res = await root.request(method, kubeconfigPath(ns, name), { body: method === 'PUT' ? {} : undefined });
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
    }
  });
});

describe('without a host cluster', () => {
  test('503 saying that the Cluster is not ready: a local Cluster is reached through the host cluster', async () => {
    const plain = await startTestServer({ clusterHealthIntervalMs: HEALTH_INTERVAL_MS }, ts.etcd);
    try {
      const local = await plain.admin.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'eu-1' },
        spec: { local: true },
      });
      expect(local.status).toBe(201);
      await clusterPhase(plain.admin, 'eu-1', 'Failed', 'NoHostCluster');
      const ns = uniq('p');
      host.addNamespace(ns);
      const name = uniq('vc');
      const created = await plain.admin.post(vcis(ns), {
        apiVersion: API_VERSION,
        kind: 'VirtualClusterInstance',
        metadata: { name },
        spec: { clusterRef: { cluster: 'eu-1', namespace: 'vcluster-x' }, ingressEndpoint: 'https://vc.example.com' },
      });
      expect(created.status).toBe(201);
      const res = await plain.admin.get(kubeconfigPath(ns, name));
      expect(res.status).toBe(503);
      expect(res.body.message).toContain(
        'Cluster "eu-1", where the virtual cluster runs, is not ready (NoHostCluster)',
      );
    } finally {
      await plain.stop();
    }
  });
});
