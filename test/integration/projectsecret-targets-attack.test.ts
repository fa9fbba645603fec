/**
 * A tenant attacking ProjectSecret delivery (spec.delivery.targets; src/controllers/projectsecretdelivery.ts), on a
 * real server and etcd, with host stand-ins playing the management host (`mgmt`), a connected cluster (`a`, Cluster
 * conn-a) and a virtual cluster running in it (`vc`). bob owns the project and may use both; carol may write the
 * project's ProjectSecrets and use neither. What the server writes outside the host rests on status.targetedBy,
 * which no client moves, on any write path; a place it did not make is never written or deleted.
 * Every wait is on what the server does, never on time.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { API_VERSION, APPLY_PATCH, GROUP, MERGE_PATCH, PROJECTS_PATH, uniq } from '../support/fixtures.js';
import { CLUSTER_SECRETS, HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { grantConnectionSecret, grantRole, startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const VC_NS = 'default';
const APPS = 'apps';
const B64 = (s: string) => Buffer.from(s).toString('base64');

let mgmt: HostClusterStandIn;
let a: HostClusterStandIn;
let vc: HostClusterStandIn;
let ts: TestServer & { as: Record<'root' | 'bob' | 'carol', HttpClient> };
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;

const PROJECT = uniq('atk');
const PROJECT_NS = `p-${PROJECT}`;
const VC_NAME = uniq('shop');
const psPath = (name = '', ns = PROJECT_NS) => `${GROUP_PATH}/namespaces/${ns}/projectsecrets${name ? `/${name}` : ''}`;
const clusterTarget = (namespace = APPS) => ({ cluster: { name: 'conn-a', namespace } });
const writeSecrets = [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'get', 'update', 'delete'] }];

beforeAll(async () => {
  [mgmt, a, vc] = await Promise.all([startHostCluster(), startHostCluster(), startHostCluster()]);
  ts = await startTestServerWithUsers(
    { root: ['system:masters'], bob: ['devs'], carol: [] },
    {
      kubeconfig: mgmt.kubeconfigPath,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
      clusterSecretNamespace: CLUSTER_SECRETS,
      projectSecretDelivery: true,
      authorizationWebhookCacheAuthorizedTtlMs: 0,
      authorizationWebhookCacheUnauthorizedTtlMs: 0,
    },
  );
  ({ root, bob, carol } = ts.as);
  mgmt.addNamespace(PROJECT_NS);
  await connectCluster(root, mgmt, 'conn-a', a, { access: [{ verbs: ['get'], users: ['bob'] }] });
  grantRole(
    mgmt,
    PROJECT_NS,
    'write-projectsecrets',
    [{ apiGroups: [GROUP], resources: ['projectsecrets'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
    ['bob', 'carol'],
  );
  const project = await root.post(PROJECTS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: 'conn-a' }] },
  });
  expect(project.status).toBe(201);
  const hostNs = `vcluster-${VC_NAME}`;
  a.addSecret(hostNs, `vc-${VC_NAME}`, { config: vc.kubeconfigText() });
  grantConnectionSecret(a, hostNs, VC_NAME, ['bob']);
  const imported = await bob.post(`${PROJECTS_PATH}/${PROJECT}/importvirtualcluster`, {
    apiVersion: API_VERSION,
    kind: 'ProjectImportVirtualCluster',
    sourceVirtualCluster: { cluster: 'conn-a', namespace: hostNs, name: VC_NAME },
  });
  expect(imported.status).toBe(201);
  for (const ns of [APPS, 'other', 'victims']) {
    a.addNamespace(ns);
    grantRole(a, ns, 'bob-secrets', writeSecrets, ['bob']);
  }
  grantRole(vc, VC_NS, 'bob-secrets', writeSecrets, ['bob']);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await Promise.all([mgmt?.stop(), a?.stop(), vc?.stop()]);
}, 60_000);

/** bob's ProjectSecret with its own data and `targets`; its name. */
async function projectSecret(targets: object[], as = bob, owner = 'bob'): Promise<string> {
  const name = uniq('ps');
  const res = await as.post(psPath(), {
    apiVersion: API_VERSION,
    kind: 'ProjectSecret',
    metadata: { name },
    spec: { owner: { user: owner }, data: { token: B64('attack-value') }, delivery: { targets } },
  });
  expect(res.status).toBe(201);
  return name;
}

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

