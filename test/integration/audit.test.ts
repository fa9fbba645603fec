/**
 * --audit-log-path: one audit.k8s.io/v1 Event per line at level Metadata, as kube-apiserver writes them (who, what,
 * which object, the answer, the authorization decision), for every kind of answer including 401 and 403, with the
 * Audit-Id the client sees; never a body. --audit-log-maxsize rotates it and --audit-log-maxbackup caps the backups.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, makeCert } from '../support/certs.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP } from '../support/fixtures.js';
import { GROUP_PATH, HttpClient, type HttpResponse } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { openWatch } from '../support/watch.js';

const SECRETS = `${GROUP_PATH}/namespaces/audited/sharedsecrets`;
const SECRET_VALUE = Buffer.from('audit-must-never-see-this').toString('base64');
const FRONT_PROXY_CA = makeCa('front-proxy-ca');
const FRONT_PROXY = makeCert({ commonName: 'front-proxy-client', issuer: FRONT_PROXY_CA });

let etcd: TestEtcd;
let dir: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  dir = mkdtempSync(join(tmpdir(), 'audit-'));
}, 60_000);

afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function events(file: string): any[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const auditId = (res: HttpResponse) => res.headers['audit-id'] as string;

describe('events', () => {
  let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
  const file = () => join(dir, 'events', 'audit.log');
  const answers: Record<string, HttpResponse> = {};
  let watchId = '';
  let all: any[] = [];

  beforeAll(async () => {
    const requestheaderClientCaFile = join(dir, 'front-proxy-ca.crt');
    writeFileSync(requestheaderClientCaFile, FRONT_PROXY_CA.certPem);
    ts = await startTestServerWithUsers(
      { root: ['system:masters'], alice: [] },
      { auditLogPath: file(), requestheaderClientCaFile, requestheaderAllowedNames: ['front-proxy-client'] },
      etcd,
    );
    const { root, alice } = ts.as;
    const body = {
      apiVersion: `${GROUP}/v1`,
      kind: 'SharedSecret',
      metadata: { name: 's1' },
      spec: { data: { token: SECRET_VALUE } },
    };
    answers.create = await root.post(SECRETS, body, { headers: { 'User-Agent': 'audit-test/1.0' } });
    answers.get = await root.get(`${SECRETS}/s1`, { headers: { 'Audit-Id': 'given-by-the-front-proxy-1' } });
    answers.list = await root.get(SECRETS);
    answers.update = await root.put(`${SECRETS}/s1`, {
      ...body,
      metadata: { name: 's1', resourceVersion: answers.create.body.metadata.resourceVersion },
    });
    // The invalid label value is quoted in the answer (an invalid data value names only its type).
    answers.invalid = await root.post(SECRETS, {
      apiVersion: `${GROUP}/v1`,
      kind: 'SharedSecret',
      metadata: { name: 's2', labels: { note: `${SECRET_VALUE}!` } },
      spec: { data: { token: `${SECRET_VALUE}!` } },
    });
    answers.forbidden = await alice.get(`${SECRETS}/s1`);
    answers.unauthorized = await new HttpClient(ts.server.url, ts.server.caPem!, 'not-a-known-token').get(SECRETS);
    answers.anonymous = await ts.anonymous.get(SECRETS);
    answers.healthz = await ts.anonymous.get('/healthz');
    answers.forwardedByClient = await root.get(SECRETS, {
      headers: { 'X-Forwarded-For': '203.0.113.7', 'X-Real-Ip': '198.51.100.2' },
    });
    const frontProxy = new HttpClient(ts.server.url, ts.server.caPem!, undefined, {
      cert: FRONT_PROXY,
      headers: [
        ['X-Remote-User', 'proxied'],
        ['X-Remote-Group', 'system:masters'],
        ['X-Forwarded-For', '203.0.113.7, 10.1.2.3'],
      ],
    });
    answers.forwardedByFrontProxy = await frontProxy.get(SECRETS);
    const watch = await openWatch(root, SECRETS);
    watchId = watch.headers['audit-id'] as string;
    watch.close();
    answers.delete = await root.delete(`${SECRETS}/s1`);
    await waitFor(
      'the watch to be audited as complete',
      () => existsSync(file()) && events(file()).some((e) => e.auditID === watchId && e.stage === 'ResponseComplete'),
    );
    await ts.stop();
    all = events(file());
  }, 60_000);

  afterAll(async () => {
    await ts?.stop();
  });

  const of = (name: string) => all.filter((e) => e.auditID === auditId(answers[name]));

  test('every request gets an Audit-Id, the one its front proxy sent if any, and the same one in its event', () => {
    expect(answers.get.headers['audit-id']).toBe('given-by-the-front-proxy-1');
    for (const name of Object.keys(answers)) {
      expect(auditId(answers[name])).toBeTruthy();
      expect(of(name)).toHaveLength(1);
    }
    expect(new Set(Object.values(answers).map(auditId)).size).toBe(Object.keys(answers).length);
  });

  test('a create: who, from where, what, the answer, and the decision', () => {
    const [e] = of('create');
    expect(answers.create.status).toBe(201);
    expect(e).toEqual({
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      auditID: auditId(answers.create),
      stage: 'ResponseComplete',
      requestURI: SECRETS,
      verb: 'create',
      user: { username: 'root', uid: 'uid-root', groups: ['system:masters', 'system:authenticated'] },
      sourceIPs: ['127.0.0.1'],
      userAgent: 'audit-test/1.0',
      // The name comes from the object sent, as kube's LogRequestObject completes objectRef.
      objectRef: { resource: 'sharedsecrets', namespace: 'audited', name: 's1', apiGroup: GROUP, apiVersion: 'v1' },
      responseStatus: { metadata: {}, code: 201 },
      requestReceivedTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      stageTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
    });
    expect(Date.parse(e.stageTimestamp)).toBeGreaterThanOrEqual(Date.parse(e.requestReceivedTimestamp));
  });

  test("sourceIPs: a client's own X-Forwarded-For and X-Real-Ip are not believed; the front proxy's are, with the connection's address last", () => {
    expect(answers.forwardedByClient.status).toBe(200);
    expect(of('forwardedByClient')[0]).toMatchObject({ user: { username: 'root' }, sourceIPs: ['127.0.0.1'] });
    expect(answers.forwardedByFrontProxy.status).toBe(200);
    expect(of('forwardedByFrontProxy')[0]).toMatchObject({
      user: { username: 'proxied' },
      sourceIPs: ['203.0.113.7', '10.1.2.3', '127.0.0.1'],
    });
  });

  test('an update names the resourceVersion it was sent with', () => {
    expect(answers.update.status).toBe(200);
    expect(of('update')[0]).toMatchObject({
      verb: 'update',
      objectRef: { name: 's1', namespace: 'audited', resourceVersion: answers.create.body.metadata.resourceVersion },
      responseStatus: { code: 200 },
    });
  });

  test('get, list and delete name their verb and object', () => {
    expect(of('get')[0]).toMatchObject({
      verb: 'get',
      objectRef: { name: 's1', namespace: 'audited' },
      responseStatus: { code: 200 },
    });
    expect(of('list')[0]).toMatchObject({ verb: 'list', requestURI: SECRETS, responseStatus: { code: 200 } });
    expect(of('list')[0].objectRef.name).toBeUndefined();
    expect(of('delete')[0]).toMatchObject({ verb: 'delete', objectRef: { name: 's1' }, responseStatus: { code: 200 } });
  });

  test('a watch: ResponseStarted once established, ResponseComplete when it ends', () => {
    const stages = all.filter((e) => e.auditID === watchId).map((e) => [e.stage, e.verb, e.responseStatus.code]);
    expect(stages).toEqual([
      ['ResponseStarted', 'watch', 200],
      ['ResponseComplete', 'watch', 200],
    ]);
  });

  test('a refusal: the Status reason and message, and the decision with its reason', () => {
    const [e] = of('forbidden');
    expect(e.user).toMatchObject({ username: 'alice' });
    expect(e.responseStatus).toEqual({
      metadata: {},
      status: 'Failure',
      reason: 'Forbidden',
      message: answers.forbidden.body.message,
      details: answers.forbidden.body.details,
      code: 403,
    });
    expect(e.annotations['authorization.k8s.io/decision']).toBe('forbid');
  });

  test('a failed authentication: one ResponseStarted event with no user, as kube writes it', () => {
    for (const name of ['unauthorized', 'anonymous']) {
      expect(answers[name].status).toBe(401);
      const [e] = of(name);
      expect(e).toMatchObject({
        stage: 'ResponseStarted',
        verb: 'list',
        user: {},
        responseStatus: { status: 'Failure', reason: 'Unauthorized', code: 401 },
      });
      expect(e.annotations).toBeUndefined();
    }
  });

  test('a public path read anonymously is audited as system:anonymous', () => {
    expect(of('healthz')[0]).toMatchObject({
      verb: 'get',
      requestURI: '/healthz',
      user: { username: 'system:anonymous', groups: ['system:unauthenticated'] },
      responseStatus: { code: 200 },
    });
    expect(of('healthz')[0].objectRef).toBeUndefined();
  });

  test('no body reaches the audit log: neither the secret data nor an invalid value quoted in the answer', () => {
    expect(answers.invalid.status).toBeGreaterThanOrEqual(400);
    expect(answers.invalid.text).toContain(SECRET_VALUE.slice(0, 8));
    const [e] = of('invalid');
    expect(e.responseStatus).toMatchObject({
      status: 'Failure',
      code: answers.invalid.status,
      reason: answers.invalid.body.reason,
    });
    expect(readFileSync(file(), 'utf8')).not.toContain(SECRET_VALUE);
    expect(readFileSync(file(), 'utf8')).not.toContain('not-a-known-token');
  });
});

test('rotation: past --audit-log-maxsize the log moves aside as <name>-<time>.<ext>; --audit-log-maxbackup are kept', async () => {
  const logDir = join(dir, 'rotated');
  const path = join(logDir, 'api-audit.log');
  const ts = await startTestServerWithUsers(
    { root: ['system:masters'] },
    { auditLogPath: path, auditLogMaxSizeBytes: 4096, auditLogMaxBackup: 2 },
    etcd,
  );
  const ids: string[] = [];
  try {
    for (let i = 0; i < 40; i++) ids.push(auditId(await ts.as.root.get(`${SECRETS}/n${i}`)));
  } finally {
    await ts.stop();
  }
  const names = readdirSync(logDir).sort();
  expect(names).toHaveLength(3);
  expect(names.filter((n) => n !== 'api-audit.log')).toEqual([
    expect.stringMatching(/^api-audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/),
    expect.stringMatching(/^api-audit-.*\.log$/),
  ]);
  const kept: any[] = [];
  for (const name of [...names.filter((n) => n !== 'api-audit.log'), 'api-audit.log']) {
    expect(statSync(join(logDir, name)).size).toBeLessThanOrEqual(4096);
    kept.push(...events(join(logDir, name)));
  }
  // What is kept is the latest events, in order, and whole lines only.
  const keptIds = kept.map((e) => e.auditID);
  expect(keptIds).toEqual(ids.slice(ids.length - keptIds.length));
  expect(keptIds.length).toBeGreaterThan(5);
}, 60_000);
