/**
 * The x-kubernetes-validations rules of our CRDs as a client meets them: a Cluster's connection secret is required
 * unless it is local or peered, and a VirtualClusterInstance's clusterRef is fixed (a transition rule). Every write
 * path evaluates them (create, PUT, each patch type, server-side apply, /status, dry run), answers kube's 422
 * Invalid Status, and leaves stored data as it was; the OpenAPI documents publish the rules as kube does for CRDs.
 */
import { describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import type { HttpResponse } from '../support/http.js';
import type { TestServer } from '../support/server.js';
import {
  API_VERSION,
  APPLY_PATCH,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  clusterBody,
  clusterPath,
  uniq,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  useServerWithPeek,
  virtualClusterInstancesPath,
  type EtcdPeek,
} from '../support/fixtures.js';

let ts: TestServer;
let peek: EtcdPeek;

useServerWithPeek((env) => ({ ts, peek } = env));

const REQUIRED_MESSAGE =
  'the secret holding the connection config is required unless spec.local or spec.networkPeer is true';

/** kube's answer when the Cluster rule fails: one cause at spec.config.secretName. */
function expectSecretRequired(res: HttpResponse, name: string): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 422,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Cluster.${GROUP} "${name}" is invalid: spec.config.secretName: Required value: ${REQUIRED_MESSAGE}`,
      reason: 'Invalid',
      details: {
        name,
        group: GROUP,
        kind: 'Cluster',
        causes: [
          {
            reason: 'FieldValueRequired',
            message: `Required value: ${REQUIRED_MESSAGE}`,
            field: 'spec.config.secretName',
          },
        ],
      },
      code: 422,
    },
  });
}

async function expectNoCluster(name: string): Promise<void> {
  expect((await ts.admin.get(clusterPath(name))).status).toBe(404);
  expect(await peek.entry(peek.clusterKey(name))).toBeUndefined();
}

/** A Cluster without connection config, not local nor peered. */
const unconnected = (name: string) => {
  const body = clusterBody(name);
  delete body.spec.config;
  return body;
};

async function created(name: string): Promise<{ body: any; revision: string }> {
  const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(name));
  expect(res.status).toBe(201);
  return { body: res.body, revision: (await peek.entry(peek.clusterKey(name)))!.modRevision };
}

/** The stored Cluster is still the one written at `revision`. */
async function expectUnchanged(name: string, before: { body: any; revision: string }): Promise<void> {
  expect((await peek.entry(peek.clusterKey(name)))?.modRevision).toBe(before.revision);
  expect((await ts.admin.get(clusterPath(name))).body).toEqual(before.body);
}

describe("a Cluster's rule: spec.config.secretName unless spec.local or spec.networkPeer", () => {
  test('create: 422 at spec.config.secretName, nothing stored; dry run the same', async () => {
    const name = uniq('xv-create');
    expectSecretRequired(await ts.admin.post(CLUSTERS_PATH, unconnected(name)), name);
    expectSecretRequired(await ts.admin.post(`${CLUSTERS_PATH}?dryRun=All`, unconnected(name)), name);
    await expectNoCluster(name);
  });

  test('create of a local or peered Cluster without config holds; dry run stores nothing', async () => {
    const local = uniq('xv-local');
    const dry = await ts.admin.post(`${CLUSTERS_PATH}?dryRun=All`, { ...unconnected(local), spec: { local: true } });
    expect(dry.status).toBe(201);
    await expectNoCluster(local);
    expect((await ts.admin.post(CLUSTERS_PATH, { ...unconnected(local), spec: { local: true } })).status).toBe(201);
    const peered = uniq('xv-peered');
    expect((await ts.admin.post(CLUSTERS_PATH, { ...unconnected(peered), spec: { networkPeer: true } })).status).toBe(
      201,
    );
  });

  test('PUT without the config: 422, unchanged; dry run the same', async () => {
    const name = uniq('xv-put');
    const before = await created(name);
    const { config: _c, ...spec } = before.body.spec;
    const body = { ...before.body, spec };
    expectSecretRequired(await ts.admin.put(clusterPath(name), body), name);
    expectSecretRequired(await ts.admin.put(`${clusterPath(name)}?dryRun=All`, body), name);
    await expectUnchanged(name, before);
  });

  test.each([
    ['a merge patch', { spec: { config: null } }, MERGE_PATCH],
    ['a merge patch emptying secretName', { spec: { config: { secretName: '' } } }, MERGE_PATCH],
    ['a JSON patch', [{ op: 'remove', path: '/spec/config/secretName' }], JSON_PATCH],
  ])('%s that breaks the rule: 422, unchanged; dry run the same', async (_what, patch, contentType) => {
    const name = uniq('xv-patch');
    const before = await created(name);
    expectSecretRequired(await ts.admin.patch(`${clusterPath(name)}?dryRun=All`, patch, contentType), name);
    expectSecretRequired(await ts.admin.patch(clusterPath(name), patch, contentType), name);
    await expectUnchanged(name, before);
  });

  test('a JSON patch turning local off on a local Cluster without config: 422, unchanged', async () => {
    const name = uniq('xv-local-off');
    const res = await ts.admin.post(CLUSTERS_PATH, { ...unconnected(name), spec: { networkPeer: true } });
    expect(res.status).toBe(201);
    const before = { body: res.body, revision: (await peek.entry(peek.clusterKey(name)))!.modRevision };
    const patch = [{ op: 'replace', path: '/spec/networkPeer', value: false }];
    expectSecretRequired(await ts.admin.patch(`${clusterPath(name)}?dryRun=All`, patch, JSON_PATCH), name);
    expectSecretRequired(await ts.admin.patch(clusterPath(name), patch, JSON_PATCH), name);
    await expectUnchanged(name, before);
  });

  test('server-side apply, creating or updating: 422, nothing stored or changed', async () => {
    const name = uniq('xv-apply');
    const apply = (body: unknown, query = '') =>
      ts.admin.patch(`${clusterPath(name)}?fieldManager=rules-test${query}`, body, APPLY_PATCH);
    expectSecretRequired(await apply(unconnected(name)), name);
    expectSecretRequired(await apply(unconnected(name), '&dryRun=All'), name);
    await expectNoCluster(name);

    const first = await apply(clusterBody(name));
    expect(first.status).toBe(201);
    const before = { body: first.body, revision: (await peek.entry(peek.clusterKey(name)))!.modRevision };
    // The same manager applying without config gives up its fields, the config among them.
    expectSecretRequired(await apply({ ...unconnected(name), spec: { displayName: 'x' } }, '&force=true'), name);
    await expectUnchanged(name, before);
  });

  test('an object stored against the rule (before it was one): writes that leave spec as it was pass with a warning, as kube ratchets; a change of spec is refused', async () => {
    const name = uniq('xv-ratchet');
    await created(name);
    // Written to etcd behind the server's back: a Cluster that breaks the rule.
    const kv = new Etcd3({ hosts: ts.etcd.endpoint });
    try {
      const stored = await peek.value(peek.clusterKey(name));
      delete stored.spec.config;
      await kv.put(peek.clusterKey(name)).value(JSON.stringify(stored));
    } finally {
      kv.close();
    }
    await waitFor(async () => (await ts.admin.get(clusterPath(name))).body.spec.config === undefined);
    const warning = `299 - "spec.config.secretName: Required value: ${REQUIRED_MESSAGE}"`;

    const current = (await ts.admin.get(clusterPath(name))).body;
    const status = await ts.admin.put(`${clusterPath(name)}/status`, { ...current, status: { phase: 'Ready' } });
    expect({ status: status.status, warning: status.headers.warning }).toEqual({ status: 200, warning });
    const labelled = await ts.admin.patch(clusterPath(name), { metadata: { labels: { a: 'b' } } }, MERGE_PATCH);
    expect({ status: labelled.status, warning: labelled.headers.warning }).toEqual({ status: 200, warning });

    const before = { body: labelled.body, revision: (await peek.entry(peek.clusterKey(name)))!.modRevision };
    const renamed = { spec: { displayName: 'renamed' } };
    expectSecretRequired(await ts.admin.patch(`${clusterPath(name)}?dryRun=All`, renamed, MERGE_PATCH), name);
    expectSecretRequired(await ts.admin.patch(clusterPath(name), renamed, MERGE_PATCH), name);
    await expectUnchanged(name, before);
  });

  test('a /status write of an object that keeps the rule is stored', async () => {
    const name = uniq('xv-status-ok');
    const { body } = await created(name);
    const res = await ts.admin.put(`${clusterPath(name)}/status`, { ...body, status: { phase: 'Ready' } });
    expect(res.status).toBe(200);
    expect((await peek.value(peek.clusterKey(name))).status).toEqual({ phase: 'Ready' });
  });
});

describe("a VirtualClusterInstance's transition rule: spec.clusterRef is immutable (self == oldSelf)", () => {
  const NS = 'xv-vcis';
  const vci = (name: string) => `${virtualClusterInstancesPath(NS)}/${name}`;
  const IMMUTABLE = {
    reason: 'FieldValueInvalid',
    message: 'Invalid value: "object": field is immutable',
    field: 'spec.clusterRef',
  };

  const force = (contentType: string) => (contentType === APPLY_PATCH ? '&force=true' : '');

  async function createdVci(name: string): Promise<any> {
    const res = await ts.admin.post(virtualClusterInstancesPath(NS), {
      apiVersion: API_VERSION,
      kind: 'VirtualClusterInstance',
      metadata: { name },
      // A virtual cluster of its own: one instance per virtual cluster, system:masters' too.
      spec: { clusterRef: { cluster: 'eu', namespace: 'vc-a', virtualCluster: name } },
    });
    expect(res.status).toBe(201);
    return res.body;
  }

  function expectImmutable(res: HttpResponse, name: string): void {
    expect({ status: res.status, body: res.body }).toMatchObject({
      status: 422,
      body: {
        kind: 'Status',
        code: 422,
        reason: 'Invalid',
        message: `VirtualClusterInstance.${GROUP} "${name}" is invalid: spec.clusterRef: Invalid value: "object": field is immutable`,
        details: { name, group: GROUP, kind: 'VirtualClusterInstance', causes: [IMMUTABLE] },
      },
    });
  }

  test('a create is not checked against a value before (there is none)', async () => {
    await createdVci(uniq('xv-vci'));
  });

  test.each<[string, (ref: any) => [unknown, string | undefined]]>([
    [
      'PUT',
      (before) => [{ ...before, spec: { clusterRef: { ...before.spec.clusterRef, virtualCluster: 'b' } } }, undefined],
    ],
    ['a merge patch', () => [{ spec: { clusterRef: { namespace: 'vc-b' } } }, MERGE_PATCH]],
    ['a JSON patch', () => [[{ op: 'remove', path: '/spec/clusterRef/namespace' }], JSON_PATCH]],
    [
      'a forced apply',
      (before) => [
        {
          apiVersion: API_VERSION,
          kind: 'VirtualClusterInstance',
          metadata: { name: before.metadata.name },
          spec: { clusterRef: { cluster: 'us' } },
        },
        APPLY_PATCH,
      ],
    ],
  ])('%s changing it: 422, unchanged; dry run the same', async (_what, change) => {
    const name = uniq('xv-vci');
    const before = await createdVci(name);
    const [body, contentType] = change(before);
    const write = (query: string) =>
      contentType
        ? ts.admin.patch(`${vci(name)}?fieldManager=rules-test${force(contentType)}${query}`, body, contentType)
        : ts.admin.put(`${vci(name)}?x=1${query}`, body);
    expectImmutable(await write('&dryRun=All'), name);
    expectImmutable(await write(''), name);
    expect((await ts.admin.get(vci(name))).body).toEqual(before);
  });

  test('other fields may change, and the same clusterRef may be sent back', async () => {
    const name = uniq('xv-vci');
    const before = await createdVci(name);
    const res = await ts.admin.put(vci(name), {
      ...before,
      spec: { ...before.spec, ingressEndpoint: 'https://vc.example.com' },
    });
    expect(res.status).toBe(200);
    expect(res.body.spec.clusterRef).toEqual(before.spec.clusterRef);
  });
});

describe('the rules every owned kind has: an owner is a user or a team, an access entry names one', () => {
  const NS = 'xv-owned';

  test('create with both and with an entry for nobody: 422 with a cause for each, nothing stored', async () => {
    const name = uniq('xv-owner');
    const body = secretBody(name);
    body.spec.owner = { user: 'alice', team: 'ops' };
    body.spec.access = [{ verbs: ['get'], users: ['bob'] }, { verbs: ['get'] }];
    const res = await ts.admin.post(sharedSecretsPath(NS), body);
    expect({ status: res.status, reason: res.body.reason, code: res.body.code }).toEqual({
      status: 422,
      reason: 'Invalid',
      code: 422,
    });
    expect(res.body.details.causes).toEqual([
      {
        reason: 'FieldValueForbidden',
        message: 'Forbidden: may not be set together with user: an owner is either a user or a team',
        field: 'spec.owner.team',
      },
      {
        reason: 'FieldValueRequired',
        message: 'Required value: at least one user or team is required',
        field: 'spec.access[1].users',
      },
    ]);
    expect((await ts.admin.get(sharedSecretPath(NS, name))).status).toBe(404);
  });

  test('a merge patch adding a team to a user-owned object: 422, unchanged', async () => {
    const name = uniq('xv-owner');
    const body = secretBody(name);
    body.spec.owner = { user: 'alice' };
    const created = await ts.admin.post(sharedSecretsPath(NS), body);
    expect(created.status).toBe(201);
    const res = await ts.admin.patch(sharedSecretPath(NS, name), { spec: { owner: { team: 'ops' } } }, MERGE_PATCH);
    expect(res.status).toBe(422);
    expect(res.body.details.causes).toEqual([expect.objectContaining({ field: 'spec.owner.team' })]);
    expect((await ts.admin.get(sharedSecretPath(NS, name))).body).toEqual(created.body);
  });
});

describe('the OpenAPI documents publish the rules as kube does for a CRD', () => {
  const rule = {
    rule: "(has(self.local) && self.local) || (has(self.networkPeer) && self.networkPeer) || (has(self.config) && has(self.config.secretName) && self.config.secretName != '')",
    message: REQUIRED_MESSAGE,
    reason: 'FieldValueRequired',
    fieldPath: '.config.secretName',
  };

  test('/openapi/v2', async () => {
    const res = await ts.admin.get('/openapi/v2');
    expect(res.status).toBe(200);
    const cluster = res.body.definitions['sh.platform.management.v1.Cluster'];
    expect(cluster.properties.spec['x-kubernetes-validations']).toEqual([rule]);
    const vci = res.body.definitions['sh.platform.management.v1.VirtualClusterInstance'];
    expect(vci.properties.spec.properties.clusterRef['x-kubernetes-validations']).toEqual([
      { rule: 'self == oldSelf', message: 'field is immutable' },
    ]);
  });

  test('/openapi/v3', async () => {
    const res = await ts.admin.get(`/openapi/v3/apis/${GROUP}/v1`);
    expect(res.status).toBe(200);
    const cluster = res.body.components.schemas['sh.platform.management.v1.Cluster'];
    expect(cluster.properties.spec['x-kubernetes-validations']).toEqual([rule]);
  });
});

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met');
}
