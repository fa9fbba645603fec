/**
 * Access key restrictions (src/access/scope.ts): each kind of scope entry and rule, allowing what it names and
 * nothing else; lists allowed for filtering and then answered per object.
 */
import { describe, expect, test } from '@jest/globals';
import type { RequestAttributesLite, Restriction } from '../../src/apimachinery/user.js';
import { buildRestriction, nonResourceURLMatches } from '../../src/access/scope.js';
import { hasRestriction, type KeyRestrictionSpec } from '../../src/access/scopespec.js';

const G = 'management.platform.sh';

/** A resource request; `path` is filled in as the server would. */
function res(verb: string, resource: string, extra: Partial<RequestAttributesLite> = {}): RequestAttributesLite {
  const r: RequestAttributesLite = {
    isResourceRequest: true,
    verb,
    apiGroup: G,
    resource,
    subresource: '',
    namespace: '',
    name: '',
    path: '',
    ...extra,
  };
  if (!extra.path) {
    const ns = r.namespace ? `/namespaces/${r.namespace}` : '';
    r.path = `/apis/${r.apiGroup}/v1${ns}/${resource}${r.name ? `/${r.name}` : ''}${r.subresource ? `/${r.subresource}` : ''}`;
  }
  return r;
}

function url(path: string, verb = 'get'): RequestAttributesLite {
  return { isResourceRequest: false, verb, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', path };
}

function restriction(spec: KeyRestrictionSpec): Restriction {
  const r = buildRestriction(spec);
  if (!r) throw new Error('expected a restriction');
  return r;
}

const allows = (r: Restriction, req: RequestAttributesLite) => r.check(req).allowed;

describe('when a key is restricted', () => {
  test('no scope, no rules and no allowPlatformCli: no restriction', () => {
    expect(buildRestriction({})).toBeUndefined();
    expect(buildRestriction(undefined)).toBeUndefined();
    expect(buildRestriction({ scope: {}, rules: [], allowPlatformCli: false })).toBeUndefined();
    expect(
      buildRestriction({ scope: { roles: [], projects: [], spaces: [], virtualClusters: [], clusters: [] } }),
    ).toBeUndefined();
  });

  test('any scope entry, any rule, or allowPlatformCli restricts', () => {
    expect(hasRestriction({ scope: { clusters: [{ cluster: 'a' }] } })).toBe(true);
    expect(hasRestriction({ scope: { projects: [{ project: 'a' }] } })).toBe(true);
    expect(hasRestriction({ scope: { spaces: [{ project: 'a', space: 's' }] } })).toBe(true);
    expect(hasRestriction({ scope: { virtualClusters: [{ project: 'a', virtualCluster: 'v' }] } })).toBe(true);
    expect(hasRestriction({ scope: { roles: [{ role: 'agent' }] } })).toBe(true);
    expect(hasRestriction({ rules: [{}] })).toBe(true);
    expect(hasRestriction({ allowPlatformCli: true })).toBe(true);
  });

  test('the denial says why', () => {
    const r = restriction({ scope: { clusters: [{ cluster: 'a' }] } });
    expect(r.check(res('get', 'clusters', { name: 'b' }))).toEqual({
      allowed: false,
      reason: "the access key's scope does not allow this request",
    });
    expect(r.check(res('get', 'clusters', { name: 'a' }))).toEqual({ allowed: true });
  });
});

describe('discovery stays open to every restricted key', () => {
  const r = restriction({ scope: { clusters: [{ cluster: 'only' }] } });
  test.each([
    '/api',
    '/apis',
    '/apis/',
    `/apis/${G}`,
    `/apis/${G}/v1`,
    '/version',
    '/openapi/v2',
    '/openapi/v3',
    `/openapi/v3/apis/${G}/v1`,
    '/healthz',
    '/readyz/etcd',
    '/api/v1/namespaces/default',
  ])('GET %s', (path) => {
    expect(allows(r, url(path))).toBe(true);
  });
  test('but not other paths or other methods', () => {
    expect(allows(r, url('/metrics'))).toBe(false);
    expect(allows(r, url('/apis', 'post'))).toBe(false);
    expect(allows(r, url('/logs/x'))).toBe(false);
  });
});

describe('scope.clusters', () => {
  const r = restriction({ scope: { clusters: [{ cluster: 'c1' }, { cluster: 'c2' }] } });

  test('allows every verb on the listed clusters and their subresources', () => {
    for (const verb of ['get', 'update', 'patch', 'delete'])
      expect(allows(r, res(verb, 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('get', 'clusters', { name: 'c2', subresource: 'status' }))).toBe(true);
  });

  test('denies other clusters', () => {
    expect(allows(r, res('get', 'clusters', { name: 'c3' }))).toBe(false);
    expect(allows(r, res('delete', 'clusters', { name: 'c3' }))).toBe(false);
  });

  test('a list or watch is allowed, and each object is answered on its own', () => {
    expect(allows(r, res('list', 'clusters'))).toBe(true);
    expect(allows(r, res('watch', 'clusters'))).toBe(true);
    expect(allows(r, res('list', 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('list', 'clusters', { name: 'other' }))).toBe(false);
    expect(allows(r, res('watch', 'clusters', { name: 'other' }))).toBe(false);
  });

  test('requests that name no cluster (create, deletecollection) are denied', () => {
    expect(allows(r, res('create', 'clusters'))).toBe(false);
    expect(allows(r, res('deletecollection', 'clusters'))).toBe(false);
  });

  test("'*' selects every cluster, creates included", () => {
    const all = restriction({ scope: { clusters: [{ cluster: '*' }] } });
    expect(allows(all, res('get', 'clusters', { name: 'anything' }))).toBe(true);
    expect(allows(all, res('create', 'clusters'))).toBe(true);
  });

  test('reach nothing else: other resources, other groups', () => {
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'ns' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'ns', name: 'x' }))).toBe(false);
    expect(allows(r, res('create', 'ownedaccesskeys'))).toBe(false);
    expect(allows(r, res('list', 'ownedaccesskeys'))).toBe(false);
    expect(allows(r, res('get', 'clusters', { apiGroup: 'other.example.com', name: 'c1' }))).toBe(false);
  });
});

