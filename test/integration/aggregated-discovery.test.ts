/**
 * Aggregated discovery over HTTP, as kubectl and kube-apiserver's aggregator ask for it: /apis and /api in
 * apidiscovery.k8s.io v2 or v2beta1 by Accept header, saying what the legacy documents say, with an ETag, a 304 for
 * a client that has it, `Vary: Accept`, and the legacy documents for every other Accept.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { GROUP_PATH } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const GROUP = 'management.platform.sh';
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
/** What kubectl 1.33 sends; kube-apiserver's aggregator sends V2 alone. */
const KUBECTL = `${V2},${V2BETA1},application/json`;

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

/**
 * The legacy documents an aggregated list stands for, as client-go's SplitGroupsAndResources reads it (a
 * subresource's singularName is left empty, as the legacy list has it).
 */
function asLegacy(list: any): { groups: unknown[]; resources: Record<string, unknown[]> } {
  const groups: unknown[] = [];
  const resources: Record<string, unknown[]> = {};
  for (const group of list.items) {
    const versions = group.versions.map((v: any) => ({
      groupVersion: `${group.metadata.name}/${v.version}`,
      version: v.version,
    }));
    groups.push({ name: group.metadata.name, versions, preferredVersion: versions[0] });
    for (const v of group.versions) {
      expect(v.freshness).toBe('Current');
      const entries: any[] = [];
      for (const r of v.resources ?? []) {
        const namespaced = r.scope === 'Namespaced';
        expect(r.responseKind).toEqual({ group: '', version: '', kind: expect.any(String) });
        entries.push({
          name: r.resource,
          singularName: r.singularResource,
          namespaced,
          kind: r.responseKind.kind,
          verbs: r.verbs,
          ...(r.shortNames && { shortNames: r.shortNames }),
          ...(r.categories && { categories: r.categories }),
        });
        for (const s of r.subresources ?? []) {
          entries.push({
            name: `${r.resource}/${s.subresource}`,
            singularName: '',
            namespaced,
            kind: s.responseKind.kind,
            verbs: s.verbs,
          });
        }
      }
      resources[`${group.metadata.name}/${v.version}`] = entries.sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
    }
  }
  return { groups, resources };
}

