/**
 * Who am I (issue 44): POST authentication.k8s.io/v1 selfsubjectreviews answers the caller as this server takes it,
 * so the real `kubectl auth whoami` works against the server directly, and the client's `platform whoami` shows
 * the user, groups, and for an access key its scope and expiry. One server, real etcd.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { kubectlOn, lines, writeUserlessKubeconfig } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { runCli } from '../support/cli.js';

const REVIEWS = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let dir: string;
let kubeconfig: string;
const { k: kubectl } = kubectlOn(() => kubeconfig);

async function createKey(spec: Record<string, unknown>): Promise<{ name: string; key: string }> {
  const name = uniq('who');
  const res = await ts.as.alice.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec,
  });
  expect(res.status).toBe(201);
  return { name, key: res.body.spec.key };
}

function platform(args: string[], env: Record<string, string>) {
  return runCli(args, { HOME: dir, ...env });
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: ['platform:team:web'] });
  dir = mkdtempSync(join(tmpdir(), 'whoami-'));
  kubeconfig = writeUserlessKubeconfig(join(dir, 'kubeconfig'), ts.server);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('SelfSubjectReview', () => {
  test('answers the caller: a static token user, and an access key with the extra naming it', async () => {
    const res = await ts.as.alice.post(REVIEWS, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      status: {
        userInfo: { username: 'alice', uid: 'uid-alice', groups: ['platform:team:web', 'system:authenticated'] },
      },
    });
    const { name, key } = await createKey({});
    const withKey = await ts
      .client(key)
      .post(REVIEWS, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    expect(withKey.status).toBe(201);
    expect(withKey.body.status.userInfo).toMatchObject({
      username: 'alice',
      extra: { 'platform.sh/access-key': [name] },
    });
  });

  test('the real kubectl auth whoami, with a token and with a scoped key', async () => {
    const res = await kubectl('--token', ts.as.alice.token!, 'auth', 'whoami');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(lines(res.stdout)[0]).toMatch(/^ATTRIBUTE\s+VALUE$/);
    expect(res.stdout).toMatch(/Username\s+alice/);
    const { key } = await createKey({ scope: { roles: [{ role: 'platformCLI' }] } });
    const scoped = await kubectl('--token', key, 'auth', 'whoami', '-o', 'json');
    expect(scoped.code).toBe(0);
    expect(JSON.parse(scoped.stdout).status.userInfo.username).toBe('alice');
  });

  test('a bad token is 401; a get of selfsubjectreviews is 403 (asking is create only, as kube grants it)', async () => {
    expect(
      (
        await ts
          .client('not-a-token')
          .post(REVIEWS, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' })
      ).status,
    ).toBe(401);
    expect((await ts.as.alice.get(REVIEWS)).status).toBe(403);
  });
});

describe('platform whoami', () => {
  test('a key: user, groups, the key, its scope and expiry; never the key value', async () => {
    const { name, key } = await createKey({ ttl: 3600, scope: { roles: [{ role: 'platformCLI' }] } });
    const env = { PLATFORM_URL: ts.server.url, PLATFORM_ACCESS_KEY: key, PLATFORM_CA_DATA: ts.server.caPem! };
    const res = await platform(['whoami'], env);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toMatch(/^User:\s+alice\n/);
    expect(res.stdout).toMatch(/Groups:\s+platform:user:alice, system:authenticated\n/);
    expect(res.stdout).toContain(`Access key:  ${name}`);
    expect(res.stdout).toMatch(/Scope:\s+\{"roles":\[\{"role":"platformCLI"\}\]\}\n/);
    expect(res.stdout).toMatch(/Expires:\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in (59m|1h)\S*\)\n/);
    expect(res.stdout + res.stderr).not.toContain(key);
    const json = await platform(['whoami', '-o', 'json'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({
      username: 'alice',
      accessKey: { name, expirationTimestamp: expect.any(String) },
    });
  });

  test('a static token: user and groups, no key', async () => {
    const env = {
      PLATFORM_URL: ts.server.url,
      PLATFORM_ACCESS_KEY: ts.as.alice.token!,
      PLATFORM_CA_DATA: ts.server.caPem!,
    };
    const res = await platform(['whoami'], env);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(
      'User:        alice\nUID:         uid-alice\nGroups:      platform:team:web, system:authenticated\n',
    );
  });
});
