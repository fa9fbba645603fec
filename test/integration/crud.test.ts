/**
 * CRUD of SharedSecret (namespaced) and Cluster (cluster-scoped) over real HTTPS and a real etcd, under both
 * path forms (/apis/... and /orchestrator/management/apis/...), plus the request-level errors a client meets:
 * unknown paths, wrong methods, content negotiation, body decoding and size limits.
 */
import { describe, test, expect } from '@jest/globals';
import yaml from 'js-yaml';
import type { TestServer } from '../support/server.js';
import { GROUP_PATH, type HttpResponse } from '../support/http.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  DIRECT_PREFIX,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  clusterPath,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
  type EtcdPeek,
} from '../support/fixtures.js';

let ts: TestServer;
let peek: EtcdPeek;

useServerWithPeek((env) => ({ ts, peek } = env));

/** A failure Status, always JSON. */
function expectStatus(res: HttpResponse, code: number, reason: string, message?: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: code,
    body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  if (message !== undefined) expect(res.body.message).toContain(message);
}

function secretBody(name: string, extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name },
    spec: {
      displayName: `Secret ${name}`,
      description: 'for tests',
      data: { token: 'c2VjcmV0', 'tls.crt': 'Y2VydA==' },
    },
    ...extra,
  };
}

function clusterBody(name: string, extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: { name },
    spec: {
      displayName: `Cluster ${name}`,
      config: { secretName: 'kubeconfig', secretNamespace: 'platform' },
      managementNamespace: 'platform-system',
    },
    ...extra,
  };
}

const PATH_FORMS = [
  { form: 'aggregated', prefix: '' },
  { form: 'direct', prefix: DIRECT_PREFIX },
];

