/**
 * The ProjectSecret sync (src/controllers/projectsecretsync.ts) on a real server and etcd with the host cluster
 * stand-in, whose RBAC lets alice and bob write ProjectSecrets in the project's namespace:
 *
 * - a ProjectSecret naming a SharedSecret gets its data (all keys, or the listed ones) on create, follows a change
 *   of it, holds none while it is deleted (SourceNotFound) and gets it again once it is recreated;
 * - the SharedSecret's ProjectSecrets condition counts the ProjectSecrets naming it and those holding its data;
 * - the data goes when the owner may no longer get the SharedSecret (an access entry removed; a host RoleBinding
 *   removed, which only the periodic resync notices), and comes back when it may again; a team owner is asked about
 *   as its team's group; a host that fails to answer is no loss of access (the data stays, the sync retries);
 * - after a restart, and after a change the sync did not act on (data edited in etcd behind its back), the data is
 *   what the SharedSecret says again;
 * - no value ever appears in the server's log or in a condition.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import * as errors from '../../src/apimachinery/status.js';
import { createLogger } from '../../src/log.js';
import {
  API_VERSION,
  APPLY_PATCH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { grantRole, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const SOURCE_NS = 'shared';
const PROJECT = uniq('sync');
const PROJECT_NS = `p-${PROJECT}`;
const B64 = (s: string) => Buffer.from(s).toString('base64');
const USERS = { root: ['system:masters'], alice: [], bob: [], carol: ['platform:team:ops'] };
/** Every value written in this file, to look for in the log and the conditions. */
const VALUES = ['robot', 'hunter2', 'rotated-pw', 'db-pass', 'vault-token', 'stale-value', 'ops-pw', 'bobs-pw'];

let etcd: TestEtcd;
let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let alice: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
const logs: string[] = [];

const projectSecretPath = (name: string) => `${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets/${name}`;

async function startServer(overrides: Record<string, unknown> = {}): Promise<void> {
  const server = await startTestServerWithUsers(
    USERS,
    {
      kubeconfig: host.kubeconfigPath,
      // The copies' Secrets in the host, to see revocation reach them too.
      projectSecretDelivery: true,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
      ...overrides,
    },
    etcd,
    createLogger((line) => void logs.push(line)),
  );
  ({ root, alice, bob, carol } = server.as);
  ts = server;
}

function hostRoleBinding(name: string, rules: object[], users: string[], namespace: string): void {
  grantRole(host, namespace, name, rules, users);
}

