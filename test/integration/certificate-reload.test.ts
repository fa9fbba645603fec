/**
 * Certificates that renew under a running server, as kube-apiserver's dynamic certificate controllers reload them:
 * the serving certificate of --tls-cert-file/--tls-private-key-file (swapped by the kubelet in a mounted Secret),
 * --client-ca-file, --requestheader-client-ca-file, and the host's extension-apiserver-authentication ConfigMap.
 * New connections and requests get the new ones; a broken replacement keeps the old ones in force.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { createLogger } from '../../src/log.js';
import { makeCa, makeCert, type TestCert } from '../support/certs.js';
import { startTestEtcd } from '../support/etcd.js';
import { CLUSTERS_PATH } from '../support/fixtures.js';
import { HttpClient } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

/** Changes are noticed by watching the files' directories; the periodic look (1 minute) is not what these wait for. */
const CHANGE_SEEN_MS = 20_000;
/** A test waits for up to two changes. */
const TEST_MS = 3 * CHANGE_SEEN_MS;

let etcd: Awaited<ReturnType<typeof startTestEtcd>>;
beforeAll(async () => {
  etcd = await startTestEtcd();
}, 60_000);
afterAll(async () => {
  await etcd?.stop();
});

/**
 * A directory as the kubelet mounts a Secret: each file is a symlink through `..data` to a timestamped directory,
 * and an update writes a new directory and renames a new `..data` symlink over the old one (its AtomicWriter).
 */
class SecretVolume {
  private version = 0;
  constructor(readonly dir: string) {}

  write(files: Record<string, string>): void {
    const name = `..2026_11_24_00_00_00.${++this.version}`;
    mkdirSync(join(this.dir, name));
    for (const [file, text] of Object.entries(files)) writeFileSync(join(this.dir, name, file), text);
    let previous: string | undefined;
    try {
      previous = readlinkSync(join(this.dir, '..data'));
    } catch {
      // The first write.
    }
    symlinkSync(name, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const file of Object.keys(files)) {
      try {
        symlinkSync(join('..data', file), join(this.dir, file));
      } catch {
        // Already linked through ..data.
      }
    }
    if (previous) rmSync(join(this.dir, previous), { recursive: true, force: true });
  }
}

/** The fingerprint of the certificate a new TLS connection to `url` is served. */
function servedFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

const fingerprint = (cert: TestCert) => new X509Certificate(cert.certPem).fingerprint256;

/** Log lines kept by a test server, to wait for a refusal that changes nothing a client sees. */
function keptLog() {
  const lines: string[] = [];
  return {
    lines,
    log: createLogger((line) => lines.push(line)),
    has: (text: string) => lines.some((l) => l.includes(text)),
  };
}

/** A user of the cluster admins' group, with a certificate from `issuer`. */
const ops = (issuer: TestCert) => makeCert({ commonName: 'ops', organizations: ['system:masters'], issuer });
/** A front proxy (kube-apiserver's --proxy-client-cert-file) with a certificate from `issuer`. */
const proxy = (issuer: TestCert) => makeCert({ commonName: 'front-proxy-client', issuer });

/** The status of a GET of the clusters with a client certificate, directly or as a front proxy speaking for alice. */
function callers(server: () => TestServer) {
  const status = async (identity: ConstructorParameters<typeof HttpClient>[3]) =>
    (await new HttpClient(server().server.url, server().server.caPem!, undefined, identity).get(CLUSTERS_PATH)).status;
  return {
    asUser: (cert: TestCert) => status({ cert }),
    throughProxy: (cert: TestCert) =>
      status({
        cert,
        headers: [
          ['X-Remote-User', 'alice'],
          ['X-Remote-Group', 'system:masters'],
        ],
      }),
  };
}

