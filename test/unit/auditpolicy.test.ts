/**
 * The audit policy (src/observability/auditpolicy.ts) as kube reads and applies it: the first matching rule decides,
 * resources match as kube's checker matches them, and a file kube would refuse is refused with kube's message.
 * The JSON patch bodies of kinds with hidden fields lose those fields' values (src/observability/auditbodies.ts).
 */
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestInfo } from '../../src/apimachinery/request.js';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { auditedJsonPatch, auditedObject } from '../../src/observability/auditbodies.js';
import { AuditPolicyError, parsePolicy, PolicyEvaluator } from '../../src/observability/auditpolicy.js';
import { repoRoot } from '../support/tools.js';

const GROUP = 'management.platform.sh';

function resource(verb: string, resource: string, extra: Partial<RequestInfo> = {}): RequestInfo {
  return {
    verb,
    isResourceRequest: true,
    path: `/apis/${GROUP}/v1/${resource}`,
    apiGroup: GROUP,
    apiVersion: 'v1',
    namespace: '',
    resource,
    subresource: '',
    name: '',
    extraParts: [],
    ...extra,
  };
}

function nonResource(path: string): RequestInfo {
  return { ...resource('get', ''), isResourceRequest: false, path, apiGroup: '', apiVersion: '' };
}

const user = (name: string, ...groups: string[]): UserInfo => ({ name, groups });
const policy = (rules: unknown[], extra: Record<string, unknown> = {}) =>
  new PolicyEvaluator(parsePolicy(JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules, ...extra })));

describe('matching', () => {
  test('the first matching rule decides; none matching is None', () => {
    const p = policy([
      { level: 'None', users: ['quiet'] },
      { level: 'RequestResponse', userGroups: ['auditors'], verbs: ['get'] },
      { level: 'Metadata', verbs: ['get', 'list'] },
    ]);
    const get = resource('get', 'clusters', { name: 'c' });
    expect(p.evaluate(get, user('quiet', 'auditors')).level).toBe('None');
    expect(p.evaluate(get, user('ann', 'auditors')).level).toBe('RequestResponse');
    expect(p.evaluate(get, user('bob')).level).toBe('Metadata');
    expect(p.evaluate(resource('create', 'clusters'), user('bob')).level).toBe('None');
    // A failed authentication has no user: rules naming users or groups do not match it.
    expect(p.evaluate(get, undefined).level).toBe('Metadata');
  });

  test('resources: group, "*", "resource/subresource", "*/subresource", "resource/*", resourceNames', () => {
    const p = policy([
      { level: 'RequestResponse', resources: [{ group: GROUP, resources: ['sharedsecrets'], resourceNames: ['s1'] }] },
      { level: 'Request', resources: [{ group: GROUP, resources: ['clusters/status'] }] },
      { level: 'Request', resources: [{ group: GROUP, resources: ['*/scale'] }] },
      { level: 'Request', resources: [{ group: GROUP, resources: ['projects/*'] }] },
      { level: 'Metadata', resources: [{ group: GROUP, resources: ['sharedsecrets', 'clusters'] }] },
      { level: 'None', resources: [{ group: '' }] },
      { level: 'Metadata', resources: [{ group: GROUP, resources: ['*'] }] },
    ]);
    const at = (info: RequestInfo) => p.evaluate(info, user('u')).level;
    expect(at(resource('get', 'sharedsecrets', { namespace: 'a', name: 's1' }))).toBe('RequestResponse');
    expect(at(resource('get', 'sharedsecrets', { namespace: 'a', name: 's2' }))).toBe('Metadata');
    expect(at(resource('update', 'clusters', { name: 'c', subresource: 'status' }))).toBe('Request');
    // A subresource is not its resource: "clusters" does not match clusters/status.
    expect(at(resource('update', 'clusters', { name: 'c' }))).toBe('Metadata');
    expect(at(resource('get', 'things', { name: 't', subresource: 'scale' }))).toBe('Request');
    expect(at(resource('get', 'projects', { name: 'p' }))).toBe('Request');
    expect(at({ ...resource('get', 'pods'), apiGroup: '' })).toBe('None');
    expect(at(resource('get', 'teams', { name: 't', subresource: 'status' }))).toBe('Metadata');
  });

  test('namespaces: "" is a cluster-scoped object; a namespace rule never matches a non-resource path', () => {
    const p = policy([
      { level: 'Request', namespaces: [''] },
      { level: 'RequestResponse', namespaces: ['audited'] },
      { level: 'Metadata' },
    ]);
    expect(p.evaluate(resource('get', 'clusters', { name: 'c' }), user('u')).level).toBe('Request');
    expect(p.evaluate(resource('get', 'sharedsecrets', { namespace: 'audited' }), user('u')).level).toBe(
      'RequestResponse',
    );
    expect(p.evaluate(resource('get', 'sharedsecrets', { namespace: 'other' }), user('u')).level).toBe('Metadata');
    expect(p.evaluate(nonResource('/healthz'), user('u')).level).toBe('Metadata');
  });

  test('nonResourceURLs: exact, a trailing * prefix, "*"; never a resource request', () => {
    const p = policy([
      { level: 'None', nonResourceURLs: ['/healthz*', '/version'] },
      { level: 'Request', nonResourceURLs: ['*'] },
      { level: 'Metadata' },
    ]);
    const at = (info: RequestInfo) => p.evaluate(info, user('u')).level;
    expect(at(nonResource('/healthz'))).toBe('None');
    expect(at(nonResource('/healthz/etcd'))).toBe('None');
    expect(at(nonResource('/version'))).toBe('None');
    expect(at(nonResource('/version/x'))).toBe('Request');
    expect(at(resource('get', 'clusters'))).toBe('Metadata');
  });

  test("omitStages: the rule's and the policy's together; omitManagedFields: the rule's when set", () => {
    const p = policy(
      [
        { level: 'Request', users: ['a'], omitStages: ['ResponseStarted'], omitManagedFields: false },
        { level: 'Request' },
      ],
      { omitStages: ['RequestReceived'], omitManagedFields: true },
    );
    const a = p.evaluate(resource('get', 'clusters'), user('a'));
    expect([...a.omitStages].sort()).toEqual(['RequestReceived', 'ResponseStarted']);
    expect(a.omitManagedFields).toBe(false);
    const b = p.evaluate(resource('get', 'clusters'), user('b'));
    expect(b.omitStages).toEqual(['RequestReceived']);
    expect(b.omitManagedFields).toBe(true);
  });
});

