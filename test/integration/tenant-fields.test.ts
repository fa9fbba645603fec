/**
 * Fields a tenant may not write even on an object it owns or may update. The administrator's policy: a Project's
 * spec.allowedClusters, a Cluster's spec.unusable and connection Secret (spec.config.secretName/secretNamespace/key)
 * change only by system:masters (403 naming the field). Kubernetes' own identities: owner and access may name a
 * `system:` user only when system:masters writes it (422 naming the field), since the access sync grants them in
 * the host cluster. Every path is checked (PUT, merge and JSON patch, server-side apply, dry run), creates too (an
 * administrator's field set to other than its default, and an owner other than the creator or a team of theirs, are
 * 403 on POST, dry run and an apply that creates), and every refusal leaves stored data as it was.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  API_VERSION,
  APPLY_PATCH as APPLY,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH as PROJECTS,
  clusterBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';

let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
let bob: HttpClient;
let carol: HttpClient;
let dave: HttpClient;

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace('tenants');
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], bob: [], carol: [], dave: [] },
    { kubeconfig: host.kubeconfigPath },
  );
  ({ root, bob, carol, dave } = server.as);
  ts = server;
  // dave may create SharedSecrets anywhere (host RBAC): what he creates is checked all the same.
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'secret-creator' },
    rules: [
      { apiGroups: [GROUP], resources: ['sharedsecrets'], verbs: ['create'] },
      // And Clusters and Projects, by create and by server-side apply (which needs patch as well).
      { apiGroups: [GROUP], resources: ['clusters', 'projects'], verbs: ['create', 'patch'] },
    ],
  });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'dave-creates-secrets' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'secret-creator' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dave' }],
  });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
}, 60_000);

/** Owned by bob; carol may get, update and patch it. */
const shared = { owner: { user: 'bob' }, access: [{ verbs: ['get', 'update', 'patch'], users: ['carol'] }] };

/** A PUT of the current object with `change` merged into its spec. */
async function putChanged(client: HttpClient, path: string, change: Record<string, unknown>): Promise<HttpResponse> {
  for (let attempt = 1; ; attempt++) {
    const current = (await root.get(path)).body;
    const res = await client.put(path, { ...current, spec: { ...current.spec, ...change } });
    // The access sync writes the status meanwhile: a PUT it made stale is tried again.
    if (res.status !== 409 || attempt === 5) return res;
  }
}

/** Each way a client writes `change` (a merge of spec fields) into the object at `path`. */
async function everyWrite(
  client: HttpClient,
  path: string,
  kind: string,
  change: Record<string, unknown>,
  jsonPatch: unknown[],
): Promise<[string, HttpResponse][]> {
  const name = (await root.get(path)).body.metadata.name;
  return [
    ['PUT', await putChanged(client, path, change)],
    ['merge patch', await client.patch(path, { spec: change }, MERGE_PATCH)],
    ['JSON patch', await client.patch(path, jsonPatch, JSON_PATCH)],
    [
      'apply',
      await client.patch(
        `${path}?fieldManager=tenant&force=true`,
        { apiVersion: API_VERSION, kind, metadata: { name }, spec: change },
        APPLY,
      ),
    ],
    ['dry run', await client.patch(`${path}?dryRun=All`, { spec: change }, MERGE_PATCH)],
  ];
}

function expectForbidden(
  results: [string, HttpResponse][],
  resource: string,
  name: string,
  user: string,
  fields: string,
): void {
  for (const [how, res] of results) {
    expect({ how, status: res.status, reason: res.body.reason }).toEqual({ how, status: 403, reason: 'Forbidden' });
    expect({ how, message: res.body.message }).toEqual({
      how,
      message: `${resource}.${GROUP} "${name}" is forbidden: User "${user}" cannot change ${fields}: only system:masters may`,
    });
  }
}

