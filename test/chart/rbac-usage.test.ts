/**
 * The chart's RBAC against what the server really does in the host cluster: a real server (real etcd) talks to the
 * host stand-in, which logs every request its ServiceAccount makes while the server authenticates and authorizes a
 * user, syncs access lists into Roles and bindings (create, change, delete) and issues a kube config. Each logged
 * request must be allowed by the rules `helm template` renders (kube's built-in roles the chart binds taken as kube
 * defines them), and each verb the chart grants on a resource must have been used: the grant is enough, and no more.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import {
  API_VERSION,
  clusterBody,
  clusterPath,
  CLUSTERS_PATH,
  MERGE_PATCH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { helm } from '../support/helm.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn, type RequestRecord } from '../support/hostcluster.js';
import { startTestServerWithUsers } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const RELEASE = 'pm';
const NS = 'platform';
const SERVICE_ACCOUNT = 'pm-platform-management-api';
const TENANT_NS = 'team-a';
const VC_NAMESPACE = 'vcluster-usage';
/** The config Secrets the Clusters here name (clusterBody's, and one of a cluster that is really connected). */
const CLUSTER_SECRETS = ['--set-json', 'rbac.clusterSecrets=[{"name":"kubeconfig"},{"name":"connected"}]'];

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** Kube's built-in roles the chart binds, as kube's bootstrap policy defines them. */
const BUILT_IN: Record<string, Rule[]> = {
  'ClusterRole/system:auth-delegator': [
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ],
  'Role/extension-apiserver-authentication-reader': [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: ['extension-apiserver-authentication'],
      verbs: ['get', 'list', 'watch'],
    },
  ],
};

/** What a kube authorizer sees of a request. */
interface Request {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

/** The rules bound to the chart's ServiceAccount, each with the namespace it holds in (undefined: everywhere). */
async function grantsOfChart(args: string[]): Promise<Array<{ namespace?: string; rules: Rule[] }>> {
  const r = await helm(['template', RELEASE, 'deploy/chart', '--namespace', NS, ...args]);
  expect(r.code).toBe(0);
  const docs = (yaml.loadAll(r.stdout) as any[]).filter((d) => d?.apiVersion === 'rbac.authorization.k8s.io/v1');
  const rulesOf = (ref: { kind: string; name: string }, namespace?: string): Rule[] => {
    const own = docs.find(
      (d) => d.kind === ref.kind && d.metadata.name === ref.name && d.metadata.namespace === namespace,
    );
    const rules = own?.rules ?? BUILT_IN[`${ref.kind}/${ref.name}`];
    if (!rules)
      throw new Error(
        `the chart binds ${ref.kind} ${ref.name}, which it neither makes nor is one of kube's known here`,
      );
    return rules;
  };
  return docs
    .filter(
      (d) =>
        d.kind.endsWith('Binding') &&
        d.subjects.some((s: any) => s.kind === 'ServiceAccount' && s.name === SERVICE_ACCOUNT && s.namespace === NS),
    )
    .map((b) =>
      b.kind === 'ClusterRoleBinding'
        ? { rules: rulesOf(b.roleRef) }
        : {
            namespace: b.metadata.namespace,
            rules: rulesOf(b.roleRef, b.roleRef.kind === 'Role' ? b.metadata.namespace : undefined),
          },
    );
}

/** The authorizer's view of a logged request; a PUT may create (the access sync's writes do), so it needs both. */
function requestsOf(rec: RequestRecord): Request[] {
  // A local Cluster's health check: a non-resource path every client may read (kube's system:public-info-viewer).
  if (rec.method === 'GET' && rec.path === '/version') return [];
  const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)\/(.*)$/.exec(rec.path);
  if (!m) throw new Error(`not a resource path: ${rec.method} ${rec.path}`);
  let segments = m[2].split('/').map(decodeURIComponent);
  let namespace: string | undefined;
  if (segments[0] === 'namespaces' && segments.length > 2) [namespace, segments] = [segments[1], segments.slice(2)];
  const [plural, name, subresource] = segments;
  const base = { group: m[1] ?? '', resource: subresource ? `${plural}/${subresource}` : plural, namespace, name };
  const watch = new URLSearchParams(rec.query).get('watch') === 'true';
  const verbs: Record<string, string[]> = {
    GET: [name ? 'get' : watch ? 'watch' : 'list'],
    POST: ['create'],
    PUT: ['update', 'create'],
    PATCH: ['patch'],
    DELETE: [name ? 'delete' : 'deletecollection'],
  };
  return (verbs[rec.method] ?? [rec.method.toLowerCase()]).map((verb) => ({ verb, ...base }));
}

