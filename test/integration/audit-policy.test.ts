/**
 * --audit-policy-file and --audit-webhook-config-file, as kube-apiserver's: the policy's first matching rule gives
 * each request its level (None, Metadata, Request with the body sent, RequestResponse with the answer too) and the
 * stages left out; bodies are what a reader sees, so an access key, its hash, an issued token and connector data are
 * in no event at any level, while a SharedSecret's data is where the policy asks for bodies. The webhook gets the
 * events in batches (EventList) over real HTTPS, a batch it fails is sent again, and requests never wait for it; a
 * receiver that hangs holds no more than --audit-webhook-batch-buffer-size events, the rest being dropped, counted and
 * logged; with large events, the webhook and a log file whose disk stalls each hold no more than 64 MiB of them. A
 * policy kube would refuse stops the start with kube's message.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { createLogger } from '../../src/log.js';
import { makeCert } from '../support/certs.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, MERGE_PATCH, JSON_PATCH } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { openWatch } from '../support/watch.js';
import { stalledFile } from '../support/stalledfile.js';
import { startWebhookServer, type WebhookServer } from '../support/webhookserver.js';

const NS = 'audited';
const SECRETS = `${GROUP_PATH}/namespaces/${NS}/sharedsecrets`;
const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const TOKENS = `${GROUP_PATH}/directclusterendpointtokens`;
const SECRET_DATA = Buffer.from('secret-data-the-policy-asked-for').toString('base64');
const CONNECTOR_DATA = 'connector-data-never-audited';
const LEVELS = ['Metadata', 'Request', 'RequestResponse'] as const;
type Level = (typeof LEVELS)[number];

let etcd: TestEtcd;
let dir: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  dir = mkdtempSync(join(tmpdir(), 'audit-policy-'));
}, 60_000);

afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, doc: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof doc === 'string' ? doc : yaml.dump(doc));
  return path;
}

function events(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const auditId = (res: HttpResponse) => res.headers['audit-id'] as string;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What each user did, at the level its rule gives it. */
interface Done {
  secretCreate: HttpResponse;
  secretGet: HttpResponse;
  keyCreate: HttpResponse;
  keyGet: HttpResponse;
  keyWithDataCreate: HttpResponse;
  keyMergePatch: HttpResponse;
  keyJsonPatch: HttpResponse;
  keyList: HttpResponse;
  tokenCreate: HttpResponse;
  refused: HttpResponse;
}

