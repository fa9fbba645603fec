/**
 * A ProjectSecret delivered beyond the host (spec.delivery, src/controllers/projectsecretdelivery.ts), on a real
 * server and etcd, with host stand-ins playing the management host (`mgmt`, the server's --kubeconfig), a connected
 * cluster (`a`, Cluster conn-a) and a virtual cluster running in it (`vc`, reached through `vc-<name>` in `a`):
 *
 * - one ProjectSecret, synced from a SharedSecret, of type kubernetes.io/dockerconfigjson, kept in all three, one
 *   line each in status.targets; a rotation of the SharedSecret reaches all three;
 * - a target down turns only its line Failed, and it is delivered once it is back;
 * - the reader losing the SharedSecret empties every copy; a target added is delivered, one removed is deleted;
 *   a hand edit or deletion inside the virtual cluster is put back;
 * - naming a target the writer may not use is a 403 naming it, nothing stored; one whose cluster does not let the
 *   writer create Secrets there gets nothing there (TargetForbidden); a type without its keys is a 422 naming the key;
 * - status.targets and status.targetedBy are the server's; no value reaches the log or a condition.
 * Every wait is on what the server does, never on time.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
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
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { grantConnectionSecret, grantRole, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const SOURCE_NS = 'shared';
const VC_NS = 'default';
const APPS = 'apps';
const B64 = (s: string) => Buffer.from(s).toString('base64');
const dockerConfig = (password: string) =>
  JSON.stringify({ auths: { 'registry.example.com': { username: 'ci', password } } });
/** Every value written in this file, to look for in the log and the conditions. */
const VALUES = ['reg-pw-one', 'reg-pw-two', 'reg-pw-three', 'hand-edit-value', 'opaque-value-1', 'opaque-value-2'];

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let vc: HostClusterStandIn;
const SA = 'system:serviceaccount:ci:deployer';
let ts: TestServer & { as: Record<'root' | 'bob' | 'carol' | typeof SA, HttpClient> };
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
const logs: string[] = [];

const PROJECT = uniq('tgt');
const PROJECT_NS = `p-${PROJECT}`;
const VC_NAME = uniq('shop');
const psPath = (name = '') => `${GROUP_PATH}/namespaces/${PROJECT_NS}/projectsecrets${name ? `/${name}` : ''}`;
const vcTarget = { virtualCluster: { name: VC_NAME, namespace: VC_NS } };
const clusterTarget = { cluster: { name: 'conn-a', namespace: APPS } };
const ALL_THREE = [{ host: {} }, vcTarget, clusterTarget];
const lineKeys = ['host', `virtualCluster/${VC_NAME}/${VC_NS}`, `cluster/conn-a/${APPS}`];