describe('scope.projects', () => {
  const r = restriction({ scope: { projects: [{ project: 'alpha' }] } });

  test('allows every request in the namespace of a listed project', () => {
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'p-alpha', name: 's' }))).toBe(true);
    expect(allows(r, res('create', 'sharedsecrets', { namespace: 'p-alpha' }))).toBe(true);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'p-alpha' }))).toBe(true);
    expect(allows(r, res('deletecollection', 'sharedsecrets', { namespace: 'p-alpha' }))).toBe(true);
  });

  test('denies the namespace of another project, and namespaces outside projects', () => {
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'p-beta', name: 's' }))).toBe(false);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'p-beta' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'platform', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'alpha', name: 's' }))).toBe(false);
  });

  test('the project object itself', () => {
    expect(allows(r, res('get', 'projects', { name: 'alpha' }))).toBe(true);
    expect(allows(r, res('create', 'projects', { name: 'alpha', subresource: 'importvirtualcluster' }))).toBe(true);
    expect(allows(r, res('get', 'projects', { name: 'beta' }))).toBe(false);
  });

  test('a list across all namespaces is filtered per object', () => {
    expect(allows(r, res('list', 'sharedsecrets'))).toBe(true);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'p-alpha', name: 'a' }))).toBe(true);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'p-beta', name: 'b' }))).toBe(false);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'other', name: 'c' }))).toBe(false);
  });

  test('knowing that a resource is cluster-scoped sharpens the list answer', () => {
    const sharp = buildRestriction(
      { scope: { projects: [{ project: 'alpha' }] } },
      { isNamespaced: (_g, resource) => resource !== 'clusters' },
    )!;
    expect(allows(sharp, res('list', 'clusters'))).toBe(false);
    expect(allows(sharp, res('list', 'sharedsecrets'))).toBe(true);
  });

  test('does not reach cluster-scoped objects', () => {
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    expect(allows(r, res('create', 'ownedaccesskeys'))).toBe(false);
  });

  test("'*' selects every project, but still only project namespaces", () => {
    const all = restriction({ scope: { projects: [{ project: '*' }] } });
    expect(allows(all, res('get', 'sharedsecrets', { namespace: 'p-anything', name: 's' }))).toBe(true);
    expect(allows(all, res('get', 'sharedsecrets', { namespace: 'platform', name: 's' }))).toBe(false);
  });
});