describe('levels and stages, by the policy', () => {
  const log = () => join(dir, 'levels', 'audit.log');
  let ts: TestServer & { as: Record<'none' | 'meta' | 'req' | 'rr' | 'root', HttpClient> };
  const done = {} as Record<'none' | Level, Done>;
  let all: any[] = [];
  let text = '';
  let healthz: HttpResponse;
  let rootGet: HttpResponse;
  let rootCreate: HttpResponse;
  let watchId = '';
  /** Every key and token the server made or was sent: none may be in any event. */
  const credentials: string[] = [];

  beforeAll(async () => {
    const policy = file('levels-policy.yaml', {
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['ResponseStarted'],
      rules: [
        { level: 'None', users: ['none'] },
        { level: 'Metadata', users: ['meta'] },
        { level: 'Request', users: ['req'], omitStages: ['RequestReceived'] },
        { level: 'RequestResponse', users: ['rr'] },
        { level: 'Request', nonResourceURLs: ['/healthz*'] },
        // Later than the rules above: the users named there are never at this level, whatever they do.
        { level: 'RequestResponse', userGroups: ['system:masters'], verbs: ['get', 'watch'] },
      ],
    });
    ts = await startTestServerWithUsers(
      {
        none: ['system:masters'],
        meta: ['system:masters'],
        req: ['system:masters'],
        rr: ['system:masters'],
        root: ['system:masters'],
      },
      { auditLogPath: log(), auditPolicyFile: policy },
      etcd,
    );
    for (const who of ['none', ...LEVELS] as const) {
      const c = ts.as[who === 'none' ? 'none' : who === 'Metadata' ? 'meta' : who === 'Request' ? 'req' : 'rr'];
      const secret = `s-${who.toLowerCase()}`;
      const key = `k-${who.toLowerCase()}`;
      const keyWithData = `kd-${who.toLowerCase()}`;
      const given = `client-chosen-key-${who.toLowerCase()}-0123456789`;
      const d = {} as Done;
      d.secretCreate = await c.post(SECRETS, {
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name: secret },
        spec: { data: { token: SECRET_DATA } },
      });
      d.secretGet = await c.get(`${SECRETS}/${secret}`);
      d.keyCreate = await c.post(KEYS, {
        apiVersion: API_VERSION,
        kind: 'OwnedAccessKey',
        metadata: { name: key },
        spec: { user: 'alice' },
      });
      d.keyGet = await c.get(`${KEYS}/${key}`);
      d.keyWithDataCreate = await c.post(KEYS, {
        apiVersion: API_VERSION,
        kind: 'OwnedAccessKey',
        metadata: { name: keyWithData },
        spec: { user: 'alice', key: given, identity: { userId: 'u-1', connectorData: CONNECTOR_DATA } },
      });
      d.keyMergePatch = await c.patch(
        `${KEYS}/${keyWithData}`,
        { spec: { key: given, identity: { userId: 'u-1', connectorData: `${CONNECTOR_DATA}-2` } } },
        MERGE_PATCH,
      );
      d.keyJsonPatch = await c.patch(
        `${KEYS}/${keyWithData}`,
        [
          { op: 'test', path: '/spec/user', value: 'alice' },
          { op: 'add', path: '/spec/identity', value: { userId: 'u-1', connectorData: `${CONNECTOR_DATA}-3` } },
        ],
        JSON_PATCH,
      );
      d.keyList = await c.get(KEYS);
      d.tokenCreate = await c.post(TOKENS, {
        apiVersion: API_VERSION,
        kind: 'DirectClusterEndpointToken',
        spec: { ttl: 600 },
      });
      // An invalid value quoted in the answer's message (the answer's body, never the audit's).
      d.refused = await c.post(SECRETS, {
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name: `bad-${who.toLowerCase()}`, labels: { note: `${SECRET_DATA}!` } },
        spec: { data: { token: SECRET_DATA } },
      });
      expect([d.secretCreate.status, d.keyCreate.status, d.keyWithDataCreate.status, d.tokenCreate.status]).toEqual([
        201, 201, 201, 201,
      ]);
      expect([d.secretGet.status, d.keyGet.status, d.keyMergePatch.status, d.keyJsonPatch.status]).toEqual([
        200, 200, 200, 200,
      ]);
      expect(d.refused.status).toBe(422);
      credentials.push(d.keyCreate.body.spec.key, given, d.tokenCreate.body.status.token);
      done[who] = d;
    }
    healthz = await ts.as.root.get('/healthz');
    rootGet = await ts.as.root.get(`${SECRETS}/s-metadata`);
    rootCreate = await ts.as.root.post(SECRETS, {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 'by-root' },
      spec: { data: { token: SECRET_DATA } },
    });
    const watch = await openWatch(ts.as.root, SECRETS);
    watchId = watch.headers['audit-id'] as string;
    watch.close();
    await waitFor('the watch to be audited as complete', () =>
      events(log()).some((e) => e.auditID === watchId && e.stage === 'ResponseComplete'),
    );
    await ts.stop();
    text = readFileSync(log(), 'utf8');
    all = events(log());
  }, 120_000);

  afterAll(async () => {
    await ts?.stop();
  });

  const of = (res: HttpResponse) => all.filter((e) => e.auditID === auditId(res));
  const complete = (res: HttpResponse) => {
    const found = of(res).filter((e) => e.stage === 'ResponseComplete');
    expect(found).toHaveLength(1);
    return found[0];
  };

  test('no key, key hash, token or connector data is in any event, at any level', () => {
    expect(credentials).toHaveLength(12);
    for (const secret of credentials) {
      expect(secret.length).toBeGreaterThan(20);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(sha256(secret));
    }
    expect(text).not.toContain(CONNECTOR_DATA);
    expect(text).not.toContain('sha256:');
  });

  test('None: the user the first rule names has no events at all', () => {
    for (const res of Object.values(done.none)) {
      expect(auditId(res)).toBeTruthy();
      expect(of(res)).toEqual([]);
    }
  });

  test('Metadata: who did what, without bodies; RequestReceived and ResponseComplete', () => {
    for (const res of Object.values(done.Metadata)) {
      expect(of(res).map((e) => [e.stage, e.level])).toEqual([
        ['RequestReceived', 'Metadata'],
        ['ResponseComplete', 'Metadata'],
      ]);
      expect(of(res)[0].responseStatus).toBeUndefined();
      for (const e of of(res)) {
        expect(e.requestObject).toBeUndefined();
        expect(e.responseObject).toBeUndefined();
      }
    }
    expect(JSON.stringify(all.filter((e) => e.user.username === 'meta'))).not.toContain(SECRET_DATA);
  });

  test('Request: the object sent, as a reader sees it; no answer; RequestReceived left out by the rule', () => {
    const d = done.Request;
    for (const res of Object.values(d))
      expect(of(res).map((e) => [e.stage, e.level])).toEqual([['ResponseComplete', 'Request']]);
    expect(complete(d.secretCreate).requestObject).toEqual({
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 's-request' },
      spec: { data: { token: SECRET_DATA } },
    });
    expect(complete(d.keyCreate).requestObject).toEqual({
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name: 'k-request' },
      spec: { user: 'alice' },
    });
    // The key and the connector data sent are taken out, the rest is kept.
    expect(complete(d.keyWithDataCreate).requestObject.spec).toEqual({ user: 'alice', identity: { userId: 'u-1' } });
    expect(complete(d.keyMergePatch).requestObject).toEqual({ spec: { identity: { userId: 'u-1' } } });
    expect(complete(d.keyJsonPatch).requestObject).toEqual([
      { op: 'test', path: '/spec/user', value: 'alice' },
      { op: 'add', path: '/spec/identity', value: { userId: 'u-1' } },
    ]);
    expect(complete(d.tokenCreate).requestObject).toMatchObject({
      kind: 'DirectClusterEndpointToken',
      spec: { ttl: 600 },
    });
    for (const res of Object.values(d)) expect(complete(res).responseObject).toBeUndefined();
    // A get sends nothing.
    expect(complete(d.secretGet).requestObject).toBeUndefined();
  });

  test('RequestResponse: the answer too, as a reader sees it (a new key without its key; a token never)', () => {
    const d = done.RequestResponse;
    for (const res of Object.values(d))
      expect(of(res).map((e) => [e.stage, e.level])).toEqual([
        ['RequestReceived', 'RequestResponse'],
        ['ResponseComplete', 'RequestResponse'],
      ]);
    expect(complete(d.secretCreate).responseObject).toMatchObject({
      kind: 'SharedSecret',
      metadata: { name: 's-requestresponse', uid: d.secretCreate.body.metadata.uid },
      spec: { data: { token: SECRET_DATA } },
    });
    expect(complete(d.secretGet).responseObject).toEqual(d.secretGet.body);
    // The create's answer carried the key; its audit does not.
    expect(d.keyCreate.body.spec.key).toMatch(/^pak_/);
    const { key: _key, ...spec } = d.keyCreate.body.spec;
    expect(complete(d.keyCreate).responseObject).toEqual({ ...d.keyCreate.body, spec });
    expect(complete(d.keyGet).responseObject).toEqual(d.keyGet.body);
    expect(complete(d.keyList).responseObject.items.map((k: any) => k.metadata.name)).toEqual(
      d.keyList.body.items.map((k: any) => k.metadata.name),
    );
    expect(complete(d.keyWithDataCreate).responseObject.spec).toEqual({ user: 'alice', identity: { userId: 'u-1' } });
    // An action's answer is a credential for the caller alone.
    expect(complete(d.tokenCreate).requestObject).toMatchObject({ spec: { ttl: 600 } });
    expect(complete(d.tokenCreate).responseObject).toBeUndefined();
    // A failure's answer is its Status, without the message that quotes the body.
    const refused = complete(d.refused);
    expect(d.refused.text).toContain(SECRET_DATA.slice(0, 12));
    expect(refused.responseObject).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Invalid', code: 422 });
    expect(refused.responseObject.message).toBeUndefined();
  });

  test('rule order: the first match wins; what no rule matches is not audited', () => {
    // root is in system:masters: its get meets only the last rule; its create no rule.
    expect(complete(rootGet).level).toBe('RequestResponse');
    expect(rootCreate.status).toBe(201);
    expect(of(rootCreate)).toEqual([]);
    // The users named first are at their own level even for gets, which the last rule would give RequestResponse.
    expect(complete(done.Metadata.secretGet).level).toBe('Metadata');
    expect(complete(done.Request.secretGet).level).toBe('Request');
    // A non-resource URL rule: no body to show.
    expect(complete(healthz)).toMatchObject({
      level: 'Request',
      requestURI: '/healthz',
      responseStatus: { code: 200 },
    });
  });

  test("omitStages: the policy's ResponseStarted is left out of every request, a watch's included", () => {
    expect(all.some((e) => e.stage === 'ResponseStarted')).toBe(false);
    expect(all.filter((e) => e.auditID === watchId).map((e) => e.stage)).toEqual([
      'RequestReceived',
      'ResponseComplete',
    ]);
    // A watch's answer is a stream: no responseObject.
    expect(all.find((e) => e.auditID === watchId && e.stage === 'ResponseComplete').responseObject).toBeUndefined();
  });
});

