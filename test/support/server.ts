/**
 * A real server for tests: real etcd (one per test file), real HTTPS on a free loopback port, the admin
 * token and kubeconfig of the embedded default, and a fresh etcd prefix per server.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { defaultConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';
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

/** How long a stop may take before the test output gets the server's last log lines (to tell what it waits for). */
const SLOW_STOP_MS = 15_000;
const KEPT_LOG_LINES = 40;

/** A logger that prints nothing but keeps the last lines, for a stop that hangs to show. */
function recentLines(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger((line) => {
    lines.push(line.trimEnd());
    if (lines.length > KEPT_LOG_LINES) lines.shift();
  });
  return { log, lines };
}

export async function startTestServer(
  overrides: Partial<Config> = {},
  etcd?: Awaited<ReturnType<typeof startTestEtcd>>,
  givenLog?: Logger,
): Promise<TestServer> {
  const recent = recentLines();
  const log = givenLog ?? recent.log;
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
    // The Clusters' health checks write their status in the background, which tests of other things would race
    // with; test/integration/cluster-health.test.ts turns them on.
    clusterHealthIntervalMs: 0,
    // So do the virtual clusters' (their GET /version would be counted among a virtual cluster's requests);
    // test/integration/virtualcluster-health.test.ts turns them on.
    virtualClusterHealthIntervalMs: 0,
    // The ProjectSecrets' Secrets in the host are asked for by the tests of them (projectsecret-delivery.test.ts),
    // as the chart asks for them with rbac.projectSecretDelivery; other tests count the host's requests.
    projectSecretDelivery: false,
    ...overrides,
  };
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config, log);
  } catch (err) {
    // A start that fails (a test of bad flags) leaves no etcd or data dir of its own behind.
    if (ownEtcd) await theEtcd.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
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
      const slow = setTimeout(() => {
        process.stderr.write(
          `test server ${server.url} has not stopped after ${SLOW_STOP_MS} ms; its last log lines:\n${recent.lines.join('\n')}\n`,
        );
      }, SLOW_STOP_MS);
      await server.close().finally(() => clearTimeout(slow));
      rmSync(dataDir, { recursive: true, force: true });
      if (ownEtcd) await theEtcd.stop();
    },
  };
}

/**
 * A test server whose --token-auth-file knows `users` (name → groups), each with a fresh token and uid
 * `uid-<name>`; `as[name]` calls as that user. The token file goes with the server on stop().
 */
export async function startTestServerWithUsers<U extends string>(
  users: Record<U, string[]>,
  overrides: Partial<Config> = {},
  etcd?: Awaited<ReturnType<typeof startTestEtcd>>,
  log?: Logger,
): Promise<TestServer & { as: Record<U, HttpClient> }> {
  const dir = mkdtempSync(join(tmpdir(), 'test-users-'));
  const tokens = Object.fromEntries(Object.keys(users).map((name) => [name, `${name}-${randomUUID()}`])) as Record<
    U,
    string
  >;
  const lines = (Object.entries(users) as [U, string[]][]).map(
    ([name, groups]) => `${tokens[name]},${name},uid-${name}${groups.length ? `,"${groups.join(',')}"` : ''}`,
  );
  const tokenAuthFile = join(dir, 'tokens.csv');
  writeFileSync(tokenAuthFile, `${lines.join('\n')}\n`, { mode: 0o600 });
  try {
    const ts = await startTestServer({ tokenAuthFile, ...overrides }, etcd, log);
    const as = Object.fromEntries(Object.keys(users).map((name) => [name, ts.client(tokens[name as U])])) as Record<
      U,
      HttpClient
    >;
    return {
      ...ts,
      as,
      async stop() {
        await ts.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