beforeAll(async () => {
  etcd = await startTestEtcd();
  host = await startHostCluster();
  host.addNamespace(SOURCE_NS);
  host.addNamespace(PROJECT_NS);
  await startServer();
  hostRoleBinding(
    'write-projectsecrets',
    [{ apiGroups: [GROUP], resources: ['projectsecrets'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
    ['alice', 'bob', 'carol'],
    PROJECT_NS,
  );
  const project = await root.post(PROJECTS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: PROJECT },
  });
  expect(project.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await etcd?.stop();
}, 60_000);

async function createSharedSecret(name: string, data: Record<string, string>, access: object[]): Promise<any> {
  const res = await root.post(sharedSecretsPath(SOURCE_NS), {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name },
    spec: { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, B64(v)])), access },
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function createProjectSecret(as: HttpClient, owner: string, source: string, keys?: string[]): Promise<string> {
  const name = uniq('ps');
  const res = await as.post(`${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets`, {
    apiVersion: API_VERSION,
    kind: 'ProjectSecret',
    metadata: { name },
    spec: {
      owner: { user: owner },
      sharedSecretRef: { namespace: SOURCE_NS, name: source, ...(keys ? { keys } : {}) },
    },
  });
  expect(res.status).toBe(201);
  return name;
}

const condition = (obj: any, type: string) => obj?.status?.conditions?.find((c: any) => c.type === type);

/** Waits until the ProjectSecret holds `data` (plain values; {} is none) with its Synced condition's `reason`. */
async function holds(name: string, data: Record<string, string>, reason: string, timeoutMs = 10_000): Promise<any> {
  const sorted = (d: Record<string, string> | undefined) => JSON.stringify(Object.entries(d ?? {}).sort());
  const want = sorted(Object.fromEntries(Object.entries(data).map(([k, v]) => [k, B64(v)])));
  return waitFor(
    `ProjectSecret ${name} to hold ${Object.keys(data).join(',') || 'nothing'} (${reason})`,
    async () => {
      const obj = (await root.get(projectSecretPath(name))).body;
      const synced = condition(obj, 'Synced');
      return sorted(obj.spec?.data) === want &&
        synced?.reason === reason &&
        synced.observedGeneration === obj.metadata.generation
        ? obj
        : undefined;
    },
    timeoutMs,
  );
}

describe('following a SharedSecret', () => {
  const SOURCE = 'registry';
  let all: string;
  let onlyPassword: string;
  let syncedSince: string;

  test('on create: all keys, or the listed ones', async () => {
    await createSharedSecret(SOURCE, { user: 'robot', password: 'hunter2' }, [{ verbs: ['get'], users: ['alice'] }]);
    all = await createProjectSecret(alice, 'alice', SOURCE);
    onlyPassword = await createProjectSecret(alice, 'alice', SOURCE, ['password']);
    const obj = await holds(all, { user: 'robot', password: 'hunter2' }, 'Synced');
    expect(condition(obj, 'Synced')).toMatchObject({
      status: 'True',
      message: '2 key(s) synced from SharedSecret shared/registry',
    });
    syncedSince = condition(obj, 'Synced').lastTransitionTime;
    await holds(onlyPassword, { password: 'hunter2' }, 'Synced');
    // What alice reads is the data, as if written there.
    expect((await alice.get(projectSecretPath(onlyPassword))).body.spec.data).toEqual({ password: B64('hunter2') });
  });

  test('the SharedSecret counts the ProjectSecrets it feeds', async () => {
    const counted = await waitFor('the ProjectSecrets condition to count both', async () => {
      const c = condition((await root.get(sharedSecretPath(SOURCE_NS, SOURCE))).body, 'ProjectSecrets');
      return c?.message.startsWith('2 ProjectSecret(s)') && c.message.includes('2 of them') ? c : undefined;
    });
    expect(counted).toMatchObject({ status: 'True', reason: 'Referenced' });
  });

  test('on update: a rotated value reaches both, and the condition has not transitioned', async () => {
    const path = sharedSecretPath(SOURCE_NS, SOURCE);
    expect((await root.patch(path, { spec: { data: { password: B64('rotated-pw') } } }, MERGE_PATCH)).status).toBe(200);
    const obj = await holds(all, { user: 'robot', password: 'rotated-pw' }, 'Synced');
    expect(condition(obj, 'Synced').lastTransitionTime).toBe(syncedSince);
    await holds(onlyPassword, { password: 'rotated-pw' }, 'Synced');
  });

  test('a key the reference lists that the SharedSecret no longer has is reported, the others are synced', async () => {
    const path = sharedSecretPath(SOURCE_NS, SOURCE);
    expect((await root.patch(path, { spec: { data: { password: null } } }, MERGE_PATCH)).status).toBe(200);
    const obj = await holds(onlyPassword, {}, 'KeysNotFound');
    expect(condition(obj, 'Synced')).toMatchObject({
      status: 'False',
      message:
        'SharedSecret shared/registry has no key "password" of those spec.sharedSecretRef.keys lists; the 0 other key(s) are synced',
    });
    await holds(all, { user: 'robot' }, 'Synced');
    expect((await root.patch(path, { spec: { data: { password: B64('hunter2') } } }, MERGE_PATCH)).status).toBe(200);
    await holds(onlyPassword, { password: 'hunter2' }, 'Synced');
  });

  test('on delete: the client is warned, no data and SourceNotFound; recreating it resumes the sync', async () => {
    await waitFor('the ProjectSecrets condition to count both as holding data', async () =>
      condition((await root.get(sharedSecretPath(SOURCE_NS, SOURCE))).body, 'ProjectSecrets')?.message.includes(
        '2 of them',
      ),
    );
    const deleted = await root.delete(sharedSecretPath(SOURCE_NS, SOURCE));
    expect(deleted.status).toBe(200);
    expect(deleted.headers.warning).toBe(
      '299 - "SharedSecret shared/registry: 2 ProjectSecret(s) name this SharedSecret in spec.sharedSecretRef, 2 of them hold its data now; deleting it removes the data from them; they report SourceNotFound until a SharedSecret of this name exists again"',
    );
    const obj = await holds(all, {}, 'SourceNotFound');
    const gone = condition(obj, 'Synced');
    expect(gone).toMatchObject({
      status: 'False',
      message: 'SharedSecret shared/registry does not exist: this ProjectSecret holds no synced data until it does',
    });
    expect(gone.lastTransitionTime >= syncedSince).toBe(true);
    await holds(onlyPassword, {}, 'SourceNotFound');
    await waitFor(
      'the SharedSecret to be gone',
      async () => (await root.get(sharedSecretPath(SOURCE_NS, SOURCE))).status === 404,
    );
    await createSharedSecret(SOURCE, { user: 'robot2', password: 'hunter2' }, [{ verbs: ['get'], users: ['alice'] }]);
    await holds(all, { user: 'robot2', password: 'hunter2' }, 'Synced');
    await holds(onlyPassword, { password: 'hunter2' }, 'Synced');
  });
});

describe('revocation reaches the copies', () => {
  test('removing the access entry that let the owner get the SharedSecret removes the data', async () => {
    const source = uniq('db');
    await createSharedSecret(source, { password: 'db-pass' }, [{ verbs: ['get'], users: ['alice'] }]);
    const name = await createProjectSecret(alice, 'alice', source);
    await holds(name, { password: 'db-pass' }, 'Synced');
    const path = sharedSecretPath(SOURCE_NS, source);
    expect((await root.patch(path, { spec: { access: [] } }, MERGE_PATCH)).status).toBe(200);
    // alice wrote the reference and owns it: the copy rests on her, first as its writer.
    const obj = await holds(name, {}, 'WriterCannotGet');
    expect(condition(obj, 'Synced')).toMatchObject({
      status: 'False',
      message: `the user who set spec.sharedSecretRef ("alice", status.referencedBy) may not get SharedSecret shared/${source}, so its data was removed from this ProjectSecret; it comes back once they may get it again, or when someone who may sets the reference again`,
    });
    expect(
      (await root.patch(path, { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } }, MERGE_PATCH)).status,
    ).toBe(200);
    await holds(name, { password: 'db-pass' }, 'Synced');
  });
});