describe.each(PATH_FORMS)('$form path form', ({ form, prefix }) => {
  const api = `${prefix}${GROUP_PATH}`;
  const ns = `crud-${form}`;
  const secrets = (namespace = ns) => sharedSecretsPath(namespace, prefix);
  const secret = (name: string, namespace = ns) => sharedSecretPath(namespace, name, prefix);
  const clusters = `${prefix}${CLUSTERS_PATH}`;
  const cluster = (name: string) => clusterPath(name, prefix);

  async function createSecret(name: string, extra: Record<string, unknown> = {}, namespace = ns): Promise<any> {
    const res = await ts.admin.post(secrets(namespace), secretBody(name, extra));
    expect(res.status).toBe(201);
    return res.body;
  }

  async function createCluster(name: string, extra: Record<string, unknown> = {}): Promise<any> {
    const res = await ts.admin.post(clusters, clusterBody(name, extra));
    expect(res.status).toBe(201);
    return res.body;
  }

  describe('SharedSecret', () => {
    test('create with a JSON body answers 201 with the stored object, which GET then returns', async () => {
      const name = uniq('json');
      const res = await ts.admin.post(secrets(), secretBody(name));
      expect(res.status).toBe(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name, namespace: ns, generation: 1 },
        spec: secretBody(name).spec,
      });
      expect(res.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      expect(res.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

      const got = await ts.admin.get(secret(name));
      expect(got.status).toBe(200);
      expect(got.body).toEqual(res.body);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toMatchObject({
        kind: 'SharedSecret',
        metadata: { name, namespace: ns, uid: res.body.metadata.uid },
      });
    });

    test('create with an application/yaml body (as the spec shows) is stored like JSON', async () => {
      const name = uniq('yaml');
      const body = [
        `apiVersion: ${API_VERSION}`,
        'kind: SharedSecret',
        'metadata:',
        `  name: ${name}`,
        `  namespace: ${ns}`,
        '  labels:',
        '    team: blue',
        'spec:',
        '  displayName: From YAML',
        '  data:',
        '    password: cGFzcw==',
        '  access:',
        '    - verbs: ["get", "list"]',
        '      users: ["alice"]',
        '',
      ].join('\n');
      const res = await ts.admin.post(secrets(), body, { contentType: 'application/yaml' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name, namespace: ns, labels: { team: 'blue' } },
        spec: {
          displayName: 'From YAML',
          data: { password: 'cGFzcw==' },
          access: [{ verbs: ['get', 'list'], users: ['alice'] }],
        },
      });
      const got = await ts.admin.get(secret(name));
      expect(got.body).toEqual(res.body);
    });

    test('a body without kind or apiVersion is 400 as kube answers for custom resources, and nothing is stored', async () => {
      const name = uniq('typeless');
      const { apiVersion: _v, kind: _k, ...untyped } = secretBody(name);
      const { kind: _kind, ...versionOnly } = secretBody(name);
      const { apiVersion: _version, ...kindOnly } = secretBody(name);
      for (const body of [untyped, versionOnly, { ...secretBody(name), kind: '' }]) {
        const res = await ts.admin.post(secrets(), body);
        expectStatus(res, 400, 'BadRequest');
        // kube's unstructured decoding says so, quoting nothing of the body.
        expect(res.body.message).toBe("Object 'Kind' is missing in 'object has no kind field '");
      }
      const res = await ts.admin.post(secrets(), kindOnly);
      expectStatus(res, 400, 'BadRequest');
      expect(res.body.message).toBe(
        'the API version in the data () does not match the expected API version (management.platform.sh/v1)',
      );
      // YAML as JSON.
      const yamlRes = await ts.admin.post(secrets(), `metadata:\n  name: ${name}\n`, {
        contentType: 'application/yaml',
      });
      expectStatus(yamlRes, 400, 'BadRequest');
      expect((await ts.admin.get(secret(name))).status).toBe(404);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();

      // An update (PUT) too, leaving the stored object as it was.
      const created = await ts.admin.post(secrets(), secretBody(name));
      expect(created.status).toBe(201);
      const { apiVersion: _a, kind: _b, ...update } = { ...created.body, spec: { displayName: 'changed' } };
      const put = await ts.admin.put(secret(name), update);
      expectStatus(put, 400, 'BadRequest');
      expect(put.body.message).toBe("Object 'Kind' is missing in 'object has no kind field '");
      expect((await ts.admin.get(secret(name))).body).toEqual(created.body);
    });

    test('an apiVersion that does not match the path is 400 and nothing is stored', async () => {
      const name = uniq('badversion');
      const res = await ts.admin.post(secrets(), secretBody(name, { apiVersion: 'x' }));
      expectStatus(res, 400, 'BadRequest');
      expect(res.body.message).toBe(
        'the API version in the data (x) does not match the expected API version (management.platform.sh/v1)',
      );
      expect((await ts.admin.get(secret(name))).status).toBe(404);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    });

    test('a kind that does not match the path is 422 and nothing is stored', async () => {
      const name = uniq('badkind');
      const res = await ts.admin.post(secrets(), secretBody(name, { kind: 'Cluster' }));
      expectStatus(res, 422, 'Invalid');
      expect(res.body.details.causes.map((c: any) => c.field)).toContain('kind');
      expect((await ts.admin.get(secret(name))).status).toBe(404);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    });

    test('GET of a missing object is 404 NotFound naming the resource', async () => {
      const name = uniq('missing');
      const res = await ts.admin.get(secret(name));
      expectStatus(res, 404, 'NotFound');
      expect(res.body.message).toBe(`sharedsecrets.management.platform.sh "${name}" not found`);
      expect(res.body.details).toEqual({ name, group: GROUP, kind: 'sharedsecrets' });
    });

    test('list per namespace returns only that namespace; the cluster-wide list returns every namespace', async () => {
      const nsA = uniq('list-a');
      const nsB = uniq('list-b');
      const a1 = uniq('a');
      const a2 = uniq('a');
      const b1 = uniq('b');
      await createSecret(a1, {}, nsA);
      await createSecret(a2, {}, nsA);
      await createSecret(b1, {}, nsB);

      const listA = await ts.admin.get(secrets(nsA));
      expect(listA.status).toBe(200);
      expect(listA.body).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecretList' });
      expect(listA.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      expect(listA.body.items.map((i: any) => i.metadata.name).sort()).toEqual([a1, a2].sort());
      for (const item of listA.body.items) {
        expect(item).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecret', metadata: { namespace: nsA } });
        expect(item.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      }

      const all = await ts.admin.get(`${api}/sharedsecrets`);
      expect(all.status).toBe(200);
      expect(all.body.kind).toBe('SharedSecretList');
      expect(all.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      const pairs = all.body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`);
      expect(pairs).toEqual(expect.arrayContaining([`${nsA}/${a1}`, `${nsA}/${a2}`, `${nsB}/${b1}`]));
      // The list is read at one revision that covers every item in it.
      for (const item of all.body.items)
        expect(Number(item.metadata.resourceVersion)).toBeLessThanOrEqual(Number(all.body.metadata.resourceVersion));
    });

    test('an empty list has items: [] (not null) and a resourceVersion', async () => {
      const res = await ts.admin.get(secrets(uniq('empty')));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ apiVersion: API_VERSION, kind: 'SharedSecretList', items: [] });
      expect(res.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      expect(res.text).toContain('"items":[]');
    });

    test('PUT replaces the object (200), keeps uid and moves resourceVersion', async () => {
      const name = uniq('put');
      const created = await createSecret(name);
      const replacement = { ...created, spec: { displayName: 'Replaced', data: { other: 'b3RoZXI=' } } };
      const res = await ts.admin.put(secret(name), replacement);
      expect(res.status).toBe(200);
      expect(res.body.spec).toEqual({ displayName: 'Replaced', data: { other: 'b3RoZXI=' } });
      expect(res.body.metadata.uid).toBe(created.metadata.uid);
      expect(res.body.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
      const got = await ts.admin.get(secret(name));
      expect(got.body).toEqual(res.body);
      expect((await peek.value(peek.sharedSecretKey(ns, name))).spec).toEqual({
        displayName: 'Replaced',
        data: { other: 'b3RoZXI=' },
      });
    });

    test('JSON patch adding one annotation (the spec example) changes only that annotation', async () => {
      const name = uniq('jsonpatch');
      const created = await createSecret(name, { metadata: { name, annotations: { 'example.com/owner': 'team-a' } } });
      const res = await ts.admin.patch(
        secret(name),
        [{ op: 'add', path: '/metadata/annotations/example.com~1note', value: 'hello' }],
        JSON_PATCH,
      );
      expect(res.status).toBe(200);
      expect(res.body.metadata.annotations).toEqual({ 'example.com/owner': 'team-a', 'example.com/note': 'hello' });
      expect(res.body.spec).toEqual(created.spec);
      expect(res.body.metadata.uid).toBe(created.metadata.uid);
      expect(res.body.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
      expect((await ts.admin.get(secret(name))).body).toEqual(res.body);
    });

    test('JSON patch adding an annotation when there is no annotations map fails (422) and changes nothing', async () => {
      const name = uniq('jsonpatch-noann');
      const created = await createSecret(name);
      const res = await ts.admin.patch(
        secret(name),
        [{ op: 'add', path: '/metadata/annotations/note', value: 'hello' }],
        JSON_PATCH,
      );
      expectStatus(res, 422, 'Invalid', 'the server rejected our request due to an error in our request');
      const got = await ts.admin.get(secret(name));
      expect(got.body).toEqual(created);
    });

    test('merge patch changes the named fields, keeps the rest, and null removes a field', async () => {
      const name = uniq('mergepatch');
      const created = await createSecret(name);
      const res = await ts.admin.patch(
        secret(name),
        {
          metadata: { labels: { tier: 'gold' } },
          spec: { displayName: 'Merged', description: null, data: { extra: 'ZXh0cmE=' } },
        },
        MERGE_PATCH,
      );
      expect(res.status).toBe(200);
      expect(res.body.metadata.labels).toEqual({ tier: 'gold' });
      expect(res.body.spec).toEqual({ displayName: 'Merged', data: { ...created.spec.data, extra: 'ZXh0cmE=' } });
      expect(res.body.metadata.uid).toBe(created.metadata.uid);
      expect((await ts.admin.get(secret(name))).body).toEqual(res.body);
    });

    test('DELETE answers a Success Status naming the object, after which it is gone', async () => {
      const name = uniq('delete');
      const created = await createSecret(name);
      const res = await ts.admin.delete(secret(name));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name, group: GROUP, kind: 'sharedsecrets', uid: created.metadata.uid },
        code: 200,
      });
      const got = await ts.admin.get(secret(name));
      expectStatus(got, 404, 'NotFound');
      expect(got.body.message).toBe(`sharedsecrets.management.platform.sh "${name}" not found`);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
      const again = await ts.admin.delete(secret(name));
      expectStatus(again, 404, 'NotFound', `sharedsecrets.management.platform.sh "${name}" not found`);
    });

    test('PUT, PATCH and DELETE of a missing object are 404 and create nothing', async () => {
      const name = uniq('ghost');
      expectStatus(
        await ts.admin.put(secret(name), { ...secretBody(name), metadata: { name, resourceVersion: '1' } }),
        404,
        'NotFound',
      );
      expectStatus(await ts.admin.patch(secret(name), { spec: { displayName: 'x' } }, MERGE_PATCH), 404, 'NotFound');
      expectStatus(await ts.admin.delete(secret(name)), 404, 'NotFound');
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    });

    test('a named SharedSecret outside a namespace path is 404', async () => {
      const name = uniq('nonamespace');
      await createSecret(name);
      expectStatus(
        await ts.admin.get(`${api}/sharedsecrets/${name}`),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
    });
  });

  describe('Cluster', () => {
    test('create (JSON) answers 201; a namespace in the body is cleared; GET returns it', async () => {
      const name = uniq('cl');
      const body = clusterBody(name);
      body.metadata.namespace = 'some-namespace';
      const res = await ts.admin.post(clusters, body);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        apiVersion: API_VERSION,
        kind: 'Cluster',
        metadata: { name, generation: 1 },
        spec: clusterBody(name).spec,
      });
      expect(res.body.metadata.namespace).toBeUndefined();
      expect(res.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      const got = await ts.admin.get(cluster(name));
      expect(got.status).toBe(200);
      expect(got.body).toEqual(res.body);
      const stored = await peek.value(peek.clusterKey(name));
      expect(stored).toMatchObject({ kind: 'Cluster', metadata: { name } });
      expect(stored.metadata.namespace).toBeUndefined();
    });

    test('create with an application/yaml body', async () => {
      const name = uniq('cl-yaml');
      const body = `apiVersion: ${API_VERSION}\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  networkPeer: true\n  unusable: false\n`;
      const res = await ts.admin.post(clusters, body, { contentType: 'application/yaml' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        kind: 'Cluster',
        metadata: { name },
        spec: { networkPeer: true, unusable: false },
      });
      expect((await ts.admin.get(cluster(name))).body).toEqual(res.body);
    });

    test('kind and apiVersion left out are 400; a mismatching apiVersion is 400 and a mismatching kind 422', async () => {
      const name = uniq('cl-type');
      const res = await ts.admin.post(clusters, { metadata: { name }, spec: { networkPeer: true } });
      expectStatus(res, 400, 'BadRequest');
      expect(res.body.message).toBe("Object 'Kind' is missing in 'object has no kind field '");
      expect((await ts.admin.get(cluster(name))).status).toBe(404);

      const badVersion = uniq('cl-badversion');
      const v = await ts.admin.post(clusters, clusterBody(badVersion, { apiVersion: 'management.platform.sh/v2' }));
      expectStatus(v, 400, 'BadRequest');
      expect(v.body.message).toBe(
        'the API version in the data (management.platform.sh/v2) does not match the expected API version (management.platform.sh/v1)',
      );
      expect((await ts.admin.get(cluster(badVersion))).status).toBe(404);

      const badKind = uniq('cl-badkind');
      const k = await ts.admin.post(clusters, clusterBody(badKind, { kind: 'SharedSecret' }));
      expectStatus(k, 422, 'Invalid');
      expect(k.body.details.causes.map((c: any) => c.field)).toContain('kind');
      expect((await ts.admin.get(cluster(badKind))).status).toBe(404);
      expect(await peek.value(peek.clusterKey(badKind))).toBeUndefined();
    });

    test('an apply configuration must name its apiVersion: left out or another one is 400, as kube says it', async () => {
      const name = uniq('cl-apply-version');
      for (const [apiVersion, shown] of [
        [undefined, ''],
        ['management.platform.sh/v2', 'management.platform.sh/v2'],
      ]) {
        const res = await ts.admin.patch(
          `${cluster(name)}?fieldManager=ci`,
          { ...(apiVersion && { apiVersion }), kind: 'Cluster', metadata: { name }, spec: { networkPeer: true } },
          'application/apply-patch+yaml',
        );
        expectStatus(
          res,
          400,
          'BadRequest',
          `Incorrect version specified in apply patch. Specified patch version: ${shown}, expected: ${API_VERSION}`,
        );
      }
      expect(await peek.value(peek.clusterKey(name))).toBeUndefined();
      const ok = await ts.admin.patch(
        `${cluster(name)}?fieldManager=ci`,
        { apiVersion: API_VERSION, kind: 'Cluster', metadata: { name }, spec: { networkPeer: true } },
        'application/apply-patch+yaml',
      );
      expect(ok.status).toBe(201);
    });

    test('list has kind ClusterList, a resourceVersion and the created clusters', async () => {
      const n1 = uniq('cl-list');
      const n2 = uniq('cl-list');
      await createCluster(n1);
      await createCluster(n2);
      const res = await ts.admin.get(clusters);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ apiVersion: API_VERSION, kind: 'ClusterList' });
      expect(res.body.metadata.resourceVersion).toMatch(/^[0-9]+$/);
      expect(res.body.items.map((i: any) => i.metadata.name)).toEqual(expect.arrayContaining([n1, n2]));
      for (const item of res.body.items) {
        expect(item.kind).toBe('Cluster');
        expect(item.metadata.namespace).toBeUndefined();
      }
    });

    test('the namespaced path for clusters is 404 for every verb and creates nothing', async () => {
      const name = uniq('cl-nspath');
      await createCluster(name);
      const nsPath = `${api}/namespaces/default/clusters`;
      expectStatus(
        await ts.admin.get(`${nsPath}/${name}`),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
      expectStatus(await ts.admin.get(nsPath), 404, 'NotFound', 'the server could not find the requested resource');
      const other = uniq('cl-nspath-new');
      expectStatus(
        await ts.admin.post(nsPath, clusterBody(other)),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
      expect((await ts.admin.get(cluster(other))).status).toBe(404);
      expectStatus(await ts.admin.delete(`${nsPath}/${name}`), 404, 'NotFound');
      expect((await ts.admin.get(cluster(name))).status).toBe(200);
    });

    test('PUT replaces a cluster (200) and keeps its uid; a namespace in the body is cleared', async () => {
      const name = uniq('cl-put');
      const created = await createCluster(name);
      const replacement = {
        ...created,
        metadata: { ...created.metadata, namespace: 'ignored' },
        spec: { networkPeer: true, displayName: 'Now local' },
      };
      const res = await ts.admin.put(cluster(name), replacement);
      expect(res.status).toBe(200);
      expect(res.body.spec).toEqual({ networkPeer: true, displayName: 'Now local' });
      expect(res.body.metadata.uid).toBe(created.metadata.uid);
      expect(res.body.metadata.namespace).toBeUndefined();
      expect((await ts.admin.get(cluster(name))).body).toEqual(res.body);
    });

    test('JSON patch (annotation add) and merge patch on a cluster', async () => {
      const name = uniq('cl-patch');
      const created = await createCluster(name, { metadata: { name, annotations: { a: '1' } } });
      const jp = await ts.admin.patch(
        cluster(name),
        [{ op: 'add', path: '/metadata/annotations/note', value: 'hi' }],
        JSON_PATCH,
      );
      expect(jp.status).toBe(200);
      expect(jp.body.metadata.annotations).toEqual({ a: '1', note: 'hi' });
      expect(jp.body.spec).toEqual(created.spec);

      const mp = await ts.admin.patch(
        cluster(name),
        { spec: { unusable: true, managementNamespace: null } },
        MERGE_PATCH,
      );
      expect(mp.status).toBe(200);
      expect(mp.body.spec).toEqual({
        displayName: created.spec.displayName,
        config: created.spec.config,
        unusable: true,
      });
      expect(mp.body.metadata.annotations).toEqual({ a: '1', note: 'hi' });
      expect((await ts.admin.get(cluster(name))).body).toEqual(mp.body);
    });

    test('DELETE answers a Success Status with kind=clusters, then GET is 404', async () => {
      const name = uniq('cl-del');
      const created = await createCluster(name);
      const res = await ts.admin.delete(cluster(name));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Success',
        code: 200,
        details: { name, group: GROUP, kind: 'clusters', uid: created.metadata.uid },
      });
      const got = await ts.admin.get(cluster(name));
      expectStatus(got, 404, 'NotFound');
      expect(got.body.message).toBe(`clusters.management.platform.sh "${name}" not found`);
      expect(await peek.value(peek.clusterKey(name))).toBeUndefined();
    });
  });

  describe('request errors', () => {
    test('an unknown resource is 404 "the server could not find the requested resource"', async () => {
      const get = await ts.admin.get(`${api}/widgets`);
      expectStatus(get, 404, 'NotFound');
      expect(get.body.message).toBe('the server could not find the requested resource');
      expectStatus(
        await ts.admin.get(`${api}/namespaces/${ns}/widgets/w1`),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
      expectStatus(
        await ts.admin.post(`${api}/namespaces/${ns}/widgets`, { metadata: { name: 'w1' } }),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
    });

    test('an unknown subresource is 404 and a write to it changes nothing', async () => {
      const name = uniq('subres');
      const created = await createSecret(name);
      expectStatus(
        await ts.admin.get(`${secret(name)}/bogus`),
        404,
        'NotFound',
        'the server could not find the requested resource',
      );
      const put = await ts.admin.put(`${secret(name)}/bogus`, { ...created, spec: { displayName: 'changed' } });
      expectStatus(put, 404, 'NotFound', 'the server could not find the requested resource');
      expectStatus(await ts.admin.get(`${cluster('whatever')}/scale`), 404, 'NotFound');
      expect((await ts.admin.get(secret(name))).body).toEqual(created);
    });

    test('POST on a named object is 405 MethodNotAllowed and creates nothing', async () => {
      const name = uniq('post-named');
      const res = await ts.admin.post(secret(name), secretBody(name));
      expectStatus(res, 405, 'MethodNotAllowed');
      expect(res.body.message).toBe(
        'create is not supported on resources of kind "sharedsecrets.management.platform.sh"',
      );
      expect((await ts.admin.get(secret(name))).status).toBe(404);

      const cname = uniq('post-named-cl');
      const cres = await ts.admin.post(cluster(cname), clusterBody(cname));
      expectStatus(
        cres,
        405,
        'MethodNotAllowed',
        'create is not supported on resources of kind "clusters.management.platform.sh"',
      );
      expect((await ts.admin.get(cluster(cname))).status).toBe(404);
    });

    test('PUT or PATCH on a collection is 405 MethodNotAllowed and changes nothing', async () => {
      const name = uniq('put-collection');
      const created = await createSecret(name);
      const put = await ts.admin.put(sharedSecretsPath(ns, prefix), secretBody(name));
      expectStatus(
        put,
        405,
        'MethodNotAllowed',
        'update is not supported on resources of kind "sharedsecrets.management.platform.sh"',
      );
      const patch = await ts.admin.patch(
        `${prefix}${CLUSTERS_PATH}`,
        { metadata: { labels: { a: 'b' } } },
        MERGE_PATCH,
      );
      expectStatus(
        patch,
        405,
        'MethodNotAllowed',
        'patch is not supported on resources of kind "clusters.management.platform.sh"',
      );
      expect((await ts.admin.get(secret(name))).body).toEqual(created);
    });

    test('Accept: application/yaml returns YAML with the same content as JSON', async () => {
      const name = uniq('accept-yaml');
      await createSecret(name);
      const json = await ts.admin.get(secret(name));
      const res = await ts.admin.get(secret(name), { headers: { Accept: 'application/yaml' } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/yaml/);
      expect(res.body).toBeUndefined(); // not JSON
      expect(yaml.load(res.text)).toEqual(json.body);

      const list = await ts.admin.get(secrets(), { headers: { Accept: 'application/yaml' } });
      expect(list.status).toBe(200);
      expect(list.headers['content-type']).toMatch(/^application\/yaml/);
      expect((yaml.load(list.text) as any).kind).toBe('SharedSecretList');
    });

    test('Accept: application/vnd.kubernetes.protobuf, application/json is answered with JSON', async () => {
      const name = uniq('accept-proto');
      const created = await createSecret(name);
      const res = await ts.admin.get(secret(name), {
        headers: { Accept: 'application/vnd.kubernetes.protobuf, application/json' },
      });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual(created);
    });

    test('Accept: text/html alone is 406 NotAcceptable, and a create asking for it stores nothing', async () => {
      const name = uniq('accept-html');
      await createSecret(name);
      const res = await ts.admin.get(secret(name), { headers: { Accept: 'text/html' } });
      expectStatus(res, 406, 'NotAcceptable', 'only the following media types are accepted: ');
      expect(res.body.message).toContain('application/json');
      expect(res.body.message).toContain('application/yaml');

      const other = uniq('accept-html-create');
      const post = await ts.admin.post(secrets(), secretBody(other), { headers: { Accept: 'text/html' } });
      expectStatus(post, 406, 'NotAcceptable');
      expect((await ts.admin.get(secret(other))).status).toBe(404);
    });

    test('Content-Type: text/plain is 415 and stores nothing', async () => {
      const name = uniq('ctype');
      const res = await ts.admin.post(secrets(), JSON.stringify(secretBody(name)), { contentType: 'text/plain' });
      expectStatus(
        res,
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: ',
      );
      expect(res.body.message).toContain('application/json');
      expect((await ts.admin.get(secret(name))).status).toBe(404);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    });

    test('a strategic merge patch is 415 listing the patch types served, and changes nothing', async () => {
      const name = uniq('smp');
      const created = await createSecret(name);
      const res = await ts.admin.patch(
        secret(name),
        { spec: { displayName: 'smp' } },
        'application/strategic-merge-patch+json',
      );
      expectStatus(
        res,
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: ',
      );
      expect(res.body.message).toContain('application/json-patch+json');
      expect(res.body.message).toContain('application/merge-patch+json');
      expect((await ts.admin.get(secret(name))).body).toEqual(created);
    });

    test('malformed JSON is 400 BadRequest and stores nothing', async () => {
      const name = uniq('badjson');
      const namespace = uniq('badjson-ns');
      const res = await ts.admin.post(secrets(namespace), `{"metadata": {"name": "${name}"}, "spec": {`, {
        contentType: 'application/json',
      });
      expectStatus(res, 400, 'BadRequest', 'the object provided is unrecognized');
      expect((await ts.admin.get(secret(name, namespace))).status).toBe(404);
      expect((await ts.admin.get(secrets(namespace))).body.items).toEqual([]);

      const created = await createSecret(uniq('badjson-put'));
      const put = await ts.admin.put(secret(created.metadata.name), '{"metadata": ', {
        contentType: 'application/json',
      });
      expectStatus(put, 400, 'BadRequest');
      expect((await ts.admin.get(secret(created.metadata.name))).body).toEqual(created);

      const patch = await ts.admin.patch(secret(created.metadata.name), '{"spec": ', MERGE_PATCH);
      expectStatus(patch, 400, 'BadRequest');
      expect((await ts.admin.get(secret(created.metadata.name))).body).toEqual(created);
    });

    test('malformed YAML is 400 BadRequest and stores nothing', async () => {
      const namespace = uniq('badyaml-ns');
      const name = uniq('badyaml');
      const res = await ts.admin.post(
        secrets(namespace),
        `metadata:\n  name: ${name}\nspec: [unclosed\n  displayName: "x\n`,
        { contentType: 'application/yaml' },
      );
      expectStatus(res, 400, 'BadRequest', 'yaml');
      expect((await ts.admin.get(secret(name, namespace))).status).toBe(404);
      expect((await ts.admin.get(secrets(namespace))).body.items).toEqual([]);
    });

    test('a body over 3 MiB is 413 RequestEntityTooLarge and stores nothing', async () => {
      const name = uniq('huge');
      const body = secretBody(name);
      body.spec.description = 'x'.repeat(3 * 1024 * 1024 + 10);
      const res = await ts.admin.post(secrets(), body);
      expectStatus(res, 413, 'RequestEntityTooLarge', 'Request entity too large');
      expect(res.body.message).toContain('3145728');
      expect((await ts.admin.get(secret(name))).status).toBe(404);
      expect(await peek.value(peek.sharedSecretKey(ns, name))).toBeUndefined();
    });

    test("a name containing '%' in the URL is 400 BadRequest", async () => {
      const res = await ts.admin.get(`${secrets()}/a%25b`);
      expectStatus(res, 400, 'BadRequest', 'Name parameter invalid');
      const del = await ts.admin.delete(`${secrets()}/a%25b`);
      expectStatus(del, 400, 'BadRequest', 'Name parameter invalid');
      const cl = await ts.admin.get(`${clusters}/a%25b`);
      expectStatus(cl, 400, 'BadRequest', 'Name parameter invalid');
    });
  });
});

describe('both path forms serve the same objects', () => {
  const direct = `${DIRECT_PREFIX}${GROUP_PATH}`;

  test('an object created on one form is read, listed, patched and deleted identically on the other', async () => {
    const ns = uniq('forms');
    const name = uniq('shared');
    const created = await ts.admin.post(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets`, secretBody(name));
    expect(created.status).toBe(201);

    const viaAggregated = await ts.admin.get(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets/${name}`);
    const viaDirect = await ts.admin.get(`${direct}/namespaces/${ns}/sharedsecrets/${name}`);
    expect(viaDirect.status).toBe(200);
    expect(viaDirect.body).toEqual(viaAggregated.body);
    expect(viaDirect.body).toEqual(created.body);

    const listAggregated = await ts.admin.get(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets`);
    const listDirect = await ts.admin.get(`${direct}/namespaces/${ns}/sharedsecrets`);
    expect(listDirect.body.items).toEqual(listAggregated.body.items);
    expect(listDirect.body.kind).toBe(listAggregated.body.kind);

    const patched = await ts.admin.patch(
      `${direct}/namespaces/${ns}/sharedsecrets/${name}`,
      { metadata: { labels: { via: 'direct' } } },
      MERGE_PATCH,
    );
    expect(patched.status).toBe(200);
    expect((await ts.admin.get(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets/${name}`)).body).toEqual(patched.body);

    const missingAggregated = await ts.admin.get(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets/nope`);
    const missingDirect = await ts.admin.get(`${direct}/namespaces/${ns}/sharedsecrets/nope`);
    expect(missingDirect.status).toBe(404);
    expect(missingDirect.body).toEqual(missingAggregated.body);

    const del = await ts.admin.delete(`${direct}/namespaces/${ns}/sharedsecrets/${name}`);
    expect(del.status).toBe(200);
    expect((await ts.admin.get(`${GROUP_PATH}/namespaces/${ns}/sharedsecrets/${name}`)).status).toBe(404);
  });

  test('a cluster created on the direct form is the same object on the aggregated form', async () => {
    const name = uniq('shared-cl');
    const created = await ts.admin.post(`${direct}/clusters`, clusterBody(name));
    expect(created.status).toBe(201);
    const got = await ts.admin.get(`${GROUP_PATH}/clusters/${name}`);
    expect(got.body).toEqual(created.body);
    const errA = await ts.admin.get(`${GROUP_PATH}/widgets`);
    const errD = await ts.admin.get(`${direct}/widgets`);
    expect(errD.status).toBe(errA.status);
    expect(errD.body).toEqual(errA.body);
  });
});