const has = (list: string[] | undefined, value: string) => !!list?.includes(value) || !!list?.includes('*');

function allowed(grants: Array<{ namespace?: string; rules: Rule[] }>, req: Request): boolean {
  return grants.some(
    (g) =>
      (g.namespace === undefined || g.namespace === req.namespace) &&
      g.rules.some(
        (r) =>
          has(r.apiGroups, req.group) &&
          has(r.resources, req.resource) &&
          has(r.verbs, req.verb) &&
          (!r.resourceNames?.length || (!!req.name && r.resourceNames.includes(req.name))),
      ),
  );
}

const key = (r: Request) => `${r.verb} ${r.group || 'core'}/${r.resource}`;

/** The ProjectSecret delivery's requests: Secrets across all namespaces, or in a project namespace. */
const byDelivery = (r: Request) =>
  r.resource === 'secrets' && (r.namespace === undefined || r.namespace.startsWith('p-'));

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: Awaited<ReturnType<typeof startTestServerWithUsers<'root'>>>;
let root: HttpClient;
let alice: HttpClient;
/** What the server asked of the host while doing all it does there. */
let used: Request[];

async function synced(client: HttpClient, path: string): Promise<void> {
  await waitFor(
    `${path} to be AccessSynced`,
    async () => {
      const obj = (await client.get(path)).body;
      const c = obj?.status?.conditions?.find((x: any) => x.type === 'AccessSynced');
      return c?.status === 'True' && c.observedGeneration === obj.metadata.generation;
    },
    20_000,
  );
}

/** Widens the owner's generated Role of `source` by hand (not through the API) and waits until the sync puts it back. */
async function putBackAfterEdit(resource: 'roles' | 'clusterroles', namespace: string, source: string): Promise<void> {
  const name = host.list(resource).find((r) => r.metadata.name.endsWith(`-${source}-owner`))!.metadata.name;
  host.put({ ...host.get(resource, namespace, name)!, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] });
  await waitFor(
    `${resource} ${name} to be put back`,
    () => host.get(resource, namespace, name)?.rules?.[0]?.apiGroups?.[0] === 'management.platform.sh',
    20_000,
  );
}