describe("a policy kube would refuse is refused with kube's message", () => {
  const doc = (rules: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules, ...extra });
  test.each([
    [
      'an unknown level',
      doc([{ level: 'Everything' }]),
      'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"',
    ],
    ['no level', doc([{ verbs: ['get'] }]), 'rules[0].level: Required value'],
    [
      'an unknown stage',
      doc([{ level: 'Metadata' }], { omitStages: ['Done'] }),
      'omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic',
    ],
    [
      'a relative non-resource URL',
      doc([{ level: 'Metadata', nonResourceURLs: ['healthz'] }]),
      `rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character`,
    ],
    [
      'a wildcard inside a non-resource URL',
      doc([{ level: 'Metadata', nonResourceURLs: ['/a*/b'] }]),
      `rules[0].nonResourceURLs[0]: Invalid value: "/a*/b": non-resource URL wildcards '*' must be the final character of the rule`,
    ],
    [
      'resources and non-resource URLs in one rule',
      doc([{ level: 'Metadata', nonResourceURLs: ['/x'], namespaces: ['a'] }]),
      'rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs',
    ],
    [
      'a group/version as group',
      doc([{ level: 'Metadata', resources: [{ group: `${GROUP}/v1` }] }]),
      `rules[0].resources.group: Invalid value: "${GROUP}/v1": a lowercase RFC 1123 subdomain`,
    ],
    [
      'resourceNames without resources',
      doc([{ level: 'Metadata', resources: [{ group: GROUP, resourceNames: ['a'] }] }]),
      'rules[0].resources.resourceNames: Invalid value: []string{"a"}: using resourceNames requires at least one resource',
    ],
    ['no rules', doc([]), 'loaded illegal policy with 0 rules'],
    [
      'another kind',
      JSON.stringify({ apiVersion: 'audit.k8s.io/v1beta1', kind: 'Policy', rules: [] }),
      'unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy',
    ],
    [
      'a level of the wrong type',
      doc([{ level: 3 }]),
      'failed decoding: rules[0].level: Invalid value: 3: must be a string',
    ],
  ])('%s', (_what, text, message) => {
    expect(() => parsePolicy(text)).toThrow(AuditPolicyError);
    expect(() => parsePolicy(text)).toThrow(message);
  });

  test('several errors are listed together, as errs.ToAggregate()', () => {
    expect(() => parsePolicy(doc([{ level: 'X' }, {}]))).toThrow(
      '[rules[0].level: Unsupported value: "X": supported values: "None", "Metadata", "Request", "RequestResponse", rules[1].level: Required value]',
    );
  });

  test('unknown fields are ignored with a warning, as kube falls back from strict decoding', () => {
    const warnings: string[] = [];
    parsePolicy(doc([{ level: 'Metadata', userz: ['a'] }]), (w) => warnings.push(w));
    expect(warnings).toEqual(['audit policy: unknown field "rules[0].userz" is ignored']);
  });
});