const key = (ns = APPS) => `cluster/conn-a/${ns}`;

describe('what a change inside one target costs the others', () => {
  // First in the file: nothing else is being delivered meanwhile, so every review `a` answers is this test's.
  test('a Secret edited by hand in a virtual cluster is put back without asking about the other targets again', async () => {
    const vcTarget = { virtualCluster: { name: VC_NAME, namespace: VC_NS } };
    const name = await projectSecret([vcTarget, clusterTarget()]);
    await lines(name, { [`virtualCluster/${VC_NAME}/${VC_NS}`]: 'Delivered', [key()]: 'Delivered' });
    /** Edits the copy in `where` by hand and waits until it is put back: that cluster's watch is running. */
    const putBack = async (where: HostClusterStandIn, namespace: string) => {
      const s: any = where.get('secrets', namespace, name);
      where.put({ ...s, data: { token: B64('hand-edit') } });
      await waitFor('the copy to be put back', () =>
        where.get('secrets', namespace, name)?.data?.token === B64('attack-value') ? true : undefined,
      );
    };
    await putBack(a, APPS);
    await putBack(vc, VC_NS);
    // What `a` is asked about the connected cluster's target: whether bob may create Secrets in its namespace.
    const asked: string[] = [];
    a.onRequest = (_method, path, body) => {
      if (path.endsWith('/subjectaccessreviews') && body?.spec?.resourceAttributes?.namespace === APPS)
        asked.push(body.spec.user);
    };
    try {
      await putBack(vc, VC_NS);
      await lines(name, { [`virtualCluster/${VC_NAME}/${VC_NS}`]: 'Delivered', [key()]: 'Delivered' });
    } finally {
      a.onRequest = undefined;
    }
    // The change in the virtual cluster is its target's alone: the others are not delivered (nor asked about) again.
    expect(asked).toEqual([]);
  });
});

describe('who the copies rest on, on every write path', () => {
  test('a status write of null, or of another shape, keeps status.targetedBy and the lines', async () => {
    const name = await projectSecret([clusterTarget()]);
    await lines(name, { [key()]: 'Delivered' });
    // system:masters included: nobody's status write moves them.
    for (const [status, code] of [
      [null, 200],
      [[], 422],
      ['x', 422],
    ] as const) {
      const stored = (await root.get(psPath(name))).body;
      const w = await root.put(`${psPath(name)}/status`, { ...stored, status });
      const now = (await root.get(psPath(name))).body;
      expect({ status, code: w.status, targetedBy: now.status?.targetedBy?.username }).toEqual({
        status,
        code,
        targetedBy: 'bob',
      });
      expect(now.status.targets.map((l: any) => l.target)).toEqual([key()]);
    }
    expect(a.get('secrets', APPS, name)?.data).toEqual({ token: B64('attack-value') });
    // So for the instance the copies in its virtual cluster rest on: its importer and physical cluster stay.
    const instancePath = `${GROUP_PATH}/namespaces/${PROJECT_NS}/virtualclusterinstances/${VC_NAME}`;
    const instance = (await root.get(instancePath)).body;
    expect(instance.status.clusterUID).toBeTruthy();
    expect((await root.put(`${instancePath}/status`, { ...instance, status: null })).status).toBe(200);
    const after = (await root.get(instancePath)).body.status;
    expect([after?.clusterUID, after?.importedBy?.username]).toEqual([instance.status.clusterUID, 'bob']);
  });

  test('a forged targetedBy on create, a main-resource update or an apply of the status is not kept', async () => {
    const forged = {
      targetedBy: { username: 'bob', groups: ['devs'] },
      targets: [{ target: 'host', phase: 'Delivered' }],
    };
    const name = uniq('ps');
    const res = await carol.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'carol' }, data: { token: B64('attack-value') } },
      status: forged,
    });
    expect(res.status).toBe(201);
    expect(res.body.status?.targetedBy).toBeUndefined();
    const upd = await carol.patch(
      psPath(name),
      { spec: { delivery: { targets: [clusterTarget()] } }, status: forged },
      MERGE_PATCH,
    );
    expect(upd.status).toBe(403);
    // A main-resource write keeps the status as stored, whatever it says of it.
    const kept = await carol.patch(psPath(name), { metadata: { labels: { x: 'y' } }, status: forged }, MERGE_PATCH);
    expect(kept.status).toBe(200);
    expect(kept.body.status?.targetedBy).toBeUndefined();
    const applied = await root.patch(
      `${psPath(name)}/status?fieldManager=carol&force=true`,
      { apiVersion: API_VERSION, kind: 'ProjectSecret', metadata: { name }, status: forged },
      APPLY_PATCH,
    );
    expect(applied.status).toBe(200);
    expect((await root.get(psPath(name))).body.status?.targetedBy).toBeUndefined();
    expect(a.get('secrets', APPS, name)).toBeUndefined();
  });
});

