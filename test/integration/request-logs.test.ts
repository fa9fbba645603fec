/**
 * Structured logs: JSON lines `{"level","time","msg",...}`. At --v=3 every request has a line (its Audit-Id, user,
 * verb, object, code, latency, user agent); at the default --v=0 requests are not logged, except that an answer
 * of 5xx is always an error line naming its Audit-Id.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { API_VERSION } from '../support/fixtures.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP_PATH, HttpClient } from '../support/http.js';
import { waitFor } from '../support/wait.js';

interface Started {
  server: RunningServer;
  admin: HttpClient;
  anonymous: HttpClient;
  lines: string[];
  dataDir: string;
}

async function start(etcd: TestEtcd, verbosity: number): Promise<Started> {
  const dataDir = mkdtempSync(join(tmpdir(), 'request-logs-'));
  const config: Config = {
    ...defaultConfig(),
    etcdServers: [etcd.endpoint],
    dataDir,
    certDir: join(dataDir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    verbosity,
  };
  const lines: string[] = [];
  const server = await startServer(
    config,
    createLogger((line) => lines.push(line), { verbosity }),
  );
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  return {
    server,
    admin: new HttpClient(server.url, server.caPem!, token),
    anonymous: new HttpClient(server.url, server.caPem!),
    lines,
    dataDir,
  };
}

async function stop(s: Started | undefined) {
  await s?.server.close();
  if (s) rmSync(s.dataDir, { recursive: true, force: true });
}

const parsed = (s: Started) =>
  s.lines
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
const requestLines = (s: Started) => parsed(s).filter((l) => l.msg === 'HTTP');
/** The request's line, once written (it is written when the response has ended, just after the client has it). */
const lineOf = (s: Started, auditID: unknown) =>
  waitFor(`the log line of request ${auditID}`, () => requestLines(s).find((l) => l.auditID === auditID));

describe('--v=3', () => {
  let etcd: TestEtcd;
  let s: Started;

  beforeAll(async () => {
    etcd = await startTestEtcd();
    s = await start(etcd, 3);
  }, 60_000);

  afterAll(async () => {
    await stop(s);
    await etcd?.stop();
  });

  test('one line per request: id, user, verb, object, code, latency, user agent', async () => {
    const path = `${GROUP_PATH}/namespaces/logged/sharedsecrets`;
    const created = await s.admin.post(
      path,
      { apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { name: 'one' }, spec: {} },
      { headers: { 'User-Agent': 'logs-test/2' } },
    );
    expect(created.status).toBe(201);
    const line = await lineOf(s, created.headers['audit-id']);
    expect(line).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      msg: 'HTTP',
      auditID: created.headers['audit-id'],
      verb: 'create',
      path,
      apiGroup: 'management.platform.sh',
      resource: 'sharedsecrets',
      namespace: 'logged',
      user: 'admin',
      code: 201,
      latencyMs: expect.any(Number),
      userAgent: 'logs-test/2',
      srcIP: '127.0.0.1',
      protocol: 'HTTP/1.1',
    });
    const got = await s.admin.get(`${path}/one?resourceVersion=0`);
    expect(await lineOf(s, got.headers['audit-id'])).toMatchObject({
      verb: 'get',
      name: 'one',
      code: 200,
      path: `${path}/one`,
    });
  });

  test('refusals are logged too, without a user when none was authenticated', async () => {
    const res = await s.anonymous.get('/apis');
    expect(res.status).toBe(401);
    const line = await lineOf(s, res.headers['audit-id']);
    expect(line).toMatchObject({ level: 'info', verb: 'get', path: '/apis', code: 401, reason: 'Unauthorized' });
    expect(line.user).toBeUndefined();
  });
});

describe('--v=0', () => {
  let etcd: TestEtcd;
  let s: Started | undefined;

  beforeAll(async () => {
    etcd = await startTestEtcd();
    s = await start(etcd, 0);
  }, 60_000);

  afterAll(async () => {
    await stop(s);
    await etcd?.stop();
  });

  test('requests are not logged, but lifecycle is; a 5xx is an error line with its Audit-Id', async () => {
    const ok = await s!.admin.get('/apis');
    expect(ok.status).toBe(200);
    expect(parsed(s!).some((l) => l.msg === 'serving' && l.level === 'info')).toBe(true);

    // Without etcd the server is not ready: 500.
    await etcd.stop();
    const res = await s!.admin.get('/readyz');
    expect(res.status).toBe(500);
    const line = await lineOf(s!, res.headers['audit-id']);
    expect(line).toMatchObject({ level: 'error', msg: 'HTTP', verb: 'get', path: '/readyz', code: 500, user: 'admin' });
    // Written after the 200 was, had it been logged.
    expect(requestLines(s!).filter((l) => l.auditID === ok.headers['audit-id'] || l.code < 500)).toEqual([]);
  }, 30_000);
});
