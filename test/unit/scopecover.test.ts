/**
 * Whether a key's new scope, rules and allowPlatformCli stay within the old ones (src/access/scopecover.ts): what a
 * holder outside system:masters may change them to. Each case, and a check against the restrictions themselves
 * (scope.ts) that a change judged narrower never allows a request the old key could not make.
 */
import { describe, expect, test } from '@jest/globals';
import type { RequestAttributesLite } from '../../src/apimachinery/user.js';
import { buildRestriction } from '../../src/access/scope.js';
import type { KeyRestrictionSpec } from '../../src/access/scopespec.js';
import { restrictionWidening } from '../../src/access/scopecover.js';

const G = 'management.platform.sh';

const widening = (next: KeyRestrictionSpec | undefined, old: KeyRestrictionSpec | undefined) =>
  restrictionWidening(next, old);

describe('removing every restriction', () => {
  test('from an unrestricted key nothing widens', () => {
    expect(widening({ scope: { projects: [{ project: '*' }] } }, {})).toBeUndefined();
    expect(widening({}, undefined)).toBeUndefined();
  });

  test('of a restricted key names the field that restricted it', () => {
    expect(widening({}, { scope: { roles: [{ role: 'platformCLI' }] } })).toBe('scope');
    expect(widening({ scope: {} }, { scope: { clusters: [{ cluster: 'c' }] } })).toBe('scope');
    expect(widening({ rules: [] }, { rules: [{ verbs: ['get'] }] })).toBe('rules');
    expect(widening({ allowPlatformCli: false }, { allowPlatformCli: true })).toBe('allowPlatformCli');
  });

  test('the same restriction is no widening', () => {
    const spec = {
      scope: { roles: [{ role: 'platformCLI' }], projects: [{ project: 'a' }], clusters: [{ cluster: 'c' }] },
      rules: [{ verbs: ['get'], nonResourceURLs: ['/x/*'] }],
    };
    expect(widening(structuredClone(spec), spec)).toBeUndefined();
  });
});

