/**
 * Just enough of a Kubernetes API over plain HTTP for `helm template --dry-run=server`: discovery for the kinds
 * the chart renders, GET of Secrets seeded by the test (what the chart's `lookup` reads) and of the kube-system
 * Namespace (which every cluster has: the chart looks it up to tell a cluster from none); any other object is 404. Lets a test see what the chart does on an upgrade, when its own Secrets already exist.
 */
import { promises as fs } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

type Resource = { name: string; kind: string; namespaced: boolean };
const r = (name: string, kind: string, namespaced: boolean): Resource => ({ name, kind, namespaced });
const GROUPS: Record<string, Resource[]> = {
  'apps/v1': [r('deployments', 'Deployment', true), r('statefulsets', 'StatefulSet', true)],
  'policy/v1': [r('poddisruptionbudgets', 'PodDisruptionBudget', true)],
  'rbac.authorization.k8s.io/v1': [
    r('roles', 'Role', true),
    r('rolebindings', 'RoleBinding', true),
    r('clusterroles', 'ClusterRole', false),
    r('clusterrolebindings', 'ClusterRoleBinding', false),
  ],
  'apiregistration.k8s.io/v1': [r('apiservices', 'APIService', false)],
  'batch/v1': [r('cronjobs', 'CronJob', true)],
  'networking.k8s.io/v1': [r('networkpolicies', 'NetworkPolicy', true)],
  'monitoring.coreos.com/v1': [r('servicemonitors', 'ServiceMonitor', true)],
  'cert-manager.io/v1': [
    r('certificates', 'Certificate', true),
    r('issuers', 'Issuer', true),
    r('clusterissuers', 'ClusterIssuer', false),
  ],
};
const CORE: Resource[] = [
  r('secrets', 'Secret', true),
  r('services', 'Service', true),
  r('serviceaccounts', 'ServiceAccount', true),
  r('configmaps', 'ConfigMap', true),
  r('pods', 'Pod', true),
  r('namespaces', 'Namespace', false),
];

const resourceList = (groupVersion: string, resources: Resource[]) => ({
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion,
  resources: resources.map((x) => ({
    ...x,
    singularName: x.kind.toLowerCase(),
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  })),
});

export interface FakeCluster {
  kubeconfig: string;
  /** Secrets by "namespace/name"; the chart's lookup and helm's ownership check both read them. */
  secrets: Map<string, Record<string, unknown>>;
  close(): Promise<void>;
}

export async function startFakeCluster(): Promise<FakeCluster> {
  const secrets = new Map<string, Record<string, unknown>>();
  const server: Server = createServer((req, res) => {
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method !== 'GET')
      return send(405, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'MethodNotAllowed', code: 405 });
    if (p === '/version') return send(200, { major: '1', minor: '33', gitVersion: 'v1.33.0', platform: 'linux/amd64' });
    if (p === '/api') return send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (p === '/api/v1') return send(200, resourceList('v1', CORE));
    if (p === '/apis') {
      const groups = Object.keys(GROUPS).map((gv) => {
        const [name, version] = gv.split('/');
        return { name, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
      });
      return send(200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
    }
    const group = /^\/apis\/([^/]+\/[^/]+)$/.exec(p);
    if (group && GROUPS[group[1]]) return send(200, resourceList(group[1], GROUPS[group[1]]));
    if (p === '/api/v1/namespaces/kube-system')
      return send(200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'kube-system' } });
    const secret = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(p);
    const found = secret && secrets.get(`${decodeURIComponent(secret[1])}/${decodeURIComponent(secret[2])}`);
    if (found) return send(200, found);
    send(404, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: `${p} not found`,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fake-cluster-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await fs.writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: fake, cluster: {server: "http://127.0.0.1:${port}"}}]`,
      'users: [{name: fake, user: {token: fake}}]',
      'contexts: [{name: fake, context: {cluster: fake, user: fake}}]',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  return {
    kubeconfig,
    secrets,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