describe('/apis', () => {
  test("kubectl's Accept gets v2: the legacy documents' groups, versions and resources in one", async () => {
    const res = await ts.admin.get('/apis', { headers: { Accept: KUBECTL } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(V2);
    expect(res.headers.vary).toBe('Accept');
    expect(res.headers['cache-control']).toBe('public');
    expect(res.headers.etag).toMatch(/^"[0-9A-F]{128}"$/);
    expect(res.body).toMatchObject({
      kind: 'APIGroupDiscoveryList',
      apiVersion: 'apidiscovery.k8s.io/v2',
      metadata: {},
    });

    const legacyGroups = await ts.admin.get('/apis', { headers: { Accept: 'application/json' } });
    const legacyResources = await ts.admin.get(GROUP_PATH, { headers: { Accept: 'application/json' } });
    const { groups, resources } = asLegacy(res.body);
    expect(groups).toEqual(legacyGroups.body.groups);
    expect(Object.keys(resources)).toEqual([`${GROUP}/v1`]);
    expect(resources[`${GROUP}/v1`]).toEqual(legacyResources.body.resources);
  });

  test('the status and action subresources sit under their resource; a kind of its own stands alone', async () => {
    const res = await ts.admin.get('/apis', { headers: { Accept: V2 } });
    const byName = Object.fromEntries(res.body.items[0].versions[0].resources.map((r: any) => [r.resource, r]));
    expect(byName.sharedsecrets).toEqual({
      resource: 'sharedsecrets',
      responseKind: { group: '', version: '', kind: 'SharedSecret' },
      scope: 'Namespaced',
      singularResource: 'sharedsecret',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['gsec'],
      categories: ['platform'],
      subresources: [
        {
          subresource: 'status',
          responseKind: { group: '', version: '', kind: 'SharedSecret' },
          verbs: ['get', 'patch', 'update'],
        },
      ],
    });
    expect(byName.projects.subresources).toContainEqual({
      subresource: 'importvirtualcluster',
      responseKind: { group: '', version: '', kind: 'ProjectImportVirtualCluster' },
      verbs: ['create'],
    });
    expect(byName.ownedaccesskeys.subresources).toContainEqual({
      subresource: 'rotate',
      responseKind: { group: '', version: '', kind: 'OwnedAccessKey' },
      verbs: ['create'],
    });
    expect(byName.clusters).toMatchObject({ scope: 'Cluster', shortNames: ['pcl'] });
    expect(byName.directclusterendpointtokens).toEqual({
      resource: 'directclusterendpointtokens',
      responseKind: { group: '', version: '', kind: 'DirectClusterEndpointToken' },
      scope: 'Cluster',
      singularResource: 'directclusterendpointtoken',
      verbs: ['create'],
    });
    expect(Object.keys(byName).some((name) => name.includes('/'))).toBe(false);
  });

  test('v2beta1 for a client that asks for it: the same items and the same ETag', async () => {
    const v2 = await ts.admin.get('/apis', { headers: { Accept: V2 } });
    const beta = await ts.admin.get('/apis', { headers: { Accept: `${V2BETA1},application/json` } });
    expect(beta.status).toBe(200);
    expect(beta.headers['content-type']).toBe(V2BETA1);
    expect(beta.headers.vary).toBe('Accept');
    expect(beta.body).toEqual({ ...v2.body, apiVersion: 'apidiscovery.k8s.io/v2beta1' });
    expect(beta.headers.etag).toBe(v2.headers.etag);
  });

  test('YAML when asked for it', async () => {
    const res = await ts.admin.get('/apis', {
      headers: { Accept: 'application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
    });
    expect(res.headers['content-type']).toBe('application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const json = await ts.admin.get('/apis', { headers: { Accept: V2 } });
    expect(yaml.load(res.text)).toEqual(json.body);
  });

  test("as kube-apiserver's aggregator asks (v2 alone, then If-None-Match with the ETag it kept): 304 without a body", async () => {
    const first = await ts.admin.get('/apis', { headers: { Accept: V2 } });
    const etag = first.headers.etag as string;
    const cached = await ts.admin.get('/apis', { headers: { Accept: V2, 'If-None-Match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe('');
    expect(cached.headers.etag).toBe(etag);
    expect(cached.headers.vary).toBe('Accept');

    const stale = await ts.admin.get('/apis', { headers: { Accept: V2, 'If-None-Match': `"${'0'.repeat(128)}"` } });
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual(first.body);
  });

  test('plain JSON, no Accept and */* get the legacy APIGroupList, without an ETag', async () => {
    for (const headers of [{ Accept: 'application/json' }, {}, { Accept: '*/*' }] as Record<string, string>[]) {
      const res = await ts.admin.get('/apis', { headers });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json(;|$)/);
      expect(res.headers['content-type']).not.toContain('apidiscovery');
      expect(res.body.kind).toBe('APIGroupList');
      expect(res.headers.etag).toBeUndefined();
      // The ETag of the aggregated document does not turn the legacy one into a 304.
      const aggregated = await ts.admin.get('/apis', { headers: { Accept: V2 } });
      const again = await ts.admin.get('/apis', {
        headers: { ...headers, 'If-None-Match': aggregated.headers.etag as string },
      });
      expect(again.status).toBe(200);
      expect(again.body.kind).toBe('APIGroupList');
    }
  });

  test('a version or encoding not served falls back to what else the header accepts, else 406', async () => {
    const v3 = await ts.admin.get('/apis', {
      headers: { Accept: 'application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json' },
    });
    expect(v3.body.kind).toBe('APIGroupList');
    const protobuf = await ts.admin.get('/apis', {
      headers: { Accept: 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
    });
    expect(protobuf.status).toBe(406);
    expect(protobuf.body).toMatchObject({ kind: 'Status', code: 406, reason: 'NotAcceptable' });
  });

  test('the same under the path prefix', async () => {
    const plain = await ts.admin.get('/apis', { headers: { Accept: V2 } });
    const prefixed = await ts.admin.get('/orchestrator/management/apis', { headers: { Accept: V2 } });
    expect(prefixed.status).toBe(200);
    expect(prefixed.body).toEqual(plain.body);
    expect(prefixed.headers.etag).toBe(plain.headers.etag);
  });

  test('without credentials it is 401, as the legacy document is', async () => {
    for (const path of ['/apis', '/api']) {
      const res = await ts.anonymous.get(path, { headers: { Accept: KUBECTL } });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
    }
  });
});

describe('/api', () => {
  test('no core group here: an empty list, as the legacy APIVersions lists no version', async () => {
    const res = await ts.admin.get('/api', { headers: { Accept: KUBECTL } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(V2);
    expect(res.headers.vary).toBe('Accept');
    expect(res.body).toEqual({
      kind: 'APIGroupDiscoveryList',
      apiVersion: 'apidiscovery.k8s.io/v2',
      metadata: {},
      items: [],
    });
    const cached = await ts.admin.get('/api', {
      headers: { Accept: KUBECTL, 'If-None-Match': res.headers.etag as string },
    });
    expect(cached.status).toBe(304);

    const legacy = await ts.admin.get('/api', { headers: { Accept: 'application/json' } });
    expect(legacy.body).toMatchObject({ kind: 'APIVersions', versions: [] });
  });
});