describe('serving certificate: --tls-cert-file and --tls-private-key-file from a renewed Secret', () => {
  const servingCa = makeCa('serving-ca');
  const serving = () => makeCert({ commonName: 'platform-api', issuer: servingCa, ips: ['127.0.0.1'] });
  const first = serving();
  const renewed = serving();
  const next = serving();
  const logs = keptLog();
  let dir: string;
  let volume: SecretVolume;
  let ts: TestServer;
  let client: HttpClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'serving-tls-'));
    volume = new SecretVolume(dir);
    volume.write({ 'tls.crt': first.certPem, 'tls.key': first.keyPem, 'ca.crt': servingCa.certPem });
    ts = await startTestServer(
      { tlsCertFile: join(dir, 'tls.crt'), tlsPrivateKeyFile: join(dir, 'tls.key') },
      etcd,
      logs.log,
    );
    const token = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
    client = new HttpClient(ts.server.url, servingCa.certPem, token);
  }, 60_000);
  afterAll(async () => {
    await ts?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test(
    'a renewed certificate is served to new connections without a restart',
    async () => {
      expect(await servedFingerprint(ts.server.url)).toBe(fingerprint(first));
      volume.write({ 'tls.crt': renewed.certPem, 'tls.key': renewed.keyPem, 'ca.crt': servingCa.certPem });
      await waitFor(
        'the renewed certificate to be served',
        async () => (await servedFingerprint(ts.server.url)) === fingerprint(renewed),
        CHANGE_SEEN_MS,
      );
      // Clients that trust the issuing CA go on as before.
      expect((await client.get(CLUSTERS_PATH)).status).toBe(200);
      expect(logs.has('serving certificate reloaded')).toBe(true);
    },
    TEST_MS,
  );

  test(
    'a key that does not match its certificate is not served: the pair in force stays, the log names no key',
    async () => {
      volume.write({ 'tls.crt': next.certPem, 'tls.key': renewed.keyPem, 'ca.crt': servingCa.certPem });
      await waitFor(
        'the mismatched pair to be refused',
        () => logs.has('serving certificate not reloaded'),
        CHANGE_SEEN_MS,
      );
      expect(await servedFingerprint(ts.server.url)).toBe(fingerprint(renewed));
      expect((await client.get(CLUSTERS_PATH)).status).toBe(200);
      const refusal = logs.lines.find((l) => l.includes('serving certificate not reloaded'))!;
      expect(refusal).toMatch(/private key does not match the certificate/);
      const keyBody = (pem: string) => pem.split('\n').slice(1, -2).join('');
      for (const line of logs.lines) {
        expect(line).not.toMatch(/PRIVATE KEY/);
        for (const pem of [first.keyPem, renewed.keyPem, next.keyPem])
          expect(line).not.toContain(keyBody(pem).slice(0, 40));
      }

      // The right key arrives: that pair is served.
      volume.write({ 'tls.crt': next.certPem, 'tls.key': next.keyPem, 'ca.crt': servingCa.certPem });
      await waitFor(
        'the complete pair to be served',
        async () => (await servedFingerprint(ts.server.url)) === fingerprint(next),
        CHANGE_SEEN_MS,
      );
    },
    TEST_MS,
  );
});

test('a server given a pair whose key does not match does not start, and says which files', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'serving-tls-'));
  const ca = makeCa('serving-ca');
  const [cert, other] = [1, 2].map(() => makeCert({ commonName: 'platform-api', issuer: ca, ips: ['127.0.0.1'] }));
  writeFileSync(join(dir, 'tls.crt'), cert.certPem);
  writeFileSync(join(dir, 'tls.key'), other.keyPem);
  try {
    await expect(
      startTestServer({ tlsCertFile: join(dir, 'tls.crt'), tlsPrivateKeyFile: join(dir, 'tls.key') }, etcd),
    ).rejects.toThrow(/serving certificate \(.*tls\.crt, .*tls\.key\): the private key does not match the certificate/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe('client CAs: --client-ca-file and --requestheader-client-ca-file rewritten in place', () => {
  const clientCa = makeCa('client-ca');
  const newClientCa = makeCa('client-ca-2');
  const frontProxyCa = makeCa('front-proxy-ca');
  const newFrontProxyCa = makeCa('front-proxy-ca-2');
  const [oldOps, newOps] = [ops(clientCa), ops(newClientCa)];
  const [oldProxy, newProxy] = [proxy(frontProxyCa), proxy(newFrontProxyCa)];
  const logs = keptLog();
  let dir: string;
  let ts: TestServer;

  const { asUser, throughProxy } = callers(() => ts);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'client-cas-'));
    writeFileSync(join(dir, 'client-ca.crt'), clientCa.certPem);
    writeFileSync(join(dir, 'front-proxy-ca.crt'), frontProxyCa.certPem);
    ts = await startTestServer(
      {
        clientCaFile: join(dir, 'client-ca.crt'),
        requestheaderClientCaFile: join(dir, 'front-proxy-ca.crt'),
        requestheaderAllowedNames: ['front-proxy-client'],
      },
      etcd,
      logs.log,
    );
  }, 60_000);
  afterAll(async () => {
    await ts?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test(
    'a new client CA: its certificates are users for the next requests, those of the removed CA are refused',
    async () => {
      expect(await asUser(oldOps)).toBe(200);
      expect(await asUser(newOps)).toBe(401);
      writeFileSync(join(dir, 'client-ca.crt'), newClientCa.certPem);
      await waitFor(
        'a certificate of the new client CA to be accepted',
        async () => (await asUser(newOps)) === 200,
        CHANGE_SEEN_MS,
      );
      expect(await asUser(oldOps)).toBe(401);
    },
    TEST_MS,
  );

  test(
    'a bundle of both CAs (a rotation with overlap) accepts both',
    async () => {
      writeFileSync(join(dir, 'client-ca.crt'), `${clientCa.certPem}${newClientCa.certPem}`);
      await waitFor('the old CA to be back in the bundle', async () => (await asUser(oldOps)) === 200, CHANGE_SEEN_MS);
      expect(await asUser(newOps)).toBe(200);
    },
    TEST_MS,
  );

  test(
    'a new front proxy CA: the proxy it signed speaks for users, the one of the removed CA does not',
    async () => {
      expect(await throughProxy(oldProxy)).toBe(200);
      expect(await throughProxy(newProxy)).toBe(401);
      writeFileSync(join(dir, 'front-proxy-ca.crt'), newFrontProxyCa.certPem);
      await waitFor(
        'the new front proxy to be believed',
        async () => (await throughProxy(newProxy)) === 200,
        CHANGE_SEEN_MS,
      );
      expect(await throughProxy(oldProxy)).toBe(401);
    },
    TEST_MS,
  );

  test(
    'a CA file that does not parse keeps the CAs in force, and says why',
    async () => {
      writeFileSync(join(dir, 'front-proxy-ca.crt'), 'not a certificate\n');
      await waitFor(
        'the broken bundle to be refused',
        () => logs.has('front proxy CA (--requestheader-client-ca-file) not reloaded'),
        CHANGE_SEEN_MS,
      );
      expect(
        logs.lines.find((l) => l.includes('front proxy CA (--requestheader-client-ca-file) not reloaded')),
      ).toMatch(/holds no PEM certificate/);
      expect(await throughProxy(newProxy)).toBe(200);
      expect(await throughProxy(oldProxy)).toBe(401);
    },
    TEST_MS,
  );
});