beforeAll(async () => {
  [mgmt, a, vc] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  ts = await startTestServerWithUsers(
    { root: ['system:masters'], bob: ['devs'], carol: [], [SA]: ['system:serviceaccounts'] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
      projectSecretDelivery: true,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
    },
    undefined,
    createLogger((line) => void logs.push(line)),
  );
  ({ root, bob, carol } = ts.as);
  mgmt.addNamespace(SOURCE_NS);
  mgmt.addNamespace(PROJECT_NS);
  await connectCluster(root, mgmt, 'conn-a', a, { access: [{ verbs: ['get'], users: ['bob'] }] });
  // A Cluster bob may get that the project does not allow (never connected: only its access matters).
  const other = await root.post(`${GROUP_PATH}/clusters`, {
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: { name: 'conn-b' },
    spec: { networkPeer: true, access: [{ verbs: ['get'], users: ['bob'] }] },
  });
  expect(other.status).toBe(201);
  // bob and carol may write ProjectSecrets of the project (host RBAC, which the server asks).
  grantRole(
    mgmt,
    PROJECT_NS,
    'write-projectsecrets',
    [{ apiGroups: [GROUP], resources: ['projectsecrets'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
    ['bob', 'carol', SA],
  );
  const project = await root.post(PROJECTS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: 'conn-a' }] },
  });
  expect(project.status).toBe(201);
  // bob's virtual cluster in `a`, imported by him.
  const hostNs = `vcluster-${VC_NAME}`;
  a.addSecret(hostNs, `vc-${VC_NAME}`, { config: vc.kubeconfigText() });
  grantConnectionSecret(a, hostNs, VC_NAME, ['bob']);
  const imported = await bob.post(`${PROJECTS_PATH}/${PROJECT}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { cluster: 'conn-a', namespace: hostNs, name: VC_NAME },
  });
  expect(imported.status).toBe(201);
  // bob may create Secrets where his copies go, in `a` and inside the virtual cluster.
  const writeSecrets = [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'get', 'update', 'delete'] }];
  a.addNamespace(APPS);
  grantRole(a, APPS, 'bob-secrets', writeSecrets, ['bob']);
  grantRole(vc, VC_NS, 'bob-secrets', writeSecrets, ['bob']);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), vc?.stop()]);
}, 60_000);

/** A SharedSecret bob may get (he owns it) holding `data` (plain values); its name. */
async function sharedSecret(data: Record<string, string>, owner = 'bob'): Promise<string> {
  const name = uniq('src');
  const res = await root.post(sharedSecretsPath(SOURCE_NS), {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name },
    spec: { owner: { user: owner }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, B64(v)])) },
  });
  expect(res.status).toBe(201);
  return name;
}

const setSource = (name: string, data: Record<string, string>) =>
  root.patch(
    sharedSecretPath(SOURCE_NS, name),
    { spec: { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, B64(v)])) } },
    MERGE_PATCH,
  );

/** bob's ProjectSecret synced from `source`, with `delivery`; its name. */
async function projectSecret(source: string, delivery: object, as = bob): Promise<string> {
  const name = uniq('ps');
  const res = await as.post(psPath(), {
    apiVersion: API_VERSION,
    kind: 'ProjectSecret',
    metadata: { name },
    spec: {
      owner: { user: as === bob ? 'bob' : 'carol' },
      sharedSecretRef: { namespace: SOURCE_NS, name: source },
      delivery,
    },
  });
  expect(res.status).toBe(201);
  return name;
}

const places = (name: string): Array<[string, () => any]> => [
  ['host', () => mgmt.get('secrets', PROJECT_NS, name)],
  ['virtual cluster', () => vc.get('secrets', VC_NS, name)],
  ['connected cluster', () => a.get('secrets', APPS, name)],
];

/** Waits until the Secret `get` finds holds `key` = `value` (plain). */
const holds = (what: string, get: () => any, key: string, value: string) =>
  waitFor(`${what} to hold ${key}`, () => {
    const s = get();
    return s?.data?.[key] === B64(value) ? s : undefined;
  });

/** Waits until the ProjectSecret's lines are those of `want` (target -> phase or phase/reason). */
async function lines(name: string, want: Record<string, string>): Promise<any[]> {
  let got: any[] = [];
  try {
    return await waitFor(`ProjectSecret ${name}'s lines to be ${JSON.stringify(want)}`, async () => {
      got = (await root.get(psPath(name))).body.status?.targets ?? [];
      const match =
        got.length === Object.keys(want).length &&
        got.every((l) => want[l.target] === l.phase || want[l.target] === `${l.phase}/${l.reason}`);
      return match ? got : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; the lines: ${JSON.stringify(got)}`, { cause: err });
  }
}

const condition = async (name: string) =>
  ((await root.get(psPath(name))).body.status?.conditions ?? []).find((c: any) => c.type === 'SecretDelivered');

describe('a Global Secret reaching the host, a virtual cluster and a connected cluster', () => {
  let source: string;
  let name: string;

  beforeAll(async () => {
    source = await sharedSecret({ '.dockerconfigjson': dockerConfig('reg-pw-one') });
    name = await projectSecret(source, { type: 'kubernetes.io/dockerconfigjson', targets: ALL_THREE });
  }, 60_000);

  test('is kept in all three as a kubernetes.io/dockerconfigjson Secret, one Delivered line each', async () => {
    const got = await lines(name, Object.fromEntries(lineKeys.map((k) => [k, 'Delivered'])));
    for (const [what, get] of places(name)) {
      const s = await holds(what, get, '.dockerconfigjson', dockerConfig('reg-pw-one'));
      expect(s.type).toBe('kubernetes.io/dockerconfigjson');
      expect(s.metadata.labels['app.kubernetes.io/managed-by']).toBe('platform-management-api');
      expect(s.metadata.ownerReferences).toBeUndefined();
    }
    for (const l of got) expect(Date.parse(l.lastDeliveryTime)).toBeGreaterThan(0);
    const c = await condition(name);
    expect(c).toMatchObject({ status: 'True', reason: 'Delivered', message: 'delivered to all 3 targets' });
    const obj = (await root.get(psPath(name))).body;
    expect(obj.status.targetedBy.username).toBe('bob');
  });

  test('a rotation of the SharedSecret reaches all three', async () => {
    expect((await setSource(source, { '.dockerconfigjson': dockerConfig('reg-pw-two') })).status).toBe(200);
    for (const [what, get] of places(name)) await holds(what, get, '.dockerconfigjson', dockerConfig('reg-pw-two'));
  });

  test('a hand edit inside the virtual cluster is put back, and so is a deletion there', async () => {
    const s = vc.get('secrets', VC_NS, name)!;
    vc.put({ ...s, data: { '.dockerconfigjson': B64(dockerConfig('hand-edit-value')) } });
    await holds(
      'the virtual cluster',
      () => vc.get('secrets', VC_NS, name),
      '.dockerconfigjson',
      dockerConfig('reg-pw-two'),
    );
    expect(vc.remove('secrets', VC_NS, name)).toBe(true);
    await holds(
      'the virtual cluster',
      () => vc.get('secrets', VC_NS, name),
      '.dockerconfigjson',
      dockerConfig('reg-pw-two'),
    );
  });

  test('the virtual cluster down turns only its line Failed; a rotation meanwhile reaches it once it is back', async () => {
    await vc.setDown(true);
    try {
      await setSource(source, { '.dockerconfigjson': dockerConfig('reg-pw-three') });
      await lines(name, { host: 'Delivered', [lineKeys[1]]: 'Failed/TargetUnavailable', [lineKeys[2]]: 'Delivered' });
      await holds('the host', places(name)[0][1], '.dockerconfigjson', dockerConfig('reg-pw-three'));
      await holds('the connected cluster', places(name)[2][1], '.dockerconfigjson', dockerConfig('reg-pw-three'));
      const c = await condition(name);
      expect(c).toMatchObject({ status: 'False', reason: 'PartiallyDelivered' });
      // Only the failing target is retried: each retry reads its connection in `a` and asks `a` about its importer
      // (one review); the connected cluster's target, which would add a review of its own, is not asked again.
      const count = () => ({
        connections: a.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/secrets/vc-${VC_NAME}`)).length,
        reviews: a.requests.filter((r) => r.resource === 'subjectaccessreviews').length,
      });
      const start = count();
      await waitFor('two retries of the virtual cluster', () => count().connections >= start.connections + 2, 20_000);
      const end = count();
      expect(end.reviews - start.reviews).toBe(end.connections - start.connections);
      expect(c.message).toContain(`2 of 3 targets delivered; not: ${lineKeys[1]} (TargetUnavailable)`);
    } finally {
      await vc.setDown(false);
    }
    await holds('the virtual cluster', places(name)[1][1], '.dockerconfigjson', dockerConfig('reg-pw-three'));
    await lines(name, Object.fromEntries(lineKeys.map((k) => [k, 'Delivered'])));
  }, 60_000);

  test('a virtual cluster scaled to zero (no connection): its line Pending, delivered once it runs again', async () => {
    const hostNs = `vcluster-${VC_NAME}`;
    const connection = a.get('secrets', hostNs, `vc-${VC_NAME}`)!;
    expect(a.remove('secrets', hostNs, `vc-${VC_NAME}`)).toBe(true);
    try {
      await setSource(source, { '.dockerconfigjson': dockerConfig('reg-pw-one') });
      const got = await lines(name, {
        host: 'Delivered',
        [lineKeys[1]]: 'Pending/VirtualClusterNotRunning',
        [lineKeys[2]]: 'Delivered',
      });
      expect(got.find((l) => l.target === lineKeys[1]).message).toContain(VC_NAME);
      // What it held stays as it was: nothing reached it meanwhile.
      expect(vc.get('secrets', VC_NS, name)!.data['.dockerconfigjson']).toBe(B64(dockerConfig('reg-pw-three')));
    } finally {
      a.put(connection);
    }
    await holds('the virtual cluster', places(name)[1][1], '.dockerconfigjson', dockerConfig('reg-pw-one'));
    await lines(name, Object.fromEntries(lineKeys.map((k) => [k, 'Delivered'])));
  }, 60_000);
});