describe("a Project's allowedClusters are the administrator's", () => {
  test('neither its owner nor an access entry granting update may change them, on any path; system:masters may', async () => {
    const name = uniq('proj');
    expect(
      (
        await root.post(PROJECTS, {
          apiVersion: API_VERSION,
          kind: 'Project',
          metadata: { name },
          spec: { ...shared, allowedClusters: [{ name: 'eu-1' }] },
        })
      ).status,
    ).toBe(201);
    const path = `${PROJECTS}/${name}`;
    // The spec is compared: the access sync writes the status meanwhile.
    const before = (await root.get(path)).body;
    for (const [user, client] of [
      ['bob', bob],
      ['carol', carol],
    ] as const) {
      // Widening to another Cluster, and removing the list (which allows every Cluster).
      expectForbidden(
        await everyWrite(client, path, 'Project', { allowedClusters: [{ name: 'eu-1' }, { name: 'theirs' }] }, [
          { op: 'add', path: '/spec/allowedClusters/-', value: { name: 'theirs' } },
        ]),
        'projects',
        name,
        user,
        'spec.allowedClusters',
      );
      // (An apply configuration's null leaves the field to the manager that set it: that apply changes nothing.)
      const removals = (
        await everyWrite(client, path, 'Project', { allowedClusters: null }, [
          { op: 'remove', path: '/spec/allowedClusters' },
        ])
      ).filter(([how]) => how !== 'apply');
      expectForbidden(removals, 'projects', name, user, 'spec.allowedClusters');
    }
    expect((await root.get(path)).body.spec).toEqual(before.spec);

    // Everything else is still theirs, and the same list may be sent back.
    const put = await putChanged(bob, path, { displayName: 'mine' });
    expect(put.status).toBe(200);
    expect(put.body.spec.allowedClusters).toEqual([{ name: 'eu-1' }]);
    expect((await root.patch(path, { spec: { allowedClusters: [{ name: 'eu-2' }] } }, MERGE_PATCH)).status).toBe(200);
  });
});

describe("a Cluster's connection and unusable mark are the administrator's", () => {
  test.each([
    ['spec.unusable', { unusable: true }, [{ op: 'add', path: '/spec/unusable', value: true }]],
    [
      'spec.config.secretName',
      { config: { secretName: 'someone-elses', secretNamespace: 'platform' } },
      [{ op: 'replace', path: '/spec/config/secretName', value: 'someone-elses' }],
    ],
    [
      'spec.config.secretNamespace',
      { config: { secretName: 'kubeconfig', secretNamespace: 'kube-system' } },
      [{ op: 'replace', path: '/spec/config/secretNamespace', value: 'kube-system' }],
    ],
    [
      'spec.config.key',
      { config: { secretName: 'kubeconfig', secretNamespace: 'platform', key: 'other' } },
      [{ op: 'add', path: '/spec/config/key', value: 'other' }],
    ],
  ])(
    '%s: neither its owner nor an access entry granting update may change it, on any path; system:masters may',
    async (field, change, jsonPatch) => {
      const body = clusterBody(uniq('cluster'));
      body.spec = { ...body.spec, ...shared };
      expect((await root.post(CLUSTERS_PATH, body)).status).toBe(201);
      const path = `${CLUSTERS_PATH}/${body.metadata.name}`;
      const before = (await root.get(path)).body;
      for (const [user, client] of [
        ['bob', bob],
        ['carol', carol],
      ] as const) {
        expectForbidden(
          await everyWrite(client, path, 'Cluster', change, jsonPatch),
          'clusters',
          body.metadata.name,
          user,
          field,
        );
      }
      expect((await root.get(path)).body.spec).toEqual(before.spec);
      expect((await bob.patch(path, { spec: { displayName: 'mine' } }, MERGE_PATCH)).status).toBe(200);
      expect((await root.patch(path, { spec: change }, MERGE_PATCH)).status).toBe(200);
    },
  );

  test('a change of several is refused naming each', async () => {
    const body = clusterBody(uniq('cluster'));
    body.spec = { ...body.spec, ...shared };
    expect((await root.post(CLUSTERS_PATH, body)).status).toBe(201);
    const res = await bob.patch(
      `${CLUSTERS_PATH}/${body.metadata.name}`,
      { spec: { unusable: true, config: { secretName: 'x', secretNamespace: 'y' } } },
      MERGE_PATCH,
    );
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(
      'cannot change spec.config.secretName, spec.config.secretNamespace, spec.unusable: only system:masters may',
    );
  });
});