describe('a place the server did not make', () => {
  test('a target moved onto a namespace holding a Secret of that name leaves it alone, the old copy goes', async () => {
    const name = await projectSecret([clusterTarget()]);
    await lines(name, { [key()]: 'Delivered' });
    a.put({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'victims' }, data: { v: B64('mine') } });
    const before = a.get('secrets', 'victims', name);
    const w = await bob.patch(
      psPath(name),
      { spec: { delivery: { targets: [clusterTarget('victims')] } } },
      MERGE_PATCH,
    );
    expect(w.status).toBe(200);
    await lines(name, { [key('victims')]: 'Failed/NameTaken' });
    await waitFor('the old copy to go', () => (a.get('secrets', APPS, name) ? undefined : true));
    expect(a.get('secrets', 'victims', name)).toEqual(before);
    // Moving away again deletes nothing there.
    await bob.patch(psPath(name), { spec: { delivery: { targets: [clusterTarget('other')] } } }, MERGE_PATCH);
    await lines(name, { [key('other')]: 'Delivered' });
    expect(a.get('secrets', 'victims', name)).toEqual(before);
  });
});

describe('two projects naming the same place', () => {
  test("a ProjectSecret of the same name in another project gets NameTaken there, and its deletion leaves the other's copy", async () => {
    const other = uniq('atk2');
    const project = await root.post(PROJECTS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: other },
      spec: { owner: { user: 'bob' }, allowedClusters: [{ name: 'conn-a' }] },
    });
    expect(project.status).toBe(201);
    mgmt.addNamespace(`p-${other}`);
    grantRole(
      mgmt,
      `p-${other}`,
      'write-projectsecrets',
      [{ apiGroups: [GROUP], resources: ['projectsecrets'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
      ['bob'],
    );
    const name = await projectSecret([clusterTarget()]);
    await lines(name, { [key()]: 'Delivered' });
    const first = a.get('secrets', APPS, name);
    const second = await bob.post(psPath('', `p-${other}`), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name },
      spec: { owner: { user: 'bob' }, data: { token: B64('other-value') }, delivery: { targets: [clusterTarget()] } },
    });
    expect(second.status).toBe(201);
    const secondPath = psPath(name, `p-${other}`);
    await waitFor('the second to be NameTaken', async () => {
      const l = (await root.get(secondPath)).body.status?.targets ?? [];
      return l.length === 1 && l[0].reason === 'NameTaken' ? l : undefined;
    });
    expect(a.get('secrets', APPS, name)).toEqual(first);
    expect((await root.delete(secondPath)).status).toBe(200);
    await waitFor('the second to go', async () => ((await root.get(secondPath)).status === 404 ? true : undefined));
    // Its host copy is deleted (the server's own); a change of the first is still delivered over its own copy only.
    await waitFor('its host copy to go', () => (mgmt.get('secrets', `p-${other}`, name) ? undefined : true));
    expect(a.get('secrets', APPS, name)).toEqual(first);
  });
});

describe('revocation', () => {
  test('the project no longer allowing the Cluster: the copy is removed, its line Failed', async () => {
    const name = await projectSecret([clusterTarget()]);
    await lines(name, { [key()]: 'Delivered' });
    const w = await root.patch(`${PROJECTS_PATH}/${PROJECT}`, { spec: { allowedClusters: [] } }, MERGE_PATCH);
    expect(w.status).toBe(200);
    try {
      await lines(name, { [key()]: 'Failed/WriterCannotUse' });
      await waitFor('the copy to go', () => (a.get('secrets', APPS, name) ? undefined : true));
    } finally {
      await root.patch(`${PROJECTS_PATH}/${PROJECT}`, { spec: { allowedClusters: [{ name: 'conn-a' }] } }, MERGE_PATCH);
    }
  });
});

