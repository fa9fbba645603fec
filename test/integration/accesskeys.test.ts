/**
 * OwnedAccessKeys end to end.
 * - The API: the key is shown by the create answer only, etcd holds only its hash, reads and watch events never
 *   show it nor identity.connectorData, updates keep it and cannot change it, every spec field round-trips, and
 *   callers outside system:masters get keys only for themselves or their teams.
 * - Authentication with the keys (Bearer <key>): disabled and expired keys are 401, use is recorded in
 *   status.lastActivity, scope narrows what a key may do. These run against an app assembled here from the same
 *   etcd data (createApp + AccessKeyAuthenticator in a union), and, once src/auth/setup.ts wires the
 *   authenticator in, against the test server itself.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { AccessKeyAuthenticator } from '../../src/auth/accesskeys.js';
import { ActivityRecorder, lastActivityWriter } from '../../src/auth/activity.js';
import { discoveryAuthorizer, mastersAuthorizer, unionAuthorizer } from '../../src/auth/authorizer.js';
import { ObjectAccessAuthorizer } from '../../src/auth/objectaccess.js';
import { TokenAuthenticator } from '../../src/auth/token-file.js';
import { unionAuthenticator } from '../../src/auth/union.js';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { createApp } from '../../src/http/app.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { KEY_SHOWN_ONCE_WARNING } from '../../src/kinds/ownedaccesskey/strategy.js';
import { Registry } from '../../src/registry/registry.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { API_VERSION, GROUP, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';
import { sleep } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const DIRECT = '/orchestrator/management';
const JSON_PATCH = 'application/json-patch+json';
const MERGE_PATCH = 'application/merge-patch+json';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

const TOKENS = {
  admin: 'admin-token-0123456789abcdef',
  alice: 'alice-token-0123456789abcdef',
  bob: 'bob-token-0123456789abcdef',
};
const USERS: Record<keyof typeof TOKENS, UserInfo> = {
  admin: { name: 'root', uid: 'root', groups: ['system:masters'] },
  alice: { name: 'alice', uid: 'alice', groups: ['platform:team:dev'] },
  bob: { name: 'bob', uid: 'bob', groups: [] },
};

/** Set once src/auth/setup.ts puts the access key authenticator into the server; until then those tests wait. */

let ts: TestServer;
let tokenDir: string;
let etcd: Etcd3;
let admin: HttpClient;
let alice: HttpClient;
let bob: HttpClient;
/** Every response body seen, to check that no key shows up after its create. */
const seen: { text: string; create: boolean }[] = [];
const allKeys: string[] = [];

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

function keyPath(name: string, prefix = ''): string {
  return `${prefix}${KEYS}/${name}`;
}

function keyBody(name: string, spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return { apiVersion: API_VERSION, kind: 'OwnedAccessKey', metadata: { name }, spec, ...extra };
}

function note(res: HttpResponse, create = false): HttpResponse {
  seen.push({ text: res.text, create });
  return res;
}

async function createKey(
  client: HttpClient,
  name: string,
  spec: Record<string, unknown> = {},
): Promise<{ body: any; key: string }> {
  const res = note(await client.post(KEYS, keyBody(name, spec)), true);
  expect(res.status).toBe(201);
  const key = res.body.spec.key;
  expect(typeof key).toBe('string');
  allKeys.push(key);
  return { body: res.body, key };
}

async function getKey(name: string, client = admin): Promise<any> {
  const res = note(await client.get(keyPath(name)));
  expect(res.status).toBe(200);
  return res.body;
}

