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
  GROUP,
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
const USERS = { root: ['system:masters'], alice: [], bob: [] };
/** Every value written in this file, to look for in the log and the conditions. */
const VALUES = ['robot', 'hunter2', 'rotated-pw', 'db-pass', 'vault-token', 'stale-value'];

let etcd: TestEtcd;
let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let alice: HttpClient;
let bob: HttpClient;
const logs: string[] = [];

const projectSecretPath = (name: string) => `${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets/${name}`;

async function startServer(overrides: Record<string, unknown> = {}): Promise<void> {
  const server = await startTestServerWithUsers(
    USERS,
    {
      kubeconfig: host.kubeconfigPath,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
      ...overrides,
    },
    etcd,
    createLogger((line) => void logs.push(line)),
  );
  ({ root, alice, bob } = server.as);
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
    ['alice', 'bob'],
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
    const obj = await holds(name, {}, 'OwnerCannotGet');
    expect(condition(obj, 'Synced')).toMatchObject({
      status: 'False',
      message: `the owner (user "alice") may not get SharedSecret shared/${source}, so its data was removed from this ProjectSecret; it comes back once the owner may get it again (an access entry on the SharedSecret, or RBAC)`,
    });
    expect(
      (await root.patch(path, { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } }, MERGE_PATCH)).status,
    ).toBe(200);
    await holds(name, { password: 'db-pass' }, 'Synced');
  });
});

describe('a team owner', () => {
  test("is asked about as the team's group: the team's access entry keeps the data, removing it removes the data", async () => {
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
    await holds(bobs, {}, 'OwnerCannotGet');
    // alice's access entry still holds.
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