describe('bodies never carry hidden fields', () => {
  const hidden = [
    ['spec', 'key'],
    ['spec', 'identity', 'connectorData'],
  ];

  test('objects, lists and Tables', () => {
    const key = { kind: 'OwnedAccessKey', spec: { user: 'u', key: 'pak_x', identity: { a: 1, connectorData: 'c' } } };
    expect(auditedObject(key, hidden)).toEqual({ kind: 'OwnedAccessKey', spec: { user: 'u', identity: { a: 1 } } });
    expect(auditedObject({ kind: 'OwnedAccessKeyList', items: [key] }, hidden)).toEqual({
      kind: 'OwnedAccessKeyList',
      items: [{ kind: 'OwnedAccessKey', spec: { user: 'u', identity: { a: 1 } } }],
    });
    expect(auditedObject({ kind: 'Table', rows: [{ cells: [], object: key }] }, hidden)).toEqual({
      kind: 'Table',
      rows: [{ cells: [], object: { kind: 'OwnedAccessKey', spec: { user: 'u', identity: { a: 1 } } } }],
    });
  });

  test('a JSON patch: operations on, under or above a hidden field lose it', () => {
    const ops = [
      { op: 'replace', path: '/spec/key', value: 'pak_x' },
      { op: 'test', path: '/spec/identity/connectorData/deep', value: 'c' },
      { op: 'add', path: '/spec', value: { user: 'u', key: 'pak_y', identity: { connectorData: 'c', a: 1 } } },
      { op: 'add', path: '', value: { spec: { key: 'pak_z' } } },
      { op: 'add', path: '/spec/user', value: 'u' },
      { op: 'remove', path: '/spec/key' },
    ];
    expect(auditedJsonPatch(ops, hidden)).toEqual([
      { op: 'replace', path: '/spec/key' },
      { op: 'test', path: '/spec/identity/connectorData/deep' },
      { op: 'add', path: '/spec', value: { user: 'u', identity: { a: 1 } } },
      { op: 'add', path: '', value: { spec: {} } },
      { op: 'add', path: '/spec/user', value: 'u' },
      { op: 'remove', path: '/spec/key' },
    ]);
  });
});

test('the example policy of docs/operating.md is one kube would load', () => {
  const readme = readFileSync(join(repoRoot, 'docs', 'operating.md'), 'utf8');
  const example = /```yaml\n(apiVersion: audit\.k8s\.io\/v1\nkind: Policy\n[\s\S]*?)```/.exec(readme);
  expect(example).not.toBeNull();
  const p = new PolicyEvaluator(parsePolicy(example![1]));
  const u = user('u');
  expect(p.evaluate(resource('get', 'sharedsecrets', { namespace: 'a', name: 's' }), u).level).toBe('Metadata');
  expect(p.evaluate(resource('create', 'sharedsecrets', { namespace: 'a' }), u).level).toBe('Metadata');
  expect(p.evaluate(resource('create', 'clusters'), u).level).toBe('RequestResponse');
  expect(p.evaluate(nonResource('/readyz'), u).level).toBe('None');
});