describe('what the copies rest on', () => {
  test('the reader losing the SharedSecret empties every copy; it comes back when they may read it again', async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: ALL_THREE });
    for (const [what, get] of places(name)) await holds(what, get, 'token', 'opaque-value-1');
    // bob is no longer its owner: neither the writer of the reference nor the ProjectSecret's owner may get it.
    expect(
      (await root.patch(sharedSecretPath(SOURCE_NS, source), { spec: { owner: { user: 'root' } } }, MERGE_PATCH))
        .status,
    ).toBe(200);
    for (const [what, get] of places(name))
      await waitFor(`${what}'s copy to be empty`, () => {
        const s = get();
        return s && Object.keys(s.data ?? {}).length === 0;
      });
    await root.patch(sharedSecretPath(SOURCE_NS, source), { spec: { owner: { user: 'bob' } } }, MERGE_PATCH);
    for (const [what, get] of places(name)) await holds(what, get, 'token', 'opaque-value-1');
  }, 60_000);

  test('a typed copy whose data is emptied is removed, as kube holds no typed Secret without its keys', async () => {
    const source = await sharedSecret({ '.dockerconfigjson': dockerConfig('reg-pw-one') });
    const name = await projectSecret(source, { type: 'kubernetes.io/dockerconfigjson', targets: ALL_THREE });
    for (const [what, get] of places(name)) await holds(what, get, '.dockerconfigjson', dockerConfig('reg-pw-one'));
    await root.patch(sharedSecretPath(SOURCE_NS, source), { spec: { owner: { user: 'root' } } }, MERGE_PATCH);
    await lines(name, Object.fromEntries(lineKeys.map((k) => [k, 'Pending/NoData'])));
    for (const [what, get] of places(name)) expect([what, get()]).toEqual([what, undefined]);
  }, 60_000);

  test("the targets' writer losing the Cluster here: its line Failed/WriterCannotUse, its copy removed, the others kept", async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: ALL_THREE });
    for (const [what, get] of places(name)) await holds(what, get, 'token', 'opaque-value-1');
    const cluster = `${GROUP_PATH}/clusters/conn-a`;
    expect((await root.patch(cluster, { spec: { access: [] } }, MERGE_PATCH)).status).toBe(200);
    try {
      // bob imported the virtual cluster from that Cluster too: what reaches it through him ends as well.
      await lines(name, {
        host: 'Delivered',
        [lineKeys[1]]: 'Failed/ImporterLostAccess',
        [lineKeys[2]]: 'Failed/WriterCannotUse',
      });
      await waitFor('the connected cluster copy to be removed', () => !a.get('secrets', APPS, name));
      expect(vc.get('secrets', VC_NS, name)).toBeUndefined();
      expect(mgmt.get('secrets', PROJECT_NS, name)).toBeDefined();
    } finally {
      await root.patch(cluster, { spec: { access: [{ verbs: ['get'], users: ['bob'] }] } }, MERGE_PATCH);
    }
    // A Cluster's access is watched: its return is delivered at once.
    for (const [what, get] of places(name)) await holds(what, get, 'token', 'opaque-value-1');
  }, 60_000);

  test('the target cluster no longer letting the writer create Secrets there: the next delivery removes the copy', async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: [{ host: {} }, vcTarget] });
    await holds('the virtual cluster', () => vc.get('secrets', VC_NS, name), 'token', 'opaque-value-1');
    // RBAC inside a target is not watched: a change of the ProjectSecret (here its data) is its next delivery.
    vc.remove('rolebindings', VC_NS, 'bob-secrets');
    try {
      await setSource(source, { token: 'opaque-value-2' });
      await lines(name, { host: 'Delivered', [lineKeys[1]]: 'Failed/TargetForbidden' });
      expect(vc.get('secrets', VC_NS, name)).toBeUndefined();
    } finally {
      grantRole(vc, VC_NS, 'bob-secrets', [{ apiGroups: [''], resources: ['secrets'], verbs: ['create'] }], ['bob']);
    }
  }, 60_000);

  test('the importer losing the virtual cluster: its line Failed/ImporterLostAccess, its copy removed', async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: [{ host: {} }, vcTarget] });
    await holds('the virtual cluster', () => vc.get('secrets', VC_NS, name), 'token', 'opaque-value-1');
    const hostNs = `vcluster-${VC_NAME}`;
    a.remove('rolebindings', hostNs, `get-vc-${VC_NAME}`);
    try {
      await setSource(source, { token: 'opaque-value-2' });
      await lines(name, { host: 'Delivered', [lineKeys[1]]: 'Failed/ImporterLostAccess' });
      expect(vc.get('secrets', VC_NS, name)).toBeUndefined();
    } finally {
      grantConnectionSecret(a, hostNs, VC_NAME, ['bob']);
    }
    // RBAC in the cluster is not watched: the next delivery (a change, or the resync) finds the hold back.
    await setSource(source, { token: 'opaque-value-1' });
    await holds('the virtual cluster', () => vc.get('secrets', VC_NS, name), 'token', 'opaque-value-1');
  }, 60_000);

  test('a namespace missing in the target: its line NamespaceNotFound, delivered once it exists', async () => {
    const ns = uniq('late');
    grantRole(a, ns, 'bob-secrets', [{ apiGroups: [''], resources: ['secrets'], verbs: ['create'] }], ['bob']);
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: [{ cluster: { name: 'conn-a', namespace: ns } }] });
    await lines(name, { [`cluster/conn-a/${ns}`]: 'Failed/NamespaceNotFound' });
    a.addNamespace(ns);
    await holds('the connected cluster', () => a.get('secrets', ns, name), 'token', 'opaque-value-1');
  }, 60_000);

  test("another editor changing the data keeps the targets' writer; changing the targets is asked as them", async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: [{ host: {} }, clusterTarget] });
    await lines(name, { host: 'Delivered', [lineKeys[2]]: 'Delivered' });
    const edit = await carol.patch(psPath(name), { spec: { description: 'edited by carol' } }, MERGE_PATCH);
    expect(edit.status).toBe(200);
    expect(edit.body.status.targetedBy.username).toBe('bob');
    const retarget = await carol.patch(psPath(name), { spec: { delivery: { targets: [clusterTarget] } } }, MERGE_PATCH);
    expect(retarget.status).toBe(403);
    expect(retarget.body.message).toContain('User "carol" cannot get Cluster "conn-a"');
    expect((await root.get(psPath(name))).body.spec.delivery.targets).toEqual([{ host: {} }, clusterTarget]);
  }, 60_000);

  test('a target added is delivered; one removed has its copy deleted and its line gone', async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: [{ host: {} }] });
    await lines(name, { host: 'Delivered' });
    expect(a.get('secrets', APPS, name)).toBeUndefined();
    const add = await bob.patch(
      psPath(name),
      { spec: { delivery: { targets: [{ host: {} }, clusterTarget] } } },
      MERGE_PATCH,
    );
    expect(add.status).toBe(200);
    await holds('the connected cluster', () => a.get('secrets', APPS, name), 'token', 'opaque-value-1');
    await lines(name, { host: 'Delivered', [lineKeys[2]]: 'Delivered' });
    const drop = await bob.patch(psPath(name), { spec: { delivery: { targets: [clusterTarget] } } }, MERGE_PATCH);
    expect(drop.status).toBe(200);
    await lines(name, { [lineKeys[2]]: 'Delivered' });
    await waitFor('the host copy to be deleted', () => !mgmt.get('secrets', PROJECT_NS, name));
    await bob.patch(psPath(name), { spec: { delivery: { targets: [{ host: {} }] } } }, MERGE_PATCH);
    await waitFor('the connected cluster copy to be deleted', () => !a.get('secrets', APPS, name));
    await lines(name, { host: 'Delivered' });
  }, 60_000);

  test('the ProjectSecret deleted: every copy goes', async () => {
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const name = await projectSecret(source, { targets: ALL_THREE });
    for (const [what, get] of places(name)) await holds(what, get, 'token', 'opaque-value-1');
    expect((await bob.delete(psPath(name))).status).toBe(200);
    for (const [what, get] of places(name)) await waitFor(`${what}'s copy to be deleted`, () => !get());
  }, 60_000);

  test('a Secret of that name inside the virtual cluster that the server did not make is left alone (NameTaken)', async () => {
    const name = uniq('ps');
    vc.addSecret(VC_NS, name, { mine: 'not-the-servers' });
    const source = await sharedSecret({ token: 'opaque-value-1' });
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: {
        owner: { user: 'bob' },
        sharedSecretRef: { namespace: SOURCE_NS, name: source },
        delivery: { targets: ALL_THREE },
      },
    });
    expect(res.status).toBe(201);
    await lines(name, { host: 'Delivered', [lineKeys[1]]: 'Failed/NameTaken', [lineKeys[2]]: 'Delivered' });
    expect(vc.get('secrets', VC_NS, name)!.data).toEqual({ mine: B64('not-the-servers') });
  }, 60_000);
});

