/**
 * The OpenAPI documents built from the CRD definitions and the actions, without HTTP: shapes kubectl and
 * kube-aggregator read (paths, x-kubernetes-* extensions, PATCH content types, fieldValidation), schema names and
 * $refs, ObjectMeta on every kind, and v2 filtering.
 */
import { describe, expect, test } from '@jest/globals';
import { objectMetaSchema } from '../../src/apimachinery/metaschema.js';
import { buildOpenAPIV2, buildOpenAPIV3 } from '../../src/apimachinery/openapi/documents.js';
import { kindSchema, schemaName } from '../../src/apimachinery/openapi/kinds.js';
import type { ServedAction } from '../../src/apimachinery/openapi/operations.js';
import { kinds as servedKinds } from '../../src/kinds/index.js';
import { loadDefinitions, type ResourceDefinition } from '../../src/registry/definitions.js';

const GROUP = 'management.platform.sh';
const defs = loadDefinitions();
const v3 = buildOpenAPIV3(defs, GROUP, 'v1');
const v2 = buildOpenAPIV2(defs);

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every `$ref` in a document. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

/** Every schema-ish object with the given key, anywhere in a document. */
function keyed(node: unknown, key: string, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) node.forEach((n) => keyed(n, key, out));
  else if (node && typeof node === 'object') {
    if (key in node) out.push(node);
    Object.values(node).forEach((v) => keyed(v, key, out));
  }
  return out;
}

