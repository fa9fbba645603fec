/**
 * Request limits as kube-apiserver's, each answered with a Status and leaving stored data as it was: nesting
 * depth of bodies, patches and YAML (400), YAML alias bombs (400), request line and headers (431), malformed
 * HTTP (400), and deadlines: --request-timeout and ?timeout= (504 Timeout), watches exempt.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MAX_NESTING_DEPTH } from '../../src/apimachinery/nesting.js';
import {
  API_VERSION,
  APPLY_PATCH as APPLY,
  CLUSTERS_PATH,
  EtcdPeek,
  JSON_PATCH,
  MERGE_PATCH,
  clusterPath,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { rawHttp, type HttpClient } from '../support/http.js';
import { startTestServer, startTestServerWithUsers, type TestServer } from '../support/server.js';
import { HEALTH_INTERVAL_MS } from '../support/connectedclusters.js';
import { startSlowVirtualCluster, type SlowVirtualCluster } from '../support/slowrequest.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** `{"a":{"a":...1}}` with `levels` objects. */
function nestedObjects(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

function deepCluster(name: string, statusLevels: number): string {
  // The object and status add two levels above the nested ones.
  return `{"apiVersion":"${API_VERSION}","kind":"Cluster","metadata":{"name":"${name}"},"spec":{"local":true},"status":{"x":${nestedObjects(statusLevels)}}}`;
}

/** A YAML document whose nine anchors expand to 10^9 scalars ("billion laughs"). */
function aliasBomb(name: string): string {
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++)
    lines.push(
      `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  return [
    `apiVersion: ${API_VERSION}`,
    'kind: Cluster',
    `metadata: {name: ${name}}`,
    'spec: {networkPeer: true}',
    'status:',
    ...lines.map((l) => `  ${l}`),
  ].join('\n');
}

describe('documents nested too deeply or expanding through aliases', () => {
  let ts: TestServer;
  let peek: EtcdPeek;
  beforeAll(async () => {
    ts = await startTestServer();
    peek = new EtcdPeek(ts);
  }, 60_000);
  afterAll(async () => {
    peek?.close();
    await ts?.stop();
  }, 30_000);

  test('an object at the depth limit is stored and served in every shape; one level more is 400 and nothing is stored', async () => {
    const atLimit = deepCluster('deep-ok', MAX_NESTING_DEPTH - 2);
    const created = await ts.admin.post(CLUSTERS_PATH, atLimit);
    expect(created.status).toBe(201);
    for (const accept of ['application/json', 'application/yaml', 'application/json;as=Table;v=v1;g=meta.k8s.io']) {
      expect((await ts.admin.get(clusterPath('deep-ok'), { headers: { Accept: accept } })).status).toBe(200);
    }
    expect(
      (await ts.admin.patch(`${clusterPath('deep-ok')}/status?fieldManager=deep&force=true`, atLimit, APPLY)).status,
    ).toBe(200);
    expect((await ts.admin.patch(`${clusterPath('deep-ok')}/status`, atLimit, MERGE_PATCH)).status).toBe(200);
    expect((await ts.admin.get(`${CLUSTERS_PATH}?watch=true&timeoutSeconds=1`)).status).toBe(200);

    const tooDeep = await ts.admin.post(CLUSTERS_PATH, deepCluster('deep-no', MAX_NESTING_DEPTH - 1));
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    expect(tooDeep.body.message).toContain(`exceeded max depth: nested more than ${MAX_NESTING_DEPTH} levels`);
    expect(await peek.value(peek.clusterKey('deep-no'))).toBeUndefined();
  }, 60_000);

  test('bodies nested far deeper (JSON and YAML, in objects and in patches) are 400 and change nothing', async () => {
    const name = uniq('deep');
    const path = sharedSecretPath('default', name);
    expect(
      (
        await ts.admin.post(sharedSecretsPath('default'), {
          apiVersion: API_VERSION,
          kind: 'SharedSecret',
          metadata: { name },
          spec: {},
        })
      ).status,
    ).toBe(201);
    const before = await peek.entry(peek.sharedSecretKey('default', name));
    const deepArrays = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const attempts = [
      () =>
        ts.admin.post(
          sharedSecretsPath('default'),
          `{"apiVersion":"${API_VERSION}","kind":"SharedSecret","metadata":{"name":"${name}-2"},"spec":{"x":${deepArrays}}}`,
        ),
      () =>
        ts.admin.put(
          path,
          `{"apiVersion":"${API_VERSION}","kind":"SharedSecret","metadata":{"name":"${name}"},"spec":${nestedObjects(100_000)}}`,
        ),
      () => ts.admin.patch(path, `{"spec":{"x":${deepArrays}}}`, MERGE_PATCH),
      () => ts.admin.patch(path, `[{"op":"add","path":"/spec/x","value":${deepArrays}}]`, JSON_PATCH),
      () =>
        ts.admin.patch(
          `${path}?fieldManager=m`,
          `{"apiVersion":"${API_VERSION}","kind":"SharedSecret","metadata":{"name":"${name}"},"spec":{"x":${deepArrays}}}`,
          APPLY,
        ),
      () =>
        ts.admin.post(
          sharedSecretsPath('default'),
          `apiVersion: ${API_VERSION}\nkind: SharedSecret\nmetadata: {name: ${name}-3}\nspec: {x: ${deepArrays}}\n`,
          { contentType: 'application/yaml' },
        ),
      () => ts.admin.delete(path, { body: `{"kind":"DeleteOptions","x":${deepArrays}}` }),
    ];
    for (const attempt of attempts) {
      const res = await attempt();
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
      expect(res.body.message).toContain(`exceeded max depth: nested more than ${MAX_NESTING_DEPTH} levels`);
    }
    expect(await peek.entry(peek.sharedSecretKey('default', name))).toEqual(before);
    expect(await peek.value(peek.sharedSecretKey('default', `${name}-2`))).toBeUndefined();
  }, 60_000);

  test('a YAML alias bomb is 400 "excessive aliasing" at once; a few aliases are fine', async () => {
    const bomb = await ts.admin.post(CLUSTERS_PATH, aliasBomb('bomb'), { contentType: 'application/yaml' });
    expect(bomb.status).toBe(400);
    expect(bomb.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(bomb.body.message).toContain('yaml: document contains excessive aliasing');
    expect(await peek.value(peek.clusterKey('bomb'))).toBeUndefined();
    const applied = await ts.admin.patch(`${clusterPath('bomb')}?fieldManager=m`, aliasBomb('bomb'), APPLY);
    expect(applied.status).toBe(400);
    expect(await peek.value(peek.clusterKey('bomb'))).toBeUndefined();

    const friendly = [
      `apiVersion: ${API_VERSION}`,
      'kind: Cluster',
      'metadata:',
      '  name: aliased',
      '  labels: &l {team: a, tier: b}',
      '  annotations: *l',
      'spec: {networkPeer: true}',
    ].join('\n');
    const created = await ts.admin.post(CLUSTERS_PATH, friendly, { contentType: 'application/yaml' });
    expect(created.status).toBe(201);
    expect(created.body.metadata.annotations).toEqual({ team: 'a', tier: 'b' });
  }, 30_000);

  test("kubectl's last-applied annotation nested too deeply is not used to settle apply conflicts, and is no failure", async () => {
    const name = uniq('lastapplied');
    const obj = {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name, annotations: { [LAST_APPLIED]: nestedObjects(5000) } },
      spec: { data: { a: 'YQ==' } },
    };
    expect((await ts.admin.post(`${sharedSecretsPath('default')}?fieldManager=before`, obj)).status).toBe(201);
    const apply = { apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { name }, spec: { data: { a: 'Yg==' } } };
    const res = await ts.admin.patch(`${sharedSecretPath('default', name)}?fieldManager=kubectl`, apply, APPLY);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Conflict' });
    expect(res.body.message).toContain('conflict with "before"');
  }, 30_000);
});

describe('request line and headers', () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer();
  }, 60_000);
  afterAll(async () => ts?.stop(), 30_000);

  test('a URL and headers within 1 MiB are served; beyond it 431 with a Status saying the limit', async () => {
    expect((await ts.admin.get(`${CLUSTERS_PATH}?unused=${'a'.repeat(500_000)}`)).status).toBe(200);
    expect((await ts.admin.get(CLUSTERS_PATH, { headers: { 'X-Padding': 'p'.repeat(500_000) } })).status).toBe(200);
    for (const res of [
      await ts.admin.get(`${CLUSTERS_PATH}?unused=${'a'.repeat(1_100_000)}`),
      await ts.admin.get(CLUSTERS_PATH, { headers: { 'X-Padding': 'p'.repeat(1_100_000) } }),
    ]) {
      expect(res.status).toBe(431);
      expect(res.body).toMatchObject({
        kind: 'Status',
        status: 'Failure',
        code: 431,
        reason: 'RequestHeaderFieldsTooLarge',
      });
      expect(res.body.message).toContain('1048576 bytes');
    }
    expect((await ts.admin.get(CLUSTERS_PATH)).status).toBe(200);
  }, 30_000);

  test('a path with a . or .. segment is 400 and never reaches the collection it would resolve to', async () => {
    const names = [uniq('dot'), uniq('dot')];
    for (const name of names)
      expect(
        (
          await ts.admin.post(sharedSecretsPath('default'), {
            apiVersion: API_VERSION,
            kind: 'SharedSecret',
            metadata: { name },
            spec: {},
          })
        ).status,
      ).toBe(201);
    const token = readFileSync(join(ts.config.dataDir, 'admin-token'), 'utf8').trim();
    // Sent as written: HTTP clients resolve dot segments before sending.
    for (const path of [
      `${sharedSecretsPath('default')}/.`,
      `${sharedSecretsPath('default')}/%2E`,
      `${sharedSecretPath('default', names[0])}/..`,
      `${sharedSecretPath('default', names[0])}/%2e%2e`,
      `${sharedSecretsPath('default')}\\.`,
    ]) {
      for (const method of ['DELETE', 'GET']) {
        const res = await rawHttp(
          ts.server.url,
          ts.server.caPem!,
          `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
        );
        expect({ method, path, status: res.status, reason: res.body?.reason }).toEqual({
          method,
          path,
          status: 400,
          reason: 'BadRequest',
        });
        expect(res.body.message).toContain('"." or ".." segment');
      }
    }
    const list = await ts.admin.get(sharedSecretsPath('default'));
    expect(list.body.items.map((i: any) => i.metadata.name)).toEqual(expect.arrayContaining(names));
  }, 30_000);

  test('a compressed request body is 415 naming the encoding; nothing is stored', async () => {
    const name = uniq('gzip');
    const body = gzipSync(
      JSON.stringify({ apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { name }, spec: {} }),
    );
    const res = await ts.admin.request('POST', sharedSecretsPath('default'), {
      body,
      headers: { 'Content-Encoding': 'gzip' },
    });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'UnsupportedMediaType',
      message: 'Content-Encoding "gzip" is not supported: send the request body uncompressed',
    });
    expect((await ts.admin.get(sharedSecretPath('default', name))).status).toBe(404);
  }, 30_000);

  test('malformed HTTP gets a 400 Status and the server goes on serving', async () => {
    const answer = (
      await rawHttp(
        ts.server.url,
        ts.server.caPem!,
        'GET /apis HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n',
      )
    ).text;
    expect(answer).toMatch(/^HTTP\/1.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      kind: 'Status',
      code: 400,
      reason: 'BadRequest',
    });
    expect((await ts.admin.get(CLUSTERS_PATH)).status).toBe(200);
  }, 30_000);
});