describe('whose access a copy rests on: who set the reference (status.referencedBy), and the owner', () => {
  const SOURCE = uniq('ops-db');
  const sourcePath = () => sharedSecretPath(SOURCE_NS, SOURCE);
  const psecs = `${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets`;
  const writerOf = async (name: string) => (await root.get(projectSecretPath(name))).body.status?.referencedBy;
  const hostData = (name: string) => (host.get('secrets', PROJECT_NS, name) as any)?.data ?? {};

  beforeAll(async () => {
    // alice and team ops may read it.
    await createSharedSecret(SOURCE, { password: 'ops-pw' }, [
      { verbs: ['get'], users: ['alice'] },
      { verbs: ['get'], teams: ['ops'] },
    ]);
  });

  test('a creator may not name as owner a team it is not in: 403, on every write path, and nothing is stored', async () => {
    const body = (name: string) => ({
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { team: 'ops' }, sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE } },
    });
    const name = uniq('dbcopy');
    const posted = await alice.post(psecs, body(name));
    expect(posted.status).toBe(403);
    expect(posted.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      message: `projectsecrets.management.platform.sh "${name}" is forbidden: User "alice" cannot create this ProjectSecret: spec.owner.team: may not be "ops", a team the caller is not in: a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner`,
    });
    const applied = await alice.patch(`${psecs}/${name}?fieldManager=kubectl`, body(name), APPLY_PATCH);
    expect(applied.status).toBe(403);
    expect((await root.get(projectSecretPath(name))).status).toBe(404);
    // carol, who is in team ops, may.
    expect((await carol.post(psecs, body(name))).status).toBe(201);
    expect(await writerOf(name)).toEqual({
      username: 'carol',
      uid: 'uid-carol',
      groups: ['platform:team:ops', 'system:authenticated'],
    });
  });

  test("the writer's revocation ends the copy, in the API and in the host, though the owner it was handed to may still get it", async () => {
    const name = uniq('dbcopy');
    const created = await alice.post(psecs, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: {
        owner: { user: 'alice' },
        access: [{ verbs: ['get'], users: ['alice'] }],
        sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE },
      },
    });
    expect(created.status).toBe(201);
    await holds(name, { password: 'ops-pw' }, 'Synced');
    // The owner hands it on, to a team that may get the SharedSecret too: the copy still rests on alice.
    const handed = await alice.patch(
      projectSecretPath(name),
      { spec: { owner: { user: null, team: 'ops' } } },
      MERGE_PATCH,
    );
    expect(handed.status).toBe(200);
    expect(handed.body.status.referencedBy.username).toBe('alice');
    await waitFor('the host Secret to hold the copy', () => hostData(name).password === B64('ops-pw'));
    // alice's grant goes; team ops keeps its own.
    const revoked = await root.patch(
      sourcePath(),
      { spec: { access: [{ verbs: ['get'], teams: ['ops'] }] } },
      MERGE_PATCH,
    );
    expect(revoked.status).toBe(200);
    const obj = await holds(name, {}, 'WriterCannotGet');
    expect(condition(obj, 'Synced').message).toContain('the user who set spec.sharedSecretRef ("alice"');
    expect((await alice.get(projectSecretPath(name))).body.spec.data).toBeUndefined();
    await waitFor('the host Secret to hold no data', () => Object.keys(hostData(name)).length === 0);
    // A rotation meanwhile reaches neither (the sync looks at every ProjectSecret naming it, and keeps none).
    expect(
      (await root.patch(sourcePath(), { spec: { data: { password: B64('rotated-pw') } } }, MERGE_PATCH)).status,
    ).toBe(200);
    await holds(name, {}, 'WriterCannotGet');
    expect(hostData(name)).toEqual({});
    // alice may get it again: the copy comes back.
    const restored = await root.patch(
      sourcePath(),
      {
        spec: {
          access: [
            { verbs: ['get'], users: ['alice'] },
            { verbs: ['get'], teams: ['ops'] },
          ],
        },
      },
      MERGE_PATCH,
    );
    expect(restored.status).toBe(200);
    await holds(name, { password: 'rotated-pw' }, 'Synced');
  });

  test('nobody but the server writes status.referencedBy: not at create, not by a patch of the object or its status', async () => {
    const name = uniq('dbcopy');
    const forged = { username: 'root', groups: ['system:masters', 'system:authenticated'] };
    const created = await alice.post(psecs, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'alice' }, sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE } },
      status: { referencedBy: forged },
    });
    expect(created.status).toBe(201);
    expect(created.body.status.referencedBy.username).toBe('alice');
    const asObject = await alice.patch(projectSecretPath(name), { status: { referencedBy: forged } }, MERGE_PATCH);
    expect(asObject.status).toBe(200);
    const asStatus = await alice.patch(
      `${projectSecretPath(name)}/status`,
      { status: { referencedBy: forged } },
      MERGE_PATCH,
    );
    expect(asStatus.status).toBe(403);
    // Not even system:masters' status writes change it: only a write of the reference does.
    const byRoot = await root.patch(
      `${projectSecretPath(name)}/status`,
      { status: { referencedBy: forged } },
      MERGE_PATCH,
    );
    expect(byRoot.status).toBe(200);
    const removed = await root.patch(
      `${projectSecretPath(name)}/status`,
      [{ op: 'remove', path: '/status/referencedBy' }],
      JSON_PATCH,
    );
    expect(removed.status).toBe(200);
    expect((await writerOf(name)).username).toBe('alice');
  });

  test('removing the reference takes the synced data with it: it never stays as hand-written data', async () => {
    const name = uniq('dbcopy');
    const body = {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'alice' }, sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE } },
    };
    expect((await alice.post(psecs, body)).status).toBe(201);
    await holds(name, { password: 'rotated-pw' }, 'Synced');
    // bob may patch it, not get the SharedSecret: his removal of the reference leaves no copy behind.
    const removed = await bob.patch(projectSecretPath(name), { spec: { sharedSecretRef: null } }, MERGE_PATCH);
    expect(removed.status).toBe(200);
    expect(removed.body.spec.data).toBeUndefined();
    expect(removed.body.status.referencedBy).toBeUndefined();
    expect((await root.get(projectSecretPath(name))).body.spec.data).toBeUndefined();
    // The same by a PUT of the object as read, the reference taken out.
    const again = uniq('dbcopy');
    expect((await alice.post(psecs, { ...body, metadata: { name: again } })).status).toBe(201);
    await holds(again, { password: 'rotated-pw' }, 'Synced');
    let put: any;
    // The controllers write its status meanwhile: a PUT they made stale is sent again on a fresh read.
    for (let attempt = 0; attempt < 5 && put?.status !== 200; attempt++) {
      const read = (await root.get(projectSecretPath(again))).body;
      const { sharedSecretRef: _ref, ...rest } = read.spec;
      put = await bob.put(projectSecretPath(again), { ...read, spec: rest });
    }
    expect(put.status).toBe(200);
    expect(put.body.spec.data).toBeUndefined();
    // Data written by hand as the reference goes is the writer's own, and kept.
    const third = uniq('dbcopy');
    expect((await alice.post(psecs, { ...body, metadata: { name: third } })).status).toBe(201);
    await holds(third, { password: 'rotated-pw' }, 'Synced');
    const own = await alice.patch(
      projectSecretPath(third),
      { spec: { sharedSecretRef: null, data: { password: B64('hunter2') } } },
      MERGE_PATCH,
    );
    expect(own.status).toBe(200);
    expect(own.body.spec.data).toEqual({ password: B64('hunter2') });
  });

  test('removing the reference with some keys changed or gone leaves none of what was copied, by any patch', async () => {
    const source = uniq('multi');
    await createSharedSecret(source, { a: 'ops-pw', b: 'rotated-pw' }, [{ verbs: ['get'], users: ['alice'] }]);
    const body = (name: string) => ({
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'alice' }, sharedSecretRef: { namespace: SOURCE_NS, name: source } },
    });
    const attempts: [string, (path: string) => Promise<any>][] = [
      [
        'JSON patch removing the reference and one key',
        (path) =>
          bob.patch(
            path,
            [
              { op: 'remove', path: '/spec/sharedSecretRef' },
              { op: 'remove', path: '/spec/data/b' },
            ],
            JSON_PATCH,
          ),
      ],
      [
        'merge patch removing the reference and adding a key',
        (path) => bob.patch(path, { spec: { sharedSecretRef: null, data: { pad: B64('x') } } }, MERGE_PATCH),
      ],
    ];
    for (const [how, attempt] of attempts) {
      const name = uniq('dbcopy');
      expect((await alice.post(psecs, body(name))).status).toBe(201);
      await holds(name, { a: 'ops-pw', b: 'rotated-pw' }, 'Synced');
      const res = await attempt(projectSecretPath(name));
      expect({ how, status: res.status }).toEqual({ how, status: 200 });
      // Only what bob wrote himself stays.
      expect({ how, data: (await root.get(projectSecretPath(name))).body.spec.data }).toEqual({
        how,
        data: how.startsWith('merge') ? { pad: B64('x') } : undefined,
      });
    }
  });

  test('handing a synced ProjectSecret on is naming its SharedSecret anew: 403 for an owner who may not get it', async () => {
    const source = uniq('handon');
    await createSharedSecret(source, { password: 'ops-pw' }, [{ verbs: ['get'], teams: ['ops'] }]);
    const name = uniq('dbcopy');
    // bob owns it and may read it (his access entry); carol (team ops) names the SharedSecret in it.
    const created = await root.post(psecs, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'bob' }, access: [{ verbs: ['get', 'patch', 'update'], users: ['bob', 'carol'] }] },
    });
    expect(created.status).toBe(201);
    const named = await carol.patch(
      projectSecretPath(name),
      { spec: { sharedSecretRef: { namespace: SOURCE_NS, name: source } } },
      MERGE_PATCH,
    );
    expect(named.status).toBe(200);
    await holds(name, {}, 'OwnerCannotGet');
    // bob hands it to team ops, which may get it: refused, nothing changes.
    const before = (await root.get(projectSecretPath(name))).body;
    const handed = await bob.patch(
      projectSecretPath(name),
      { spec: { owner: { user: null, team: 'ops' } } },
      MERGE_PATCH,
    );
    expect({ status: handed.status, reason: handed.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect(handed.body.message).toContain('changing the owner of a ProjectSecret synced from it is a read of it');
    expect((await root.get(projectSecretPath(name))).body.metadata.resourceVersion).toBe(
      before.metadata.resourceVersion,
    );
    await holds(name, {}, 'OwnerCannotGet');
  });

  test("the writer's next write records them as they are now: a team they left no longer keeps the copy", async () => {
    // dave authenticates through the host cluster (TokenReview), in team ops, which may get the SharedSecret.
    const source = uniq('teamdb');
    await createSharedSecret(source, { password: 'ops-pw' }, [{ verbs: ['get'], teams: ['ops'] }]);
    const asDave = (groups: string[]) => {
      const token = `dave-${uniq('t')}`;
      host.addToken(token, { name: 'dave', uid: 'uid-dave', groups });
      return ts.client(token);
    };
    hostRoleBinding(
      'dave-writes-projectsecrets',
      [{ apiGroups: [GROUP], resources: ['projectsecrets'], verbs: ['create', 'get', 'update', 'patch'] }],
      ['dave'],
      PROJECT_NS,
    );
    const inOps = asDave(['platform:team:ops']);
    const name = uniq('dbcopy');
    const created = await inOps.post(psecs, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { team: 'ops' }, sharedSecretRef: { namespace: SOURCE_NS, name: source } },
    });
    expect(created.status).toBe(201);
    await holds(name, { password: 'ops-pw' }, 'Synced');
    // dave leaves team ops (his next login has no such group) and writes it again: the copy rests on him as he is.
    const left = asDave([]);
    const written = await left.patch(projectSecretPath(name), { spec: { displayName: 'still mine' } }, MERGE_PATCH);
    expect(written.status).toBe(200);
    expect(written.body.status.referencedBy).toEqual({
      username: 'dave',
      uid: 'uid-dave',
      groups: ['system:authenticated'],
    });
    expect(condition(await holds(name, {}, 'WriterCannotGet'), 'Synced').message).toContain('("dave"');
  });

  test('whoever changes the reference must be allowed to get the new source (403, nothing changes), and is then the writer', async () => {
    const name = uniq('dbcopy');
    expect(
      (
        await alice.post(psecs, {
          apiVersion: API_VERSION,
          kind: 'ProjectSecret',
          metadata: { name },
          spec: { owner: { user: 'alice' }, sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE } },
        })
      ).status,
    ).toBe(201);
    // (Rotated by the test before.)
    await holds(name, { password: 'rotated-pw' }, 'Synced');
    const bobsSource = uniq('bobs');
    await createSharedSecret(bobsSource, { password: 'bobs-pw' }, [{ verbs: ['get'], users: ['bob', 'alice'] }]);
    const before = (await root.get(projectSecretPath(name))).body;
    // bob may update ProjectSecrets here, but may not get ops-db: naming it (even keeping alice's reference while
    // changing only its keys) is refused.
    const other = await bob.patch(
      projectSecretPath(name),
      { spec: { sharedSecretRef: { namespace: SOURCE_NS, name: SOURCE, keys: ['password'] } } },
      MERGE_PATCH,
    );
    expect(other.status).toBe(403);
    expect(other.body.reason).toBe('Forbidden');
    expect((await root.get(projectSecretPath(name))).body.metadata.resourceVersion).toBe(
      before.metadata.resourceVersion,
    );
    // His own source, by a PUT: he is recorded, and the copy follows it.
    const put = await bob.put(projectSecretPath(name), {
      ...before,
      spec: { ...before.spec, data: undefined, sharedSecretRef: { namespace: SOURCE_NS, name: bobsSource } },
    });
    expect(put.status).toBe(200);
    expect(put.body.status.referencedBy.username).toBe('bob');
    await holds(name, { password: 'bobs-pw' }, 'Synced');
    // Now it rests on bob: his grant gone, the copy goes, though the owner alice may still get it.
    expect(
      (
        await root.patch(
          sharedSecretPath(SOURCE_NS, bobsSource),
          { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } },
          MERGE_PATCH,
        )
      ).status,
    ).toBe(200);
    expect(condition(await holds(name, {}, 'WriterCannotGet'), 'Synced').message).toContain('("bob"');
  });
});