describe('a create is held to the same: what only system:masters may set, and an owner the creator is not', () => {
  /** Each way a client creates `body` at `collection`: POST, dry run, and a server-side apply that creates. */
  async function everyCreate(client: HttpClient, collection: string, body: any): Promise<[string, HttpResponse][]> {
    return [
      ['POST', await client.post(collection, body)],
      ['dry run', await client.post(`${collection}?dryRun=All`, body)],
      ['apply', await client.patch(`${collection}/${body.metadata.name}?fieldManager=tenant`, body, APPLY)],
    ];
  }

  function expectRefused(results: [string, HttpResponse][], message: string): void {
    for (const [how, res] of results)
      expect({ how, status: res.status, reason: res.body.reason, message: res.body.message }).toEqual({
        how,
        status: 403,
        reason: 'Forbidden',
        message,
      });
  }

  test.each([
    [
      "spec.config (another cluster's kubeconfig, or any Secret of the host)",
      { config: { secretName: 'kubeconfig', secretNamespace: 'kube-system' } },
      'spec.config.secretName, spec.config.secretNamespace',
    ],
    ['spec.config.key', { networkPeer: true, config: { key: 'other' } }, 'spec.config.key'],
    ['spec.unusable', { networkPeer: true, unusable: true }, 'spec.unusable'],
    ['spec.local (the one local Cluster)', { local: true }, 'spec.local'],
  ])('a Cluster with %s: 403 naming the fields, nothing stored', async (_what, spec, fields) => {
    const name = uniq('cluster');
    const body = {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name },
      spec: { owner: { user: 'dave' }, ...spec },
    };
    expectRefused(
      await everyCreate(dave, CLUSTERS_PATH, body),
      `clusters.${GROUP} "${name}" is forbidden: User "dave" cannot create this object with ${fields} set: only system:masters may`,
    );
    expect((await root.get(`${CLUSTERS_PATH}/${name}`)).status).toBe(404);
  });

  test("a Project allowing clusters: 403, nothing stored; one allowing none is the creator's to make", async () => {
    const name = uniq('proj');
    const body = {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name },
      spec: { owner: { user: 'dave' }, allowedClusters: [{ name: '*' }] },
    };
    expectRefused(
      await everyCreate(dave, PROJECTS, body),
      `projects.${GROUP} "${name}" is forbidden: User "dave" cannot create this object with spec.allowedClusters set: only system:masters may`,
    );
    expect((await root.get(`${PROJECTS}/${name}`)).status).toBe(404);
    // An empty list is the default: allowed.
    const none = { ...body, spec: { owner: { user: 'dave' }, allowedClusters: [] } };
    expect((await dave.post(PROJECTS, none)).status).toBe(201);
  });

  test.each([
    ['Project', PROJECTS, 'projects', {}],
    ['Cluster', CLUSTERS_PATH, 'clusters', { networkPeer: true }],
  ])(
    'a %s owned by someone else: 403 naming spec.owner, nothing stored; owned by the creator it is made',
    async (kind, collection, resource, spec) => {
      const name = uniq(resource);
      const body = (owner: object) => ({ apiVersion: API_VERSION, kind, metadata: { name }, spec: { ...spec, owner } });
      expectRefused(
        await everyCreate(dave, collection, body({ user: 'bob' })),
        `${resource}.${GROUP} "${name}" is forbidden: User "dave" cannot create this ${kind}: spec.owner.user: may not be "bob": a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner`,
      );
      expect((await dave.post(collection, body({ team: 'web' }))).body.message).toBe(
        `${resource}.${GROUP} "${name}" is forbidden: User "dave" cannot create this ${kind}: spec.owner.team: may not be "web", a team the caller is not in: a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner`,
      );
      expect((await root.get(`${collection}/${name}`)).status).toBe(404);
      expect((await dave.post(collection, body({ user: 'dave' }))).status).toBe(201);
    },
  );

  test('a SharedSecret owned by someone else: 403; system:masters may make it so', async () => {
    const name = uniq('secret');
    const body = {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name },
      spec: { owner: { user: 'bob' }, data: { token: 'c2VjcmV0' } },
    };
    const res = await dave.post(sharedSecretsPath('tenants'), body);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect((await root.get(sharedSecretPath('tenants', name))).status).toBe(404);
    expect((await root.post(sharedSecretsPath('tenants'), body)).status).toBe(201);
  });
});