describe('scope.spaces and scope.virtualClusters', () => {
  const r = restriction({
    scope: {
      spaces: [{ project: 'alpha', space: 'dev' }],
      virtualClusters: [
        { project: 'alpha', virtualCluster: 'vc1' },
        { project: 'beta', virtualCluster: '*' },
      ],
    },
  });

  test('allow the named space and virtual cluster (and their subresources) in their project', () => {
    expect(allows(r, res('get', 'spaceinstances', { namespace: 'p-alpha', name: 'dev' }))).toBe(true);
    expect(
      allows(
        r,
        res('get', 'virtualclusterinstances', { namespace: 'p-alpha', name: 'vc1', subresource: 'kubeconfig' }),
      ),
    ).toBe(true);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-beta', name: 'any' }))).toBe(true);
  });

  test('deny other names, other projects and other resources', () => {
    expect(allows(r, res('get', 'spaceinstances', { namespace: 'p-alpha', name: 'prod' }))).toBe(false);
    expect(allows(r, res('get', 'spaceinstances', { namespace: 'p-beta', name: 'dev' }))).toBe(false);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-alpha', name: 'vc2' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'p-alpha', name: 'dev' }))).toBe(false);
  });

  test('lists are filtered per object', () => {
    expect(allows(r, res('list', 'spaceinstances', { namespace: 'p-alpha' }))).toBe(true);
    expect(allows(r, res('list', 'spaceinstances', { namespace: 'p-alpha', name: 'prod' }))).toBe(false);
    expect(allows(r, res('create', 'spaceinstances', { namespace: 'p-alpha' }))).toBe(false);
  });

  test('an entry without a project matches nothing', () => {
    const r2 = restriction({ scope: { spaces: [{ space: 'dev' }] } });
    expect(allows(r2, res('get', 'spaceinstances', { namespace: 'p-alpha', name: 'dev' }))).toBe(false);
  });
});

describe('scope.roles platformCLI and allowPlatformCli', () => {
  const specs: [string, KeyRestrictionSpec][] = [
    ['role platformCLI', { scope: { roles: [{ role: 'platformCLI' }] } }],
    ['deprecated allowPlatformCli', { allowPlatformCli: true }],
  ];
  test.each(specs)('%s allows read-only management requests', (_what, spec) => {
    const r = restriction(spec);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(true);
    expect(allows(r, res('list', 'clusters'))).toBe(true);
    expect(allows(r, res('watch', 'sharedsecrets', { namespace: 'ns' }))).toBe(true);
    expect(allows(r, res('get', 'ownedaccesskeys', { name: 'k' }))).toBe(true);
    expect(allows(r, res('get', 'clusters', { name: 'c', subresource: 'status' }))).toBe(true);
    expect(allows(r, url('/version'))).toBe(true);
    expect(allows(r, url('/openapi/v3'))).toBe(true);
  });

  test.each(specs)('%s allows no writes, no other subresources, no other groups', (_what, spec) => {
    const r = restriction(spec);
    for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection']) {
      expect(
        allows(r, res(verb, 'clusters', { name: verb === 'create' || verb === 'deletecollection' ? '' : 'c' })),
      ).toBe(false);
    }
    expect(
      allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-a', name: 'v', subresource: 'kubeconfig' })),
    ).toBe(false);
    expect(allows(r, res('get', 'pods', { apiGroup: '', namespace: 'ns', name: 'x' }))).toBe(false);
  });

  test('its reads stay within the clusters and projects the scope lists', () => {
    const r = restriction({
      scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }], projects: [{ project: 'alpha' }] },
    });
    expect(allows(r, res('get', 'clusters', { name: 'c2' }))).toBe(false);
    expect(allows(r, res('list', 'clusters', { name: 'c2' }))).toBe(false);
    expect(allows(r, res('list', 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'p-beta', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'projects', { name: 'beta' }))).toBe(false);
    // Outside projects and clusters, the CLI's reads go on.
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'platform', name: 's' }))).toBe(true);
    expect(allows(r, res('list', 'ownedaccesskeys'))).toBe(true);
  });

  test('other role names grant nothing', () => {
    const r = restriction({ scope: { roles: [{ role: 'agent' }] } });
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    expect(allows(r, url('/apis'))).toBe(true);
  });
});

