/**
 * The parts of observability that need no server: kube's request labels, audit log rotation by size with capped
 * backups (lumberjack's naming), work queue metrics, audit events' response status and source IPs, and the flags.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags } from '../../src/config.js';
import { WorkQueue } from '../../src/controllers/workqueue.js';
import { badRequest, forbidden, invalid } from '../../src/apimachinery/status.js';
import { resolveRequestInfo } from '../../src/http/requestinfo.js';
import { auditEvent, type AuditedRequest } from '../../src/observability/audit.js';
import { requestLabels, type ServedApis } from '../../src/observability/labels.js';
import { Metrics, etcdObjectType } from '../../src/observability/metrics.js';
import { RotatingFile } from '../../src/observability/rotatingfile.js';
import { peerIP, sourceIPs } from '../../src/observability/sourceips.js';
import { parseSamples, total } from '../support/prometheus.js';
import { stalledFile } from '../support/stalledfile.js';
import { waitFor } from '../support/wait.js';

const GROUP = 'management.platform.sh';
const served: ServedApis = {
  serves: (g, v, r, s) =>
    g === GROUP && v === 'v1' && ['sharedsecrets', 'projects'].includes(r) && ['', 'status'].includes(s),
  servesPath: (p) => p === `/apis/${GROUP}/v1`,
};

function labels(method: string, url: string, contentType?: string) {
  const u = new URL(url, 'https://x');
  return requestLabels(
    method,
    resolveRequestInfo(method, u.pathname, u.searchParams),
    u.searchParams,
    contentType,
    served,
  );
}

describe('request labels, as kube-apiserver reports them', () => {
  const base = `/apis/${GROUP}/v1`;
  test.each([
    [
      'GET',
      `${base}/namespaces/a/sharedsecrets/s`,
      undefined,
      { verb: 'GET', scope: 'resource', resource: 'sharedsecrets' },
    ],
    ['GET', `${base}/namespaces/a/sharedsecrets`, undefined, { verb: 'LIST', scope: 'namespace' }],
    ['GET', `${base}/sharedsecrets`, undefined, { verb: 'LIST', scope: 'cluster' }],
    ['GET', `${base}/namespaces/a/sharedsecrets?watch=true`, undefined, { verb: 'WATCH', scope: 'namespace' }],
    ['GET', `${base}/namespaces/a/sharedsecrets/s?watch=1`, undefined, { verb: 'WATCH', scope: 'resource' }],
    ['POST', `${base}/namespaces/a/sharedsecrets`, undefined, { verb: 'POST', scope: 'resource' }],
    ['PUT', `${base}/namespaces/a/sharedsecrets/s/status`, undefined, { verb: 'PUT', subresource: 'status' }],
    ['PATCH', `${base}/namespaces/a/sharedsecrets/s`, 'application/merge-patch+json', { verb: 'PATCH' }],
    ['PATCH', `${base}/namespaces/a/sharedsecrets/s`, 'application/apply-patch+yaml; charset=utf-8', { verb: 'APPLY' }],
    ['DELETE', `${base}/namespaces/a/sharedsecrets`, undefined, { verb: 'DELETE', scope: 'namespace' }],
    ['POST', `${base}/namespaces/a/sharedsecrets?dryRun=All`, undefined, { dry_run: 'All' }],
    ['POST', `${base}/namespaces/a/sharedsecrets?dryRun=Some`, undefined, { dry_run: 'invalid' }],
    ['OPTIONS', `${base}/sharedsecrets`, undefined, { verb: 'other' }],
    ['GET', '/healthz', undefined, { verb: 'GET', scope: '', group: '', subresource: '/healthz' }],
    ['GET', `/apis/${GROUP}/v1`, undefined, { verb: 'GET', subresource: `/apis/${GROUP}/v1` }],
    ['GET', '/orchestrator/management/healthz', undefined, { subresource: '/healthz' }],
  ])('%s %s (%s)', (method, url, contentType, want) => {
    expect(labels(method, url, contentType)).toMatchObject({ component: 'apiserver', ...want });
  });

  test('what the server does not serve never becomes a label value', () => {
    expect(labels('GET', '/wp-login.php')).toMatchObject({ subresource: 'other' });
    expect(labels('GET', `/apis/${GROUP}/v2`)).toMatchObject({ subresource: 'other' });
    expect(labels('GET', `/apis/${GROUP}/v1/namespaces/a/made-up-${Math.random()}`)).toMatchObject({
      group: '',
      version: '',
      resource: '',
      subresource: '',
    });
    expect(labels('GET', `/apis/${GROUP}/v1/namespaces/a/sharedsecrets/s/random-sub`)).toMatchObject({
      resource: 'sharedsecrets',
      subresource: '',
    });
  });

  test('etcd keys become <resource>.<group>, or the server key family', () => {
    expect(etcdObjectType('/registry', `/registry/${GROUP}/sharedsecrets/ns/name`)).toBe(`sharedsecrets.${GROUP}`);
    expect(etcdObjectType('/registry', '/registry/signingkeys/direct-cluster-endpoint-tokens')).toBe('signingkeys');
    expect(etcdObjectType('/registry', 'health')).toBe('');
  });
});

describe('audit log rotation', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('rotates past the size into <name>-<UTC time>.<ext>, keeps maxBackups, loses no line', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rotate-'));
    const path = join(dir, 'audit.log');
    let now = Date.parse('2025-03-04T05:06:07.089Z');
    const file = new RotatingFile({ path, maxSizeBytes: 100, maxBackups: 3, maxAgeDays: 0, now: () => new Date(now) });
    const lines = Array.from({ length: 20 }, (_, i) => `${JSON.stringify({ n: i, pad: 'x'.repeat(20) })}\n`);
    for (const line of lines) {
      file.write(line);
      now += 1000;
    }
    await file.close();

    const names = readdirSync(dir).sort();
    expect(names).toHaveLength(4);
    expect(names).toContain('audit.log');
    for (const name of names.filter((n) => n !== 'audit.log'))
      expect(name).toMatch(/^audit-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}\.log$/);
    for (const name of names) expect(statSync(join(dir, name)).size).toBeLessThanOrEqual(100);
    // The newest lines survive, in order: the backups oldest first, then the current file.
    const kept = [...names.filter((n) => n !== 'audit.log'), 'audit.log']
      .map((n) => readFileSync(join(dir, n), 'utf8'))
      .join('');
    expect(lines.join('').endsWith(kept)).toBe(true);
    expect(kept.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(6);
  });

  test('rotated files older than maxAgeDays go; a line longer than the limit gets a file of its own', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rotate-'));
    const path = join(dir, 'audit.log');
    writeFileSync(join(dir, 'audit-2020-01-01T00-00-00.000.log'), 'old\n');
    writeFileSync(join(dir, 'unrelated-2020-01-01T00-00-00.000.log'), 'not ours\n');
    const file = new RotatingFile({ path, maxSizeBytes: 10, maxBackups: 0, maxAgeDays: 7 });
    file.write('a much longer line than ten bytes\n');
    file.write('and another one\n');
    await file.close();
    const names = readdirSync(dir).sort();
    expect(names).not.toContain('audit-2020-01-01T00-00-00.000.log');
    expect(names).toContain('unrelated-2020-01-01T00-00-00.000.log');
    expect(readFileSync(path, 'utf8')).toBe('and another one\n');
    expect(names.filter((n) => /^audit-/.test(n))).toHaveLength(1);
  });

  test('an existing log is appended to, its size counted', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rotate-'));
    const path = join(dir, 'audit.log');
    writeFileSync(path, 'x'.repeat(95));
    const file = new RotatingFile({ path, maxSizeBytes: 100, maxBackups: 1, maxAgeDays: 0 });
    file.write('0123456789\n');
    await file.close();
    expect(readFileSync(path, 'utf8')).toBe('0123456789\n');
    expect(readdirSync(dir)).toHaveLength(2);
  });

  test('a disk that stalls: at most maxPendingBytes wait for it, those of a file rotated meanwhile included; past it lines are refused, and those taken all land, in order', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rotate-'));
    const stalled = stalledFile(join(dir, 'audit.log'));
    const KiB = 1024;
    // The stalled file rotates after 150 lines; the next go to a new file beside it, which the disk takes at once.
    const file = new RotatingFile({
      path: stalled.path,
      maxSizeBytes: 150 * KiB,
      maxBackups: 0,
      maxAgeDays: 0,
      maxPendingBytes: 200 * KiB,
    });
    const line = (i: number) => `${String(i).padStart(KiB - 1, '0')}\n`;
    const taken: string[] = [];
    let refused = 0;
    let stalledLines: string;
    try {
      for (let i = 0; i < 1000; i++) {
        if (file.write(line(i))) taken.push(line(i));
        else refused++;
      }
      expect(taken).toHaveLength(200);
      expect(refused).toBe(800);
      expect(file.pendingBytes()).toBe(200 * KiB);
      // Once the new file has taken its lines, what waits is the stalled file's: the room left is what it does not hold.
      await waitFor('the new file to take its lines', () => file.pendingBytes() === 150 * KiB);
      expect(file.write(line(1000))).toBe(true);
      taken.push(line(1000));
      expect(file.write('x'.repeat(50 * KiB))).toBe(false);
    } finally {
      // The disk moves again (a write that never ends would keep the process from exiting).
      const read = stalled.drain();
      await file.close();
      stalledLines = await read;
    }
    expect(file.backups()).toHaveLength(1);
    expect(stalledLines).toBe(taken.slice(0, 150).join(''));
    expect(readFileSync(stalled.path, 'utf8')).toBe(taken.slice(150).join(''));
    expect(file.pendingBytes()).toBe(0);
  });
});

describe('audit event response status', () => {
  const info = resolveRequestInfo('POST', `/apis/${GROUP}/v1/namespaces/a/sharedsecrets`, new URLSearchParams());
  const base: AuditedRequest = {
    auditID: 'id',
    requestURI: '/x',
    info,
    user: { name: 'u', groups: ['g'] },
    sourceIPs: ['127.0.0.1'],
    received: new Date(0),
    code: 200,
  };

  test('success: the code only; refusals: status, reason, message', () => {
    expect(auditEvent(base, 'ResponseComplete', new Date(1)).responseStatus).toEqual({ metadata: {}, code: 200 });
    const denied = forbidden({ group: GROUP, resource: 'sharedsecrets' }, '', 'User "u" cannot create resource').status;
    expect(
      auditEvent({ ...base, code: 403, status: denied }, 'ResponseComplete', new Date(1)).responseStatus,
    ).toMatchObject({
      status: 'Failure',
      reason: 'Forbidden',
      message: denied.message,
      code: 403,
    });
  });

  test('messages that may quote the body are left out: Invalid keeps only the fields, BadRequest only its reason', () => {
    const bad = invalid({ group: GROUP, kind: 'SharedSecret' }, 's', [
      { type: 'FieldValueInvalid', field: 'spec.key', value: 'sekrit-value', detail: 'may not change' },
    ]).status;
    const rs = auditEvent({ ...base, code: 422, status: bad }, 'ResponseComplete', new Date(1)).responseStatus;
    expect(JSON.stringify(rs)).not.toContain('sekrit-value');
    expect(rs).toMatchObject({
      status: 'Failure',
      reason: 'Invalid',
      code: 422,
      details: { causes: [{ reason: 'FieldValueInvalid', field: 'spec.key' }] },
    });
    const parse = badRequest('Unexpected token s in "sekrit-value"').status;
    expect(
      JSON.stringify(auditEvent({ ...base, code: 400, status: parse }, 'ResponseComplete', new Date(1))),
    ).not.toContain('sekrit-value');
  });
});

describe('audit event source IPs', () => {
  const forwarded = { 'x-forwarded-for': '203.0.113.7, 10.0.0.5', 'x-real-ip': '198.51.100.2' };

  test("from the front proxy: kube's order, X-Forwarded-For, X-Real-Ip when new, then the connection's address", () => {
    expect(sourceIPs(forwarded, '10.0.0.9', true)).toEqual(['203.0.113.7', '10.0.0.5', '198.51.100.2', '10.0.0.9']);
    expect(sourceIPs({ 'x-forwarded-for': '203.0.113.7', 'x-real-ip': '203.0.113.7' }, '10.0.0.9', true)).toEqual([
      '203.0.113.7',
      '10.0.0.9',
    ]);
    // Not repeated when the chain already ends with it, as kube's utilnet.SourceIPs.
    expect(sourceIPs({ 'x-forwarded-for': '203.0.113.7, 10.0.0.9' }, '10.0.0.9', true)).toEqual([
      '203.0.113.7',
      '10.0.0.9',
    ]);
  });

  test('from any other client the forwarding headers are ignored: only the connection address is recorded', () => {
    expect(sourceIPs(forwarded, '127.0.0.1', false)).toEqual(['127.0.0.1']);
  });

  test('the connection address is always last, even when the chain names it earlier', () => {
    expect(sourceIPs({ 'x-forwarded-for': '10.0.0.9, 203.0.113.7' }, '10.0.0.9', true)).toEqual([
      '10.0.0.9',
      '203.0.113.7',
      '10.0.0.9',
    ]);
  });

  test('entries that are no IP address are dropped; addresses are written as Go writes them', () => {
    const headers = {
      'x-forwarded-for': 'evil.example, "1.2.3.4", 2001:DB8:0:0:0:0:0:1,, ::ffff:192.0.2.1, 010.1.1.1',
      'x-real-ip': 'not an ip\n',
    };
    expect(sourceIPs(headers, '::ffff:127.0.0.1', true)).toEqual(['2001:db8::1', '192.0.2.1', '127.0.0.1']);
    expect(peerIP('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(peerIP('::1')).toBe('::1');
    expect(peerIP(undefined)).toBe('');
  });
});

test('work queues: depth read at scrape, adds and retries counted', async () => {
  const metrics = new Metrics({ processMetrics: false });
  const q = new WorkQueue({ name: 'q', metrics: metrics.workQueues, baseDelayMs: 60_000 });
  q.add('a');
  q.add('b');
  q.add('a');
  let s = parseSamples(await metrics.text());
  expect(total(s, 'workqueue_depth', { name: 'q' })).toBe(2);
  expect(total(s, 'workqueue_adds_total', { name: 'q' })).toBe(2);
  const key = (await q.get())!;
  q.retry(key);
  q.done(key);
  s = parseSamples(await metrics.text());
  expect(total(s, 'workqueue_retries_total', { name: 'q' })).toBe(1);
  expect(total(s, 'workqueue_depth', { name: 'q' })).toBe(1);
  // A queue shut down (its controller stopped leading) no longer counts.
  q.shutdown();
  expect(total(parseSamples(await metrics.text()), 'workqueue_depth', { name: 'q' })).toBe(0);
});

describe('flags', () => {
  test('--v: 0 by default, 0 to 10', () => {
    expect(parseFlags([])!.verbosity).toBe(0);
    expect(parseFlags(['--v=3'])!.verbosity).toBe(3);
    expect(parseFlags(['--v', '10'])!.verbosity).toBe(10);
    expect(() => parseFlags(['--v=11'])).toThrow('--v must be a whole number from 0 to 10 (got "11")');
    expect(() => parseFlags(['--v=-1'])).toThrow(/--v must be a whole number/);
  });

  test('--authorization-always-allow-paths: the health paths by default; paths with at most a trailing *', () => {
    expect(parseFlags([])!.authorizationAlwaysAllowPaths).toEqual(['/healthz', '/readyz', '/livez']);
    expect(
      parseFlags(['--authorization-always-allow-paths=/healthz,/metrics,/debug/*'])!.authorizationAlwaysAllowPaths,
    ).toEqual(['/healthz', '/metrics', '/debug/*']);
    expect(parseFlags(['--authorization-always-allow-paths='])!.authorizationAlwaysAllowPaths).toEqual([]);
    expect(() => parseFlags(['--authorization-always-allow-paths=metrics'])).toThrow(/trailing \*.*"metrics"/);
    expect(() => parseFlags(['--authorization-always-allow-paths=/a*/b'])).toThrow(/"\/a\*\/b"/);
  });

  test('audit log: off by default; size in megabytes (100), 10 backups, no age limit', () => {
    expect(parseFlags([])).toMatchObject({
      auditLogMaxSizeBytes: 100 * 1024 * 1024,
      auditLogMaxBackup: 10,
      auditLogMaxAgeDays: 0,
    });
    expect(parseFlags([])!.auditLogPath).toBeUndefined();
    expect(
      parseFlags(['--audit-log-path=-', '--audit-log-maxsize=5', '--audit-log-maxbackup=2', '--audit-log-maxage=30']),
    ).toMatchObject({
      auditLogPath: '-',
      auditLogMaxSizeBytes: 5 * 1024 * 1024,
      auditLogMaxBackup: 2,
      auditLogMaxAgeDays: 30,
    });
    expect(() => parseFlags(['--audit-log-maxsize=1.5'])).toThrow(
      '--audit-log-maxsize must be a whole number, 0 or more (got "1.5")',
    );
  });
});
