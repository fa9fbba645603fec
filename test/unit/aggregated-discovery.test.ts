/**
 * Aggregated discovery without HTTP: which Accept headers ask for it (as kube's aggregated handler decides), and
 * the aggregated form of an APIResourceList (as kube's ConvertGroupVersionIntoToDiscovery builds it).
 */
import { describe, expect, test } from '@jest/globals';
import type { StatusError } from '../../src/apimachinery/status.js';
import { apiGroupDiscoveryList, discoveryContentType, resourceDiscovery } from '../../src/http/aggregateddiscovery.js';
import type { APIResource } from '../../src/http/discovery.js';
import { negotiateAggregatedDiscovery, negotiateResponse } from '../../src/http/negotiation.js';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
/** What kubectl 1.33 (client-go 0.33) sends to /api and /apis. */
const KUBECTL = `${V2},${V2BETA1},application/json`;

describe('negotiateAggregatedDiscovery', () => {
  test("kubectl's Accept gets v2 in JSON; the aggregator's (v2 alone) too", () => {
    expect(negotiateAggregatedDiscovery(KUBECTL)).toEqual({ encoding: 'json', version: 'v2' });
    expect(negotiateAggregatedDiscovery(V2)).toEqual({ encoding: 'json', version: 'v2' });
  });

  test('a client that knows only v2beta1 gets v2beta1', () => {
    expect(negotiateAggregatedDiscovery(`${V2BETA1},application/json`)).toEqual({
      encoding: 'json',
      version: 'v2beta1',
    });
  });

  test('parameters in any order, with a profile, and in YAML', () => {
    expect(
      negotiateAggregatedDiscovery('application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io'),
    ).toEqual({ encoding: 'json', version: 'v2' });
    expect(negotiateAggregatedDiscovery(`${V2};profile=nopeer,${V2}`)).toEqual({ encoding: 'json', version: 'v2' });
    expect(
      negotiateAggregatedDiscovery('application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList'),
    ).toEqual({ encoding: 'yaml', version: 'v2' });
  });

  test('plain JSON, no Accept, and anything else get the legacy document', () => {
    for (const accept of [
      undefined,
      '',
      'application/json',
      '*/*',
      'application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json',
      'application/json;g=meta.k8s.io;v=v1;as=APIGroupDiscoveryList',
      'application/json;g=apidiscovery.k8s.io;v=v2;as=Table',
      'application/json;g=apidiscovery.k8s.io;v=v2;as=apigroupdiscoverylist',
    ]) {
      expect(negotiateAggregatedDiscovery(accept)).toBeUndefined();
    }
  });

  test('protobuf is not served: a protobuf entry is skipped for the next one', () => {
    const protobuf = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
    expect(negotiateAggregatedDiscovery(protobuf)).toBeUndefined();
    expect(negotiateAggregatedDiscovery(`${protobuf},${V2BETA1}`)).toEqual({ encoding: 'json', version: 'v2beta1' });
    // Nothing the legacy document can be sent as either: 406.
    let refusal: unknown;
    try {
      negotiateResponse(protobuf);
    } catch (err) {
      refusal = err;
    }
    expect((refusal as StatusError).status).toMatchObject({ code: 406, reason: 'NotAcceptable' });
  });

  test('kube serves the aggregated document when any entry asks for it, and q=0 refuses it', () => {
    expect(negotiateAggregatedDiscovery(`application/json,${V2}`)).toEqual({ encoding: 'json', version: 'v2' });
    expect(negotiateAggregatedDiscovery(`${V2};q=0,application/json`)).toBeUndefined();
    expect(negotiateAggregatedDiscovery(`${V2BETA1};q=0.5,${V2};q=0.9`)).toEqual({ encoding: 'json', version: 'v2' });
  });
});