describe('scope entries', () => {
  test('projects and clusters: each new one listed before, or under *', () => {
    expect(
      widening(
        { scope: { projects: [{ project: 'a' }] } },
        { scope: { projects: [{ project: 'a' }, { project: 'b' }] } },
      ),
    ).toBeUndefined();
    expect(
      widening({ scope: { projects: [{ project: 'a' }] } }, { scope: { projects: [{ project: '*' }] } }),
    ).toBeUndefined();
    expect(widening({ scope: { projects: [{ project: 'c' }] } }, { scope: { projects: [{ project: 'a' }] } })).toBe(
      'scope',
    );
    expect(widening({ scope: { projects: [{ project: '*' }] } }, { scope: { projects: [{ project: 'a' }] } })).toBe(
      'scope',
    );
    expect(
      widening(
        { scope: { clusters: [{ cluster: 'c1' }] } },
        { scope: { clusters: [{ cluster: 'c1' }, { cluster: 'c2' }] } },
      ),
    ).toBeUndefined();
    expect(widening({ scope: { clusters: [{ cluster: '*' }] } }, { scope: { clusters: [{ cluster: 'c1' }] } })).toBe(
      'scope',
    );
    // Another kind of entry is another grant: a project is not covered by clusters.
    expect(widening({ scope: { projects: [{ project: 'a' }] } }, { scope: { clusters: [{ cluster: '*' }] } })).toBe(
      'scope',
    );
  });

  test('spaces and virtual clusters: covered by an entry for the same (or every) project and name', () => {
    const old = {
      scope: { spaces: [{ project: 'a', space: '*' }], virtualClusters: [{ project: '*', virtualCluster: 'v' }] },
    };
    expect(
      widening(
        {
          scope: { spaces: [{ project: 'a', space: 's1' }], virtualClusters: [{ project: 'b', virtualCluster: 'v' }] },
        },
        old,
      ),
    ).toBeUndefined();
    expect(widening({ scope: { spaces: [{ project: 'b', space: 's1' }] } }, old)).toBe('scope');
    expect(widening({ scope: { virtualClusters: [{ project: 'b', virtualCluster: 'w' }] } }, old)).toBe('scope');
  });

  test("the command line client's reads: not added, and not freed from the clusters or projects that limit them", () => {
    expect(
      widening(
        { scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c' }] } },
        { scope: { clusters: [{ cluster: 'c' }] } },
      ),
    ).toBe('scope');
    expect(
      widening(
        { allowPlatformCli: true, scope: { clusters: [{ cluster: 'c' }] } },
        { scope: { clusters: [{ cluster: 'c' }] } },
      ),
    ).toBe('allowPlatformCli');
    expect(widening({ scope: { roles: [{ role: 'platform-cli' }] } }, { allowPlatformCli: true })).toBeUndefined();
    const limited = {
      scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c' }], projects: [{ project: 'a' }] },
    };
    expect(widening({ scope: { roles: [{ role: 'platformCLI' }], projects: [{ project: 'a' }] } }, limited)).toBe(
      'scope',
    );
    expect(widening({ scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c' }] } }, limited)).toBe(
      'scope',
    );
    // Without the CLI's reads, dropping either is narrower.
    expect(widening({ scope: { projects: [{ project: 'a' }] } }, limited)).toBeUndefined();
    expect(
      widening(
        {
          scope: {
            roles: [{ role: 'platformCLI' }],
            clusters: [{ cluster: 'c' }],
            spaces: [{ project: 'a', space: 's' }],
          },
        },
        limited,
      ),
    ).toBe('scope');
  });

  test('other roles: only those the key had', () => {
    expect(
      widening({ scope: { roles: [{ role: 'agent' }] } }, { scope: { roles: [{ role: 'agent' }, { role: 'x' }] } }),
    ).toBeUndefined();
    expect(widening({ scope: { roles: [{ role: 'admin' }] } }, { scope: { roles: [{ role: 'agent' }] } })).toBe(
      'scope',
    );
  });
});

describe('rules: each new rule within one old rule', () => {
  const rule = (r: Record<string, unknown>) => ({ rules: [r] });
  const within = (next: Record<string, unknown>, old: Record<string, unknown>) => widening(rule(next), rule(old));

  test('verbs, namespaces and requestTargets: a subset, or anything under an empty list or *', () => {
    expect(within({ verbs: ['get'] }, { verbs: ['get', 'list'] })).toBeUndefined();
    expect(within({ verbs: ['delete'] }, { verbs: ['*'] })).toBeUndefined();
    expect(within({ verbs: ['delete'] }, { verbs: ['get'] })).toBe('rules');
    expect(within({ verbs: [] }, { verbs: ['get'] })).toBe('rules');
    expect(within({ verbs: ['*'] }, { verbs: ['get'] })).toBe('rules');
    expect(within({ namespaces: ['p-a'] }, {})).toBeUndefined();
    expect(within({ namespaces: ['p-b'] }, { namespaces: ['p-a'] })).toBe('rules');
    expect(within({}, { namespaces: ['p-a'] })).toBe('rules');
    expect(within({ requestTargets: ['Management'] }, { requestTargets: ['Management', 'Cluster'] })).toBeUndefined();
    expect(within({}, { requestTargets: ['Management'] })).toBe('rules');
  });

  test('resources: group, resource patterns and names', () => {
    const old = {
      resources: [{ group: G, resources: ['clusters/*', '*/status', 'projects'], resourceNames: ['a', 'b'] }],
    };
    expect(
      within(
        {
          resources: [
            { group: G, resources: ['clusters/kubeconfig', 'projects/status', 'projects'], resourceNames: ['a'] },
          ],
        },
        old,
      ),
    ).toBeUndefined();
    expect(within({ resources: [{ group: G, resources: ['clusters'], resourceNames: ['a'] }] }, old)).toBe('rules');
    expect(within({ resources: [{ group: G, resources: ['projects'] }] }, old)).toBe('rules');
    expect(within({ resources: [{ group: '*', resources: ['projects'], resourceNames: ['a'] }] }, old)).toBe('rules');
    expect(within({ resources: [{ group: G, resources: [], resourceNames: ['a'] }] }, old)).toBe('rules');
    expect(
      within({ resources: [{ group: G, resources: ['x'] }] }, { resources: [{ group: '*', resources: ['*'] }] }),
    ).toBeUndefined();
    // A rule with neither resources nor URLs matches everything; one with only URLs no resource request.
    expect(within({ resources: [{ group: G, resources: ['x'] }] }, {})).toBeUndefined();
    expect(within({}, { resources: [{ group: '*', resources: ['*'] }] })).toBe('rules');
    expect(within({ resources: [{ group: G, resources: ['x'] }] }, { nonResourceURLs: ['*'] })).toBe('rules');
  });

  test('nonResourceURLs: exact paths and prefixes within the old ones', () => {
    expect(
      within({ nonResourceURLs: ['/metrics', '/debug/x/*'] }, { nonResourceURLs: ['/metrics', '/debug/*'] }),
    ).toBeUndefined();
    expect(within({ nonResourceURLs: ['/debug/*'] }, { nonResourceURLs: ['/debug/x/*'] })).toBe('rules');
    expect(within({ nonResourceURLs: ['*'] }, { nonResourceURLs: ['/x/*'] })).toBe('rules');
    expect(within({ nonResourceURLs: ['/version'] }, { resources: [{ group: G }] })).toBe('rules');
  });

  test('cluster and virtualClusters: no limit removed', () => {
    expect(within({ cluster: 'c1' }, {})).toBeUndefined();
    expect(within({}, { cluster: 'c1' })).toBe('rules');
    expect(
      within({ virtualClusters: [{ name: 'v' }] }, { virtualClusters: [{ name: 'v' }, { name: 'w' }] }),
    ).toBeUndefined();
    expect(within({ virtualClusters: [] }, { virtualClusters: [{ name: 'v' }] })).toBe('rules');
  });

  test('a rule covered only by two old rules together is refused (conservative)', () => {
    expect(
      widening({ rules: [{ verbs: ['get', 'list'] }] }, { rules: [{ verbs: ['get'] }, { verbs: ['list'] }] }),
    ).toBe('rules');
    expect(
      widening({ rules: [{ verbs: ['get'] }, { verbs: ['list'] }] }, { rules: [{ verbs: ['get', 'list'] }] }),
    ).toBeUndefined();
  });
});

describe('a change judged narrower never allows a request the old key could not make', () => {
  const specs: KeyRestrictionSpec[] = [
    {},
    { allowPlatformCli: true },
    { scope: { roles: [{ role: 'platformCLI' }] } },
    { scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }] } },
    { scope: { roles: [{ role: 'platformCLI' }], projects: [{ project: 'a' }] } },
    { scope: { roles: [{ role: 'platformCLI' }], spaces: [{ project: 'a', space: 's' }] } },
    { scope: { clusters: [{ cluster: 'c1' }] } },
    { scope: { clusters: [{ cluster: '*' }] } },
    { scope: { projects: [{ project: 'a' }] } },
    { scope: { projects: [{ project: '*' }] } },
    { scope: { spaces: [{ project: 'a', space: 's' }] } },
    { scope: { spaces: [{ project: '*', space: '*' }] } },
    { scope: { virtualClusters: [{ project: 'a', virtualCluster: 'v' }] } },
    { scope: { roles: [{ role: 'agent' }] } },
    { rules: [{}] },
    { rules: [{ verbs: ['get'] }] },
    { rules: [{ verbs: ['get'], namespaces: ['p-a'] }] },
    { rules: [{ resources: [{ group: G, resources: ['clusters'], resourceNames: ['c1'] }] }] },
    { rules: [{ resources: [{ group: G, resources: ['clusters/*'] }] }] },
    { rules: [{ resources: [{ group: '*', resources: ['*/status'] }] }] },
    { rules: [{ nonResourceURLs: ['/metrics'] }] },
    { rules: [{ nonResourceURLs: ['/debug/*'] }] },
    { rules: [{ nonResourceURLs: ['*'], resources: [{ group: G }] }] },
    { rules: [{ cluster: 'c1' }] },
    { rules: [{ verbs: ['get'] }], scope: { clusters: [{ cluster: 'c1' }] } },
  ];
  const requests: RequestAttributesLite[] = [];
  const add = (r: Partial<RequestAttributesLite>) =>
    requests.push({
      isResourceRequest: true,
      verb: 'get',
      apiGroup: G,
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
      path: '/x',
      ...r,
    });
  for (const verb of ['get', 'list', 'delete']) {
    for (const name of ['', 'c1', 'c2']) {
      add({ verb, resource: 'clusters', name });
      add({ verb, resource: 'clusters', name, subresource: 'status' });
      add({ verb, resource: 'clusters', name, subresource: 'kubeconfig' });
      add({ verb, resource: 'projects', name: name && 'a' });
    }
    for (const namespace of ['', 'p-a', 'p-b', 'default']) {
      add({ verb, resource: 'spaceinstances', namespace, name: 's' });
      add({ verb, resource: 'virtualclusterinstances', namespace, name: 'v' });
      add({ verb, resource: 'sharedsecrets', namespace });
      add({ verb, apiGroup: '', resource: 'pods', namespace, name: 'p' });
    }
  }
  for (const path of ['/metrics', '/debug/pprof', '/other', '/apis'])
    requests.push({
      isResourceRequest: false,
      verb: 'get',
      apiGroup: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
      path,
    });

  test('for every pair of sample specs', () => {
    let narrower = 0;
    for (const old of specs) {
      for (const next of specs) {
        if (restrictionWidening(next, old) !== undefined) continue;
        narrower++;
        const o = buildRestriction(old);
        const n = buildRestriction(next);
        for (const req of requests) {
          const oldAllows = !o || o.check(req).allowed;
          const newAllows = !n || n.check(req).allowed;
          if (newAllows && !oldAllows)
            throw new Error(
              `${JSON.stringify(next)} judged within ${JSON.stringify(old)} but allows ${JSON.stringify(req)}`,
            );
        }
      }
    }
    // The sample holds real narrowings, not only equal pairs.
    expect(narrower).toBeGreaterThan(specs.length * 2);
  });
});

