/**
 * NamespaceLifecycle against the host stand-in's namespaces: no write but a delete into a namespace the host does
 * not have (404), no create into one being terminated (403), through every write path (create, generateName, dry
 * run, server-side apply, patch, status, delete), with kube's messages; the flags that turn it off or name unknown
 * plugins; and the calls kube's namespace controller makes here when the host deletes a namespace.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  APPLY_PATCH,
  API_VERSION,
  clusterBody,
  CLUSTERS_PATH,
  GROUP,
  MERGE_PATCH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { answerWhen } from '../support/wait.js';

let host: HostClusterStandIn;
let ts: TestServer;

beforeAll(async () => {
  host = await startHostCluster();
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
}, 60_000);

/** A namespace on the host, its name unique to the test. */
function hostNamespace(prefix: string): string {
  const ns = uniq(prefix);
  host.addNamespace(ns);
  return ns;
}

async function expectNamespaceNotFound(res: { status: number; body: any }, ns: string): Promise<void> {
  expect(res.status).toBe(404);
  expect(res.body).toMatchObject({
    kind: 'Status',
    status: 'Failure',
    reason: 'NotFound',
    code: 404,
    message: `namespaces "${ns}" not found`,
    details: { name: ns, kind: 'namespaces' },
  });
}

/** Polls (with dry runs, which admission sees too) until the informer has heard of the host's change. */
async function untilAnswered(send: () => Promise<{ status: number }>, status: number): Promise<void> {
  await answerWhen(`an answer ${status}`, send, (r) => r.status === status);
}

async function storedNames(ns: string): Promise<string[]> {
  const res = await ts.admin.get(sharedSecretsPath(ns));
  expect(res.status).toBe(200);
  return res.body.items.map((o: any) => o.metadata.name);
}

describe('a namespace the host does not have', () => {
  test('a create, a generateName create, a dry run and a server-side apply are 404 namespaces "x" not found, and store nothing', async () => {
    const ns = uniq('missing');
    await expectNamespaceNotFound(await ts.admin.post(sharedSecretsPath(ns), secretBody('one')), ns);
    const generated = { ...secretBody(''), metadata: { generateName: 'gen-' } };
    await expectNamespaceNotFound(await ts.admin.post(sharedSecretsPath(ns), generated), ns);
    await expectNamespaceNotFound(await ts.admin.post(`${sharedSecretsPath(ns)}?dryRun=All`, secretBody('dry')), ns);
    const applied = await ts.admin.request('PATCH', `${sharedSecretPath(ns, 'applied')}?fieldManager=test`, {
      body: JSON.stringify(secretBody('applied')),
      contentType: APPLY_PATCH,
    });
    await expectNamespaceNotFound(applied, ns);
    expect(await storedNames(ns)).toEqual([]);
  });

  test('a namespace created on the host a moment before the create is found', async () => {
    const ns = uniq('fresh');
    host.addNamespace(ns);
    const res = await ts.admin.post(sharedSecretsPath(ns), secretBody('first'));
    expect(res.status).toBe(201);
  });

  test('cluster-scoped objects are not concerned', async () => {
    const name = uniq('cluster');
    expect((await ts.admin.post(CLUSTERS_PATH, clusterBody(name))).status).toBe(201);
  });

  test('once the host has removed the namespace, updates are 404 and leave the object as it was; a delete goes through', async () => {
    const ns = hostNamespace('gone');
    const created = await ts.admin.post(sharedSecretsPath(ns), secretBody('kept'));
    expect(created.status).toBe(201);
    host.removeNamespace(ns);
    await untilAnswered(
      () =>
        ts.admin.patch(`${sharedSecretPath(ns, 'kept')}?dryRun=All`, { metadata: { labels: { a: 'b' } } }, MERGE_PATCH),
      404,
    );
    const before = (await ts.admin.get(sharedSecretPath(ns, 'kept'))).body;
    const patch = await ts.admin.patch(sharedSecretPath(ns, 'kept'), { metadata: { labels: { a: 'b' } } }, MERGE_PATCH);
    await expectNamespaceNotFound(patch, ns);
    // Before the resourceVersion is compared, as kube's mutating admission runs first: a stale one is 404 too.
    for (const rv of [before.metadata.resourceVersion, created.body.metadata.resourceVersion]) {
      const changed = { ...before, metadata: { ...before.metadata, resourceVersion: rv, labels: { c: 'd' } } };
      await expectNamespaceNotFound(await ts.admin.put(sharedSecretPath(ns, 'kept'), changed), ns);
    }
    const status = await ts.admin.patch(`${sharedSecretPath(ns, 'kept')}/status`, { status: {} }, MERGE_PATCH);
    await expectNamespaceNotFound(status, ns);
    expect((await ts.admin.get(sharedSecretPath(ns, 'kept'))).body).toEqual(before);
    expect((await ts.admin.delete(sharedSecretPath(ns, 'kept'))).status).toBe(200);
    expect(await storedNames(ns)).toEqual([]);
  });
});

