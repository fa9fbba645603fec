/**
 * The host-cluster stand-in's core v1 Secrets (test/support/hostcluster.ts), driven as a controller of the server
 * drives a host cluster: client-node's CoreV1Api and Watch with the stand-in's kubeconfig.
 *
 * - create (defaults, stringData), get, list and watch by labelSelector across namespaces and in one, fieldSelector
 *   on type, replace at a resourceVersion, patch, delete with preconditions;
 * - what kube refuses, each leaving the stored Secret as it was: a stale resourceVersion (409), a PUT of a missing
 *   Secret (404: no create on update), a changed type or data of an immutable Secret (422 naming the field), data
 *   that is not base64 (400, as kube cannot decode the body), bad keys (422 `data[<key>]`), a wrong uid (409);
 * - the test's own seeding and edits (addSecret, put, remove) are watch events like API writes; discovery and the
 *   request log name `secrets`.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  Watch,
  type V1Secret,
} from '@kubernetes/client-node';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { waitFor } from '../support/wait.js';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const plain = (value: string | undefined) => Buffer.from(value ?? '', 'base64').toString();

/** The HTTP status and Status body of a request that must fail. */
async function failure(p: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    return { code: err.code, body: typeof err.body === 'string' ? JSON.parse(err.body) : err.body };
  }
  throw new Error('the request succeeded; it should have failed');
}

/** What a write changes, comparable between client-node's typed objects and the host's plain ones. */
const stateOf = (s: { metadata?: any; type?: string; data?: object; immutable?: boolean } | undefined) =>
  s && { ...s.metadata, creationTimestamp: undefined, type: s.type, data: s.data, immutable: s.immutable };

const fields = (body: any) => (body?.details?.causes ?? []).map((c: any) => c.field);

let host: HostClusterStandIn;
let kc: KubeConfig;
let api: CoreV1Api;

beforeAll(async () => {
  host = await startHostCluster();
  kc = new KubeConfig();
  kc.loadFromString(host.kubeconfigText());
  api = kc.makeApiClient(CoreV1Api);
  // A create needs its namespace (kube's NamespaceLifecycle, which the stand-in models for Secrets).
  for (const ns of ['app-a', 'hooked', 'list-a', 'list-b', 'refuse', 'seed', 'watch-a', 'watch-b', 'watch-c'])
    host.addNamespace(ns);
});
afterAll(async () => {
  await host?.stop();
});

function secret(namespace: string, name: string, extra: Partial<V1Secret> = {}): V1Secret {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, data: { token: b64('t0') }, ...extra };
}

/** A watch through client-node whose events (type and name) collect in `events` until `stop()`. */
async function watch(path: string, query: Record<string, string> = {}) {
  const events: string[] = [];
  let ended: unknown = 'open';
  const controller = await new Watch(kc).watch(
    path,
    query,
    (type, obj) => events.push(`${type} ${obj.metadata.namespace}/${obj.metadata.name}`),
    (err) => (ended = err),
  );
  return {
    events,
    ended: () => ended,
    /** Waits until `n` events have arrived. */
    until: (n: number) => waitFor(`${n} watch events on ${path}`, () => events.length >= n),
    stop: () => controller.abort(),
  };
}