function resolve(doc: any, ref: string): any {
  expect(ref.startsWith('#/')).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .reduce((at, seg) => (at === undefined ? undefined : at[seg.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
}

function operations(doc: any): [string, string, any][] {
  return Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
    METHODS.filter((m) => item[m]).map((m) => [path, m, item[m]] as [string, string, any]),
  );
}

const paramNames = (op: any) => (op.parameters ?? []).map((p: any) => p.name);

describe('names', () => {
  test('schema names are the reversed group, version and kind, as apiextensions names them', () => {
    expect(schemaName(GROUP, 'v1', 'SharedSecret')).toBe('sh.platform.management.v1.SharedSecret');
    expect(schemaName('bar.k8s.io', 'v1', 'Foo')).toBe('io.k8s.bar.v1.Foo');
  });
});

describe('v3 group-version document', () => {
  test('is OpenAPI 3.0 with a path for every endpoint the server has', () => {
    expect(v3.openapi).toBe('3.0.0');
    const base = `/apis/${GROUP}/v1`;
    // Each kind of the one list: its list (in all namespaces, for a namespaced one), its object and its status.
    const expected = servedKinds.flatMap(({ ref }) => {
      const namespaced = defs.find((d) => d.kind === ref.kind)!.namespaced;
      const at = namespaced ? `${base}/namespaces/{namespace}/${ref.plural}` : `${base}/${ref.plural}`;
      return [...(namespaced ? [`${base}/${ref.plural}`] : []), at, `${at}/{name}`, `${at}/{name}/status`];
    });
    expect(expected).toContain(`${base}/namespaces/{namespace}/projectsecrets/{name}/status`);
    expect(Object.keys(v3.paths).sort()).toEqual(expected.sort());
    const actions = (path: string) =>
      Object.fromEntries(
        METHODS.filter((m) => v3.paths[path][m]).map((m) => [m, v3.paths[path][m]['x-kubernetes-action']]),
      );
    expect(actions(`${base}/sharedsecrets`)).toEqual({ get: 'list' });
    expect(actions(`${base}/namespaces/{namespace}/sharedsecrets`)).toEqual({
      get: 'list',
      post: 'post',
      delete: 'deletecollection',
    });
    expect(actions(`${base}/namespaces/{namespace}/sharedsecrets/{name}`)).toEqual({
      get: 'get',
      put: 'put',
      delete: 'delete',
      patch: 'patch',
    });
    expect(actions(`${base}/namespaces/{namespace}/sharedsecrets/{name}/status`)).toEqual({
      get: 'get',
      put: 'put',
      patch: 'patch',
    });
    expect(actions(`${base}/clusters`)).toEqual({ get: 'list', post: 'post', delete: 'deletecollection' });
    expect(actions(`${base}/clusters/{name}`)).toEqual({ get: 'get', put: 'put', delete: 'delete', patch: 'patch' });
  });

  test('path parameters and operation ids follow kube-apiserver', () => {
    const item = v3.paths[`/apis/${GROUP}/v1/namespaces/{namespace}/sharedsecrets/{name}`];
    expect(item.parameters.map((p: any) => [p.name, p.in, p.required ?? false])).toEqual([
      ['name', 'path', true],
      ['namespace', 'path', true],
      ['pretty', 'query', false],
    ]);
    expect(item.patch.operationId).toBe('patchManagementPlatformShV1NamespacedSharedSecret');
    expect(item.get.operationId).toBe('readManagementPlatformShV1NamespacedSharedSecret');
    expect(v3.paths[`/apis/${GROUP}/v1/sharedsecrets`].get.operationId).toBe(
      'listManagementPlatformShV1SharedSecretForAllNamespaces',
    );
    expect(v3.paths[`/apis/${GROUP}/v1/clusters/{name}/status`].patch.operationId).toBe(
      'patchManagementPlatformShV1ClusterStatus',
    );
    expect(v3.paths[`/apis/${GROUP}/v1/clusters`].post.description).toBe('create a Cluster');
    expect(v3.paths[`/apis/${GROUP}/v1/clusters`].get.tags).toEqual(['managementPlatformSh_v1']);
  });

  test('every operation carries its kind as x-kubernetes-group-version-kind (an object, as kubectl reads it)', () => {
    const ops = operations(v3);
    // A namespaced kind: list in all namespaces, list+create+deletecollection, get/put/delete/patch, status
    // get/put/patch; a cluster-scoped one the same but the first.
    const namespaced = servedKinds.filter(({ ref }) => defs.find((d) => d.kind === ref.kind)!.namespaced).length;
    expect(ops.length).toBe(namespaced * 11 + (servedKinds.length - namespaced) * 10);
    // The plural of each kind, from the one list of kinds; the longest first (projects is a prefix of projectsecrets).
    const kinds = servedKinds.map((k) => k.ref).sort((a, b) => b.plural.length - a.plural.length);
    for (const [path, , op] of ops) {
      const kind = kinds.find(({ plural }) => path.includes(`/${plural}`))!.kind;
      expect(op['x-kubernetes-group-version-kind']).toEqual({ group: GROUP, version: 'v1', kind });
      expect(op.responses['401']).toEqual({ description: 'Unauthorized' });
    }
  });

  test('PATCH takes JSON patch, merge patch and apply patch, never strategic merge patch', () => {
    const patches = operations(v3).filter(([, m]) => m === 'patch');
    // The object's and its status's, of each kind.
    expect(patches).toHaveLength(servedKinds.length * 2);
    for (const [, , op] of patches) {
      expect(Object.keys(op.requestBody.content)).toEqual([
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/apply-patch+yaml',
      ]);
      expect(op.requestBody.content['application/strategic-merge-patch+json']).toBeUndefined();
      expect(op.requestBody.content['application/merge-patch+json'].schema).toEqual({
        $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch',
      });
      expect(op.requestBody.required).toBe(true);
    }
  });

  test('writes declare dryRun, fieldManager and fieldValidation on the operation itself (cli-runtime reads them there)', () => {
    for (const [, method, op] of operations(v3)) {
      const names = paramNames(op);
      if (method === 'patch') expect(names).toEqual(['dryRun', 'fieldManager', 'fieldValidation', 'force']);
      if (method === 'post' || method === 'put') expect(names).toEqual(['dryRun', 'fieldManager', 'fieldValidation']);
      if (method === 'delete')
        expect(names).toEqual(expect.arrayContaining(['dryRun', 'gracePeriodSeconds', 'propagationPolicy']));
      if (op['x-kubernetes-action'] === 'list')
        expect(names).toEqual(
          expect.arrayContaining(['labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion', 'watch']),
        );
      for (const p of op.parameters ?? [])
        expect(p).toMatchObject({ in: 'query', schema: { type: expect.any(String) } });
    }
  });

  test('bodies and responses refer to the kind, its list, Status and DeleteOptions', () => {
    const base = `/apis/${GROUP}/v1/namespaces/{namespace}/sharedsecrets`;
    const kindRef = { $ref: '#/components/schemas/sh.platform.management.v1.SharedSecret' };
    expect(v3.paths[base].post.requestBody).toEqual({
      content: { 'application/json': { schema: kindRef }, 'application/yaml': { schema: kindRef } },
      required: true,
    });
    expect(Object.keys(v3.paths[base].post.responses)).toEqual(['200', '201', '202', '401']);
    expect(v3.paths[base].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/sh.platform.management.v1.SharedSecretList',
    });
    expect(v3.paths[`${base}/{name}`].delete.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status',
    });
    expect(v3.paths[`${base}/{name}`].delete.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions',
    });
    expect(v3.paths[`${base}/{name}`].delete.requestBody.required).toBeUndefined();
  });

  test('components: kinds, lists and the meta types, tagged with their GVKs where kube tags them', () => {
    const s = v3.components.schemas;
    const gvk = (name: string) => s[name]['x-kubernetes-group-version-kind'];
    expect(gvk('sh.platform.management.v1.SharedSecret')).toEqual([
      { group: GROUP, kind: 'SharedSecret', version: 'v1' },
    ]);
    expect(gvk('sh.platform.management.v1.SharedSecretList')).toEqual([
      { group: GROUP, kind: 'SharedSecretList', version: 'v1' },
    ]);
    expect(gvk('sh.platform.management.v1.Cluster')).toEqual([{ group: GROUP, kind: 'Cluster', version: 'v1' }]);
    expect(gvk('sh.platform.management.v1.ClusterList')).toEqual([
      { group: GROUP, kind: 'ClusterList', version: 'v1' },
    ]);
    expect(gvk('io.k8s.apimachinery.pkg.apis.meta.v1.Status')).toEqual([{ group: '', kind: 'Status', version: 'v1' }]);
    expect(gvk('io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions')).toEqual([
      { group: '', kind: 'DeleteOptions', version: 'v1' },
    ]);
    for (const name of [
      'ObjectMeta',
      'ListMeta',
      'OwnerReference',
      'ManagedFieldsEntry',
      'Time',
      'Patch',
      'StatusDetails',
      'StatusCause',
      'Preconditions',
      'FieldsV1',
    ]) {
      expect(s[`io.k8s.apimachinery.pkg.apis.meta.v1.${name}`]).toBeDefined();
      expect(gvk(`io.k8s.apimachinery.pkg.apis.meta.v1.${name}`)).toBeUndefined();
    }
  });

  test('a kind is its CRD schema with ObjectMeta and TypeMeta; descriptions carry through', () => {
    const ss = v3.components.schemas['sh.platform.management.v1.SharedSecret'];
    expect(ss.description).toBe(
      'SharedSecret holds sensitive key/value data shared across users, teams and connected clusters.',
    );
    expect(ss.properties.metadata).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }],
      description: expect.stringContaining("Standard object's metadata"),
    });
    expect(ss.properties.apiVersion).toMatchObject({
      type: 'string',
      description: expect.stringContaining('APIVersion defines'),
    });
    expect(ss.properties.spec.properties.access.description).toBe(
      'Access rights for users and teams. They are transformed into Roles and RoleBindings. At most 64 entries; entries with the same verbs and subresources share one Role and one RoleBinding.',
    );
    expect(ss.properties.spec.properties.access.items.properties.verbs.description).toContain(
      'Verbs that apply to all resource kinds',
    );
    expect(ss.properties.spec.properties.data.additionalProperties).toEqual({ type: 'string', format: 'byte' });
    expect(ss.properties.status.properties.conditions.items.required).toEqual(['type', 'status']);
    const cluster = v3.components.schemas['sh.platform.management.v1.Cluster'];
    expect(cluster.properties.spec.properties.config.description).toBe(
      'Reference to a secret that holds the connection configuration of the cluster. secretName is required unless local or networkPeer is true.',
    );
    // kube publishes a CRD's x-kubernetes-validations as they are written.
    expect(cluster.properties.spec['x-kubernetes-validations']).toEqual([
      expect.objectContaining({ reason: 'FieldValueRequired', fieldPath: '.config.secretName' }),
    ]);
    // The status the server writes is typed (kubectl explain shows it); fields it does not know are kept.
    expect(cluster.properties.status).toMatchObject({
      type: 'object',
      description: 'The observed state of the cluster, written by the server.',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: { phase: { type: 'string' }, online: { type: 'boolean' }, reason: { type: 'string' } },
    });
    const list = v3.components.schemas['sh.platform.management.v1.SharedSecretList'];
    expect(list.required).toEqual(['items']);
    expect(list.properties.items.items).toEqual({
      $ref: '#/components/schemas/sh.platform.management.v1.SharedSecret',
    });
    expect(list.properties.metadata.allOf).toEqual([
      { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta' },
    ]);
  });

  test('the definitions are not changed by building documents from them', () => {
    expect(defs.find((d) => d.kind === 'Cluster')!.schema.properties!.metadata).toEqual({ type: 'object' });
    expect(defs.find((d) => d.kind === 'Cluster')!.schema.properties!.status).toMatchObject({ type: 'object' });
  });

  test('every $ref resolves inside the document', () => {
    const all = refs(v3);
    expect(all.length).toBeGreaterThan(20);
    for (const r of all) {
      expect(r.startsWith('#/components/schemas/')).toBe(true);
      expect(resolve(v3, r)).toBeDefined();
    }
  });
});