describe('a target whose place changes under it', () => {
  let vcA: HostClusterStandIn;
  let vcB: HostClusterStandIn;
  beforeAll(async () => {
    [vcA, vcB] = await Promise.all([startHostCluster(), startHostCluster()]);
  });
  afterAll(async () => {
    await Promise.all([vcA?.stop(), vcB?.stop()]);
  });

  /** bob imports the virtual cluster `vcName`, in `host` namespace hostNs of `a`, as the instance `instance`. */
  async function importAs(instance: string, hostNs: string, vcName: string, standIn: HostClusterStandIn) {
    a.addSecret(hostNs, `vc-${vcName}`, { config: standIn.kubeconfigText() });
    grantConnectionSecret(a, hostNs, vcName, ['bob']);
    grantRole(standIn, VC_NS, 'bob-secrets', writeSecrets, ['bob']);
    const res = await bob.post(`${PROJECTS_PATH}/${PROJECT}/importvirtualcluster`, {
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: { cluster: 'conn-a', namespace: hostNs, name: vcName },
      importName: instance,
    });
    expect(res.status).toBe(201);
  }

  test('an instance made again elsewhere under the same name: the copy in the old virtual cluster is removed too', async () => {
    const instance = uniq('moved');
    await importAs(instance, uniq('vcns-a'), 'one', vcA);
    const target = `virtualCluster/${instance}/${VC_NS}`;
    const name = await projectSecret([{ virtualCluster: { name: instance, namespace: VC_NS } }]);
    await lines(name, { [target]: 'Delivered' });
    expect(vcA.get('secrets', VC_NS, name)).toBeDefined();
    // The old virtual cluster unreachable while its instance goes: its copy cannot be removed yet.
    await vcA.setDown(true);
    const instancePath = `${GROUP_PATH}/namespaces/${PROJECT_NS}/virtualclusterinstances/${instance}`;
    expect((await root.delete(instancePath)).status).toBe(200);
    await waitFor('the instance to go', async () => ((await root.get(instancePath)).status === 404 ? true : undefined));
    await lines(name, { [target]: 'Failed/WriterCannotUse' }); // bob's use of it was his ownership of it
    // The instance made again, for another virtual cluster: the target is delivered there.
    await importAs(instance, uniq('vcns-b'), 'two', vcB);
    await lines(name, { [target]: 'Delivered' });
    expect(vcB.get('secrets', VC_NS, name)?.data).toEqual({ token: B64('attack-value') });
    // The old one back: the copy left there goes, as the target no longer reaches it.
    await vcA.setDown(false);
    await waitFor('the copy in the old virtual cluster to go', () =>
      vcA.get('secrets', VC_NS, name) ? undefined : true,
    );
    expect(vcB.get('secrets', VC_NS, name)).toBeDefined();
  });
});

describe('bounded work', () => {
  test('more than 16 targets: 422', async () => {
    const targets = Array.from({ length: 17 }, (_, i) => clusterTarget(`ns-${i}`));
    const res = await bob.post(psPath(), {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: uniq('ps') },
      spec: { owner: { user: 'bob' }, data: { token: B64('attack-value') }, delivery: { targets } },
    });
    expect(res.status).toBe(422);
  });

  test("16 '*' entries (one per namespace) ask about each instance once at admission, not 16 times", async () => {
    // carol may use the project's virtual clusters by host RBAC: each ask is a SubjectAccessReview of the host.
    grantRole(
      mgmt,
      PROJECT_NS,
      'carol-kubeconfigs',
      [{ apiGroups: [GROUP], resources: ['virtualclusterinstances/kubeconfig'], verbs: ['create'] }],
      ['carol'],
    );
    const reviews = async (n: number) => {
      const targets = Array.from({ length: n }, (_, i) => ({ virtualCluster: { name: '*', namespace: `ns-${i}` } }));
      mgmt.resetCounts();
      // A dry run: admission alone, no delivery asking meanwhile.
      const res = await carol.post(`${psPath()}?dryRun=All`, {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: uniq('ps') },
        spec: { owner: { user: 'carol' }, data: { token: B64('attack-value') }, delivery: { targets } },
      });
      expect(res.status).toBe(201);
      return mgmt.count('subjectaccessreviews');
    };
    const one = await reviews(1);
    const sixteen = await reviews(16);
    expect(sixteen).toBe(one);
  });
});
