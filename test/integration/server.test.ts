/**
 * The server as a process owner sees it: flags, the embedded default (local etcd, admin token, kubeconfig,
 * self-signed certificate), restarts, static tokens, discovery and health.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { API_VERSION } from '../support/fixtures.js';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { defaultConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { startTestEtcd } from '../support/etcd.js';
import { GROUP_PATH, HttpClient } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
const repo = resolve(import.meta.dirname ?? '.', '../..');

describe('node dist/main.js', () => {
  test('--help lists every flag', async () => {
    const { stdout } = await run(process.execPath, [join(repo, 'dist/main.js'), '--help']);
    for (const flag of [
      '--etcd-servers',
      '--etcd-prefix',
      '--data-dir',
      '--bind-address',
      '--secure-port',
      '--tls-cert-file',
      '--tls-private-key-file',
      '--cert-dir',
      '--tls-sans',
      '--token-auth-file',
    ]) {
      expect(stdout).toContain(flag);
    }
  });

  test('an unknown flag is refused with exit code 2', async () => {
    await expect(run(process.execPath, [join(repo, 'dist/main.js'), '--no-such-flag=1'])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown flag: --no-such-flag'),
    });
  });
});

describe('the embedded default', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'embedded-default-'));
  const config = {
    ...defaultConfig(),
    dataDir,
    certDir: join(dataDir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
  };

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('starts its own etcd, writes a working admin kubeconfig, and keeps data, token and CA across restarts', async () => {
    const first = await startServer(config, silentLogger);
    let kubeconfig: any;
    try {
      kubeconfig = yaml.load(readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8'));
      expect(kubeconfig.clusters[0].cluster.server).toBe(first.url);
      const ca = Buffer.from(kubeconfig.clusters[0].cluster['certificate-authority-data'], 'base64').toString();
      const client = new HttpClient(first.url, ca, kubeconfig.users[0].user.token);
      const created = await client.post(`${GROUP_PATH}/clusters`, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'local' },
        spec: { local: true },
      });
      expect(created.status).toBe(201);
    } finally {
      await first.close();
    }

    const second = await startServer(config, silentLogger);
    try {
      const again: any = yaml.load(readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8'));
      expect(again.users[0].user.token).toBe(kubeconfig.users[0].user.token);
      expect(again.clusters[0].cluster['certificate-authority-data']).toBe(
        kubeconfig.clusters[0].cluster['certificate-authority-data'],
      );
      const ca = Buffer.from(again.clusters[0].cluster['certificate-authority-data'], 'base64').toString();
      const res = await new HttpClient(second.url, ca, again.users[0].user.token).get(`${GROUP_PATH}/clusters/local`);
      expect(res.status).toBe(200);
      expect(res.body.spec.local).toBe(true);
    } finally {
      await second.close();
    }
  });

  test('serves a certificate for localhost, 127.0.0.1 and --tls-sans, signed by the kubeconfig CA', async () => {
    const server = await startServer({ ...config, tlsSans: ['api.platform.example', '10.1.2.3'] }, silentLogger);
    try {
      const cert = new X509Certificate(readFileSync(join(dataDir, 'certs', 'apiserver.crt')));
      const ca = new X509Certificate(readFileSync(join(dataDir, 'certs', 'ca.crt')));
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.checkHost('localhost')).toBe('localhost');
      expect(cert.checkHost('api.platform.example')).toBe('api.platform.example');
      expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
      expect(cert.checkIP('10.1.2.3')).toBe('10.1.2.3');
    } finally {
      await server.close();
    }
  });
});

describe('static tokens (--token-auth-file)', () => {
  let ts: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokens-'));
    const file = join(dir, 'tokens.csv');
    writeFileSync(file, 'admin-token-1,root,1,"system:masters"\nreader-token-1,alice,2,"dev,qa"\n');
    ts = await startTestServer({ tokenAuthFile: file });
  });
  afterAll(async () => {
    await ts?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('no token, or an unknown one, is 401 Unauthorized as a Status', async () => {
    for (const client of [ts.anonymous, ts.client('not-a-token')]) {
      const res = await client.get(`${GROUP_PATH}/clusters`);
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'Unauthorized',
        code: 401,
      });
    }
    expect((await ts.anonymous.get('/orchestrator/management/apis')).status).toBe(401);
  });

  test('a member of system:masters may do everything', async () => {
    const root = ts.client('admin-token-1');
    expect(
      (
        await root.post(`${GROUP_PATH}/clusters`, {
          apiVersion: API_VERSION,
          kind: 'Cluster',
          metadata: { name: 'c1' },
          spec: { networkPeer: true },
        })
      ).status,
    ).toBe(201);
    expect((await root.get(`${GROUP_PATH}/clusters/c1`)).status).toBe(200);
  });

  test('anyone else may read discovery but gets 403 with kube’s message for resources', async () => {
    const alice = ts.client('reader-token-1');
    expect((await alice.get('/apis')).status).toBe(200);
    const res = await alice.get(`${GROUP_PATH}/namespaces/team-a/sharedsecrets/s1`);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      reason: 'Forbidden',
      message:
        'sharedsecrets.management.platform.sh "s1" is forbidden: User "alice" cannot get resource "sharedsecrets" in API group "management.platform.sh" in the namespace "team-a"',
      details: { name: 's1', group: 'management.platform.sh', kind: 'sharedsecrets' },
    });
    // A list she may not make in full shows only what she may get (none yet), rather than 403.
    const list = await alice.get(`${GROUP_PATH}/clusters`);
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([]);
    // She may not delete the collection, though.
    const wipe = await alice.delete(`${GROUP_PATH}/namespaces/team-a/sharedsecrets`);
    expect(wipe.body.message).toBe(
      'sharedsecrets.management.platform.sh is forbidden: User "alice" cannot deletecollection resource "sharedsecrets" in API group "management.platform.sh" in the namespace "team-a"',
    );
  });

  test("an object's access list lets its users do its verbs on it, and lists show it to them", async () => {
    const root = ts.client('admin-token-1');
    const alice = ts.client('reader-token-1');
    await root.post(`${GROUP_PATH}/clusters`, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'shared-with-alice' },
      spec: { networkPeer: true, access: [{ verbs: ['get', 'list'], users: ['alice'] }] },
    });
    await root.post(`${GROUP_PATH}/clusters`, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'owned-by-qa' },
      spec: { networkPeer: true, owner: { team: 'qa' } },
    });
    await root.post(`${GROUP_PATH}/clusters`, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'not-hers' },
      spec: { networkPeer: true },
    });
    expect((await alice.get(`${GROUP_PATH}/clusters/shared-with-alice`)).status).toBe(200);
    expect((await alice.get(`${GROUP_PATH}/clusters/not-hers`)).status).toBe(403);
    expect(
      (
        await alice.patch(
          `${GROUP_PATH}/clusters/shared-with-alice`,
          { spec: { unusable: true } },
          'application/merge-patch+json',
        )
      ).status,
    ).toBe(403);
    const names = (await alice.get(`${GROUP_PATH}/clusters`)).body.items.map((c: any) => c.metadata.name).sort();
    expect(names).toEqual(['shared-with-alice']);
  });

  test('an entry granting update cannot widen who has access; the owner can', async () => {
    const root = ts.client('admin-token-1');
    const alice = ts.client('reader-token-1');
    const path = `${GROUP_PATH}/clusters/escalation`;
    await root.post(`${GROUP_PATH}/clusters`, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: 'escalation' },
      spec: {
        networkPeer: true,
        owner: { user: 'root' },
        access: [{ verbs: ['get', 'update', 'patch'], users: ['alice'] }],
      },
    });
    const widen = await alice.patch(
      path,
      { spec: { access: [{ verbs: ['*'], users: ['alice'] }] } },
      'application/merge-patch+json',
    );
    expect(widen.status).toBe(403);
    expect(widen.body.message).toBe(
      'clusters.management.platform.sh "escalation" is forbidden: User "alice" cannot change spec.owner or spec.access: only the owner, an access entry granting "*", or system:masters may',
    );
    expect((await root.get(path)).body.spec.access).toEqual([{ verbs: ['get', 'update', 'patch'], users: ['alice'] }]);
    // Her other updates still go through (spec.unusable is system:masters' alone: tenant-fields.test.ts).
    expect((await alice.patch(path, { spec: { displayName: 'hers' } }, 'application/merge-patch+json')).status).toBe(
      200,
    );
  });

  test('health and /version need no token', async () => {
    for (const path of ['/healthz', '/livez', '/readyz', '/version'])
      expect((await ts.anonymous.get(path)).status).toBe(200);
  });
});

describe('discovery, version and health', () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer();
  });
  afterAll(async () => ts?.stop());

  test.each(['', '/orchestrator/management'])('discovery documents under "%s"', async (prefix) => {
    const groups = await ts.admin.get(`${prefix}/apis`);
    expect(groups.body).toEqual({
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [
        {
          name: 'management.platform.sh',
          versions: [{ groupVersion: 'management.platform.sh/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'management.platform.sh/v1', version: 'v1' },
        },
      ],
    });
    expect((await ts.admin.get(`${prefix}/apis/management.platform.sh`)).body).toMatchObject({
      kind: 'APIGroup',
      name: 'management.platform.sh',
    });
    expect((await ts.admin.get(`${prefix}/api`)).body).toMatchObject({ kind: 'APIVersions', versions: [] });

    const resources = (await ts.admin.get(`${prefix}/apis/management.platform.sh/v1`)).body;
    expect(resources).toMatchObject({ kind: 'APIResourceList', groupVersion: 'management.platform.sh/v1' });
    const byName = Object.fromEntries(resources.resources.map((r: any) => [r.name, r]));
    expect(byName.sharedsecrets).toEqual({
      name: 'sharedsecrets',
      singularName: 'sharedsecret',
      namespaced: true,
      kind: 'SharedSecret',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['gsec'],
      categories: ['platform'],
    });
    expect(byName.clusters).toMatchObject({ namespaced: false, kind: 'Cluster', shortNames: ['pcl'] });
    expect(byName['sharedsecrets/status']).toEqual({
      name: 'sharedsecrets/status',
      singularName: '',
      namespaced: true,
      kind: 'SharedSecret',
      verbs: ['get', 'patch', 'update'],
    });
    expect(byName['clusters/status']).toBeDefined();
  });

  test('the aggregated-discovery Accept of kubectl gets the aggregated APIGroupDiscoveryList (aggregated-discovery.test.ts)', async () => {
    const res = await ts.admin.get('/apis', {
      headers: {
        Accept:
          'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json;q=0.9',
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    expect(res.body.kind).toBe('APIGroupDiscoveryList');
  });

  test('unknown groups and paths are 404 Status', async () => {
    for (const path of ['/apis/other.group', '/apis/management.platform.sh/v2', '/nope']) {
      const res = await ts.admin.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({
        kind: 'Status',
        reason: 'NotFound',
        message: 'the server could not find the requested resource',
      });
    }
  });

  test('every valid namespace exists as far as this server knows (kubectl checks after a NotFound)', async () => {
    const res = await ts.admin.get('/api/v1/namespaces/team-a');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      kind: 'Namespace',
      apiVersion: 'v1',
      metadata: { name: 'team-a' },
      status: { phase: 'Active' },
    });
    expect((await ts.admin.get('/api/v1/namespaces/Not_A_Label')).status).toBe(404);
    expect((await ts.anonymous.get('/api/v1/namespaces/team-a')).status).toBe(401);
  });

  test('/version', async () => {
    const res = await ts.anonymous.get('/version');
    // The Kubernetes release whose API this server follows, with its own version as build metadata.
    expect(res.body).toMatchObject({
      major: '1',
      minor: '33',
      emulationMajor: '1',
      emulationMinor: '33',
      gitVersion: 'v1.33.0+platform-management-api.0.1.0',
    });
    expect(res.body.platform).toBe(`${process.platform}/${process.arch}`);
  });

  test('health endpoints answer ok, and list their checks with ?verbose', async () => {
    const ready = await ts.anonymous.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.text).toBe('ok');
    expect(ready.headers['content-type']).toBe('text/plain; charset=utf-8');
    const verbose = await ts.anonymous.get('/readyz?verbose');
    expect(verbose.text).toBe('[+]ping ok\n[+]etcd ok\n[+]shutdown ok\nreadyz check passed\n');
    expect((await ts.anonymous.get('/orchestrator/management/livez')).text).toBe('ok');
  });
});

describe('readiness follows etcd', () => {
  test('/readyz and /healthz fail while etcd is unreachable; /livez stays ok', async () => {
    const etcd = await startTestEtcd();
    const ts = await startTestServer({}, etcd);
    try {
      await etcd.stop();
      const ready = await ts.anonymous.get('/readyz');
      expect(ready.status).toBe(500);
      expect(ready.text).toBe('[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n');
      expect((await ts.anonymous.get('/healthz')).status).toBe(500);
      expect((await ts.anonymous.get('/livez')).status).toBe(200);
      expect((await ts.anonymous.get('/readyz?exclude=etcd')).status).toBe(200);
      const res = await ts.admin.get(`${GROUP_PATH}/clusters/anything`);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({
        reason: 'ServerTimeout',
        message:
          'The get operation against clusters.management.platform.sh could not be completed at this time, please try again.',
      });
    } finally {
      await ts.stop();
    }
  });
});