describe('client CAs from the host ConfigMap kube-system/extension-apiserver-authentication', () => {
  const clientCa = makeCa('kubernetes-client-ca');
  const newClientCa = makeCa('kubernetes-client-ca-2');
  const frontProxyCa = makeCa('front-proxy-ca');
  const newFrontProxyCa = makeCa('front-proxy-ca-2');
  const [oldOps, newOps] = [ops(clientCa), ops(newClientCa)];
  const [oldProxy, newProxy] = [proxy(frontProxyCa), proxy(newFrontProxyCa)];
  const settings = (frontProxy: string, client: string) => ({
    'client-ca-file': client,
    'requestheader-client-ca-file': frontProxy,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-username-headers': '["X-Remote-User"]',
    'requestheader-group-headers': '["X-Remote-Group"]',
    'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
  });
  const logs = keptLog();
  let host: HostClusterStandIn;
  let ts: TestServer;

  const { asUser, throughProxy } = callers(() => ts);

  beforeAll(async () => {
    host = await startHostCluster();
    host.addConfigMap(
      'kube-system',
      'extension-apiserver-authentication',
      settings(frontProxyCa.certPem, clientCa.certPem),
    );
    // The ConfigMap is read again every interval (kube's informer resyncs each minute); short here.
    ts = await startTestServer({ kubeconfig: host.kubeconfigPath, tlsReloadIntervalMs: 200 }, etcd, logs.log);
  }, 60_000);
  afterAll(async () => {
    await ts?.stop();
    await host?.stop();
  });

  test(
    'new CAs in the ConfigMap: the next requests are checked against them, the removed CAs are refused',
    async () => {
      expect(await throughProxy(oldProxy)).toBe(200);
      expect(await asUser(oldOps)).toBe(200);
      expect(await throughProxy(newProxy)).toBe(401);
      host.addConfigMap(
        'kube-system',
        'extension-apiserver-authentication',
        settings(newFrontProxyCa.certPem, newClientCa.certPem),
      );
      await waitFor(
        'the new front proxy CA to be used',
        async () => (await throughProxy(newProxy)) === 200,
        CHANGE_SEEN_MS,
      );
      await waitFor('the new client CA to be used', async () => (await asUser(newOps)) === 200, CHANGE_SEEN_MS);
      expect(await throughProxy(oldProxy)).toBe(401);
      expect(await asUser(oldOps)).toBe(401);
    },
    TEST_MS,
  );

  test(
    'a ConfigMap whose CA does not parse keeps the settings in force, and says why',
    async () => {
      host.addConfigMap(
        'kube-system',
        'extension-apiserver-authentication',
        settings('not a certificate', newClientCa.certPem),
      );
      await waitFor(
        'the broken ConfigMap to be refused',
        () => logs.has('extension-apiserver-authentication not reloaded'),
        CHANGE_SEEN_MS,
      );
      expect(await throughProxy(newProxy)).toBe(200);
      expect(await asUser(newOps)).toBe(200);
    },
    TEST_MS,
  );
});