describe('v2 document', () => {
  test('is Swagger 2.0 with the same paths, consumes/produces and GVKs', () => {
    expect(v2.swagger).toBe('2.0');
    expect(Object.keys(v2.paths).sort()).toEqual(Object.keys(v3.paths).sort());
    for (const [path, method, op] of operations(v2)) {
      expect(op['x-kubernetes-group-version-kind']).toEqual(v3.paths[path][method]['x-kubernetes-group-version-kind']);
      expect(op['x-kubernetes-action']).toBe(v3.paths[path][method]['x-kubernetes-action']);
      expect(op.produces).toEqual(['application/json', 'application/yaml']);
      if (method === 'patch') {
        expect(op.consumes).toEqual([
          'application/json-patch+json',
          'application/merge-patch+json',
          'application/apply-patch+yaml',
        ]);
        expect(paramNames(op)).toEqual(['body', 'dryRun', 'fieldManager', 'fieldValidation', 'force']);
      } else {
        expect(op.consumes).toEqual(['application/json', 'application/yaml']);
      }
    }
    const post = v2.paths[`/apis/${GROUP}/v1/clusters`].post;
    expect(post.parameters[0]).toEqual({
      name: 'body',
      in: 'body',
      required: true,
      schema: { $ref: '#/definitions/sh.platform.management.v1.Cluster' },
    });
    expect(post.responses['201']).toEqual({
      description: 'Created',
      schema: { $ref: '#/definitions/sh.platform.management.v1.Cluster' },
    });
    expect(v2.paths[`/apis/${GROUP}/v1/clusters/{name}`].parameters[0]).toEqual({
      uniqueItems: true,
      type: 'string',
      description: 'name of the Cluster',
      name: 'name',
      in: 'path',
      required: true,
    });
  });

  test('definitions: the kinds with their GVKs, metadata a plain $ref, filtered for kubectl as apiextensions does', () => {
    const d = v2.definitions;
    expect(d['sh.platform.management.v1.SharedSecret']['x-kubernetes-group-version-kind']).toEqual([
      { group: GROUP, kind: 'SharedSecret', version: 'v1' },
    ]);
    expect(d['sh.platform.management.v1.Cluster'].properties.metadata).toEqual({
      $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
      description: expect.any(String),
    });
    // An object keeping unknown fields loses its type (kubectl's v2 validation would refuse its fields otherwise).
    expect(d['sh.platform.management.v1.Cluster'].properties.status).toEqual({
      description: 'The observed state of the cluster, written by the server.',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    expect(
      d['sh.platform.management.v1.SharedSecret'].properties.spec.properties.access.items.properties.users.description,
    ).toBe('Users that are granted the verbs.');
    for (const r of refs(v2)) {
      expect(r.startsWith('#/definitions/')).toBe(true);
      expect(resolve(v2, r)).toBeDefined();
    }
    expect(keyed(v2, 'allOf')).toEqual([]);
  });
});

describe('schemas of other CRD shapes', () => {
  const synthetic = (schema: object): ResourceDefinition => ({
    group: 'bar.k8s.io',
    version: 'v1',
    apiVersion: 'bar.k8s.io/v1',
    kind: 'Foo',
    listKind: 'FooList',
    plural: 'foos',
    singular: 'foo',
    namespaced: true,
    shortNames: [],
    categories: [],
    hasStatus: false,
    schema: schema as any,
    validationRules: () => [],
    printerColumns: [],
    groupResource: { group: 'bar.k8s.io', resource: 'foos' },
    groupKind: { group: 'bar.k8s.io', kind: 'Foo' },
  });

  test('preserve-unknown-fields at the root: v2 publishes just an object', () => {
    const def = synthetic({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(kindSchema(def, true)).toEqual({
      type: 'object',
      'x-kubernetes-group-version-kind': [{ group: 'bar.k8s.io', kind: 'Foo', version: 'v1' }],
    });
    expect(kindSchema(def, false).properties.metadata.allOf).toBeDefined();
  });

  test('int-or-string, nullable, defaults, junctors and embedded resources', () => {
    const def = synthetic({
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          required: ['port', 'maybe'],
          properties: {
            port: { 'x-kubernetes-int-or-string': true },
            maybe: { type: 'object', nullable: true, properties: { a: { type: 'string' } } },
            mode: { type: 'string', default: 'fast', oneOf: [{ pattern: '^a' }, { pattern: '^b' }] },
            template: {
              type: 'object',
              'x-kubernetes-embedded-resource': true,
              'x-kubernetes-preserve-unknown-fields': true,
            },
          },
        },
      },
    });
    const three = kindSchema(def, false).properties.spec;
    expect(three.properties.port.anyOf).toEqual([{ type: 'integer' }, { type: 'string' }]);
    expect(three.properties.maybe).toMatchObject({ type: 'object', nullable: true });
    expect(three.properties.mode).toMatchObject({ default: 'fast', oneOf: expect.any(Array) });
    expect(Object.keys(three.properties.template.properties)).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(three.properties.template.required).toEqual(['kind', 'apiVersion']);

    const two = kindSchema(def, true).properties.spec;
    expect(two.properties.port).toEqual({ 'x-kubernetes-int-or-string': true });
    expect(two.properties.maybe).toEqual({});
    expect(two.required).toEqual(['port']);
    expect(two.properties.mode).toEqual({ type: 'string' });
    expect(two.properties.template).toEqual({
      'x-kubernetes-embedded-resource': true,
      'x-kubernetes-preserve-unknown-fields': true,
    });
  });
});

describe('with actions', () => {
  const requestKind = (fields: object) => ({
    type: 'object' as const,
    properties: {
      apiVersion: { type: 'string' as const },
      kind: { type: 'string' as const },
      metadata: { type: 'object' as const },
      ...fields,
    },
  });
  const actions: ServedAction[] = [
    {
      group: GROUP,
      version: 'v1',
      resource: 'directclusterendpointtokens',
      subresource: '',
      kind: 'DirectClusterEndpointToken',
      namespaced: false,
      verbs: ['create'],
      schema: requestKind({ status: { type: 'object', properties: { token: { type: 'string' } } } }),
    },
    {
      group: GROUP,
      version: 'v1',
      resource: 'virtualclusterinstances',
      subresource: 'kubeconfig',
      kind: 'VirtualClusterInstanceKubeConfig',
      namespaced: true,
      anyNamespace: true,
      verbs: ['get', 'create'],
      schema: requestKind({ kubeconfig: { type: 'string' } }),
    },
  ];
  const docs = { v2: buildOpenAPIV2(defs, actions), v3: buildOpenAPIV3(defs, GROUP, 'v1', actions) };
  const schemasOf = (doc: any, v2: boolean): Record<string, any> => (v2 ? doc.definitions : doc.components.schemas);
  const targetOf = (schema: any): string => schema.$ref ?? schema.allOf?.[0]?.$ref;

  test.each([true, false])(
    'v2=%s: every kind, list and request kind has apiVersion and kind, and metadata of the meta type kubectl explain shows',
    (isV2) => {
      const doc = isV2 ? docs.v2 : docs.v3;
      const schemas = schemasOf(doc, isV2);
      const kinds = [...defs.map((d) => d.kind), ...actions.map((a) => a.kind)];
      const lists = defs.map((d) => d.listKind);
      for (const kind of [...kinds, ...lists]) {
        const schema = schemas[schemaName(GROUP, 'v1', kind)];
        expect(schema['x-kubernetes-group-version-kind']).toEqual([{ group: GROUP, kind, version: 'v1' }]);
        expect(schema.properties.apiVersion.type).toBe('string');
        expect(schema.properties.kind.type).toBe('string');
        const meta = resolve(doc, targetOf(schema.properties.metadata));
        expect(meta).toBe(
          schemas[`io.k8s.apimachinery.pkg.apis.meta.v1.${lists.includes(kind) ? 'ListMeta' : 'ObjectMeta'}`],
        );
      }
      // ObjectMeta as published has exactly the fields the server keeps in metadata (the rest it drops).
      const objectMeta = schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
      expect(Object.keys(objectMeta.properties).sort()).toEqual(Object.keys(objectMetaSchema.properties!).sort());
    },
  );

  test.each([true, false])('v2=%s: every $ref resolves, in operations and definitions alike', (isV2) => {
    const doc = isV2 ? docs.v2 : docs.v3;
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(20);
    for (const r of all) {
      expect(r.startsWith(isV2 ? '#/definitions/' : '#/components/schemas/')).toBe(true);
      expect(resolve(doc, r)).toBeDefined();
    }
  });

  test('action endpoints: POST on a kind of its own; GET and POST on a subresource, with and without the namespace', () => {
    const base = `/apis/${GROUP}/v1`;
    const tokens = docs.v3.paths[`${base}/directclusterendpointtokens`];
    expect(Object.keys(tokens)).toEqual(['post', 'parameters']);
    expect(tokens.post).toMatchObject({
      operationId: 'createManagementPlatformShV1DirectClusterEndpointToken',
      'x-kubernetes-action': 'post',
      'x-kubernetes-group-version-kind': { group: GROUP, version: 'v1', kind: 'DirectClusterEndpointToken' },
    });
    expect(tokens.post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/sh.platform.management.v1.DirectClusterEndpointToken',
    });
    for (const path of [
      `${base}/namespaces/{namespace}/virtualclusterinstances/{name}/kubeconfig`,
      `${base}/virtualclusterinstances/{name}/kubeconfig`,
    ]) {
      const item = docs.v3.paths[path];
      expect(item.get['x-kubernetes-action']).toBe('get');
      expect(item.post['x-kubernetes-action']).toBe('post');
      expect(item.get.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/sh.platform.management.v1.VirtualClusterInstanceKubeConfig',
      });
      expect(item.parameters.map((p: any) => p.name)).toEqual(
        path.includes('{namespace}') ? ['name', 'namespace', 'pretty'] : ['name', 'pretty'],
      );
    }
    // As kube-apiserver names a subresource's operations (createCoreV1NamespacedPodEviction, "create eviction of a
    // Pod", "name of the Eviction"): the parent's kind, then the subresource; the name parameter names the request kind.
    const namespaced = docs.v3.paths[`${base}/namespaces/{namespace}/virtualclusterinstances/{name}/kubeconfig`];
    expect(namespaced.get).toMatchObject({
      operationId: 'readManagementPlatformShV1NamespacedVirtualClusterInstanceKubeconfig',
      description: 'read kubeconfig of the specified VirtualClusterInstance',
    });
    expect(namespaced.post).toMatchObject({
      operationId: 'createManagementPlatformShV1NamespacedVirtualClusterInstanceKubeconfig',
      description: 'create kubeconfig of a VirtualClusterInstance',
    });
    expect(namespaced.parameters[0].description).toBe('name of the VirtualClusterInstanceKubeConfig');
    expect(docs.v3.paths[`${base}/virtualclusterinstances/{name}/kubeconfig`].get.operationId).toBe(
      'readManagementPlatformShV1AnyNamespaceVirtualClusterInstanceKubeconfig',
    );
    expect(tokens.post.description).toBe('create a DirectClusterEndpointToken');
    expect(Object.keys(docs.v2.paths).sort()).toEqual(Object.keys(docs.v3.paths).sort());
  });
});

describe('the meta/v1 definitions', () => {
  test('are published as kube publishes them: times by reference, no nullable, ownerReferences a map keyed by uid', () => {
    const three = v3.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'].properties;
    const two = v2.definitions['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'].properties;
    expect(three.creationTimestamp).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time' }],
      description: expect.stringContaining('CreationTimestamp'),
    });
    expect(two.deletionTimestamp).toEqual({
      $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time',
      description: expect.stringContaining('DeletionTimestamp'),
    });
    expect(three.ownerReferences).toMatchObject({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['uid'],
      items: { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference' },
    });
    const metaV3 = Object.entries(v3.components.schemas).filter(([name]) =>
      name.startsWith('io.k8s.apimachinery.pkg.apis.meta.v1.'),
    );
    expect(metaV3.length).toBe(12);
    expect(keyed(metaV3, 'nullable')).toEqual([]);
    expect(keyed(v2, 'nullable')).toEqual([]);
  });

  test('building a document twice gives the same document (the shared data is not changed by building)', () => {
    expect(buildOpenAPIV3(defs, GROUP, 'v1')).toEqual(v3);
    expect(buildOpenAPIV2(defs)).toEqual(v2);
  });
});