describe('the webhook', () => {
  /** The receiver: the first batch is answered 500; later ones are held until released, then 200. */
  let receiver: Server;
  const posts: { items: any[]; code: number; authorization?: string }[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let url = '';
  let ca = '';

  beforeAll(async () => {
    const caCert = makeCert({ commonName: 'audit-receiver-ca', isCa: true });
    const serving = makeCert({ commonName: 'audit-receiver', issuer: caCert, usage: 'serverAuth', ips: ['127.0.0.1'] });
    ca = caCert.certPem;
    receiver = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString());
        expect(body).toMatchObject({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1' });
        const code = posts.length === 0 ? 500 : 200;
        posts.push({ items: body.items, code, authorization: req.headers.authorization });
        const answer = () => {
          res.writeHead(code, { 'Content-Type': 'application/json' });
          res.end('{}');
        };
        if (code === 500) answer();
        else void released.then(answer);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/audit`;
  });

  afterAll(async () => {
    release();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  test('batched as EventLists, a failed batch sent again, and requests never wait for the receiver', async () => {
    const kubeconfig = file('webhook-kubeconfig.yaml', {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'r', cluster: { server: url, 'certificate-authority-data': Buffer.from(ca).toString('base64') } },
      ],
      users: [{ name: 'r', user: { token: 'receiver-token' } }],
      contexts: [{ name: 'r', context: { cluster: 'r', user: 'r' } }],
      'current-context': 'r',
    });
    const ts = await startTestServerWithUsers(
      { root: ['system:masters'] },
      {
        auditWebhookConfigFile: kubeconfig,
        auditWebhookBatchMaxSize: 3,
        // Batches go when full (or at shutdown), never because time passed: the test does not depend on speed.
        auditWebhookBatchMaxWaitMs: 3_600_000,
        auditWebhookInitialBackoffMs: 10,
      },
      etcd,
    );
    const ids: string[] = [];
    try {
      // Three events: one batch, failed with a 500, sent again and then held by the receiver.
      for (let i = 0; i < 3; i++) ids.push(auditId(await ts.as.root.get(`${SECRETS}/first-${i}`)));
      await waitFor('the batch to be sent again', () => posts.length >= 2);
      // The receiver holds that batch: requests go on, and fill another batch, which waits too.
      for (let i = 0; i < 4; i++) {
        const res = await ts.as.root.get(`${SECRETS}/then-${i}`);
        expect(res.status).toBe(404);
        ids.push(auditId(res));
      }
      release();
    } finally {
      // What is still buffered is sent at shutdown.
      await ts.stop();
    }
    expect(posts[0].code).toBe(500);
    expect(posts[1].items).toEqual(posts[0].items);
    for (const post of posts) {
      expect(post.items.length).toBeLessThanOrEqual(3);
      expect(post.authorization).toBe('Bearer receiver-token');
    }
    const delivered = posts.filter((p) => p.code === 200).flatMap((p) => p.items);
    const deliveredIds = delivered.map((e) => e.auditID);
    // Without a policy file, every request at Metadata, ResponseComplete only (as the log file without a policy).
    for (const id of ids) expect(deliveredIds.filter((d) => d === id)).toHaveLength(1);
    expect(delivered.find((e) => e.auditID === ids[0])).toMatchObject({
      kind: 'Event',
      level: 'Metadata',
      stage: 'ResponseComplete',
      verb: 'get',
      user: { username: 'root' },
      responseStatus: { code: 404 },
    });
  }, 60_000);
});

describe('a receiver that hangs', () => {
  const BUFFER = 20;
  const FLOOD = 100;
  const BATCH = 5;
  const DROPPED_LINE = 'audit webhook: the buffer is full, events are dropped';
  let receiver: WebhookServer;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    receiver = await startWebhookServer();
    // Every batch is held unanswered until the test releases the receiver, then answered 200.
    receiver.handle('/audit', () => ({ raw: { status: 200, body: {} }, until: released }));
  });

  afterAll(async () => {
    release();
    await receiver?.stop();
  });

  test('the buffer bounds every event the webhook holds; the rest are dropped, counted and logged in a few lines', async () => {
    const kubeconfig = file('hung-receiver-kubeconfig.yaml', {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'r', cluster: { server: receiver.url('/audit'), 'certificate-authority-data': receiver.caBundle } },
      ],
      users: [{ name: 'r', user: { token: 'receiver-token' } }],
      contexts: [{ name: 'r', context: { cluster: 'r', user: 'r' } }],
      'current-context': 'r',
    });
    const lines: any[] = [];
    const log = createLogger((line) => lines.push(JSON.parse(line)));
    const ts = await startTestServerWithUsers(
      { root: ['system:masters'] },
      {
        auditWebhookConfigFile: kubeconfig,
        auditWebhookBatchBufferSize: BUFFER,
        auditWebhookBatchMaxSize: BATCH,
        // Batches go when full (or at shutdown), never because time passed; nor do they wait for a token.
        auditWebhookBatchMaxWaitMs: 3_600_000,
        auditWebhookBatchThrottleEnable: false,
      },
      etcd,
      log,
    );
    const scrape = async () => parseSamples((await ts.as.root.get('/metrics')).text);
    const flood: string[] = [];
    const after: string[] = [];
    let droppedSeen = 0;
    try {
      // Five times the buffer, while the receiver answers nothing.
      for (let i = 0; i < FLOOD; i++) flood.push(auditId(await ts.as.root.get(`${SECRETS}/flood-${i}`)));
      const samples = await waitFor('the webhook to count the flood it could not hold as dropped', async () => {
        const now = await scrape();
        droppedSeen = total(now, 'apiserver_audit_error_total', { plugin: 'buffered' });
        return droppedSeen >= FLOOD - BUFFER && now;
      });
      expect(total(samples, 'apiserver_audit_webhook_buffered_events')).toBe(BUFFER);
      // The events held are in the batches the receiver holds: no more reached it.
      await waitFor('the held batches to reach the receiver', () => receiver.received.length >= BUFFER / BATCH);
      expect(receiver.received.flatMap((r) => r.review.items)).toHaveLength(BUFFER);

      // Once the receiver answers, the batches it held leave the buffer (what stays is the scrapes' own events, less
      // than a batch) and new events are sent again.
      release();
      await waitFor(
        'the held batches to be answered',
        async () => total(await scrape(), 'apiserver_audit_webhook_buffered_events') < BATCH,
        60_000,
      );
      for (let i = 0; i < 3; i++) after.push(auditId(await ts.as.root.get(`${SECRETS}/after-${i}`)));
    } finally {
      release();
      await ts.stop();
    }
    const delivered = receiver.received.flatMap((r) => r.review.items.map((e: any) => e.auditID as string));
    expect(new Set(delivered).size).toBe(delivered.length);
    expect(delivered.filter((id) => flood.includes(id))).toHaveLength(BUFFER);
    for (const id of after) expect(delivered).toContain(id);

    // Every drop is in the log (the last count at shutdown), in lines that count them rather than one per event, and
    // that name no event.
    const dropLines = lines.filter((l) => l.msg === DROPPED_LINE);
    const logged = dropLines.reduce((n, l) => n + l.dropped, 0);
    expect(dropLines[0]).toMatchObject({ level: 'error', bufferSize: BUFFER });
    expect(logged).toBeGreaterThanOrEqual(droppedSeen);
    expect(dropLines.length).toBeLessThan(FLOOD - BUFFER);
    const text = JSON.stringify(dropLines);
    for (const id of flood) expect(text).not.toContain(id);
    expect(text).not.toContain('flood-');
  }, 120_000);
});

describe('large events, a receiver that hangs and a disk that stalls', () => {
  const MiB = 1024 * 1024;
  /** What the webhook and the log may each hold of events' JSON. */
  const BOUND = 64 * MiB;
  const PATCHES = 50;
  const BATCH = 4;
  const WEBHOOK_DROPPED = 'audit webhook: the buffer is full, events are dropped';
  const LOG_DROPPED = 'audit log: lines are not written as fast as they come, events are dropped';
  let receiver: WebhookServer;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    receiver = await startWebhookServer();
    receiver.handle('/audit', () => ({ raw: { status: 200, body: {} }, until: released }));
  });

  afterAll(async () => {
    release();
    await receiver?.stop();
  });

  test('the webhook and the log each hold at most 64 MiB of them, however few; the rest are dropped, counted and logged', async () => {
    const policy = file('large-events-policy.yaml', {
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [
        { level: 'RequestResponse', resources: [{ group: 'management.platform.sh', resources: ['sharedsecrets'] }] },
      ],
    });
    const kubeconfig = file('large-events-kubeconfig.yaml', {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'r', cluster: { server: receiver.url('/audit'), 'certificate-authority-data': receiver.caBundle } },
      ],
      users: [{ name: 'r', user: { token: 'receiver-token' } }],
      contexts: [{ name: 'r', context: { cluster: 'r', user: 'r' } }],
      'current-context': 'r',
    });
    const disk = stalledFile(join(dir, 'large-events-audit.log'));
    const lines: any[] = [];
    const log = createLogger((line) => lines.push(JSON.parse(line)));
    const ts = await startTestServerWithUsers(
      { root: ['system:masters'], owner: [] },
      {
        auditPolicyFile: policy,
        auditLogPath: disk.path,
        auditLogMaxSizeBytes: 0,
        auditWebhookConfigFile: kubeconfig,
        auditWebhookBatchMaxSize: BATCH,
        // Batches go when full (or at shutdown), never because time passed; nor do they wait for a token.
        auditWebhookBatchMaxWaitMs: 3_600_000,
        auditWebhookBatchThrottleEnable: false,
        // A batch whose try timed out (30 s: a slow machine's flood) is sent again at once once the receiver answers.
        auditWebhookInitialBackoffMs: 100,
      },
      etcd,
      log,
    );
    const scrape = async () => parseSamples((await ts.as.root.get('/metrics')).text);
    const ids: string[] = [];
    const held = { events: 0, bytes: 0 };
    let webhookDropped: number;
    let logDropped: number;
    let drained: Promise<string> | undefined;
    try {
      // One SharedSecret whose owner writes it again and again: each event about 1.8 MiB (the patch sent and the
      // object answered), far fewer events than the 10000 the buffer may hold.
      const created = await ts.as.root.post(SECRETS, {
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name: 'large' },
        spec: { owner: { user: 'owner' } },
      });
      expect(created.status).toBe(201);
      ids.push(auditId(created));
      for (let i = 0; i < PATCHES; i++) {
        const value = Buffer.from(`${i}`.padEnd(660 * 1024, 'x')).toString('base64');
        const res = await ts.as.owner.patch(`${SECRETS}/large`, { spec: { data: { k: value } } }, MERGE_PATCH);
        expect(res.status).toBe(200);
        ids.push(auditId(res));
      }
      const samples = await waitFor('the webhook to hold or count as dropped every event', async () => {
        const now = await scrape();
        const events = total(now, 'apiserver_audit_webhook_buffered_events');
        return events + total(now, 'apiserver_audit_error_total', { plugin: 'buffered' }) === ids.length && now;
      });
      held.events = total(samples, 'apiserver_audit_webhook_buffered_events');
      held.bytes = total(samples, 'apiserver_audit_webhook_buffered_bytes');
      webhookDropped = total(samples, 'apiserver_audit_error_total', { plugin: 'buffered' });
      logDropped = total(samples, 'apiserver_audit_error_total', { plugin: 'log' });
      expect(webhookDropped).toBeGreaterThan(0);
      expect(held.bytes).toBeLessThanOrEqual(BOUND);
      // Full: the next event would not have fitted.
      expect(held.bytes).toBeGreaterThan(BOUND - 2 * MiB);
      expect(logDropped).toBeGreaterThan(0);

      // Once the receiver answers, the batches it held leave the buffer (what stays waits for a batch to fill).
      release();
      await waitFor(
        'the held batches to be answered',
        async () => total(await scrape(), 'apiserver_audit_webhook_buffered_events') < BATCH,
        60_000,
      );
      // And once the disk moves, the log's lines land.
      drained = disk.drain();
    } finally {
      release();
      drained ??= disk.drain();
      await ts.stop();
    }
    // The webhook sent what it held, no more (a batch sent again is the same batch).
    const delivered = new Set(receiver.received.flatMap((r) => r.review.items.map((e: any) => e.auditID as string)));
    expect(delivered.size).toBe(held.events);
    for (const id of delivered) expect(ids).toContain(id);

    // The log file got whole lines, within the bound (and the 64 KiB the pipe itself holds), and the rest counted.
    const written = await drained;
    expect(Buffer.byteLength(written)).toBeLessThanOrEqual(BOUND + MiB);
    const logged = written
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).auditID as string);
    expect(logged.length + logDropped).toBe(ids.length);
    for (const id of logged) expect(ids).toContain(id);

    // Both drops are in the server's log, counted, naming the bounds and no event.
    const webhookLines = lines.filter((l) => l.msg === WEBHOOK_DROPPED);
    expect(webhookLines[0]).toMatchObject({ level: 'error', bufferSize: 10_000, bufferBytes: BOUND });
    expect(webhookLines.reduce((n, l) => n + l.dropped, 0)).toBe(webhookDropped);
    const logLines = lines.filter((l) => l.msg === LOG_DROPPED);
    expect(logLines[0]).toMatchObject({ level: 'error', path: disk.path, bufferBytes: BOUND });
    expect(logLines.reduce((n, l) => n + l.dropped, 0)).toBe(logDropped);
    const text = JSON.stringify([...webhookLines, ...logLines]);
    for (const id of ids) expect(text).not.toContain(id);
    expect(text).not.toContain('xxxx');
  }, 180_000);
});

describe('a policy or webhook configuration kube would refuse stops the start, naming what is wrong', () => {
  test.each([
    [
      'a rule with an unknown level',
      () => file('bad-level.yaml', { apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'All' }] }),
      'rules[0].level: Unsupported value: "All": supported values: "None", "Metadata", "Request", "RequestResponse"',
    ],
    [
      'an unknown stage',
      () =>
        file('bad-stage.yaml', {
          apiVersion: 'audit.k8s.io/v1',
          kind: 'Policy',
          rules: [{ level: 'Metadata', omitStages: ['Started'] }],
        }),
      'rules[0].omitStages[0]: Invalid value: "Started": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic',
    ],
    ['a file that is not there', () => join(dir, 'absent.yaml'), 'cannot read the file (ENOENT)'],
  ])('%s', async (_what, path, message) => {
    const policy = path();
    await expect(startTestServer({ auditPolicyFile: policy }, etcd)).rejects.toThrow(message);
    if (!policy.endsWith('absent.yaml'))
      await expect(startTestServer({ auditPolicyFile: policy }, etcd)).rejects.toThrow(`: from file ${policy}`);
  });

  test('a webhook kubeconfig without a cluster', async () => {
    const kubeconfig = file('empty-kubeconfig.yaml', { apiVersion: 'v1', kind: 'Config' });
    await expect(startTestServer({ auditWebhookConfigFile: kubeconfig }, etcd)).rejects.toThrow(
      `--audit-webhook-config-file ${kubeconfig}: `,
    );
  });
});