describe('Secrets through client-node', () => {
  test('a create in a namespace that does not exist is 404, one that is terminating 403', async () => {
    expect(
      (await failure(api.createNamespacedSecret({ namespace: 'nowhere', body: secret('nowhere', 'x') }))).code,
    ).toBe(404);
    host.addNamespace('leaving');
    host.terminateNamespace('leaving');
    expect(
      (await failure(api.createNamespacedSecret({ namespace: 'leaving', body: secret('leaving', 'x') }))).code,
    ).toBe(403);
  });

  test('create defaults the type to Opaque, merges stringData into data, and get and the host see it', async () => {
    const created = await api.createNamespacedSecret({
      namespace: 'app-a',
      body: secret('app-a', 'created', { stringData: { extra: 'x1' } }),
    });
    expect(created).toMatchObject({ kind: 'Secret', apiVersion: 'v1', type: 'Opaque' });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.resourceVersion).toBeTruthy();
    expect(created.stringData).toBeUndefined();
    expect(plain(created.data?.extra)).toBe('x1');

    const read = await api.readNamespacedSecret({ namespace: 'app-a', name: 'created' });
    expect(read).toEqual(created);
    expect(stateOf(host.get('secrets', 'app-a', 'created'))).toEqual(stateOf(created));
    expect(
      (await failure(api.createNamespacedSecret({ namespace: 'app-a', body: secret('app-a', 'created') }))).code,
    ).toBe(409);
  });

  test('list by labelSelector across namespaces and in one, by fieldSelector on type; items as typed lists send them', async () => {
    const labels = { 'listed-by': 'selector' };
    for (const [ns, name] of [
      ['list-a', 'one'],
      ['list-b', 'two'],
    ])
      await api.createNamespacedSecret({ namespace: ns, body: secret(ns, name, { metadata: { name, labels } }) });
    await api.createNamespacedSecret({ namespace: 'list-a', body: secret('list-a', 'unlabelled') });
    await api.createNamespacedSecret({
      namespace: 'list-a',
      body: secret('list-a', 'tls', {
        metadata: { name: 'tls', labels },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64('c'), 'tls.key': b64('k') },
      }),
    });

    const all = await api.listSecretForAllNamespaces({ labelSelector: 'listed-by=selector' });
    expect(all.kind).toBe('SecretList');
    expect(all.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`).sort()).toEqual([
      'list-a/one',
      'list-a/tls',
      'list-b/two',
    ]);
    expect(all.items.every((s) => s.kind === undefined && s.apiVersion === undefined)).toBe(true);
    const inA = await api.listNamespacedSecret({ namespace: 'list-a', labelSelector: 'listed-by=selector' });
    expect(inA.items.map((s) => s.metadata?.name)).toEqual(['one', 'tls']);
    const tls = await api.listSecretForAllNamespaces({ fieldSelector: 'type=kubernetes.io/tls' });
    expect(tls.items.map((s) => s.metadata?.name)).toEqual(['tls']);
  });

  test('a watch across namespaces by label sees API writes and the host edited by hand: ADDED, MODIFIED, DELETED', async () => {
    const w = await watch('/api/v1/secrets', { labelSelector: 'watched=yes' });
    try {
      const body = secret('watch-a', 'w1', { metadata: { name: 'w1', labels: { watched: 'yes' } } });
      const created = await api.createNamespacedSecret({ namespace: 'watch-a', body });
      await api.createNamespacedSecret({ namespace: 'watch-b', body: secret('watch-b', 'not-watched') });
      await api.replaceNamespacedSecret({
        namespace: 'watch-a',
        name: 'w1',
        body: { ...created, data: { token: b64('t1') } },
      });
      // Edited by hand on the host, as an administrator would.
      const onHost = host.get('secrets', 'watch-a', 'w1')!;
      host.put({ ...onHost, data: { token: b64('by hand') } });
      await api.deleteNamespacedSecret({ namespace: 'watch-a', name: 'w1' });
      await w.until(4);
      expect(w.events).toEqual([
        'ADDED watch-a/w1',
        'MODIFIED watch-a/w1',
        'MODIFIED watch-a/w1',
        'DELETED watch-a/w1',
      ]);
      expect(w.ended()).toBe('open');
    } finally {
      w.stop();
    }
  });

  test("a watch in one namespace sees the test's seeding and deletion by hand, and a label leaving its selector", async () => {
    const w = await watch('/api/v1/namespaces/watch-c/secrets');
    try {
      host.addSecret('watch-c', 'seeded', { config: 'c1' });
      host.addSecret('watch-other', 'elsewhere', { config: 'c1' });
      host.addSecret('watch-c', 'seeded', { config: 'c2' });
      expect(host.remove('secrets', 'watch-c', 'seeded')).toBe(true);
      expect(host.remove('secrets', 'watch-c', 'seeded')).toBe(false);
      await w.until(3);
      expect(w.events).toEqual(['ADDED watch-c/seeded', 'MODIFIED watch-c/seeded', 'DELETED watch-c/seeded']);
    } finally {
      w.stop();
    }

    await api.createNamespacedSecret({
      namespace: 'watch-c',
      body: secret('watch-c', 'moves', { metadata: { name: 'moves', labels: { keep: 'yes' } } }),
    });
    const labelled = await watch('/api/v1/namespaces/watch-c/secrets', { labelSelector: 'keep=yes' });
    try {
      await labelled.until(1);
      await api.patchNamespacedSecret({
        namespace: 'watch-c',
        name: 'moves',
        body: [{ op: 'replace', path: '/metadata/labels/keep', value: 'no' }],
      });
      await labelled.until(2);
      expect(labelled.events).toEqual(['ADDED watch-c/moves', 'DELETED watch-c/moves']);
    } finally {
      labelled.stop();
    }
  });

  test('addSecret keeps its signature: plain-text data stored as base64, an optional type', async () => {
    host.addSecret('seed', 'kubeconfig', { config: 'apiVersion: v1' }, 'example.com/kubeconfig');
    const read = await api.readNamespacedSecret({ namespace: 'seed', name: 'kubeconfig' });
    expect(read.type).toBe('example.com/kubeconfig');
    expect(plain(read.data?.config)).toBe('apiVersion: v1');
    expect((await api.listNamespacedSecret({ namespace: 'seed' })).items.map((s) => s.metadata?.name)).toEqual([
      'kubeconfig',
    ]);
  });
});

describe('what kube refuses leaves the Secret as it was', () => {
  let stored: V1Secret;

  beforeAll(async () => {
    stored = await api.createNamespacedSecret({ namespace: 'refuse', body: secret('refuse', 'kept') });
  });

  const unchanged = () => expect(stateOf(host.get('secrets', 'refuse', 'kept'))).toEqual(stateOf(stored));

  test('a replace at a stale resourceVersion: 409 Conflict', async () => {
    const current = await api.replaceNamespacedSecret({
      namespace: 'refuse',
      name: 'kept',
      body: { ...stored, data: { token: b64('t1') } },
    });
    const { code, body } = await failure(
      api.replaceNamespacedSecret({
        namespace: 'refuse',
        name: 'kept',
        body: { ...stored, data: { token: b64('t2') } },
      }),
    );
    expect(code).toBe(409);
    expect(body).toMatchObject({ reason: 'Conflict', details: { name: 'kept', kind: 'secrets' } });
    expect(body.message).toContain('the object has been modified');
    stored = current;
    unchanged();
  });

  test('a PUT of a missing Secret: 404 NotFound, nothing created (Secrets are not created on update)', async () => {
    const { code, body } = await failure(
      api.replaceNamespacedSecret({ namespace: 'refuse', name: 'missing', body: secret('refuse', 'missing') }),
    );
    expect(code).toBe(404);
    expect(body).toMatchObject({ reason: 'NotFound', message: 'secrets "missing" not found' });
    expect(host.get('secrets', 'refuse', 'missing')).toBeUndefined();
  });

  test('a changed type: 422 on field type, "field is immutable"; the same through a patch', async () => {
    const tls = { ...stored, type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c'), 'tls.key': b64('k') } };
    const put = await failure(api.replaceNamespacedSecret({ namespace: 'refuse', name: 'kept', body: tls }));
    expect(put.code).toBe(422);
    expect(put.body).toMatchObject({ reason: 'Invalid', details: { name: 'kept', kind: 'Secret' } });
    expect(fields(put.body)).toEqual(['type']);
    expect(put.body.message).toBe(
      'Secret "kept" is invalid: type: Invalid value: "kubernetes.io/tls": field is immutable',
    );
    const patch = await failure(
      api.patchNamespacedSecret({
        namespace: 'refuse',
        name: 'kept',
        body: [{ op: 'replace', path: '/type', value: 'example.com/other' }],
      }),
    );
    expect(patch.code).toBe(422);
    expect(fields(patch.body)).toEqual(['type']);
    unchanged();
  });

  test('data that is not base64: 400 BadRequest as kube cannot decode it (a patch: 422 on patch); no data echoed', async () => {
    const create = await failure(
      api.createNamespacedSecret({
        namespace: 'refuse',
        body: secret('refuse', 'bad-base64', { data: { token: 'not base64 s3cret!' } }),
      }),
    );
    expect(create.code).toBe(400);
    expect(create.body).toMatchObject({
      reason: 'BadRequest',
      message: 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
    });
    expect(host.get('secrets', 'refuse', 'bad-base64')).toBeUndefined();
    const replace = await failure(
      api.replaceNamespacedSecret({
        namespace: 'refuse',
        name: 'kept',
        body: { ...stored, data: { token: 'not base64 s3cret!' } },
      }),
    );
    expect(replace.code).toBe(400);
    const patch = await failure(
      api.patchNamespacedSecret({
        namespace: 'refuse',
        name: 'kept',
        body: [{ op: 'replace', path: '/data/token', value: 'not base64 s3cret!' }],
      }),
    );
    expect(patch.code).toBe(422);
    expect(fields(patch.body)).toEqual(['patch']);
    for (const { body } of [create, replace, patch]) expect(JSON.stringify(body)).not.toContain('s3cret');
    unchanged();
  });

  test('a key that is not a config key: 422 naming data[<key>]; a tls Secret without its keys: 422 naming them', async () => {
    const badKey = await failure(
      api.createNamespacedSecret({
        namespace: 'refuse',
        body: secret('refuse', 'bad-key', { data: { 'no/slash': b64('x') } }),
      }),
    );
    expect(badKey.code).toBe(422);
    expect(fields(badKey.body)).toEqual(['data[no/slash]']);
    expect(badKey.body.message).toContain(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    );
    const tls = await failure(
      api.createNamespacedSecret({
        namespace: 'refuse',
        body: secret('refuse', 'tls', { type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } }),
      }),
    );
    expect(tls.code).toBe(422);
    expect(fields(tls.body)).toEqual(['data[tls.key]']);
    expect(host.list('secrets', 'refuse').map((s) => s.metadata.name)).toEqual(['kept']);
  });

  test('an immutable Secret refuses changed data and dropping immutable (422), and may still be deleted', async () => {
    const frozen = await api.createNamespacedSecret({
      namespace: 'refuse',
      body: secret('refuse', 'frozen', { immutable: true }),
    });
    const data = await failure(
      api.replaceNamespacedSecret({
        namespace: 'refuse',
        name: 'frozen',
        body: { ...frozen, data: { token: b64('t1') } },
      }),
    );
    expect(data.code).toBe(422);
    expect(fields(data.body)).toEqual(['data']);
    expect(data.body.message).toContain('field is immutable when `immutable` is set');
    const thawed = await failure(
      api.patchNamespacedSecret({
        namespace: 'refuse',
        name: 'frozen',
        body: [{ op: 'replace', path: '/immutable', value: false }],
      }),
    );
    expect(thawed.code).toBe(422);
    expect(fields(thawed.body)).toEqual(['immutable']);
    expect(stateOf(host.get('secrets', 'refuse', 'frozen'))).toEqual(stateOf(frozen));
    await api.deleteNamespacedSecret({ namespace: 'refuse', name: 'frozen' });
    expect(host.get('secrets', 'refuse', 'frozen')).toBeUndefined();
  });

  test('a delete with a wrong uid precondition: 409 Conflict, the Secret stays; the right uid deletes it', async () => {
    await api.createNamespacedSecret({ namespace: 'refuse', body: secret('refuse', 'doomed') });
    const doomed = host.get('secrets', 'refuse', 'doomed')!;
    const wrong = await failure(
      api.deleteNamespacedSecret({
        namespace: 'refuse',
        name: 'doomed',
        body: { preconditions: { uid: 'not-the-uid' } },
      }),
    );
    expect(wrong.code).toBe(409);
    expect(wrong.body.message).toContain('Precondition failed: UID in precondition: not-the-uid');
    expect(host.get('secrets', 'refuse', 'doomed')).toEqual(doomed);
    const stale = await failure(
      api.deleteNamespacedSecret({
        namespace: 'refuse',
        name: 'doomed',
        body: { preconditions: { uid: doomed.metadata.uid, resourceVersion: '1' } },
      }),
    );
    expect(stale.code).toBe(409);
    const deleted = await api.deleteNamespacedSecret({
      namespace: 'refuse',
      name: 'doomed',
      body: { preconditions: { uid: doomed.metadata.uid, resourceVersion: doomed.metadata.resourceVersion } },
    });
    expect(deleted).toMatchObject({ status: 'Success', details: { name: 'doomed', kind: 'secrets' } });
    expect(host.get('secrets', 'refuse', 'doomed')).toBeUndefined();
    expect((await failure(api.readNamespacedSecret({ namespace: 'refuse', name: 'doomed' }))).code).toBe(404);
  });
});

describe('around the Secrets', () => {
  test('discovery declares the verbs served; the request log names secrets for every path', async () => {
    const resources = await api.getAPIResources();
    expect(resources.resources.find((r) => r.name === 'secrets')).toMatchObject({
      kind: 'Secret',
      namespaced: true,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    });
    host.resetCounts();
    await api.listSecretForAllNamespaces();
    await api.listNamespacedSecret({ namespace: 'refuse' });
    await api.readNamespacedSecret({ namespace: 'refuse', name: 'kept' });
    expect(host.requests.map((r) => `${r.method} ${r.path} ${r.resource}`)).toEqual([
      'GET /api/v1/secrets secrets',
      'GET /api/v1/namespaces/refuse/secrets secrets',
      'GET /api/v1/namespaces/refuse/secrets/kept secrets',
    ]);
    expect(host.count('secrets', 'GET')).toBe(3);
  });

  test('onRbacWrite sees RBAC writes only', async () => {
    const seen: string[] = [];
    host.onRbacWrite = (obj) => void seen.push(`${obj.kind ?? ''} ${obj.metadata.name}`);
    try {
      await api.createNamespacedSecret({ namespace: 'hooked', body: secret('hooked', 'not-rbac') });
      const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r' }, rules: [] };
      await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRole({ namespace: 'hooked', body: role });
      expect(seen).toEqual(['Role r']);
    } finally {
      host.onRbacWrite = undefined;
    }
  });
});