test('the Content-Type names the group, version and kind, as client-go reads it', () => {
  expect(discoveryContentType({ encoding: 'json', version: 'v2' })).toBe(V2);
  expect(discoveryContentType({ encoding: 'json', version: 'v2beta1' })).toBe(V2BETA1);
  expect(discoveryContentType({ encoding: 'yaml', version: 'v2' })).toBe(
    'application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  );
});

test('the list in each version has the same items', () => {
  const items = [{ metadata: { name: 'g' }, versions: [] }];
  expect(apiGroupDiscoveryList(items, 'v2')).toEqual({
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items,
  });
  expect(apiGroupDiscoveryList(items, 'v2beta1')).toMatchObject({ apiVersion: 'apidiscovery.k8s.io/v2beta1', items });
});

describe('resourceDiscovery', () => {
  const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  const list: APIResource[] = [
    {
      name: 'clusters',
      singularName: 'cluster',
      namespaced: false,
      kind: 'Cluster',
      verbs: CRUD,
      shortNames: ['pcl'],
      categories: ['platform'],
    },
    {
      name: 'clusters/status',
      singularName: '',
      namespaced: false,
      kind: 'Cluster',
      verbs: ['get', 'patch', 'update'],
    },
    { name: 'projects', singularName: 'project', namespaced: true, kind: 'Project', verbs: CRUD },
    {
      name: 'projects/importvirtualcluster',
      singularName: '',
      namespaced: true,
      kind: 'ImportVirtualCluster',
      verbs: ['create'],
    },
    {
      name: 'tokens',
      singularName: 'token',
      namespaced: false,
      kind: 'Token',
      verbs: ['create'],
      shortNames: [],
      categories: [],
    },
  ];

  test('each resource with its kind, scope, names and verbs, and its subresources under it', () => {
    expect(resourceDiscovery(list)).toEqual([
      {
        resource: 'clusters',
        responseKind: { group: '', version: '', kind: 'Cluster' },
        scope: 'Cluster',
        singularResource: 'cluster',
        verbs: CRUD,
        shortNames: ['pcl'],
        categories: ['platform'],
        subresources: [
          {
            subresource: 'status',
            responseKind: { group: '', version: '', kind: 'Cluster' },
            verbs: ['get', 'patch', 'update'],
          },
        ],
      },
      {
        resource: 'projects',
        responseKind: { group: '', version: '', kind: 'Project' },
        scope: 'Namespaced',
        singularResource: 'project',
        verbs: CRUD,
        subresources: [
          {
            subresource: 'importvirtualcluster',
            responseKind: { group: '', version: '', kind: 'ImportVirtualCluster' },
            verbs: ['create'],
          },
        ],
      },
      // Empty shortNames and categories are left out, as Go's omitempty does.
      {
        resource: 'tokens',
        responseKind: { group: '', version: '', kind: 'Token' },
        scope: 'Cluster',
        singularResource: 'token',
        verbs: ['create'],
      },
    ]);
  });

  test('a subresource without its resource gets a parent with no kind and no verbs', () => {
    expect(
      resourceDiscovery([
        { name: 'widgets/scale', singularName: '', namespaced: true, kind: 'Scale', verbs: ['get', 'update'] },
      ]),
    ).toEqual([
      {
        resource: 'widgets',
        responseKind: { group: '', version: '', kind: '' },
        scope: 'Namespaced',
        singularResource: '',
        verbs: [],
        subresources: [
          { subresource: 'scale', responseKind: { group: '', version: '', kind: 'Scale' }, verbs: ['get', 'update'] },
        ],
      },
    ]);
  });

  test('a subresource scoped unlike its resource is a mistake that names both', () => {
    expect(() =>
      resourceDiscovery([
        { name: 'clusters', singularName: 'cluster', namespaced: false, kind: 'Cluster', verbs: CRUD },
        { name: 'clusters/status', singularName: '', namespaced: true, kind: 'Cluster', verbs: ['get'] },
      ]),
    ).toThrow('discovery: clusters/status is Namespaced but its resource clusters is Cluster');
  });
});
