/**
 * A real server for tests: real etcd (one per test file), real HTTPS on a free loopback port, the admin
 * token and kubeconfig of the embedded default, and a fresh etcd prefix per server.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { defaultConfig, type Config } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { startTestEtcd } from './etcd.js';
import { HttpClient } from './http.js';

export interface TestServer {
  server: RunningServer;
  config: Config;
  etcd: Awaited<ReturnType<typeof startTestEtcd>>;
  /** Authenticated as the admin (system:masters). */
  admin: HttpClient;
  /** No credentials. */
  anonymous: HttpClient;
  client(token: string): HttpClient;
  kubeconfig: string;
  stop(): Promise<void>;
}

export async function startTestServer(overrides: Partial<Config> = {}, etcd?: Awaited<ReturnType<typeof startTestEtcd>>): Promise<TestServer> {
  const ownEtcd = !etcd;
  const theEtcd = etcd ?? (await startTestEtcd());
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-server-'));
  const config: Config = {
    ...defaultConfig(),
    etcdServers: [theEtcd.endpoint],
    etcdPrefix: `/test-${randomUUID()}`,
    dataDir,
    certDir: join(dataDir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    ...overrides,
  };
  const server = await startServer(config, silentLogger);
  const ca = server.caPem ?? '';
  const token = config.tokenAuthFile ? '' : readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  return {
    server,
    config,
    etcd: theEtcd,
    admin: new HttpClient(server.url, ca, token),
    anonymous: new HttpClient(server.url, ca),
    client: (t: string) => new HttpClient(server.url, ca, t),
    kubeconfig: server.adminKubeconfig ?? '',
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (ownEtcd) await theEtcd.stop();
    },
  };
}
