/**
 * The two supporting kinds of the virtual cluster features, served like the others: Project (cluster-scoped) and
 * VirtualClusterInstance (namespaced, in a project's namespace p-<project>): create, get, list, watch, update,
 * patch, delete, Table columns, and their validation (each refusal a 422 naming the field, nothing stored).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import {
  API_VERSION,
  GROUP,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  uniq,
  useServerWithPeek,
  virtualClusterInstancesPath as vcis,
  type EtcdPeek,
} from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import { closeWatches, openWatch } from '../support/watch.js';

let ts: TestServer;
let peek: EtcdPeek;
useServerWithPeek((env) => ({ ts, peek } = env));
afterEach(closeWatches);

const TABLE = { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };

function project(name: string, spec: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name },
    spec: { displayName: `Project ${name}`, ...spec },
  };
}

function vci(name: string, spec: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: {
      displayName: `VC ${name}`,
      clusterRef: { cluster: 'eu-1', namespace: `vcluster-${name}`, virtualCluster: name },
      ...spec,
    },
  };
}

describe('Project', () => {
  test('create, get, list, patch, delete; Table columns', async () => {
    const name = uniq('proj');
    const created = await ts.admin.post(
      PROJECTS,
      project(name, {
        owner: { team: 'ops' },
        allowedClusters: [{ name: 'eu-1' }],
        access: [{ verbs: ['get'], users: ['alice'] }],
      }),
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      kind: 'Project',
      metadata: { name, generation: 1 },
      spec: { allowedClusters: [{ name: 'eu-1' }] },
    });
    expect(created.body.metadata.namespace).toBeUndefined();

    expect((await ts.admin.get(`${PROJECTS}/${name}`)).body.metadata.uid).toBe(created.body.metadata.uid);
    const list = await ts.admin.get(PROJECTS);
    expect(list.body.kind).toBe('ProjectList');
    expect(list.body.items.map((o: any) => o.metadata.name)).toContain(name);

    const patched = await ts.admin.patch(
      `${PROJECTS}/${name}`,
      { spec: { description: 'the team project' } },
      MERGE_PATCH,
    );
    expect(patched.body.metadata.generation).toBe(2);

    const table = await ts.admin.get(`${PROJECTS}/${name}`, { headers: TABLE });
    expect(table.body.columnDefinitions.map((c: any) => c.name)).toEqual(['Name', 'Display Name', 'Age']);
    expect(table.body.rows[0].cells.slice(0, 2)).toEqual([name, `Project ${name}`]);

    expect((await ts.admin.delete(`${PROJECTS}/${name}`)).status).toBe(200);
    expect((await ts.admin.get(`${PROJECTS}/${name}`)).status).toBe(404);
  });

  test.each([
    [
      'a name whose namespace p-<name> would be too long',
      { metadata: { name: 'x'.repeat(62) } },
      'metadata.name: Invalid value',
    ],
    [
      'an allowed cluster without a name',
      { spec: { allowedClusters: [{}] } },
      'spec.allowedClusters[0].name: Required value',
    ],
    [
      'the same allowed cluster twice',
      { spec: { allowedClusters: [{ name: 'a' }, { name: 'a' }] } },
      'spec.allowedClusters[1].name: Duplicate value: "a"',
    ],
    ['an owner that is a user and a team', { spec: { owner: { user: 'u', team: 't' } } }, 'spec.owner.team: Forbidden'],
    ['an access entry without verbs', { spec: { access: [{ users: ['u'] }] } }, 'spec.access[0].verbs: Required value'],
  ])('%s: 422, nothing stored', async (_what, change, cause) => {
    const name = uniq('bad');
    const body = project(name);
    Object.assign(body.metadata, (change as any).metadata ?? {});
    Object.assign(body.spec, (change as any).spec ?? {});
    const res = await ts.admin.post(PROJECTS, body);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
    expect(res.body.message).toContain(cause);
    expect(await peek.value(`${ts.config.etcdPrefix}/${GROUP}/projects/${body.metadata.name}`)).toBeUndefined();
  });
});

describe('VirtualClusterInstance', () => {
  test('create in a project namespace, get, watch, update, delete; Table columns', async () => {
    const ns = `p-${uniq('team')}`;
    const name = uniq('vc');
    const list = await ts.admin.get(vcis(ns));
    expect(list.body.kind).toBe('VirtualClusterInstanceList');
    const watch = await openWatch(
      ts.admin,
      `${vcis(ns)}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`,
    );

    const created = await ts.admin.post(
      vcis(ns),
      vci(name, { ingressEndpoint: 'https://vc.example.com', owner: { user: 'olga' } }),
    );
    expect(created.status).toBe(201);
    expect(created.body.metadata.namespace).toBe(ns);
    expect((await watch.nth(1)).type).toBe('ADDED');

    const put = await ts.admin.put(`${vcis(ns)}/${name}`, {
      ...created.body,
      spec: { ...created.body.spec, description: 'dev' },
    });
    expect(put.status).toBe(200);
    expect((await watch.nth(2)).object.spec.description).toBe('dev');

    const table = await ts.admin.get(vcis(ns), { headers: TABLE });
    expect(table.body.columnDefinitions.map((c: any) => c.name)).toEqual([
      'Name',
      'Display Name',
      'Cluster',
      'Host Namespace',
      'Virtual Cluster',
      'Phase',
      'Online',
      'Version',
      'Last Check',
      'Age',
    ]);
    expect(table.body.rows[0].cells.slice(0, 5)).toEqual([name, `VC ${name}`, 'eu-1', `vcluster-${name}`, name]);

    // Listed across namespaces too.
    const all = await ts.admin.get(`${GROUP_PATH}/virtualclusterinstances`);
    expect(all.body.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`)).toContain(`${ns}/${name}`);

    expect((await ts.admin.delete(`${vcis(ns)}/${name}`)).status).toBe(200);
    expect((await watch.nth(3)).type).toBe('DELETED');
  });

  test.each([
    ['no cluster', { clusterRef: { namespace: 'x' } }, 'spec.clusterRef.cluster: Required value'],
    [
      'a host namespace that is no namespace name',
      { clusterRef: { cluster: 'eu-1', namespace: 'Not_A_Namespace' } },
      'spec.clusterRef.namespace: Invalid value: "Not_A_Namespace"',
    ],
    [
      'an http ingress endpoint',
      { ingressEndpoint: 'http://vc.example.com' },
      'spec.ingressEndpoint: Invalid value: "http://vc.example.com": must be an https URL',
    ],
    [
      'an ingress endpoint with credentials',
      { ingressEndpoint: 'https://u:p@vc.example.com' },
      'no credentials, query or fragment',
    ],
    [
      'a type mismatch',
      { ingressEndpoint: 42 },
      'spec.ingressEndpoint: Invalid value: "integer": spec.ingressEndpoint in body must be of type string',
    ],
  ])('%s: 422, nothing stored', async (_what, spec, cause) => {
    const name = uniq('bad-vc');
    const body = vci(name);
    body.spec = { ...body.spec, ...spec };
    const res = await ts.admin.post(vcis('p-bad'), body);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
    expect(res.body.message).toContain(cause);
    expect(await peek.value(`${ts.config.etcdPrefix}/${GROUP}/virtualclusterinstances/p-bad/${name}`)).toBeUndefined();
  });
});