describe('who may deliver where', () => {
  const create = (as: HttpClient, delivery: object, owner: string) =>
    as.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: uniq('ps') },
      spec: { owner: { user: owner }, data: { token: B64('opaque-value-1') }, delivery },
    });

  test('a Cluster the writer may not get: 403 naming the target, nothing stored', async () => {
    const res = await create(carol, { targets: [clusterTarget] }, 'carol');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
    expect(res.body.message).toContain('User "carol" cannot get Cluster "conn-a" (target cluster/conn-a/apps)');
    expect((await root.get(psPath())).body.items.filter((o: any) => o.spec.owner.user === 'carol')).toEqual([]);
  });

  test('a Cluster the project does not allow: 403 naming it', async () => {
    const res = await create(bob, { targets: [{ cluster: { name: 'conn-b', namespace: APPS } }] }, 'bob');
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(`project "${PROJECT}" does not allow Cluster "conn-b"`);
  });

  test('a virtual cluster the writer may not use: 403 naming it, on create and on update', async () => {
    const res = await create(carol, { targets: [vcTarget] }, 'carol');
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(`User "carol" cannot use VirtualClusterInstance ${PROJECT_NS}/${VC_NAME}`);
    const own = await create(carol, { targets: [{ host: {} }] }, 'carol');
    expect(own.status).toBe(201);
    const path = psPath(own.body.metadata.name);
    const upd = await carol.patch(path, { spec: { delivery: { targets: [vcTarget] } } }, MERGE_PATCH);
    expect(upd.status).toBe(403);
    expect((await root.get(path)).body.spec.delivery).toEqual({ targets: [{ host: {} }] });
    // '*' is every instance there is, each asked.
    const all = await carol.patch(
      path,
      { spec: { delivery: { targets: [{ virtualCluster: { name: '*', namespace: VC_NS } }] } } },
      MERGE_PATCH,
    );
    expect(all.status).toBe(403);
  });

  test('a writer with a Kubernetes identity (a host ServiceAccount) names no target outside the host: 403', async () => {
    // Its name would be asked about in the target cluster, where it is another ServiceAccount's.
    await root.patch(
      `${GROUP_PATH}/clusters/conn-a`,
      { spec: { access: [{ verbs: ['get'], users: ['bob', SA] }] } },
      MERGE_PATCH,
    );
    try {
      // It owns nothing (no system: identity does), but may update what others own.
      const own = await create(bob, { targets: [{ host: {} }] }, 'bob');
      expect(own.status).toBe(201);
      const path = psPath(own.body.metadata.name);
      const res = await ts.as[SA].patch(path, { spec: { delivery: { targets: [clusterTarget] } } }, MERGE_PATCH);
      expect(res.status).toBe(403);
      expect(res.body.message).toContain(`User "${SA}" cannot name target cluster/conn-a/apps`);
      expect((await root.get(path)).body.spec.delivery.targets).toEqual([{ host: {} }]);
    } finally {
      await root.patch(
        `${GROUP_PATH}/clusters/conn-a`,
        { spec: { access: [{ verbs: ['get'], users: ['bob'] }] } },
        MERGE_PATCH,
      );
    }
  });

  test('a namespace where the target cluster does not let the writer create Secrets gets nothing (TargetForbidden)', async () => {
    const res = await create(bob, { targets: [{ cluster: { name: 'conn-a', namespace: 'kube-system' } }] }, 'bob');
    expect(res.status).toBe(201);
    const name = res.body.metadata.name;
    await lines(name, { 'cluster/conn-a/kube-system': 'Failed/TargetForbidden' });
    expect(a.get('secrets', 'kube-system', name)).toBeUndefined();
  });

  test("status.targets and status.targetedBy are the server's: a status write keeps them", async () => {
    const res = await create(bob, { targets: [clusterTarget] }, 'bob');
    const path = psPath(res.body.metadata.name);
    await lines(res.body.metadata.name, { [lineKeys[2]]: 'Delivered' });
    const forged = {
      status: {
        targetedBy: { username: 'root', groups: ['system:masters'] },
        targets: [{ target: 'host', phase: 'Delivered' }],
      },
    };
    const w = await root.patch(`${path}/status`, forged, MERGE_PATCH);
    expect(w.status).toBe(200);
    const obj = (await root.get(path)).body;
    expect(obj.status.targetedBy.username).toBe('bob');
    expect(obj.status.targets.map((l: any) => l.target)).toEqual([lineKeys[2]]);
  });

  test('a status write of lines of the wrong type is a 422 naming the field, and nothing changes', async () => {
    const res = await create(bob, { targets: [clusterTarget] }, 'bob');
    const path = psPath(res.body.metadata.name);
    await lines(res.body.metadata.name, { [lineKeys[2]]: 'Delivered' });
    const before = (await root.get(path)).body;
    for (const targets of [['x'], [{ target: 42, phase: 'Delivered' }], [{ target: 'host' }]]) {
      const w = await root.patch(`${path}/status`, { status: { targets } }, MERGE_PATCH);
      expect({ targets, status: w.status, reason: w.body.reason }).toEqual({
        targets,
        status: 422,
        reason: 'Invalid',
      });
      expect(w.body.message).toContain('status.targets[0]');
    }
    expect((await root.get(path)).body.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });
});