async function etcdEntry(name: string): Promise<{ value: any; text: string; modRevision: string } | undefined> {
  const res = await etcd.get(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`).exec();
  const kv = res.kvs[0];
  return kv
    ? { value: JSON.parse(kv.value.toString()), text: kv.value.toString(), modRevision: String(kv.mod_revision) }
    : undefined;
}

async function eventually<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  tokenDir = mkdtempSync(join(tmpdir(), 'accesskeys-'));
  const tokenFile = join(tokenDir, 'tokens.csv');
  writeFileSync(
    tokenFile,
    Object.entries(TOKENS)
      .map(([who, token]) => {
        const u = USERS[who as keyof typeof TOKENS];
        return `${token},${u.name},${u.uid},"${u.groups.join(',')}"`;
      })
      .join('\n'),
  );
  // The activity options are the lead's to name; a short interval lets lastActivity show up within a test.
  const overrides = {
    tokenAuthFile: tokenFile,
    accessKeyActivityMinIntervalMs: 200,
    accessKeyActivityTickMs: 50,
  } as unknown as Partial<Config>;
  ts = await startTestServer(overrides);
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  admin = ts.client(TOKENS.admin);
  alice = ts.client(TOKENS.alice);
  bob = ts.client(TOKENS.bob);
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
  if (tokenDir) rmSync(tokenDir, { recursive: true, force: true });
}, 60_000);

describe('key material', () => {
  test('without a key, the server generates one (256 bits) and shows it in the create answer', async () => {
    const name = uniq('gen');
    const { body, key } = await createKey(admin, name, { user: 'alice' });
    expect(key).toMatch(/^pak_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(body).toMatchObject({
      kind: 'OwnedAccessKey',
      apiVersion: API_VERSION,
      metadata: { name },
      spec: { user: 'alice' },
    });
    const other = await createKey(admin, uniq('gen'), { user: 'alice' });
    expect(other.key).not.toBe(key);
  });

  test('a key sent on create is kept and shown once', async () => {
    const { key } = await createKey(admin, uniq('given'), { user: 'alice', key: 'given-key-0123456789' });
    expect(key).toBe('given-key-0123456789');
  });

  test('etcd holds only the hash of the key', async () => {
    const name = uniq('hash');
    const { key } = await createKey(admin, name, {
      user: 'alice',
      identity: { username: 'alice', connectorData: 'c0nnect0r-data' },
    });
    const entry = await etcdEntry(name);
    expect(entry?.value.spec.key).toBe(`sha256:${sha256(key)}`);
    expect(entry?.text).not.toContain(key);
    // connectorData is kept at rest (the connector needs it), only never returned.
    expect(entry?.value.spec.identity.connectorData).toBe('c0nnect0r-data');
  });

  test('get, list, Table and watch never show spec.key or identity.connectorData', async () => {
    const name = uniq('hidden');
    const { key } = await createKey(admin, name, {
      user: 'alice',
      identity: { username: 'alice', connectorData: 'c0nnect0r-data' },
    });
    const got = await getKey(name);
    expect(got.spec).not.toHaveProperty('key');
    expect(got.spec.identity).toEqual({ username: 'alice' });
    for (const prefix of ['', DIRECT]) {
      const list = note(await admin.get(`${prefix}${KEYS}`));
      expect(list.status).toBe(200);
      const item = list.body.items.find((i: any) => i.metadata.name === name);
      expect(item.spec).not.toHaveProperty('key');
      expect(item.spec.identity).not.toHaveProperty('connectorData');
    }
    const table = note(await admin.get(keyPath(name), { headers: { Accept: TABLE } }));
    expect(table.status).toBe(200);
    expect(table.body.kind).toBe('Table');
    const watch = note(await admin.get(`${KEYS}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name=${name}`));
    const events = watch.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name } } });
    expect(events[0].object.spec).not.toHaveProperty('key');
    expect(events[0].object.spec.identity).not.toHaveProperty('connectorData');
    for (const res of [got, table.body, watch.text]) {
      const text = JSON.stringify(res);
      expect(text).not.toContain(key);
      expect(text).not.toContain(sha256(key));
      expect(text).not.toContain('c0nnect0r-data');
    }
  });

  test('an update without the key keeps it; with the same key is fine; with another key is 422 and changes nothing', async () => {
    const name = uniq('upd');
    const { key } = await createKey(admin, name, { user: 'alice', displayName: 'one' });
    const hash = `sha256:${sha256(key)}`;

    const current = await getKey(name);
    const put = note(await admin.put(keyPath(name), { ...current, spec: { ...current.spec, displayName: 'two' } }));
    expect(put.status).toBe(200);
    expect(put.body.spec).not.toHaveProperty('key');
    expect((await etcdEntry(name))?.value.spec.key).toBe(hash);

    const same = note(
      await admin.put(keyPath(name), { ...put.body, spec: { ...put.body.spec, key, displayName: 'three' } }),
    );
    expect(same.status).toBe(200);
    expect(same.body.spec).not.toHaveProperty('key');
    expect((await etcdEntry(name))?.value.spec.key).toBe(hash);

    const before = await etcdEntry(name);
    const other = note(
      await admin.put(keyPath(name), {
        ...same.body,
        spec: { ...same.body.spec, key: 'another-key-0123456789', displayName: 'four' },
      }),
    );
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect(other.body.message).toBe(
      `OwnedAccessKey.${GROUP} "${name}" is invalid: spec.key: Invalid value: "<redacted>": field is immutable`,
    );
    expect(other.text).not.toContain('another-key-0123456789');
    const patch = note(
      await admin.patch(
        keyPath(name),
        [{ op: 'replace', path: '/spec/key', value: 'another-key-0123456789' }],
        JSON_PATCH,
      ),
    );
    expect(patch.status).toBe(422);
    expect(patch.text).not.toContain('another-key-0123456789');
    const after = await etcdEntry(name);
    expect(after?.modRevision).toBe(before?.modRevision);
    expect(after?.value.spec.key).toBe(hash);

    const merge = note(await admin.patch(keyPath(name), { spec: { description: 'patched' } }, MERGE_PATCH));
    expect(merge.status).toBe(200);
    expect(merge.body.spec).toMatchObject({ description: 'patched', displayName: 'three' });
    expect((await etcdEntry(name))?.value.spec.key).toBe(hash);
  });

  test('connectorData survives an update that sends identity without it', async () => {
    const name = uniq('conn');
    await createKey(admin, name, { user: 'alice', identity: { username: 'alice', connectorData: 'c0nnect0r-data' } });
    const current = await getKey(name);
    const put = note(
      await admin.put(keyPath(name), {
        ...current,
        spec: { ...current.spec, identity: { ...current.spec.identity, email: 'alice@example.com' } },
      }),
    );
    expect(put.status).toBe(200);
    expect(put.body.spec.identity).toEqual({ username: 'alice', email: 'alice@example.com' });
    expect((await etcdEntry(name))?.value.spec.identity).toEqual({
      username: 'alice',
      email: 'alice@example.com',
      connectorData: 'c0nnect0r-data',
    });
  });

  test("kubectl's last-applied-configuration annotation does not keep the key", async () => {
    const name = uniq('applied');
    const config = keyBody(name, { user: 'alice', key: 'applied-key-0123456789' });
    const body = {
      ...config,
      metadata: {
        name,
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(config) + '\n' },
      },
    };
    const res = note(await admin.post(KEYS, body), true);
    expect(res.status).toBe(201);
    allKeys.push('applied-key-0123456789');
    const got = await getKey(name);
    const annotation = got.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'];
    expect(JSON.parse(annotation).spec).toEqual({ user: 'alice' });
    expect((await etcdEntry(name))?.text).not.toContain('applied-key-0123456789');
  });

  test('every spec field round-trips (scope, rules, identity, oidcProvider, deprecated fields)', async () => {
    const name = uniq('full');
    const spec = {
      displayName: 'CI key',
      description: 'for the pipeline',
      user: 'alice',
      groups: ['ci', 'platform:team:dev'],
      disabled: false,
      ttl: 86400,
      ttlAfterLastActivity: true,
      scope: {
        roles: [{ role: 'platformCLI' }],
        projects: [{ project: 'alpha' }, { project: '*' }],
        spaces: [{ project: 'alpha', space: 'dev' }],
        virtualClusters: [{ project: 'alpha', virtualCluster: 'vc1' }],
        clusters: [{ cluster: 'c1' }, { cluster: '*' }],
      },
      rules: [
        {
          verbs: ['get', 'list'],
          resources: [
            { group: GROUP, resources: ['clusters', 'clusters/status'], resourceNames: ['c1'] },
            { group: '', resources: ['pods/log'] },
          ],
          namespaces: ['', 'p-alpha'],
          nonResourceURLs: ['/version', '/apis/*'],
          requestTargets: ['Management', 'Cluster'],
          cluster: 'c1',
          virtualClusters: [{ name: 'vc1', namespace: 'p-alpha' }],
        },
      ],
      allowPlatformCli: true,
      type: 'User',
      identity: {
        userId: 'u-1',
        username: 'alice',
        preferredUsername: 'Alice',
        email: 'alice@example.com',
        emailVerified: true,
        groups: ['idp-group'],
        connector: 'github',
        connectorData: 'c0nnect0r-data',
      },
      identityRefresh: '2030-01-02T03:04:05Z',
      oidcProvider: { clientId: 'cli', nonce: 'n', redirectUri: 'https://example.com/cb', scopes: 'openid email' },
      parent: 'parent-key',
      oidcLogin: {
        idToken: 'id.tok.en',
        accessToken: 'access',
        refreshToken: 'refresh',
        lastRefresh: '2030-01-02T03:04:05Z',
      },
    };
    const res = note(
      await admin.post(KEYS, keyBody(name, { ...spec, key: 'full-key-0123456789' }), {
        headers: { 'Content-Type': 'application/json' },
      }),
      true,
    );
    allKeys.push('full-key-0123456789');
    expect(res.status).toBe(201);
    // Nothing is dropped with a warning; the one warning says the key is shown only now.
    expect(res.headers.warning).toBe(`299 - ${JSON.stringify(KEY_SHOWN_ONCE_WARNING)}`);
    const { connectorData: _cd, ...identity } = spec.identity;
    const expected = { ...spec, identity };
    expect(res.body.spec).toEqual({ ...expected, key: 'full-key-0123456789' });
    expect((await getKey(name)).spec).toEqual(expected);
    // status.lastActivity goes through the status subresource, like any status.
    const status = note(
      await admin.patch(`${keyPath(name)}/status`, { status: { lastActivity: '2026-01-01T00:00:00Z' } }, MERGE_PATCH),
    );
    expect(status.status).toBe(200);
    // It counts from its last activity, which is older than its creation: a day after its creation, as the server says.
    const expires = new Date(Date.parse(res.body.metadata.creationTimestamp) + 86400_000).toISOString();
    expect(status.body.status).toEqual({
      lastActivity: '2026-01-01T00:00:00Z',
      expirationTimestamp: expires.replace(/\.\d+Z$/, 'Z'),
    });
    expect(status.body.spec).toEqual(expected);
  });

  test('validation: exactly one of user, team and subject; ttl >= 0; known types', async () => {
    const two = note(await admin.post(KEYS, keyBody(uniq('bad'), { user: 'a', team: 't' })));
    expect(two.status).toBe(422);
    expect(two.body.message).toContain('spec.team: Forbidden: may not be set together with spec.user');
    const ttl = note(await admin.post(KEYS, keyBody(uniq('bad'), { user: 'a', ttl: -5 })));
    expect(ttl.status).toBe(422);
    expect(ttl.body.message).toContain('spec.ttl: Invalid value: -5');
    const type = note(await admin.post(KEYS, keyBody(uniq('bad'), { user: 'a', type: 'Robot' })));
    expect(type.status).toBe(422);
    expect(type.body.message).toContain('spec.type: Unsupported value: "Robot"');
    const spaced = note(await admin.post(KEYS, keyBody(uniq('bad'), { user: 'a', key: 'has a space' })));
    expect(spaced.status).toBe(422);
    expect(spaced.text).not.toContain('has a space');
  });
});

describe('whose keys', () => {
  test('spec.user defaults to the caller', async () => {
    const { body } = await createKey(alice, uniq('mine'));
    expect(body.spec.user).toBe('alice');
  });

  test('a caller may create keys for its team but not for someone else (403)', async () => {
    const { body } = await createKey(alice, uniq('team'), { team: 'dev' });
    expect(body.spec.team).toBe('dev');
    const name = uniq('theirs');
    const res = note(await alice.post(KEYS, keyBody(name, { user: 'bob' })));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      details: { name, group: GROUP, kind: 'ownedaccesskeys' },
    });
    expect(res.body.message).toBe(
      `ownedaccesskeys.${GROUP} "${name}" is forbidden: User "alice" cannot create resource "ownedaccesskeys" in API group "${GROUP}" at the cluster scope: may not create access keys for user "bob"; only for themself or for a team they belong to`,
    );
    const team = note(await bob.post(KEYS, keyBody(uniq('team'), { team: 'dev' })));
    expect(team.status).toBe(403);
    expect(await etcdEntry(name)).toBeUndefined();
  });

  test('only system:masters may put groups on a key', async () => {
    const res = note(await alice.post(KEYS, keyBody(uniq('groups'), { groups: ['system:masters'] })));
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('only members of system:masters may set spec.groups');
    const { body } = await createKey(admin, uniq('groups'), { user: 'alice', groups: ['ci'] });
    expect(body.spec.groups).toEqual(['ci']);
  });

  test('an owner may update its key but not give it away or add groups', async () => {
    const name = uniq('own');
    await createKey(admin, name, { user: 'alice', groups: ['ci'] });
    const current = await getKey(name, alice);
    const ok = note(await alice.put(keyPath(name), { ...current, spec: { ...current.spec, displayName: 'renamed' } }));
    expect(ok.status).toBe(200);
    const away = note(await alice.patch(keyPath(name), { spec: { user: 'bob' } }, MERGE_PATCH));
    expect(away.status).toBe(403);
    const groups = note(await alice.patch(keyPath(name), { spec: { groups: ['ci', 'more'] } }, MERGE_PATCH));
    expect(groups.status).toBe(403);
  });
});

describe('outside system:masters a write only weakens a key', () => {
  const APPLY = 'application/apply-patch+yaml';
  const forbiddenBecause = (res: HttpResponse, name: string, user: string, why: string) => {
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      details: { name, group: GROUP, kind: 'ownedaccesskeys' },
    });
    expect(res.body.message).toBe(
      `ownedaccesskeys.${GROUP} "${name}" is forbidden: User "${user}" cannot update resource "ownedaccesskeys" in API group "${GROUP}" at the cluster scope: ${why}`,
    );
  };
  const SCOPE = 'spec.scope: only members of system:masters may remove or widen the scope of a key';
  /** A master key issued for the command line client's reads, and clusters c1 and c2. */
  const issued = {
    groups: ['system:masters'],
    scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }, { cluster: 'c2' }] },
  };

  test('removing the scope of a master key one holds is 403 on PUT, JSON patch, merge patch, apply and dry run; the key gains nothing', async () => {
    const name = uniq('widen');
    const { key } = await createKey(admin, name, { user: 'alice', ...issued });
    const before = await etcdEntry(name);
    const current = await getKey(name, alice);
    const { scope: _scope, ...unscoped } = current.spec;
    forbiddenBecause(note(await alice.put(keyPath(name), { ...current, spec: unscoped })), name, 'alice', SCOPE);
    forbiddenBecause(
      note(await alice.patch(keyPath(name), [{ op: 'remove', path: '/spec/scope' }], JSON_PATCH)),
      name,
      'alice',
      SCOPE,
    );
    forbiddenBecause(
      note(await alice.patch(`${keyPath(name)}?dryRun=All`, [{ op: 'remove', path: '/spec/scope' }], JSON_PATCH)),
      name,
      'alice',
      SCOPE,
    );
    forbiddenBecause(
      note(await alice.patch(keyPath(name), { spec: { scope: null } }, MERGE_PATCH)),
      name,
      'alice',
      SCOPE,
    );
    const apply = keyBody(name, { scope: { clusters: [{ cluster: '*' }] } });
    forbiddenBecause(
      note(await alice.patch(`${keyPath(name)}?fieldManager=alice&force=true`, apply, APPLY)),
      name,
      'alice',
      SCOPE,
    );
    forbiddenBecause(
      note(await alice.patch(`${keyPath(name)}?fieldManager=alice&force=true&dryRun=All`, apply, APPLY)),
      name,
      'alice',
      SCOPE,
    );
    expect((await etcdEntry(name))?.modRevision).toBe(before?.modRevision);
    // The key still cannot make clusters.
    const write = note(
      await ts.client(key).post(`${GROUP_PATH}/clusters`, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: uniq('c') },
        spec: { networkPeer: true },
      }),
    );
    expect(write.status).toBe(403);
    // A narrower scope is the holder's to set.
    const narrower = note(
      await alice.patch(
        keyPath(name),
        [{ op: 'replace', path: '/spec/scope/clusters', value: [{ cluster: 'c1' }] }],
        JSON_PATCH,
      ),
    );
    expect(narrower.status).toBe(200);
    expect(narrower.body.spec.scope.clusters).toEqual([{ cluster: 'c1' }]);
    // Adding a cluster, even one it reads already, would let it write that cluster.
    forbiddenBecause(
      note(
        await alice.patch(
          keyPath(name),
          [{ op: 'add', path: '/spec/scope/clusters/-', value: { cluster: 'c3' } }],
          JSON_PATCH,
        ),
      ),
      name,
      'alice',
      SCOPE,
    );
  });

  test('a team member may not widen a team key either', async () => {
    const name = uniq('teamwiden');
    await createKey(admin, name, { team: 'dev', ...issued });
    const before = await etcdEntry(name);
    forbiddenBecause(
      note(await alice.patch(keyPath(name), [{ op: 'remove', path: '/spec/scope' }], JSON_PATCH)),
      name,
      'alice',
      SCOPE,
    );
    const groups = note(await alice.patch(keyPath(name), { spec: { groups: null } }, MERGE_PATCH));
    forbiddenBecause(
      groups,
      name,
      'alice',
      'spec.groups: only members of system:masters may change the groups of a key',
    );
    const moved = note(await alice.patch(keyPath(name), { spec: { team: null, user: 'alice' } }, MERGE_PATCH));
    forbiddenBecause(moved, name, 'alice', 'spec.user: only members of system:masters may change whom a key acts as');
    expect((await etcdEntry(name))?.modRevision).toBe(before?.modRevision);
  });

  test('an expired key is not revived: removing or lengthening its ttl is 403, and it stays expired; shortening is fine', async () => {
    const name = uniq('revive');
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 1 });
    const created = Date.parse((await getKey(name)).metadata.creationTimestamp);
    await sleep(Math.max(0, created + 1000 - Date.now()) + 100);
    expect((await ts.client(key).get(keyPath(name))).status).toBe(401);
    const before = await etcdEntry(name);
    const TTL = 'spec.ttl: only members of system:masters may remove or lengthen the ttl of a key';
    forbiddenBecause(note(await alice.patch(keyPath(name), { spec: { ttl: 0 } }, MERGE_PATCH)), name, 'alice', TTL);
    forbiddenBecause(
      note(await alice.patch(keyPath(name), [{ op: 'remove', path: '/spec/ttl' }], JSON_PATCH)),
      name,
      'alice',
      TTL,
    );
    forbiddenBecause(
      note(await alice.patch(`${keyPath(name)}?dryRun=All`, { spec: { ttl: 86400 } }, MERGE_PATCH)),
      name,
      'alice',
      TTL,
    );
    const current = await getKey(name, alice);
    forbiddenBecause(
      note(await alice.put(keyPath(name), { ...current, spec: { ...current.spec, ttl: 86400 } })),
      name,
      'alice',
      TTL,
    );
    forbiddenBecause(
      note(await alice.patch(keyPath(name), { spec: { ttlAfterLastActivity: true } }, MERGE_PATCH)),
      name,
      'alice',
      'spec.ttlAfterLastActivity: only members of system:masters may change when the ttl of a key starts counting',
    );
    expect((await etcdEntry(name))?.modRevision).toBe(before?.modRevision);
    expect((await ts.client(key).get(keyPath(name))).status).toBe(401);

    const other = uniq('shorten');
    await createKey(admin, other, { user: 'alice', ttl: 3600 });
    expect(note(await alice.patch(keyPath(other), { spec: { ttl: 60 } }, MERGE_PATCH)).status).toBe(200);
    expect((await getKey(other)).spec.ttl).toBe(60);
  });

  test('a key a master disabled stays disabled; a holder may disable its key but not enable it again', async () => {
    const name = uniq('reenable');
    const { key } = await createKey(admin, name, { user: 'alice', disabled: true });
    const DISABLED = 'spec.disabled: only members of system:masters may enable a disabled key';
    forbiddenBecause(
      note(await alice.patch(keyPath(name), { spec: { disabled: false } }, MERGE_PATCH)),
      name,
      'alice',
      DISABLED,
    );
    forbiddenBecause(
      note(await alice.patch(keyPath(name), [{ op: 'remove', path: '/spec/disabled' }], JSON_PATCH)),
      name,
      'alice',
      DISABLED,
    );
    forbiddenBecause(
      note(
        await alice.patch(`${keyPath(name)}?fieldManager=alice&force=true`, keyBody(name, { disabled: false }), APPLY),
      ),
      name,
      'alice',
      DISABLED,
    );
    expect((await ts.client(key).get(keyPath(name))).status).toBe(401);

    const own = uniq('own-disable');
    await createKey(alice, own);
    expect(note(await alice.patch(keyPath(own), { spec: { disabled: true } }, MERGE_PATCH)).status).toBe(200);
    forbiddenBecause(
      note(await alice.patch(keyPath(own), { spec: { disabled: false } }, MERGE_PATCH)),
      own,
      'alice',
      DISABLED,
    );
  });

  test("the status is the server's: a holder's write of /status is 403 on every verb, and no one writes lastActivity into the future", async () => {
    const name = uniq('status');
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 1, ttlAfterLastActivity: true });
    const created = Date.parse((await getKey(name)).metadata.creationTimestamp);
    const before = await etcdEntry(name);
    const future = '2099-01-01T00:00:00Z';
    const current = await getKey(name, alice);
    const statusPath = `${keyPath(name)}/status`;
    const refused = (res: HttpResponse, verb: 'update' | 'patch') => {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        kind: 'Status',
        reason: 'Forbidden',
        details: { name, kind: 'ownedaccesskeys' },
      });
      expect(res.body.message).toBe(
        `ownedaccesskeys.${GROUP} "${name}" is forbidden: User "alice" cannot ${verb} resource "ownedaccesskeys/status" in API group "${GROUP}" at the cluster scope: the status of ownedaccesskeys is written by the server and by members of system:masters only`,
      );
    };
    refused(note(await alice.put(statusPath, { ...current, status: { lastActivity: future } })), 'update');
    refused(note(await alice.patch(statusPath, { status: { lastActivity: future } }, MERGE_PATCH)), 'patch');
    refused(
      note(
        await alice.patch(statusPath, [{ op: 'add', path: '/status', value: { lastActivity: future } }], JSON_PATCH),
      ),
      'patch',
    );
    refused(
      note(await alice.patch(`${statusPath}?dryRun=All`, { status: { lastActivity: future } }, MERGE_PATCH)),
      'patch',
    );
    refused(
      note(
        await alice.patch(
          `${statusPath}?fieldManager=alice&force=true`,
          { ...keyBody(name), status: { lastActivity: future } },
          APPLY,
        ),
      ),
      'patch',
    );
    const master = note(await admin.patch(statusPath, { status: { lastActivity: future } }, MERGE_PATCH));
    expect(master.status).toBe(422);
    expect(master.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect(master.body.message).toBe(
      `OwnedAccessKey.${GROUP} "${name}" is invalid: status.lastActivity: Invalid value: "${future}": must not be in the future: it is the time the key was last used`,
    );
    expect((await etcdEntry(name))?.modRevision).toBe(before?.modRevision);
    // Unused, the key expires a second after its creation.
    await sleep(Math.max(0, created + 1000 - Date.now()) + 100);
    expect((await ts.client(key).get(keyPath(name))).status).toBe(401);
  });
});

describe('what a create tells about other keys', () => {
  test('a create, dry run or not, tells whether the name is taken (as kube does for every kind) and nothing else: not whose key it is, nor whether a key value is in use', async () => {
    const name = uniq('taken');
    const value = `chosen-key-${Math.random().toString(36).slice(2)}`;
    await createKey(admin, name, { user: 'alice', key: value, displayName: 'alice CI' });
    const dry = note(await bob.post(`${KEYS}?dryRun=All`, keyBody(name)), true);
    const real = note(await bob.post(KEYS, keyBody(name)), true);
    for (const res of [dry, real]) {
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `ownedaccesskeys.${GROUP} "${name}" already exists`,
        reason: 'AlreadyExists',
        details: { name, group: GROUP, kind: 'ownedaccesskeys' },
        code: 409,
      });
    }
    // The same key value under another name is not refused, so a create is no oracle for key values; it does not
    // take the key over either (the oldest key with a value answers for it).
    const copy = uniq('copy');
    const dryCopy = note(await bob.post(`${KEYS}?dryRun=All`, keyBody(copy, { key: value })), true);
    expect(dryCopy.status).toBe(201);
    expect(await etcdEntry(copy)).toBeUndefined();
    // A second later, so that the copy is the younger key (a copy of the same second: see the next test).
    const created = Date.parse((await getKey(name)).metadata.creationTimestamp);
    await sleep(Math.max(0, created + 1000 - Date.now()) + 50);
    const realCopy = note(await bob.post(KEYS, keyBody(copy, { key: value })), true);
    expect(realCopy.status).toBe(201);
    for (const res of [dry, real, dryCopy, realCopy]) {
      expect(res.text).not.toContain('alice');
      expect(res.text).not.toContain(sha256(value));
    }
    const used = await ts.client(value).get(keyPath(name));
    expect(used.status).toBe(200);
    expect(used.body.spec.user).toBe('alice');
  });

  test('copies of a key value made in the same second are refused (401), not resolved by name, which a copy could pick', async () => {
    const name = uniq('zz-first');
    const value = `chosen-key-${Math.random().toString(36).slice(2)}`;
    await createKey(admin, name, { user: 'alice', key: value });
    expect((await ts.client(value).get(keyPath(name))).status).toBe(200);
    const entry = (await etcdEntry(name))!;
    const copy = uniq('aa-copy');
    const copied = {
      ...entry.value,
      metadata: { ...entry.value.metadata, name: copy, uid: `${entry.value.metadata.uid}-copy` },
      spec: { ...entry.value.spec, user: 'bob' },
    };
    await etcd.put(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${copy}`).value(JSON.stringify(copied));
    const res = await eventually(async () => {
      const r = note(await ts.client(value).get(keyPath(name)));
      return r.status !== 200 ? r : undefined;
    });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    expect(res.body.message).toContain('belongs to several OwnedAccessKeys created in the same second');
    expect(res.text).not.toContain(value);
  });
});

