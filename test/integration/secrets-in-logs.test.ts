/**
 * Secrets never reach the logs: access keys (generated and given), the admin token, secret data, direct cluster
 * endpoint tokens (issued and reviewed by the TokenReview webhook) and their signing key, ProjectSecrets, the values and hashes of rotated keys (their own data and synced), through creation, use, refusals, activity recording and shutdown. The
 * server runs at the highest verbosity (a line per request, debug lines) and writes an audit log, which is searched
 * too; bodies that quote a secret back (an invalid value, malformed JSON) are among the requests.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { API_VERSION } from '../support/fixtures.js';
import { Etcd3 } from 'etcd3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { hashAccessKey } from '../../src/kinds/ownedaccesskey/strategy.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP_PATH, HttpClient } from '../support/http.js';
import { answerWhen } from '../support/wait.js';

const lines: string[] = [];
let etcd: TestEtcd;
let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  dataDir = mkdtempSync(join(tmpdir(), 'secrets-logs-'));
  const config = {
    ...defaultConfig(),
    etcdServers: [etcd.endpoint],
    dataDir,
    certDir: join(dataDir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
    accessKeyActivityMinIntervalMs: 50,
    accessKeyActivityTickMs: 20,
    verbosity: 10,
    auditLogPath: join(dataDir, 'audit', 'audit.log'),
  };
  server = await startServer(
    config,
    createLogger((line) => lines.push(line), { verbosity: 10 }),
  );
});

afterAll(async () => {
  await server?.close(); // a no-op when the test closed it
  await etcd?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('no key, token or secret value is ever logged', async () => {
  const adminToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const admin = new HttpClient(server.url, server.caPem!, adminToken);
  const secretValue = Buffer.from('the-secret-value').toString('base64');
  const givenKey = 'my-own-key-0123456789-abcdefghij';

  const generated = await admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name: 'ci' },
    spec: { user: 'ci-bot' },
  });
  expect(generated.status).toBe(201);
  const key: string = generated.body.spec.key;
  expect(key).toBeTruthy();
  expect(
    (
      await admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
        apiVersion: API_VERSION,
        kind: 'OwnedAccessKey',
        metadata: { name: 'given' },
        spec: { user: 'ci-bot', key: givenKey },
      })
    ).status,
  ).toBe(201);
  await admin.post(`${GROUP_PATH}/namespaces/default/sharedsecrets`, {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 's' },
    spec: { data: { token: secretValue } },
  });

  // A ProjectSecret of its own data, one synced from the SharedSecret, one refused for a bad value.
  const projectValue = Buffer.from('the-project-secret-value').toString('base64');
  expect(
    (
      await admin.post(`${GROUP_PATH}/projects`, {
        apiVersion: API_VERSION,
        kind: 'Project',
        metadata: { name: 'logs' },
      })
    ).status,
  ).toBe(201);
  const projectSecrets = `${GROUP_PATH}/namespaces/p-logs/projectsecrets`;
  expect(
    (
      await admin.post(projectSecrets, {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: 'own' },
        spec: { data: { token: projectValue } },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await admin.post(projectSecrets, {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: 'synced' },
        spec: { owner: { user: 'admin' }, sharedSecretRef: { namespace: 'default', name: 's' } },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await admin.post(projectSecrets, {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: 'bad' },
        spec: { data: { token: `${projectValue}!` } },
      })
    ).status,
  ).toBe(422);
  expect((await admin.delete(`${projectSecrets}/own`)).status).toBe(200);

  const ci = new HttpClient(server.url, server.caPem!, key);
  expect((await ci.get(`${GROUP_PATH}/clusters`)).status).toBe(200);
  expect((await new HttpClient(server.url, server.caPem!, givenKey).get('/apis')).status).toBe(200);
  // A rotation of the given key with no grace: the new value works, the old one is refused naming the rotation.
  const rotated = await admin.post(`${GROUP_PATH}/ownedaccesskeys/given/rotate`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    spec: { rotationGracePeriod: 0 },
  });
  expect(rotated.status).toBe(201);
  const rotatedKey: string = rotated.body.spec.key;
  await answerWhen(
    'the new value to work',
    () => new HttpClient(server.url, server.caPem!, rotatedKey).get('/apis'),
    (res) => res.status === 200,
    30_000,
  );
  const oldValue = await new HttpClient(server.url, server.caPem!, givenKey).get('/apis');
  expect(oldValue.status).toBe(401);
  expect(oldValue.body.message).toContain('was rotated at');
  // Refusals: a changed key, a disabled key, an unknown token.
  expect(
    (
      await admin.patch(
        `${GROUP_PATH}/ownedaccesskeys/ci`,
        { spec: { key: 'another-key-that-is-long-enough' } },
        'application/merge-patch+json',
      )
    ).status,
  ).toBe(422);
  await admin.patch(`${GROUP_PATH}/ownedaccesskeys/ci`, { spec: { disabled: true } }, 'application/merge-patch+json');
  // Refused once the key cache has the change: then the refusal of the disabled key is in the log.
  await answerWhen(
    'the disabled key to be refused',
    () => ci.get('/apis'),
    (res) => res.status === 401,
    30_000,
  );
  expect((await new HttpClient(server.url, server.caPem!, 'not-a-real-token').get('/apis')).status).toBe(401);
  // Answers that quote what was sent: an invalid label value (an invalid data value names only its type), and JSON
  // that does not parse.
  const quoted = await admin.post(`${GROUP_PATH}/namespaces/default/sharedsecrets`, {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 'bad', labels: { note: `${secretValue}!` } },
    spec: { data: { token: `${secretValue}!` } },
  });
  expect(quoted.status).toBe(422);
  expect(quoted.text).toContain(secretValue);
  const malformed = await admin.post(
    `${GROUP_PATH}/namespaces/default/sharedsecrets`,
    `{"metadata":{"name":"m"},"spec":{"data":{"token":"${secretValue}"`,
  );
  expect(malformed.status).toBe(400);
  // A direct cluster endpoint token, and the signing key it was made with (kept in etcd).
  const issued = await admin.post(`${GROUP_PATH}/directclusterendpointtokens`, {
    apiVersion: API_VERSION,
    kind: 'DirectClusterEndpointToken',
    spec: { ttl: 600 },
  });
  expect(issued.status).toBe(201);
  // The token reviewed by the TokenReview webhook: passed, refused (as another's signature), and quoted in a body
  // that does not parse.
  const review = (t: string) => ({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token: t },
  });
  const webhook = '/authenticate/direct-cluster-endpoint';
  const reviewed = await admin.post(webhook, review(issued.body.status.token));
  expect(reviewed.body.status).toMatchObject({ authenticated: true });
  const forged = `${issued.body.status.token.split('.').slice(0, 2).join('.')}.AAAA`;
  expect((await admin.post(webhook, review(forged))).body.status).toMatchObject({ authenticated: false });
  expect((await admin.post(webhook, `{"spec":{"token":"${issued.body.status.token}"`)).status).toBe(400);
  const kv = new Etcd3({ hosts: etcd.endpoint });
  const keySet = JSON.parse((await kv.get('/registry/signingkeys/direct-cluster-endpoint-tokens').string())!);
  kv.close();
  const signingKeyD: string = keySet.keys[0].privateJwk.d;
  expect(signingKeyD).toBeTruthy();
  await new Promise((r) => setTimeout(r, 200)); // let activity recording run
  await server.close();

  const log = lines.join('');
  expect(lines.length).toBeGreaterThan(0);
  // The request lines were on, and the audit log was written.
  expect(lines.filter((l) => JSON.parse(l).msg === 'HTTP').length).toBeGreaterThan(10);
  const audit = readFileSync(join(dataDir, 'audit', 'audit.log'), 'utf8');
  expect(audit.split('\n').filter(Boolean).length).toBeGreaterThan(10);
  const token: string = issued.body.status.token;
  for (const secret of [
    key,
    givenKey,
    adminToken,
    secretValue,
    projectValue,
    'not-a-real-token',
    'another-key-that-is-long-enough',
    rotatedKey,
    ...[key, givenKey, rotatedKey].map((k) => hashAccessKey(k).slice('sha256:'.length)),
    token,
    token.split('.')[2],
    signingKeyD,
  ]) {
    expect(log).not.toContain(secret);
    expect(audit).not.toContain(secret);
  }
});