describe('deadlines', () => {
  let slow: SlowVirtualCluster;
  let ts: TestServer;
  let bob: HttpClient;
  let root: HttpClient;

  beforeAll(async () => {
    // The virtual cluster signs after 3 s: a kube config request takes that long.
    slow = await startSlowVirtualCluster(3000);
    const server = await startTestServerWithUsers(
      { root: ['system:masters'], bob: [] },
      { kubeconfig: slow.host.kubeconfigPath, requestTimeoutMs: 1500, clusterHealthIntervalMs: HEALTH_INTERVAL_MS },
    );
    ts = server;
    ({ root, bob } = server.as);
    await slow.createInstance(root, 'bob');
  }, 120_000);
  afterAll(async () => {
    await ts?.stop();
    await slow?.stop();
  }, 60_000);

  test('a request past --request-timeout gets 504 Timeout; the server goes on serving', async () => {
    slow.resetCounts();
    const res = await bob.get(slow.kubeconfigPath);
    expect(res.status).toBe(504);
    expect(res.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Timeout: request did not complete within the allotted timeout',
      reason: 'Timeout',
      details: {},
      code: 504,
    });
    // The work it started finishes in the background without a second answer or a crash.
    await slow.reached();
    await new Promise((r) => setTimeout(r, 2500));
    expect((await root.get(CLUSTERS_PATH)).status).toBe(200);
  }, 30_000);

  test('?timeout= shortens the deadline; one that is not a duration is 400', async () => {
    const res = await bob.post(`${slow.kubeconfigPath}?timeout=200ms`, {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstanceKubeConfig',
      spec: {},
    });
    expect(res.status).toBe(504);
    expect(res.body.reason).toBe('Timeout');
    const bad = await root.get(`${CLUSTERS_PATH}?timeout=soon`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(bad.body.message).toContain('invalid timeout specified in the request URL');
    expect((await root.get(`${CLUSTERS_PATH}?timeout=30s`)).status).toBe(200);
    // Go's time.ParseDuration takes "30.s"; a timeout that is not positive leaves the server's own, as in kube.
    expect((await root.get(`${CLUSTERS_PATH}?timeout=30.s`)).status).toBe(200);
    expect((await root.get(`${CLUSTERS_PATH}?timeout=-1s`)).status).toBe(200);
  }, 30_000);

  test('a watch outlives --request-timeout and ends cleanly at its own timeoutSeconds', async () => {
    const started = Date.now();
    const res = await root.get(`${CLUSTERS_PATH}?watch=true&timeoutSeconds=3`);
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
  }, 30_000);
});