describe('deprecated rules', () => {
  test('verbs: empty is every verb, else the listed ones', () => {
    const any = restriction({ rules: [{ resources: [{ group: G, resources: ['clusters'] }] }] });
    expect(allows(any, res('delete', 'clusters', { name: 'c' }))).toBe(true);
    const read = restriction({ rules: [{ verbs: ['get', 'list'] }] });
    expect(allows(read, res('get', 'clusters', { name: 'c' }))).toBe(true);
    expect(allows(read, res('list', 'sharedsecrets', { namespace: 'x' }))).toBe(true);
    expect(allows(read, res('update', 'clusters', { name: 'c' }))).toBe(false);
    const star = restriction({ rules: [{ verbs: ['*'] }] });
    expect(allows(star, res('deletecollection', 'sharedsecrets', { namespace: 'x' }))).toBe(true);
  });

  test('resources: group, names, subresources and wildcards', () => {
    const r = restriction({
      rules: [
        { resources: [{ group: G, resources: ['clusters'] }] },
        { resources: [{ group: G, resources: ['sharedsecrets/*'] }] },
        { resources: [{ group: '', resources: ['pods/log', '*/scale'] }] },
      ],
    });
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(true);
    expect(allows(r, res('get', 'clusters', { name: 'c', subresource: 'status' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'n', name: 's', subresource: 'status' }))).toBe(true);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'pods', { apiGroup: '', namespace: 'n', name: 'p', subresource: 'log' }))).toBe(true);
    expect(allows(r, res('get', 'pods', { apiGroup: '', namespace: 'n', name: 'p' }))).toBe(false);
    expect(
      allows(r, res('update', 'deployments', { apiGroup: '', namespace: 'n', name: 'd', subresource: 'scale' })),
    ).toBe(true);
    expect(allows(r, res('get', 'clusters', { apiGroup: 'other.io', name: 'c' }))).toBe(false);
    const all = restriction({ rules: [{ resources: [{ group: G, resources: ['*'] }] }] });
    expect(allows(all, res('get', 'clusters', { name: 'c', subresource: 'status' }))).toBe(true);
    expect(allows(all, res('get', 'clusters', { apiGroup: '', name: 'c' }))).toBe(false);
    const anyGroup = restriction({ rules: [{ resources: [{ group: '*', resources: [] }] }] });
    expect(allows(anyGroup, res('get', 'x', { apiGroup: 'whatever.io', name: 'n' }))).toBe(true);
  });

  test('resourceNames: the request must name one; lists are filtered per object; creates never match', () => {
    const r = restriction({ rules: [{ resources: [{ group: G, resources: ['clusters'], resourceNames: ['c1'] }] }] });
    expect(allows(r, res('get', 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('get', 'clusters', { name: 'c2' }))).toBe(false);
    expect(allows(r, res('list', 'clusters'))).toBe(true);
    expect(allows(r, res('list', 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('list', 'clusters', { name: 'c2' }))).toBe(false);
    expect(allows(r, res('create', 'clusters'))).toBe(false);
  });

  test('namespaces: listed ones, "" for cluster-scoped, empty for all', () => {
    const r = restriction({ rules: [{ namespaces: ['team-a'] }] });
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'team-a', name: 's' }))).toBe(true);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'team-b', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    expect(allows(r, res('list', 'sharedsecrets'))).toBe(true);
    expect(allows(r, res('list', 'sharedsecrets', { namespace: 'team-b', name: 's' }))).toBe(false);
    const cluster = restriction({ rules: [{ namespaces: [''] }] });
    expect(allows(cluster, res('get', 'clusters', { name: 'c' }))).toBe(true);
    expect(allows(cluster, res('get', 'sharedsecrets', { namespace: 'team-a', name: 's' }))).toBe(false);
  });

  test('nonResourceURLs: exact paths and a final /* only', () => {
    const r = restriction({ rules: [{ nonResourceURLs: ['/metrics', '/logs/*'] }] });
    expect(allows(r, url('/metrics'))).toBe(true);
    expect(allows(r, url('/metrics/x'))).toBe(false);
    expect(allows(r, url('/logs/a/b'))).toBe(true);
    expect(allows(r, url('/logs'))).toBe(false);
    // A rule with only nonResourceURLs does not match resource requests.
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    expect(nonResourceURLMatches('*', '/anything')).toBe(true);
    expect(nonResourceURLMatches('/healthz*', '/healthz/x')).toBe(false);
    expect(nonResourceURLMatches('/a/*/b', '/a/x/b')).toBe(false);
  });

  test('a rule with neither resources nor nonResourceURLs applies to every URL and resource', () => {
    const r = restriction({ rules: [{ verbs: ['get'] }] });
    expect(allows(r, url('/metrics'))).toBe(true);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(true);
    const resOnly = restriction({ rules: [{ resources: [{ group: G, resources: ['clusters'] }] }] });
    expect(allows(resOnly, url('/metrics'))).toBe(false);
  });

  test('requestTargets: empty or Management match; other targets do not', () => {
    expect(
      allows(restriction({ rules: [{ requestTargets: ['Management'] }] }), res('get', 'clusters', { name: 'c' })),
    ).toBe(true);
    expect(
      allows(
        restriction({ rules: [{ requestTargets: ['Cluster', 'VirtualCluster'] }] }),
        res('get', 'clusters', { name: 'c' }),
      ),
    ).toBe(false);
  });

  test('cluster: a rule for a connected cluster matches no management request', () => {
    const r = restriction({ rules: [{ cluster: 'c1' }] });
    expect(allows(r, res('get', 'clusters', { name: 'c1' }))).toBe(false);
    expect(allows(r, url('/metrics'))).toBe(false);
  });

  test('virtualClusters: a rule for virtual clusters matches no management request (its limit is not dropped)', () => {
    const r = restriction({ rules: [{ verbs: ['get'], virtualClusters: [{ name: 'v', namespace: 'n' }] }] });
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-a', name: 'v' }))).toBe(false);
  });

  test('any one matching rule is enough; rules and scope entries each grant', () => {
    const r = restriction({
      rules: [{ verbs: ['get'], resources: [{ group: G, resources: ['sharedsecrets'] }] }],
      scope: { clusters: [{ cluster: 'c1' }] },
    });
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(true);
    expect(allows(r, res('delete', 'clusters', { name: 'c1' }))).toBe(true);
    expect(allows(r, res('delete', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c2' }))).toBe(false);
  });
});

describe("upstream's placement: scope.rules and scope.allowPlatformCli", () => {
  const readSecrets = { verbs: ['get'], resources: [{ group: G, resources: ['sharedsecrets'] }] };

  test('scope.rules restrict as spec.rules do: a key with only scope.rules may do what they allow and nothing else', () => {
    expect(hasRestriction({ scope: { rules: [readSecrets] } })).toBe(true);
    const r = restriction({ scope: { rules: [readSecrets] } });
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(true);
    expect(allows(r, res('create', 'sharedsecrets', { namespace: 'n' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
  });

  test('rules in both places are one list of grants; neither place is dropped', () => {
    const r = restriction({
      rules: [{ verbs: ['list'], resources: [{ group: G, resources: ['clusters'] }] }],
      scope: { rules: [readSecrets] },
    });
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(true);
    expect(allows(r, res('list', 'clusters'))).toBe(true);
    expect(allows(r, res('delete', 'sharedsecrets', { namespace: 'n', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
  });

  test('scope.allowPlatformCli grants the command line reads, as spec.allowPlatformCli does', () => {
    expect(hasRestriction({ scope: { allowPlatformCli: true } })).toBe(true);
    expect(buildRestriction({ scope: { allowPlatformCli: false } })).toBeUndefined();
    const r = restriction({ scope: { allowPlatformCli: true } });
    expect(allows(r, res('list', 'sharedsecrets'))).toBe(true);
    expect(allows(r, res('create', 'sharedsecrets', { namespace: 'n' }))).toBe(false);
  });
});

describe('a role limited to projects and virtual clusters', () => {
  test('roles[].projects: the command line reads reach only those projects', () => {
    const r = restriction({ scope: { roles: [{ role: 'platformCLI', projects: ['a'] }] } });
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-a', name: 'v' }))).toBe(true);
    expect(allows(r, res('get', 'projects', { name: 'a' }))).toBe(true);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-b', name: 'v' }))).toBe(false);
    expect(allows(r, res('get', 'projects', { name: 'b' }))).toBe(false);
    expect(allows(r, res('get', 'sharedsecrets', { namespace: 'team-a', name: 's' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
    // A list across namespaces is filtered per object.
    expect(allows(r, res('list', 'virtualclusterinstances'))).toBe(true);
    expect(allows(r, res('create', 'virtualclusterinstances', { namespace: 'p-a' }))).toBe(false);
  });

  test('roles[].virtualClusters: only virtual cluster instances of those names', () => {
    const r = restriction({ scope: { roles: [{ role: 'platform-cli', projects: ['a'], virtualClusters: ['v'] }] } });
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-a', name: 'v' }))).toBe(true);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-a', name: 'w' }))).toBe(false);
    expect(allows(r, res('get', 'virtualclusterinstances', { namespace: 'p-b', name: 'v' }))).toBe(false);
    expect(allows(r, res('get', 'projects', { name: 'a' }))).toBe(false);
    expect(allows(r, res('list', 'virtualclusterinstances', { namespace: 'p-a' }))).toBe(true);
  });

  test("an empty name in a role's limits matches nothing (it never lifts the limit)", () => {
    const r = restriction({ scope: { roles: [{ role: 'platformCLI', projects: [''] }] } });
    expect(allows(r, res('get', 'projects', { name: 'a' }))).toBe(false);
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(false);
  });

  test('an unlimited role entry beside a limited one still grants everywhere', () => {
    const r = restriction({ scope: { roles: [{ role: 'platformCLI', projects: ['a'] }, { role: 'platformCLI' }] } });
    expect(allows(r, res('get', 'clusters', { name: 'c' }))).toBe(true);
  });
});

describe('a restriction this server does not understand allows nothing (stored data is not trusted)', () => {
  test.each([
    ['an unknown field of the scope', { scope: { rulez: [{ verbs: ['get'] }] } }, 'spec.scope.rulez'],
    [
      'an unknown field of a role',
      { scope: { roles: [{ role: 'platformCLI', namespaces: ['x'] }] } },
      'spec.scope.roles[0].namespaces',
    ],
    ['an unknown field of a rule', { rules: [{ verbs: ['get'], expires: '2030-01-01' }] }, 'spec.rules[0].expires'],
    [
      'an unknown field of a rule in the scope',
      { scope: { rules: [{ resources: [{ group: G, kinds: ['x'] }] }] } },
      'spec.scope.rules[0].resources[0].kinds',
    ],
    ['a scope that is not an object', { scope: 'projects=a' }, 'spec.scope'],
    ['a list that is not one', { scope: { projects: { project: 'a' } } }, 'spec.scope.projects'],
    ['an entry that is not an object', { scope: { clusters: ['c'] } }, 'spec.scope.clusters[0]'],
    ['a name that is not a string', { scope: { projects: [{ project: 7 }] } }, 'spec.scope.projects[0].project'],
    ['allowPlatformCli that is not a boolean', { allowPlatformCli: 'false' }, 'spec.allowPlatformCli'],
  ])('%s', (_what, spec, field) => {
    const r = buildRestriction(spec as KeyRestrictionSpec);
    expect(r).toBeDefined();
    expect(r!.check(res('get', 'sharedsecrets', { namespace: 'n', name: 's' }))).toEqual({
      allowed: false,
      reason: `the access key's ${field} is not understood by this server, so the key is allowed no request`,
    });
    expect(allows(r!, res('list', 'clusters'))).toBe(false);
    expect(allows(r!, url('/apis'))).toBe(true);
  });

  test('nulls are read as absent, as kube reads them', () => {
    expect(buildRestriction({ scope: null, rules: null } as unknown as KeyRestrictionSpec)).toBeUndefined();
  });
});