describe('a team owner', () => {
  test("is asked about as the team's group: the team's access entry keeps the data, removing it removes the data", async () => {
    // Written by system:masters, who may always get it: what ends the copy here is the owner's access.
    const source = uniq('teamdb');
    await createSharedSecret(source, { password: 'db-pass' }, [{ verbs: ['get'], teams: ['web'] }]);
    const name = uniq('ps');
    const res = await root.post(`${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets`, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { team: 'web' }, sharedSecretRef: { namespace: SOURCE_NS, name: source } },
    });
    expect(res.status).toBe(201);
    await holds(name, { password: 'db-pass' }, 'Synced');
    const path = sharedSecretPath(SOURCE_NS, source);
    expect((await root.patch(path, { spec: { access: [] } }, MERGE_PATCH)).status).toBe(200);
    const obj = await holds(name, {}, 'OwnerCannotGet');
    expect(condition(obj, 'Synced').message).toContain('the owner (team "web") may not get');
  });
});

describe('after a restart, and what the watch did not bring', () => {
  const SOURCE = uniq('vault');
  let kv: Etcd3;
  let name: string;
  let bobs: string;
  const key = (resource: string, ns: string, n: string) => `${ts.config.etcdPrefix}/${GROUP}/${resource}/${ns}/${n}`;

  /** Rewrites a stored object in etcd, as no server would see coming. */
  async function rewrite(etcdKey: string, change: (obj: any) => void): Promise<void> {
    const obj = JSON.parse((await kv.get(etcdKey).string())!);
    change(obj);
    await kv.put(etcdKey).value(JSON.stringify(obj));
  }

  beforeAll(() => {
    kv = new Etcd3({ hosts: etcd.endpoint });
  });
  afterAll(() => kv.close());

  test('a change made while no server ran is synced by the next one', async () => {
    // bob may get this one through host RBAC only.
    hostRoleBinding(
      'bob-reads-vault',
      [{ apiGroups: [GROUP], resources: ['sharedsecrets'], resourceNames: [SOURCE], verbs: ['get'] }],
      ['bob'],
      SOURCE_NS,
    );
    await createSharedSecret(SOURCE, { token: 'vault-token' }, [{ verbs: ['get'], users: ['alice'] }]);
    name = await createProjectSecret(alice, 'alice', SOURCE);
    bobs = await createProjectSecret(bob, 'bob', SOURCE);
    await holds(name, { token: 'vault-token' }, 'Synced');
    await holds(bobs, { token: 'vault-token' }, 'Synced');
    const prefix = ts.config.etcdPrefix;
    await ts.stop();
    await rewrite(key('sharedsecrets', SOURCE_NS, SOURCE), (obj) => {
      obj.spec.data = { token: B64('rotated-pw') };
      obj.metadata.generation += 1;
    });
    // The same storage, and a resync every second for the tests below.
    await startServer({ etcdPrefix: prefix, accessResyncPeriodMs: 1000 });
    await holds(name, { token: 'rotated-pw' }, 'Synced', 30_000);
    await holds(bobs, { token: 'rotated-pw' }, 'Synced');
  }, 60_000);

  test('data changed behind the sync (an event it did not act on) is put back by the resync', async () => {
    await rewrite(key('projectsecrets', PROJECT_NS, name), (obj) => {
      obj.spec.data = { token: B64('stale-value') };
    });
    // Its generation is as it was, so the watch event of this write is not one the sync acts on: the resync does.
    await holds(name, { token: 'rotated-pw' }, 'Synced');
  });

  test("a SubjectAccessReview the host fails keeps the data and is tried again: it is not the owner's loss of access", async () => {
    const mark = logs.length;
    host.onSubjectAccessReview = (spec) => {
      if (spec.user === 'bob') throw errors.serviceUnavailable('the host is overloaded (stand-in)');
      return undefined;
    };
    try {
      // The resync (every second) asks about bob's again; the failure is logged and the item retried.
      await waitFor("a failed sync of bob's ProjectSecret to be retried", async () =>
        logs.slice(mark).some((l) => l.includes('projectsecret sync: will retry') && l.includes(bobs)),
      );
      const obj = (await root.get(projectSecretPath(bobs))).body;
      expect({ data: obj.spec.data, synced: condition(obj, 'Synced')?.reason }).toEqual({
        data: { token: B64('rotated-pw') },
        synced: 'Synced',
      });
    } finally {
      host.onSubjectAccessReview = undefined;
    }
  });

  test('a host RoleBinding that ends removes the data of the ProjectSecret it let its owner read', async () => {
    host.remove('rolebindings', SOURCE_NS, 'bob-reads-vault');
    await holds(bobs, {}, 'WriterCannotGet');
    // alice's access entry still holds.
    await holds(name, { token: 'rotated-pw' }, 'Synced');
  });

  test('one stored before writers were recorded holds nothing until someone who may get the source writes it', async () => {
    await rewrite(key('projectsecrets', PROJECT_NS, name), (obj) => {
      delete obj.status.referencedBy;
    });
    const unknown = await holds(name, {}, 'WriterUnknown');
    expect(condition(unknown, 'Synced').message).toContain(
      'nobody is recorded as having set spec.sharedSecretRef (status.referencedBy',
    );
    // bob may write it but not get the SharedSecret: his write is taken, and records nobody.
    const byBob = await bob.patch(projectSecretPath(name), { spec: { displayName: 'by bob' } }, MERGE_PATCH);
    expect(byBob.status).toBe(200);
    expect(byBob.body.status.referencedBy).toBeUndefined();
    await holds(name, {}, 'WriterUnknown');
    // alice may: her write records her, and the copy is back.
    const byAlice = await alice.patch(projectSecretPath(name), { spec: { displayName: 'by alice' } }, MERGE_PATCH);
    expect(byAlice.status).toBe(200);
    expect(byAlice.body.status.referencedBy.username).toBe('alice');
    await holds(name, { token: 'rotated-pw' }, 'Synced');
  });
});

test('no value is ever logged, nor said in a condition', async () => {
  const list = (await root.get(`${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets`)).body;
  const sources = (await root.get(sharedSecretsPath(SOURCE_NS))).body;
  const conditions = JSON.stringify([...list.items, ...sources.items].map((o: any) => o.status ?? {}));
  expect(logs.some((l) => l.includes('projectsecret sync: wrote the data'))).toBe(true);
  for (const value of VALUES) {
    for (const form of [value, B64(value)]) {
      expect(logs.filter((l) => l.includes(form))).toEqual([]);
      expect(conditions).not.toContain(form);
    }
  }
});