/** An app like the server's, with the access key authenticator in the union (until setup.ts has it). */
interface KeyApp {
  url: string;
  accessKeys: AccessKeyAuthenticator;
  recorder: ActivityRecorder;
  request(
    method: string,
    path: string,
    token?: string,
    body?: unknown,
  ): Promise<{ status: number; body: any; text: string }>;
  close(): Promise<void>;
}

async function startKeyApp(): Promise<KeyApp> {
  const storage = new EtcdStorage({ endpoints: [ts.etcd.endpoint] });
  const registry = new Registry(loadDefinitions(), storage, ts.config.etcdPrefix);
  await registry.start();
  const store = registry.lookup(GROUP, 'v1', 'ownedaccesskeys')!;
  const recorder = new ActivityRecorder({ write: lastActivityWriter(store), minIntervalMs: 200, tickMs: 50 });
  const accessKeys = new AccessKeyAuthenticator({
    cache: registry.caches.get(GROUP)!,
    prefix: `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/`,
    recorder,
    isNamespaced: (group, resource) =>
      registry.definitions.find((d) => d.group === group && d.plural === resource)?.namespaced,
  });
  accessKeys.start();
  const objectAccess = new ObjectAccessAuthorizer(async (attrs) =>
    registry
      .lookup(attrs.apiGroup, attrs.apiVersion, attrs.resource)
      ?.get(attrs.namespace || undefined, attrs.name)
      .catch(() => undefined),
  );
  const tokens = new Map(Object.entries(TOKENS).map(([who, token]) => [token, USERS[who as keyof typeof TOKENS]]));
  const app = createApp({
    registry,
    // Static tokens first (a map lookup), so that they never wait for the access keys' refresh on a miss.
    authenticator: unionAuthenticator(new TokenAuthenticator(tokens), accessKeys),
    authorizer: unionAuthorizer(mastersAuthorizer, discoveryAuthorizer, objectAccess),
    visibleTo: (attrs) => objectAccess.visibleTo(attrs),
    health: { livez: [], readyz: [], healthz: [] },
    serverAddress: '127.0.0.1:0',
    log: silentLogger,
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    accessKeys,
    recorder,
    async request(method, path, token, body) {
      const headers: Record<string, string> = {};
      if (token) headers.Authorization = `Bearer ${token}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      seen.push({ text, create: method === 'POST' && path.endsWith('/ownedaccesskeys') });
      return { status: res.status, body: parsed, text };
    },
    async close() {
      accessKeys.stop();
      await recorder.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await registry.stop();
      await storage.close();
    },
  };
}

/**
 * What a key-authenticated client gets; `call` sends one request with the key. Shared by the assembled app and,
 * once wired, the test server.
 */
interface Target {
  call(
    method: string,
    path: string,
    token: string,
    body?: unknown,
  ): Promise<{ status: number; body: any; text: string }>;
}

function authenticationTests(target: () => Target) {
  const call = (method: string, path: string, token: string, body?: unknown) =>
    target().call(method, path, token, body);

  test('Bearer <key> authenticates on both path prefixes, as the key user', async () => {
    const name = uniq('auth');
    const { key } = await createKey(admin, name, { user: 'alice' });
    for (const prefix of ['', DIRECT]) {
      const res = await call('GET', keyPath(name, prefix), key);
      expect(res.status).toBe(200);
      expect(res.body.metadata.name).toBe(name);
      expect(res.body.spec).not.toHaveProperty('key');
    }
    // A key made with the key is alice's: the caller is alice.
    const made = await call('POST', KEYS, key, keyBody(uniq('via-key')));
    expect(made.status).toBe(201);
    expect(made.body.spec.user).toBe('alice');
    allKeys.push(made.body.spec.key);
    // Someone else's key is not alice's to read.
    const { body: bobs } = await createKey(admin, uniq('bobs'), { user: 'bob' });
    const denied = await call('GET', keyPath(bobs.metadata.name), key);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('User "alice" cannot get resource "ownedaccesskeys"');
  });

  test('a team key acts as platform:team:<team>', async () => {
    const { key } = await createKey(admin, uniq('teamkey'), { team: 'dev' });
    const made = await call('POST', KEYS, key, keyBody(uniq('via-team')));
    expect(made.status).toBe(201);
    expect(made.body.spec.team).toBe('dev');
    allKeys.push(made.body.spec.key);
    const denied = await call('POST', KEYS, key, keyBody(uniq('via-team'), { user: 'alice' }));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('User "platform:team:dev" cannot create');
  });

  test('an unknown token is 401', async () => {
    const res = await call('GET', KEYS, 'pak_not-a-key-at-all');
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  test('a disabled key is 401; enabled again, it works', async () => {
    const name = uniq('disabled');
    const { key } = await createKey(admin, name, { user: 'alice', disabled: true });
    const res = await call('GET', keyPath(name), key);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    expect(res.body.message).toContain('disabled');
    expect(res.text).not.toContain(key);
    expect(note(await admin.patch(keyPath(name), { spec: { disabled: false } }, MERGE_PATCH)).status).toBe(200);
    await eventually(async () => ((await call('GET', keyPath(name), key)).status === 200 ? true : undefined));
  });

  test('a key expires ttl seconds after creation: 401 saying it expired', async () => {
    const name = uniq('ttl');
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 1 });
    const created = Date.parse((await getKey(name)).metadata.creationTimestamp);
    await sleep(Math.max(0, created + 1000 - Date.now()) + 100);
    const res = await call('GET', keyPath(name), key);
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('Unauthorized');
    expect(res.body.message).toMatch(/expired/);
  });

  test('with ttlAfterLastActivity a key lives on while used, and expires ttl seconds after its last use', async () => {
    const name = uniq('idle');
    // A ttl well above the 1.2 s between uses: a use answered slowly on a busy machine still comes within it.
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 3, ttlAfterLastActivity: true });
    // creationTimestamp has whole seconds: use it at once, then keep using it within the ttl.
    for (let i = 0; i < 3; i++) {
      expect((await call('GET', keyPath(name), key)).status).toBe(200);
      await sleep(1200);
    }
    // 3.6 s after creation: past a ttl counted from creation, but used 1.2 s ago.
    expect((await call('GET', keyPath(name), key)).status).toBe(200);
    await sleep(3300);
    const res = await call('GET', keyPath(name), key);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  }, 20_000);

  test('use is recorded in status.lastActivity', async () => {
    const name = uniq('activity');
    const { key } = await createKey(admin, name, { user: 'alice' });
    const before = Date.now();
    expect((await call('GET', keyPath(name), key)).status).toBe(200);
    const last = await eventually(async () => (await getKey(name)).status?.lastActivity as string | undefined);
    expect(Date.parse(last)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(Date.parse(last)).toBeLessThanOrEqual(Date.now());
  });

  test('a scoped key reaches only its scope: out of scope is 403, lists show only what it may see', async () => {
    const c1 = uniq('c-in');
    const c2 = uniq('c-out');
    for (const c of [c1, c2]) {
      expect(
        note(
          await admin.post(`${GROUP_PATH}/clusters`, {
            apiVersion: API_VERSION,
            kind: 'Cluster',
            metadata: { name: c },
            spec: { networkPeer: true, owner: { user: 'alice' } },
          }),
        ).status,
      ).toBe(201);
    }
    const name = uniq('scoped');
    const { key } = await createKey(admin, name, { user: 'alice', scope: { clusters: [{ cluster: c1 }] } });
    expect((await call('GET', `${GROUP_PATH}/clusters/${c1}`, key)).status).toBe(200);
    const out = await call('GET', `${GROUP_PATH}/clusters/${c2}`, key);
    expect(out.status).toBe(403);
    expect(out.body.reason).toBe('Forbidden');
    expect(out.body.message).toContain(
      `User "alice" cannot get resource "clusters" in API group "${GROUP}" at the cluster scope`,
    );
    const list = await call('GET', `${GROUP_PATH}/clusters`, key);
    expect(list.status).toBe(200);
    expect(list.body.items.map((i: any) => i.metadata.name)).toEqual([c1]);
    // Its own key is out of its scope, and it may not make keys.
    expect((await call('GET', keyPath(name), key)).status).toBe(403);
    expect((await call('POST', KEYS, key, keyBody(uniq('escape')))).status).toBe(403);
    // Discovery still answers.
    expect((await call('GET', `/apis/${GROUP}/v1`, key)).status).toBe(200);
  });

  test('a platformCLI key reads but cannot write', async () => {
    const name = uniq('cli');
    const { key } = await createKey(admin, name, { user: 'alice', scope: { roles: [{ role: 'platformCLI' }] } });
    expect((await call('GET', keyPath(name), key)).status).toBe(200);
    expect((await call('GET', KEYS, key)).status).toBe(200);
    const write = await call('PATCH', keyPath(name), key, undefined);
    expect(write.status).toBe(403);
  });

  test('a deleted key stops working', async () => {
    const name = uniq('deleted');
    const { key } = await createKey(admin, name, { user: 'alice' });
    expect((await call('GET', keyPath(name), key)).status).toBe(200);
    expect(note(await admin.delete(keyPath(name))).status).toBe(200);
    await eventually(async () => ((await call('GET', KEYS, key)).status === 401 ? true : undefined));
  });
}

describe('authentication (assembled app: createApp + AccessKeyAuthenticator)', () => {
  let app: KeyApp;
  beforeAll(async () => {
    app = await startKeyApp();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  }, 30_000);

  authenticationTests(() => ({ call: (method, path, token, body) => app.request(method, path, token, body) }));

  test('the index follows the cache: keys made through the server are known', async () => {
    const { body } = await createKey(admin, uniq('indexed'), { user: 'alice' });
    await eventually(async () => (app.accessKeys.size > 0 && (await etcdEntry(body.metadata.name)) ? true : undefined));
    expect(app.accessKeys.size).toBeGreaterThan(0);
  });

  test('flush writes the activity still pending', async () => {
    const name = uniq('flush');
    await createKey(admin, name, { user: 'alice' });
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 5000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    app.recorder.record(name, Date.parse(at));
    await app.recorder.flush();
    expect((await getKey(name)).status?.lastActivity).toBe(at);
  });

  test('a lastActivity in the future stored in etcd (written before it was refused) keeps no key alive, and a use replaces it', async () => {
    const name = uniq('tampered');
    // A ttl that leaves a busy machine time for the writes below before the use that must come while it is young.
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 4, ttlAfterLastActivity: true });
    const entry = (await etcdEntry(name))!;
    await etcd
      .put(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`)
      .value(JSON.stringify({ ...entry.value, status: { lastActivity: '2099-01-01T00:00:00Z' } }));
    await eventually(async () =>
      (await getKey(name)).status?.lastActivity === '2099-01-01T00:00:00Z' ? true : undefined,
    );
    // Used while young: the server records the real time in place of the future one.
    expect((await app.request('GET', keyPath(name), key)).status).toBe(200);
    await app.recorder.flush();
    const recorded = await eventually(async () => {
      const value = (await getKey(name)).status?.lastActivity;
      return value !== '2099-01-01T00:00:00Z' ? value : undefined;
    });
    expect(Date.parse(recorded)).toBeLessThanOrEqual(Date.now());
    // Idle for longer than its ttl, it expires.
    await sleep(Date.parse(recorded) + 5000 - Date.now());
    const res = await app.request('GET', keyPath(name), key);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  }, 20_000);

  test('a lastActivity in the future in etcd does not count for expiry', async () => {
    const name = uniq('tampered-idle');
    const { key } = await createKey(admin, name, { user: 'alice', ttl: 1, ttlAfterLastActivity: true });
    const entry = (await etcdEntry(name))!;
    const created = Date.parse(entry.value.metadata.creationTimestamp);
    await etcd
      .put(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`)
      .value(JSON.stringify({ ...entry.value, status: { lastActivity: '2099-01-01T00:00:00Z' } }));
    await eventually(async () =>
      (await getKey(name)).status?.lastActivity === '2099-01-01T00:00:00Z' ? true : undefined,
    );
    await sleep(Math.max(0, created + 1000 - Date.now()) + 100);
    const res = await app.request('GET', keyPath(name), key);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  });
});

describe('authentication through the test server', () => {
  authenticationTests(() => ({
    call: async (method, path, token, body) => {
      const res = note(
        await ts.client(token).request(method, path, body === undefined ? {} : { body }),
        method === 'POST' && path.endsWith('/ownedaccesskeys'),
      );
      return { status: res.status, body: res.body, text: res.text };
    },
  }));
});

describe('no key ever shows up after its create', () => {
  test('in any answer but its create, nor in etcd', async () => {
    expect(allKeys.length).toBeGreaterThan(5);
    for (const key of allKeys) {
      for (const { text, create } of seen) {
        if (create && text.includes(`"key":"${key}"`)) continue;
        expect(text.includes(key) ? `a response shows a key: ${text.slice(0, 200)}` : '').toBe('');
      }
    }
    const all = await etcd.getAll().prefix(`${ts.config.etcdPrefix}/`).strings();
    const stored = Object.values(all).join('\n');
    for (const key of allKeys) expect(stored.includes(key)).toBe(false);
  });
});
