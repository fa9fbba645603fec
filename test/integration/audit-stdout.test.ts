/**
 * Audit events on stdout (--audit-log-path=-, as the chart writes them) whose reader stalls, as the node's log
 * writer does on a slow disk: the server holds at most 64 MiB of lines stdout has not taken, as one process and as
 * the primary of --workers (which writes the workers' lines); the rest are dropped, counted in
 * apiserver_audit_error_total{plugin="log"} and logged in counted lines. The built server as a process
 * (node dist/main.js), whose stdout the test stops reading.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { secretBody, sharedSecretsPath } from '../support/fixtures.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';

const ROOT_TOKEN = `root-${randomUUID()}`;
const NS = 'audit-stdout';
const MiB = 1024 * 1024;
const BOUND = 64 * MiB;
const DROPPED = 'audit log: lines are not written as fast as they come, events are dropped';
/** Each create's event is about 2 MiB (the object sent and the object answered): 40 are 80 MiB. */
const CREATES = 40;
const EVENT = 2 * MiB;

let etcd: TestEtcd;
let dir: string;
let tokenFile: string;
let policy: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  dir = mkdtempSync(join(tmpdir(), 'audit-stdout-'));
  tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${ROOT_TOKEN},root,uid-root,"system:masters"\n`, { mode: 0o600 });
  policy = join(dir, 'audit-policy.yaml');
  writeFileSync(
    policy,
    'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n' +
      'rules:\n- level: RequestResponse\n  resources: [{group: management.platform.sh, resources: [sharedsecrets]}]\n' +
      '  verbs: [create]\n- level: None\n',
  );
}, 60_000);

afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test.each([1, 2])(
  'with --workers=%i, a stdout that is not read holds at most 64 MiB of events; the rest are dropped, counted and logged',
  async (workers) => {
    const server = await startServerProcess({
      etcdEndpoint: etcd.endpoint,
      etcdPrefix: `/audit-stdout-${randomUUID()}`,
      tokenAuthFile: tokenFile,
      args: [`--workers=${workers}`, '--audit-log-path=-', `--audit-policy-file=${policy}`],
    });
    const names = Array.from({ length: CREATES }, (_, i) => `large-${i}`);
    const dropped = () => server.logs.filter((l) => l.msg === DROPPED).reduce((n, l) => n + Number(l.dropped), 0);
    const ours = () =>
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"audit.k8s.io/v1"'));
    let counted = 0;
    try {
      if (workers > 1) await server.waitForLog('workers serving', 60_000);
      server.pauseStdout();
      for (const name of names) {
        const body = secretBody(name);
        body.spec.data = { k: Buffer.from(name.padEnd(700 * 1024, 'x')).toString('base64') };
        const res = await server.client(ROOT_TOKEN).post(sharedSecretsPath(NS), body);
        expect(res.status).toBe(201);
      }
      await waitFor('dropped events to be logged', () => dropped() > 0, 30_000);
      server.resumeStdout();
      // One process counts its drops in its metrics (each worker counts those of its lines).
      if (workers === 1)
        await waitFor(
          'every event to be on stdout or counted as dropped',
          async () => {
            const samples = parseSamples((await server.client(ROOT_TOKEN).get('/metrics')).text);
            counted = total(samples, 'apiserver_audit_error_total', { plugin: 'log' });
            return ours().length + counted === CREATES;
          },
          30_000,
        );
    } finally {
      server.resumeStdout();
      // At shutdown each process logs the drops not logged yet.
      await server.stop();
    }
    const lines = ours();
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length + dropped()).toBe(CREATES);
    if (workers === 1) expect(counted).toBe(dropped());
    // What stdout got: whole events, within the bound (and the pipe's own 64 KiB, and what the test read before),
    // and the last event of each process, which may reach stdout once it is read again.
    expect(Buffer.byteLength(lines.join('\n'))).toBeLessThanOrEqual(BOUND + MiB + workers * EVENT);
    for (const line of lines) expect(names).toContain(JSON.parse(line).objectRef.name);
    const logged = server.logs.filter((l) => l.msg === DROPPED);
    expect(logged[0]).toMatchObject({ level: 'error', path: '-', bufferBytes: BOUND });
    expect(JSON.stringify(logged)).not.toContain('large-');
  },
  240_000,
);