describe('types and their keys, checked at write time', () => {
  test('a kubernetes.io/tls Secret without tls.key: 422 naming the key, nothing stored', async () => {
    const name = uniq('ps');
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'bob' }, data: { 'tls.crt': B64('cert') }, delivery: { type: 'kubernetes.io/tls' } },
    });
    expect(res.status).toBe(422);
    expect(res.body.reason).toBe('Invalid');
    expect(res.body.message).toContain(
      'spec.data[tls.key]: Required value: a Secret of type kubernetes.io/tls needs the key tls.key',
    );
    expect((await root.get(psPath(name))).status).toBe(404);
  });

  test('dockerconfigjson that is not JSON: 422 without the value', async () => {
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: uniq('ps') },
      spec: {
        owner: { user: 'bob' },
        data: { '.dockerconfigjson': B64('reg-pw-one') },
        delivery: { type: 'kubernetes.io/dockerconfigjson' },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.message).toContain('must be JSON');
    expect(res.body.message).not.toContain('reg-pw-one');
  });

  test('a synced one whose SharedSecret lacks the key the type needs: 422 naming it', async () => {
    const source = await sharedSecret({ password: 'reg-pw-one' });
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: uniq('ps') },
      spec: {
        owner: { user: 'bob' },
        sharedSecretRef: { namespace: SOURCE_NS, name: source },
        delivery: { type: 'kubernetes.io/ssh-auth' },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.message).toContain(
      `needs the key ssh-privatekey, which SharedSecret ${SOURCE_NS}/${source} does not give`,
    );
  });

  test.each([
    ['kubernetes.io/service-account-token', 'spec.delivery.type: Forbidden'],
    ['not a type!', 'spec.delivery.type: Invalid value'],
  ])('type %j is refused', async (type, said) => {
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: uniq('ps') },
      spec: { owner: { user: 'bob' }, data: { token: B64('x') }, delivery: { type } },
    });
    expect(res.status).toBe(422);
    expect(res.body.message).toContain(said);
  });

  test('a target naming two places, or the same place twice: 422', async () => {
    for (const targets of [[{ host: {}, cluster: clusterTarget.cluster }], [clusterTarget, clusterTarget]]) {
      const res = await bob.post(psPath(), {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: uniq('ps') },
        spec: { owner: { user: 'bob' }, data: { token: B64('x') }, delivery: { targets } },
      });
      expect(res.status).toBe(422);
    }
  });
});

test('no value ever appears in the log or in a condition', async () => {
  const text = logs.join('\n');
  const conditions = JSON.stringify((await root.get(psPath())).body.items.map((o: any) => o.status));
  for (const v of VALUES) {
    expect(text).not.toContain(v);
    expect(text).not.toContain(B64(v));
    expect(conditions).not.toContain(v);
  }
});