describe("upstream's placement and limited roles", () => {
  const readSecrets = { verbs: ['get'], resources: [{ group: G, resources: ['sharedsecrets'] }] };

  test('a rule added in scope.rules that no old rule covers widens scope.rules', () => {
    expect(widening({ rules: [readSecrets], scope: { rules: [{ verbs: ['*'] }] } }, { rules: [readSecrets] })).toBe(
      'scope.rules',
    );
    expect(widening({ scope: { rules: [readSecrets] } }, { rules: [readSecrets] })).toBeUndefined();
    expect(widening({ rules: [readSecrets] }, { scope: { rules: [readSecrets] } })).toBeUndefined();
  });

  test('scope.allowPlatformCli added to a key without the CLI reads widens it', () => {
    expect(widening({ rules: [readSecrets], scope: { allowPlatformCli: true } }, { rules: [readSecrets] })).toBe(
      'scope.allowPlatformCli',
    );
  });

  test("a role's project and virtual cluster limits may narrow, never widen", () => {
    const limited = { scope: { roles: [{ role: 'platformCLI', projects: ['a', 'b'] }] } };
    expect(widening({ scope: { roles: [{ role: 'platformCLI', projects: ['a'] }] } }, limited)).toBeUndefined();
    expect(widening({ scope: { roles: [{ role: 'platformCLI' }] } }, limited)).toBe('scope');
    expect(widening({ scope: { roles: [{ role: 'platformCLI', projects: ['c'] }] } }, limited)).toBe('scope');
    expect(widening({ allowPlatformCli: true, ...limited }, limited)).toBe('allowPlatformCli');
    expect(
      widening({ scope: { roles: [{ role: 'platformCLI', projects: ['a'], virtualClusters: ['v'] }] } }, limited),
    ).toBeUndefined();
    expect(
      widening(
        { scope: { roles: [{ role: 'platformCLI', projects: ['a'] }] } },
        { scope: { roles: [{ role: 'platformCLI', projects: ['a'], virtualClusters: ['v'] }] } },
      ),
    ).toBe('scope');
  });
});
