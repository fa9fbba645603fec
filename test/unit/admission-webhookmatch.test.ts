/**
 * Which webhooks a write is sent to (kube's rules, scope and selectors), where a webhook is called (url or the
 * service's cluster DNS name), and the order and defaults of webhooks read from configurations.
 */
import { describe, expect, test } from '@jest/globals';
import type { AdmissionAttributes } from '../../src/apimachinery/admission.js';
import { webhookUrl } from '../../src/admission/webhookclient.js';
import { webhooksOf, type Webhook } from '../../src/admission/webhookconfig.js';
import { matchesNamespaceSelector, matchesObjectSelector, matchesRules } from '../../src/admission/webhookmatch.js';

const GROUP = 'management.platform.sh';

function attrs(over: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return {
    operation: 'CREATE',
    group: GROUP,
    version: 'v1',
    kind: 'SharedSecret',
    resource: 'sharedsecrets',
    subresource: '',
    namespace: 'team-a',
    name: 'db',
    object: { apiVersion: `${GROUP}/v1`, kind: 'SharedSecret', metadata: { name: 'db', labels: { tier: 'gold' } } },
    user: { name: 'alice', groups: [] },
    dryRun: false,
    warnings: [],
    auditAnnotations: {},
    ...over,
  };
}

function hook(over: Record<string, unknown> = {}): Webhook {
  return webhooksOf([{ metadata: { name: 'c' }, webhooks: [{ name: 'h', ...over }] }])[0];
}

const rule = (over: Record<string, unknown> = {}) => ({
  operations: ['CREATE'],
  apiGroups: [GROUP],
  apiVersions: ['v1'],
  resources: ['sharedsecrets'],
  ...over,
});

describe('rules', () => {
  test.each([
    ['the exact resource', rule(), attrs(), true],
    ['another operation', rule(), attrs({ operation: 'UPDATE' }), false],
    ['operations *', rule({ operations: ['*'] }), attrs({ operation: 'DELETE' }), true],
    ['another group', rule({ apiGroups: ['apps'] }), attrs(), false],
    ['another version', rule({ apiVersions: ['v2'] }), attrs(), false],
    ['a subresource against a bare resource', rule(), attrs({ subresource: 'status' }), false],
    ['res/sub', rule({ resources: ['sharedsecrets/status'] }), attrs({ subresource: 'status' }), true],
    ['res/* on a subresource', rule({ resources: ['sharedsecrets/*'] }), attrs({ subresource: 'status' }), true],
    [
      'res/* on the object itself too (kube splits it into res and *)',
      rule({ resources: ['sharedsecrets/*'] }),
      attrs(),
      true,
    ],
    ['* on a subresource', rule({ resources: ['*'] }), attrs({ subresource: 'status' }), false],
    ['*/* on a subresource', rule({ resources: ['*/*'] }), attrs({ subresource: 'status' }), true],
    ['*/status', rule({ resources: ['*/status'] }), attrs({ subresource: 'status' }), true],
    ['scope Namespaced, namespaced', rule({ scope: 'Namespaced' }), attrs(), true],
    ['scope Cluster, namespaced', rule({ scope: 'Cluster' }), attrs(), false],
    [
      'scope Cluster, cluster-scoped',
      rule({ scope: 'Cluster', resources: ['clusters'] }),
      attrs({ resource: 'clusters', namespace: '' }),
      true,
    ],
    ['no rules at all', undefined, attrs(), false],
  ])('%s', (_what, r, a, expected) => {
    expect(matchesRules(hook(r ? { rules: [r] } : {}), a)).toBe(expected);
  });
});

describe('selectors', () => {
  test('objectSelector: the object or the old object', () => {
    const gold = hook({ objectSelector: { matchLabels: { tier: 'gold' } } });
    expect(matchesObjectSelector(gold, attrs())).toBe(true);
    const silver = { metadata: { name: 'db', labels: { tier: 'silver' } } };
    expect(matchesObjectSelector(gold, attrs({ object: silver }))).toBe(false);
    expect(matchesObjectSelector(gold, attrs({ object: silver, oldObject: attrs().object }))).toBe(true);
    expect(matchesObjectSelector(gold, attrs({ object: undefined, oldObject: undefined }))).toBe(false);
    const notIn = hook({
      objectSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] },
    });
    expect(matchesObjectSelector(notIn, attrs())).toBe(false);
    const exists = hook({ objectSelector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] } });
    expect(matchesObjectSelector(exists, attrs())).toBe(false);
  });

  test('a selector kube would not parse is an internal error naming the webhook', () => {
    const bad = hook({ objectSelector: { matchExpressions: [{ key: 'tier', operator: 'Near', values: ['x'] }] } });
    expect(() => matchesObjectSelector(bad, attrs())).toThrow(
      'webhook "h": invalid label selector: "Near" is not a valid label selector operator',
    );
    const empty = hook({ objectSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: [] }] } });
    expect(() => matchesObjectSelector(empty, attrs())).toThrow('operator In of tier requires non-empty values');
  });

  test("namespaceSelector: the namespace's labels; cluster-scoped objects always pass; a namespace the host lacks is 404", async () => {
    const prod = hook({ namespaceSelector: { matchLabels: { env: 'prod' } } });
    const labels = async (ns: string) => ({ 'team-a': { env: 'dev' }, 'team-p': { env: 'prod' } })[ns];
    expect(await matchesNamespaceSelector(prod, attrs(), labels)).toBe(false);
    expect(await matchesNamespaceSelector(prod, attrs({ namespace: 'team-p' }), labels)).toBe(true);
    expect(await matchesNamespaceSelector(prod, attrs({ namespace: '' }), labels)).toBe(true);
    await expect(matchesNamespaceSelector(prod, attrs({ namespace: 'gone' }), labels)).rejects.toThrow(
      'namespaces "gone" not found',
    );
  });
});

describe('configurations', () => {
  test("webhooks in the order of their configurations' names, with kube's defaults", () => {
    const hooks = webhooksOf([
      {
        metadata: { name: 'b' },
        webhooks: [{ name: 'b1' }, { name: 'b2', failurePolicy: 'Ignore', timeoutSeconds: 3 }],
      },
      { metadata: { name: 'a' }, webhooks: [{ name: 'a1', reinvocationPolicy: 'IfNeeded', matchPolicy: 'Exact' }] },
    ]);
    expect(hooks.map((h) => h.name)).toEqual(['a1', 'b1', 'b2']);
    expect(hooks[1]).toMatchObject({
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      timeoutSeconds: 10,
      reinvocationPolicy: 'Never',
    });
    expect(hooks[2]).toMatchObject({ failurePolicy: 'Ignore', timeoutSeconds: 3 });
    expect(hooks[0]).toMatchObject({ reinvocationPolicy: 'IfNeeded', matchPolicy: 'Exact' });
  });

  test('a service is called at its cluster DNS name, port 443 unless named, with its path', () => {
    expect(webhookUrl({ service: { namespace: 'policy', name: 'gate' } }).href).toBe('https://gate.policy.svc/');
    expect(webhookUrl({ service: { namespace: 'policy', name: 'gate', port: 8443, path: '/validate' } }).href).toBe(
      'https://gate.policy.svc:8443/validate',
    );
    expect(webhookUrl({ url: 'https://hooks.example.com/x' }).href).toBe('https://hooks.example.com/x');
    expect(() => webhookUrl({})).toThrow('the webhook has neither clientConfig.url nor clientConfig.service');
  });
});