beforeAll(async () => {
  host = await startHostCluster();
  vcluster = await startHostCluster();
  host.addNamespace(TENANT_NS);
  host.addToken('alice-token', { name: 'alice', groups: [] });
  ts = await startTestServerWithUsers(
    { root: ['system:masters'] },
    {
      kubeconfig: host.kubeconfigPath,
      leaderElectLeaseDurationMs: 2000,
      clusterHealthIntervalMs: 1000,
      clusterSecretNamespace: NS,
      projectSecretDelivery: true,
    },
  );
  root = ts.as.root;
  alice = ts.client('alice-token');

  // Delegated authentication and authorization: a TokenReview and a SubjectAccessReview.
  expect((await alice.get(sharedSecretPath(TENANT_NS, 'not-hers'))).status).toBe(403);
  expect([host.count('tokenreviews', 'POST'), host.count('subjectaccessreviews', 'POST')]).toEqual([1, 1]);

  // The access sync: Roles and RoleBindings made, one entry removed, the others changed (their binding updated, and
  // a Role of another name made for new verbs), a Role edited by hand put back (updated), everything removed with its
  // source; the same with a ClusterRole and ClusterRoleBinding for a Cluster.
  const name = uniq('s');
  const body = secretBody(name);
  body.spec = {
    ...body.spec,
    owner: { user: 'bob' },
    access: [
      { verbs: ['get'], users: ['alice'] },
      { verbs: ['get', 'update'], teams: ['dev'] },
    ],
  };
  expect((await root.post(sharedSecretsPath(TENANT_NS), body)).status).toBe(201);
  await synced(root, sharedSecretPath(TENANT_NS, name));
  await putBackAfterEdit('roles', TENANT_NS, name);
  expect(
    (
      await root.patch(
        sharedSecretPath(TENANT_NS, name),
        { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } },
        MERGE_PATCH,
      )
    ).status,
  ).toBe(200);
  await synced(root, sharedSecretPath(TENANT_NS, name));
  expect(
    (
      await root.patch(
        sharedSecretPath(TENANT_NS, name),
        { spec: { owner: { user: 'carol' }, access: [{ verbs: ['get', 'list'], users: ['alice'] }] } },
        MERGE_PATCH,
      )
    ).status,
  ).toBe(200);
  await synced(root, sharedSecretPath(TENANT_NS, name));
  const cluster = clusterBody(uniq('c'));
  cluster.spec = { ...cluster.spec, owner: { team: 'ops' }, access: [{ verbs: ['get'], users: ['alice'] }] };
  expect((await root.post(CLUSTERS_PATH, cluster)).status).toBe(201);
  await synced(root, clusterPath(cluster.metadata.name));
  await putBackAfterEdit('clusterroles', '', cluster.metadata.name);
  expect(
    (
      await root.patch(
        clusterPath(cluster.metadata.name),
        { spec: { owner: { team: 'sre' }, access: [{ verbs: ['get', 'update'], users: ['alice'] }] } },
        MERGE_PATCH,
      )
    ).status,
  ).toBe(200);
  await synced(root, clusterPath(cluster.metadata.name));
  for (const path of [sharedSecretPath(TENANT_NS, name), clusterPath(cluster.metadata.name)]) {
    expect((await root.delete(path)).status).toBe(200);
    await waitFor(`${path} to be gone`, async () => (await root.get(path)).status === 404, 20_000);
  }

  // NamespaceLifecycle admission: an informer on namespaces (list, watch), and a live get of one it has not seen.
  expect((await root.post(sharedSecretsPath(uniq('nowhere')), secretBody('x'))).status).toBe(404);

  // The kube config action: the connection Secret vc-<name> in the local Cluster, the host, read with the server's
  // own credential once that Cluster is Initialized (the CSR goes to the virtual cluster, not the host).
  expect(
    (
      await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'eu-1' },
        spec: { local: true },
      })
    ).status,
  ).toBe(201);
  await waitFor(
    'Cluster eu-1 to be Initialized',
    async () => (await root.get(clusterPath('eu-1'))).body.status?.phase === 'Initialized',
    20_000,
  );
  const vc = uniq('vc');
  host.addSecret(VC_NAMESPACE, `vc-${vc}`, { config: vcluster.kubeconfigText() });
  const instance = {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name: vc },
    spec: {
      clusterRef: { cluster: 'eu-1', namespace: VC_NAMESPACE, virtualCluster: vc },
      ingressEndpoint: `https://${vc}.example.com`,
    },
  };
  expect((await root.post(`${GROUP_PATH}/namespaces/${TENANT_NS}/virtualclusterinstances`, instance)).status).toBe(201);
  expect(
    (await root.get(`${GROUP_PATH}/namespaces/${TENANT_NS}/virtualclusterinstances/${vc}/kubeconfig`)).status,
  ).toBe(200);

  // The Clusters' health checks: each config Secret read by name (in the release namespace when the Cluster names
  // none), the cluster itself asked with the Secret's credential.
  host.addNamespace(NS);
  host.addSecret(NS, 'connected', { config: vcluster.kubeconfigText() });
  expect(
    (
      await root.post(CLUSTERS_PATH, {
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'connected' },
        spec: { config: { secretName: 'connected' } },
      })
    ).status,
  ).toBe(201);
  await waitFor(
    'Cluster connected to be Initialized',
    async () => (await root.get(clusterPath('connected'))).body.status?.phase === 'Initialized',
    30_000,
  );

  // The ProjectSecret delivery: an informer on the Secrets it labels (list, watch), each Secret read before it is
  // written, created, put back after an edit by hand (update), deleted with its ProjectSecret.
  const project = uniq('usage');
  host.addNamespace(`p-${project}`);
  expect(
    (
      await root.post(`${GROUP_PATH}/projects`, {
        apiVersion: API_VERSION,
        kind: 'Project',
        metadata: { name: project },
      })
    ).status,
  ).toBe(201);
  const projectSecret = `${GROUP_PATH}/namespaces/p-${project}/projectsecrets/db`;
  expect(
    (
      await root.post(`${GROUP_PATH}/namespaces/p-${project}/projectsecrets`, {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: 'db' },
        spec: { data: { password: Buffer.from('pw').toString('base64') } },
      })
    ).status,
  ).toBe(201);
  // Each step waits on the host's watch of its Secrets, which a loaded machine may be opening again: a minute each.
  await waitFor('the Secret of the ProjectSecret', () => !!host.get('secrets', `p-${project}`, 'db'), 60_000);
  host.put({ ...host.get('secrets', `p-${project}`, 'db')!, data: {} });
  await waitFor('the Secret to be put back', () => !!host.get('secrets', `p-${project}`, 'db')?.data?.password, 60_000);
  expect((await root.delete(projectSecret)).status).toBe(200);
  await waitFor('the Secret to be deleted', () => !host.get('secrets', `p-${project}`, 'db'), 60_000);

  used = host.requests.flatMap(requestsOf);
}, 300_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await vcluster?.stop();
}, 60_000);