describe('a namespace being terminated', () => {
  test("a create is 403 with kube's message and NamespaceTerminating cause; updates, status writes and deletes go through", async () => {
    const ns = hostNamespace('ending');
    expect((await ts.admin.post(sharedSecretsPath(ns), secretBody('before'))).status).toBe(201);
    host.terminateNamespace(ns);
    await untilAnswered(() => ts.admin.post(`${sharedSecretsPath(ns)}?dryRun=All`, secretBody('probe')), 403);
    const res = await ts.admin.post(sharedSecretsPath(ns), secretBody('after'));
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: `sharedsecrets.${GROUP} "after" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
      details: {
        name: 'after',
        group: GROUP,
        kind: 'sharedsecrets',
        causes: [
          {
            reason: 'NamespaceTerminating',
            message: `namespace ${ns} is being terminated`,
            field: 'metadata.namespace',
          },
        ],
      },
    });
    expect(await storedNames(ns)).toEqual(['before']);

    const patched = await ts.admin.patch(
      sharedSecretPath(ns, 'before'),
      { metadata: { labels: { a: 'b' } } },
      MERGE_PATCH,
    );
    expect(patched.status).toBe(200);
    expect(patched.body.metadata.labels).toEqual({ a: 'b' });
    const status = await ts.admin.patch(`${sharedSecretPath(ns, 'before')}/status`, { status: {} }, MERGE_PATCH);
    expect(status.status).toBe(200);
    expect((await ts.admin.delete(sharedSecretPath(ns, 'before'))).status).toBe(200);
  });
});

describe("the calls kube's namespace controller makes when the host deletes a namespace", () => {
  test('discovery offers deletecollection; a DELETE of each collection with background propagation, then a metadata list, finds it empty', async () => {
    const ns = hostNamespace('deleted');
    for (const name of ['a', 'b', 'c'])
      expect((await ts.admin.post(sharedSecretsPath(ns), secretBody(name))).status).toBe(201);
    host.terminateNamespace(ns);

    const discovery = await ts.admin.get(`/apis/${API_VERSION}`);
    const namespaced = discovery.body.resources.filter((r: any) => r.namespaced && !r.name.includes('/'));
    expect(namespaced.length).toBeGreaterThan(0);
    for (const resource of namespaced) {
      expect(resource.verbs).toEqual(expect.arrayContaining(['deletecollection', 'list']));
      const path = `/apis/${API_VERSION}/namespaces/${ns}/${resource.name}`;
      const deleted = await ts.admin.request('DELETE', path, {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' },
        headers: { Accept: 'application/json' },
      });
      expect([200]).toContain(deleted.status);
      const listed = await ts.admin.request('GET', path, {
        headers: {
          Accept:
            'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
        },
      });
      expect(listed.status).toBe(200);
      expect(listed.body.kind).toBe('PartialObjectMetadataList');
      expect(listed.body.items).toEqual([]);
    }
    host.removeNamespace(ns);
  });
});

describe('the flags', () => {
  test('--disable-admission-plugins=NamespaceLifecycle lets creates into any namespace through', async () => {
    const off = await startTestServer(
      { kubeconfig: host.kubeconfigPath, disableAdmissionPlugins: ['NamespaceLifecycle'] },
      ts.etcd,
    );
    try {
      expect((await off.admin.post(sharedSecretsPath(uniq('nowhere')), secretBody('x'))).status).toBe(201);
    } finally {
      await off.stop();
    }
  });

  test('without a host cluster there is no admission', async () => {
    const alone = await startTestServer({}, ts.etcd);
    try {
      expect((await alone.admin.post(sharedSecretsPath(uniq('nowhere')), secretBody('x'))).status).toBe(201);
    } finally {
      await alone.stop();
    }
  });

  test("an unknown plugin, or one both enabled and disabled, stops the start with kube's message", async () => {
    await expect(
      startTestServer({ kubeconfig: host.kubeconfigPath, enableAdmissionPlugins: ['Foo'] }, ts.etcd),
    ).rejects.toThrow('enable-admission-plugins plugin "Foo" is unknown');
    await expect(
      startTestServer(
        {
          kubeconfig: host.kubeconfigPath,
          enableAdmissionPlugins: ['NamespaceLifecycle'],
          disableAdmissionPlugins: ['NamespaceLifecycle'],
        },
        ts.etcd,
      ),
    ).rejects.toThrow('[NamespaceLifecycle] in enable-admission-plugins and disable-admission-plugins overlapped');
  });
});
