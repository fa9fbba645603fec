/**
 * What the Helm chart relies on when the server runs in a cluster: etcd over TLS with a client certificate
 * (--etcd-cafile/--etcd-certfile/--etcd-keyfile), and the front proxy's settings read from the host's
 * kube-system/extension-apiserver-authentication ConfigMap instead of --requestheader-* flags.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { makeCa, makeCert } from '../support/certs.js';
import { startTlsEtcd, type TlsEtcd } from '../support/etcd.js';
import { CLUSTERS_PATH, clusterBody, uniq } from '../support/fixtures.js';
import { HttpClient } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, type TestServer } from '../support/server.js';

describe('etcd over TLS with a client certificate', () => {
  let etcd: TlsEtcd;
  beforeAll(async () => {
    etcd = await startTlsEtcd();
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
  });

  test('the server stores and reads through a TLS etcd that requires client certificates', async () => {
    const ts = await startTestServer({
      etcdServers: [etcd.endpoint],
      etcdCafile: etcd.files.ca,
      etcdCertfile: etcd.files.cert,
      etcdKeyfile: etcd.files.key,
    });
    try {
      const name = uniq('c');
      expect((await ts.admin.post(CLUSTERS_PATH, clusterBody(name))).status).toBe(201);
      expect((await ts.admin.get(`${CLUSTERS_PATH}/${name}`)).body.metadata.name).toBe(name);
      expect((await ts.anonymous.get('/readyz')).status).toBe(200);
    } finally {
      await ts.stop();
    }
  });

  test('a client certificate etcd does not trust: the server does not start, and says etcd is the problem', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rogue-etcd-'));
    const config = {
      ...defaultConfig(),
      etcdServers: [etcd.endpoint],
      etcdCafile: etcd.files.ca,
      etcdCertfile: etcd.rogue.cert,
      etcdKeyfile: etcd.rogue.key,
      dataDir,
      certDir: join(dataDir, 'certs'),
      bindAddress: '127.0.0.1',
      securePort: 0,
    };
    try {
      await expect(startServer(config, silentLogger)).rejects.toThrow(/etcd/i);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('front proxy settings from kube-system/extension-apiserver-authentication', () => {
  const frontProxyCa = makeCa('front-proxy-ca');
  const frontProxy = makeCert({ commonName: 'front-proxy-client', issuer: frontProxyCa });
  const otherProxy = makeCert({ commonName: 'someone-else', issuer: frontProxyCa });
  const clientCa = makeCa('kubernetes-client-ca');
  const ops = makeCert({ commonName: 'ops', organizations: ['system:masters'], issuer: clientCa });
  let host: HostClusterStandIn;

  beforeAll(async () => {
    host = await startHostCluster();
    host.addConfigMap('kube-system', 'extension-apiserver-authentication', {
      'client-ca-file': clientCa.certPem,
      'requestheader-client-ca-file': frontProxyCa.certPem,
      'requestheader-allowed-names': '["front-proxy-client"]',
      'requestheader-username-headers': '["X-Remote-User"]',
      'requestheader-group-headers': '["X-Remote-Group"]',
      'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
    });
  }, 60_000);
  afterAll(async () => {
    await host?.stop();
  });

  /** What kube-apiserver sends to an aggregated server: its front proxy certificate and the user in headers. */
  const proxied = (ts: TestServer, cert = frontProxy) =>
    new HttpClient(ts.server.url, ts.server.caPem!, undefined, {
      cert,
      headers: [
        ['X-Remote-User', 'alice'],
        ['X-Remote-Group', 'system:masters'],
      ],
    });

  test('without --requestheader-* flags the ConfigMap is used: the front proxy identifies the user, the client CA its certificates', async () => {
    const ts = await startTestServer({ kubeconfig: host.kubeconfigPath });
    try {
      const listed = await proxied(ts).get(CLUSTERS_PATH);
      expect(listed.status).toBe(200);
      // Only the allowed name may speak for users.
      expect((await proxied(ts, otherProxy).get(CLUSTERS_PATH)).status).toBe(401);
      // client-ca-file: a certificate it signed is a user (CN) with groups (O).
      expect(
        (await new HttpClient(ts.server.url, ts.server.caPem!, undefined, { cert: ops }).get(CLUSTERS_PATH)).status,
      ).toBe(200);
    } finally {
      await ts.stop();
    }
  });

  test('--authentication-skip-lookup: the ConfigMap is not read, and proxied headers count for nothing', async () => {
    host.resetCounts();
    const ts = await startTestServer({ kubeconfig: host.kubeconfigPath, authenticationSkipLookup: true });
    try {
      expect((await proxied(ts).get(CLUSTERS_PATH)).status).toBe(401);
      expect(host.count('configmaps')).toBe(0);
    } finally {
      await ts.stop();
    }
  });

  test('flags win: with --requestheader-client-ca-file the ConfigMap is not read', async () => {
    host.resetCounts();
    const dir = mkdtempSync(join(tmpdir(), 'rh-'));
    const otherCa = makeCa('other-front-proxy-ca');
    const file = join(dir, 'ca.crt');
    writeFileSync(file, otherCa.certPem);
    const ts = await startTestServer({ kubeconfig: host.kubeconfigPath, requestheaderClientCaFile: file });
    try {
      expect(host.count('configmaps')).toBe(0);
      expect((await proxied(ts).get(CLUSTERS_PATH)).status).toBe(401);
    } finally {
      await ts.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a host that cannot be asked: the server does not start, and names the permission it needs', async () => {
    await host.setDown(true, 'unavailable');
    const dataDir = mkdtempSync(join(tmpdir(), 'no-cm-'));
    try {
      const config = {
        ...defaultConfig(),
        etcdServers: [],
        dataDir,
        certDir: join(dataDir, 'certs'),
        bindAddress: '127.0.0.1',
        securePort: 0,
        kubeconfig: host.kubeconfigPath,
      };
      await expect(startServer(config, silentLogger)).rejects.toThrow(
        /extension-apiserver-authentication.*the host cluster answered HTTP 503.*extension-apiserver-authentication-reader/s,
      );
    } finally {
      await host.setDown(false);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('a host without the ConfigMap: the server starts; proxied requests are not authenticated', async () => {
    const bare = await startHostCluster();
    const ts = await startTestServer({ kubeconfig: bare.kubeconfigPath });
    try {
      expect((await proxied(ts).get(CLUSTERS_PATH)).status).toBe(401);
      expect((await ts.admin.get(CLUSTERS_PATH)).status).toBe(200);
    } finally {
      await ts.stop();
      await bare.stop();
    }
  });
});
