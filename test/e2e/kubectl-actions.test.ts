/**
 * The real kubectl (v1.33) with the three action kinds: what api-resources shows, a token from `kubectl create -f`
 * that verifies with the keys `kubectl get --raw /openid/v1/jwks` shows, an import with `kubectl create --raw`,
 * and a kube config from `kubectl get --raw` on the spec's path that kubectl itself can load.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { API_VERSION } from '../support/fixtures.js';
import { kubectl, kubectlOn } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { TOKEN_SHOWN_ONCE_WARNING } from '../../src/actions/directclusterendpointtoken.js';

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let ts: TestServer;
let dir: string;
const { k } = kubectlOn(() => ts.kubeconfig);

function file(name: string, doc: object): string {
  const path = join(dir, name);
  writeFileSync(path, name.endsWith('.json') ? JSON.stringify(doc) : yaml.dump(doc));
  return path;
}

beforeAll(async () => {
  host = await startHostCluster();
  vcluster = await startHostCluster();
  // The project's namespace, which the platform makes in the host cluster.
  host.addNamespace('p-web');
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, clusterHealthIntervalMs: 1000 });
  dir = mkdtempSync(join(tmpdir(), 'kubectl-actions-'));
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await vcluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('kubectl and the actions', () => {
  test('api-resources lists directclusterendpointtokens as create-only', async () => {
    const res = await k('api-resources', '--api-group=management.platform.sh', '-o', 'wide');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      /\ndirectclusterendpointtokens\s+management\.platform\.sh\/v1\s+false\s+DirectClusterEndpointToken\s+create\s/,
    );
  });

  test('the OpenAPI documents describe the action kinds: explain knows the token, every write declares fieldValidation', async () => {
    const explained = await k('explain', 'directclusterendpointtokens.spec');
    expect(explained.code).toBe(0);
    expect(explained.stdout).toContain('KIND:       DirectClusterEndpointToken');
    expect(explained.stdout).toMatch(/ttl\s+<integer>/);
    expect(explained.stdout).toMatch(/scope\s+<Object>/);

    const v3 = JSON.parse((await k('get', '--raw', '/openapi/v3/apis/management.platform.sh/v1')).stdout);
    const base = '/apis/management.platform.sh/v1';
    const expected: Array<[string, string[], string]> = [
      [`${base}/directclusterendpointtokens`, ['post'], 'DirectClusterEndpointToken'],
      [`${base}/projects/{name}/importvirtualcluster`, ['post'], 'ProjectImportVirtualCluster'],
      [
        `${base}/namespaces/{namespace}/virtualclusterinstances/{name}/kubeconfig`,
        ['get', 'post'],
        'VirtualClusterInstanceKubeConfig',
      ],
      [`${base}/virtualclusterinstances/{name}/kubeconfig`, ['get', 'post'], 'VirtualClusterInstanceKubeConfig'],
    ];
    for (const [path, methods, kind] of expected) {
      const item = v3.paths[path];
      expect({
        path,
        methods: Object.keys(item ?? {})
          .filter((m) => m !== 'parameters')
          .sort(),
      }).toEqual({ path, methods });
      expect(item.post['x-kubernetes-group-version-kind']).toEqual({
        group: 'management.platform.sh',
        version: 'v1',
        kind,
      });
      expect(item.post.parameters.map((p: any) => p.name)).toContain('fieldValidation');
      expect(v3.components.schemas[`sh.platform.management.v1.${kind}`]).toBeDefined();
    }
  });

  test('create -f a DirectClusterEndpointToken prints a token that verifies with the published keys; get is refused', async () => {
    const manifest = file('token.yaml', {
      apiVersion: API_VERSION,
      kind: 'DirectClusterEndpointToken',
      spec: { ttl: 900 },
    });
    // kubectl leaves validation to the server only for kinds with a PATCH; for this create-only kind it validates
    // itself from /openapi/v2 in protobuf.
    const created = await k('create', '-f', manifest, '-o', 'jsonpath={.status.token}');
    // The token is kept nowhere: kubectl prints the server's warning saying so.
    expect(created).toMatchObject({ code: 0, stderr: `Warning: ${TOKEN_SHOWN_ONCE_WARNING}\n` });
    const jwks = await k('get', '--raw', '/openid/v1/jwks');
    expect(jwks.code).toBe(0);
    const { payload } = await jwtVerify(created.stdout, createLocalJWKSet(JSON.parse(jwks.stdout)), {
      issuer: ts.server.url,
      audience: 'management.platform.sh/direct-cluster-endpoint',
    });
    expect(payload.exp! - payload.iat!).toBe(900);
    // The admin is in system:masters, which a token for connected clusters never carries (nor any system: group).
    expect(payload.sub).toBe('admin');
    expect(payload.groups ?? []).not.toContain('system:masters');

    const listed = await k('get', 'directclusterendpointtokens');
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain(
      'Error from server (MethodNotAllowed): list is not supported on resources of kind "directclusterendpointtokens.management.platform.sh"',
    );
  });

  test('create --raw imports a virtual cluster into a project; the instance shows in get', async () => {
    expect(
      (
        await k(
          'create',
          '-f',
          file('project.yaml', {
            apiVersion: API_VERSION,
            kind: 'Project',
            metadata: { name: 'web' },
            spec: { allowedClusters: [{ name: 'eu-1' }] },
          }),
        )
      ).code,
    ).toBe(0);
    expect(
      (
        await k(
          'create',
          '-f',
          file('cluster.yaml', {
            apiVersion: API_VERSION,
            kind: 'Cluster',
            metadata: { name: 'eu-1' },
            spec: { local: true },
          }),
        )
      ).code,
    ).toBe(0);
    // The virtual clusters are in the host cluster, the local Cluster: imports wait until it is connected, and are of
    // a virtual cluster that runs there (its connection Secret).
    host.addSecret('vcluster-vc1', 'vc-vc1', { config: vcluster.kubeconfigText() });
    expect((await k('wait', '--for=jsonpath={.status.phase}=Initialized', 'cluster/eu-1', '--timeout=60s')).code).toBe(
      0,
    );
    const request = file('import.json', {
      apiVersion: API_VERSION,
      kind: 'ProjectImportVirtualCluster',
      sourceVirtualCluster: { name: 'vc1', namespace: 'vcluster-vc1', cluster: 'eu-1' },
      importName: 'shop',
    });
    const imported = await k(
      'create',
      '--raw',
      '/apis/management.platform.sh/v1/projects/web/importvirtualcluster',
      '-f',
      request,
    );
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({
      kind: 'ProjectImportVirtualCluster',
      importName: 'shop',
      status: { virtualClusterInstance: { namespace: 'p-web', name: 'shop' } },
    });
    const got = await k('get', 'virtualclusterinstances', '-n', 'p-web');
    expect(got.stdout).toMatch(/\nshop\s+eu-1\s+vcluster-vc1\s+vc1\s+\d+s/);
  });

  test('get --raw on the spec path gives a kube config kubectl can load', async () => {
    host.addSecret('vcluster-vc2', 'vc-vc2', { config: vcluster.kubeconfigText() });
    const instance = {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name: 'vc2', namespace: 'p-web' },
      spec: { clusterRef: { cluster: 'eu-1', namespace: 'vcluster-vc2' }, ingressEndpoint: 'https://vc2.example.com' },
    };
    expect((await k('create', '-f', file('vci.yaml', instance))).code).toBe(0);
    const res = await k(
      'get',
      '--raw',
      '/apis/management.platform.sh/v1/virtualclusterinstances/vc2/kubeconfig?certificateTTL=3600',
    );
    expect(res.code).toBe(0);
    const configFile = join(dir, 'vc2.kubeconfig');
    writeFileSync(configFile, JSON.parse(res.stdout).status.kubeConfig);
    const view = await kubectl(
      ['config', 'view', '--raw', '-o', 'jsonpath={.clusters[0].cluster.server} {.current-context}'],
      { kubeconfig: configFile },
    );
    expect(view).toMatchObject({ code: 0, stdout: 'https://vc2.example.com platform_p-web_vc2' });
  });
});