describe("the chart's RBAC allows every request the server makes, and grants no verb it does not use", () => {
  test.each([
    [
      'the virtual clusters in any namespace',
      [...CLUSTER_SECRETS, '--set-json', 'rbac.virtualClusterNamespaces=["*"]'],
    ],
    [
      'the virtual clusters’ namespaces listed',
      [...CLUSTER_SECRETS, '--set', `rbac.virtualClusterNamespaces={${VC_NAMESPACE}}`],
    ],
    [
      'the ProjectSecrets delivered',
      [
        ...CLUSTER_SECRETS,
        '--set',
        `rbac.virtualClusterNamespaces={${VC_NAMESPACE}}`,
        '--set',
        'rbac.projectSecretDelivery=true',
      ],
    ],
  ])('%s', async (_, args) => {
    const grants = await grantsOfChart(args);
    // Without rbac.projectSecretDelivery the chart turns the delivery off (--project-secret-delivery=false).
    const delivering = args.includes('rbac.projectSecretDelivery=true');
    const made = delivering ? used : used.filter((r) => !byDelivery(r));
    expect(
      made.filter((r) => !allowed(grants, r)).map((r) => `${key(r)} ${r.namespace ?? ''}/${r.name ?? ''}`),
    ).toEqual([]);

    const usedKeys = new Set(made.map(key));
    // The chart's own rules, except those the server holds only so that RBAC lets it grant them (escalation).
    const granted = grants
      .flatMap((g) => g.rules)
      .filter((r) => !r.apiGroups?.includes('management.platform.sh') && !r.resourceNames?.length)
      .flatMap((r) =>
        r.apiGroups!.flatMap((group) =>
          r.resources!.flatMap((resource) => r.verbs.map((verb) => key({ verb, group, resource }))),
        ),
      );
    expect(granted.filter((k) => !usedKeys.has(k))).toEqual([]);
  });

  test('but for the delivery, the server only reads Secrets, one by name, and writes nothing but RBAC objects and reviews', () => {
    const secrets = new Set(
      used.filter((r) => r.resource === 'secrets' && !byDelivery(r)).map((r) => `${r.verb} ${r.namespace}/${r.name}`),
    );
    expect([...secrets].sort()).toEqual([
      `get ${NS}/connected`,
      `get ${NS}/kubeconfig`,
      expect.stringMatching(new RegExp(`^get ${VC_NAMESPACE}/vc-`)),
    ]);
    const writes = used.filter((r) => !['get', 'list', 'watch'].includes(r.verb) && !byDelivery(r));
    expect([...new Set(writes.map((r) => r.resource))].sort()).toEqual([
      'clusterrolebindings',
      'clusterroles',
      'rolebindings',
      'roles',
      'subjectaccessreviews',
      'tokenreviews',
    ]);
  });

  test('the default values: no virtual cluster connection Secret is readable (the kube config action needs them listed)', async () => {
    const grants = await grantsOfChart(CLUSTER_SECRETS);
    expect(
      allowed(grants, { verb: 'get', group: '', resource: 'secrets', namespace: VC_NAMESPACE, name: 'vc-x' }),
    ).toBe(false);
    expect(allowed(grants, { verb: 'get', group: '', resource: 'secrets', namespace: NS, name: 'kubeconfig' })).toBe(
      true,
    );
  });

  test('a Secret outside the listed namespaces is not readable', async () => {
    const grants = await grantsOfChart(['--set', `rbac.virtualClusterNamespaces={${VC_NAMESPACE}}`]);
    expect(
      allowed(grants, { verb: 'get', group: '', resource: 'secrets', namespace: 'kube-system', name: 'vc-x' }),
    ).toBe(false);
    expect(allowed(grants, { verb: 'list', group: '', resource: 'secrets', namespace: VC_NAMESPACE })).toBe(false);
    expect(
      allowed(grants, { verb: 'get', group: '', resource: 'secrets', namespace: VC_NAMESPACE, name: 'vc-x' }),
    ).toBe(true);
  });
});