describe("owner and access name Kubernetes' own identities only when system:masters writes them", () => {
  const ns = 'tenants';

  async function ownedSecret(): Promise<{ name: string; path: string }> {
    const name = uniq('secret');
    const res = await root.post(sharedSecretsPath(ns), {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name },
      spec: { ...shared, data: { token: 'c2VjcmV0' } },
    });
    expect(res.status).toBe(201);
    return { name, path: sharedSecretPath(ns, name) };
  }

  const anonymousReader = [
    { verbs: ['get'], users: ['carol'] },
    { verbs: ['get'], users: ['system:anonymous'] },
  ];

  test('an access entry for system:anonymous: 422 naming the entry, on every path', async () => {
    const { name, path } = await ownedSecret();
    const before = (await root.get(path)).body;
    for (const [how, res] of await everyWrite(bob, path, 'SharedSecret', { access: anonymousReader }, [
      { op: 'add', path: '/spec/access/-', value: { verbs: ['get'], users: ['system:anonymous'] } },
    ])) {
      expect({ how, status: res.status, reason: res.body.reason }).toEqual({ how, status: 422, reason: 'Invalid' });
      expect(res.body.details).toMatchObject({ kind: 'SharedSecret', name });
      expect(res.body.message).toContain(
        `spec.access[1].users[0]: Invalid value: "system:anonymous": names one of Kubernetes' own identities (system:...), which only system:masters may grant access to`,
      );
    }
    expect((await root.get(path)).body.spec).toEqual(before.spec);
  });

  test('an owner that is a ServiceAccount: 422 on spec.owner.user', async () => {
    const { path } = await ownedSecret();
    const before = (await root.get(path)).body;
    const res = await bob.patch(
      path,
      { spec: { owner: { user: 'system:serviceaccount:kube-system:default' } } },
      MERGE_PATCH,
    );
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
    expect(res.body.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.owner.user', reason: 'FieldValueInvalid' }),
    ]);
    expect((await root.get(path)).body.spec).toEqual(before.spec);
  });

  test('a create outside system:masters is refused the same; nothing stored', async () => {
    const name = uniq('secret');
    const body = {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name },
      spec: {
        owner: { user: 'dave' },
        access: [{ verbs: ['get'], users: ['system:anonymous'] }],
        data: { token: 'c2VjcmV0' },
      },
    };
    for (const res of [
      await dave.post(`${sharedSecretsPath(ns)}?dryRun=All`, body),
      await dave.post(sharedSecretsPath(ns), body),
    ]) {
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 422, reason: 'Invalid' });
      expect(res.body.details.causes).toEqual([
        expect.objectContaining({ field: 'spec.access[0].users[0]', reason: 'FieldValueInvalid' }),
      ]);
    }
    expect((await root.get(sharedSecretPath(ns, name))).status).toBe(404);
    // Teams are groups platform:team:<team>, never system: ones: a team named so is just a team.
    const teams = { ...body, spec: { ...body.spec, access: [{ verbs: ['get'], teams: ['system:masters'] }] } };
    expect((await dave.post(sharedSecretsPath(ns), teams)).status).toBe(201);
  });

  test('system:masters may (e.g. a host ServiceAccount that reads it); what it set stays, and the owner may go on editing', async () => {
    const { path } = await ownedSecret();
    const access = [...shared.access, { verbs: ['get'], users: ['system:serviceaccount:ci:deployer'] }];
    expect((await root.patch(path, { spec: { access } }, MERGE_PATCH)).status).toBe(200);
    const res = await bob.patch(path, { spec: { displayName: 'still mine' } }, MERGE_PATCH);
    expect(res.status).toBe(200);
    expect(res.body.spec.access).toEqual(access);
    // What a master granted it does not let the owner make it the owner.
    const promoted = await bob.patch(
      path,
      { spec: { owner: { user: 'system:serviceaccount:ci:deployer' } } },
      MERGE_PATCH,
    );
    expect({ status: promoted.status, field: promoted.body.details?.causes?.[0]?.field }).toEqual({
      status: 422,
      field: 'spec.owner.user',
    });
  });
});
