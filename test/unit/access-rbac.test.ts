/** What an object's owner and access entries become in RBAC (src/access/rbac.ts), without a host. */
import { describe, expect, test } from '@jest/globals';
import { desiredRbac, generatedName } from '../../src/access/rbac.js';
import { loadDefinitions } from '../../src/registry/definitions.js';

const defs = loadDefinitions();
const secretDef = defs.find((d) => d.plural === 'sharedsecrets')!;
const clusterDef = defs.find((d) => d.plural === 'clusters')!;

const secret = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'management.platform.sh/v1',
  kind: 'SharedSecret',
  metadata: { name, namespace: 'ns', uid: 'uid-1', generation: 1 },
  spec,
});

describe('desiredRbac', () => {
  test('nothing for an object with neither owner nor access', () => {
    expect(desiredRbac(secretDef, secret('s', {}))).toEqual([]);
    expect(desiredRbac(secretDef, secret('s', { access: [] }))).toEqual([]);
  });

  test("'*' subresources expand to the kind's own (RBAC has no wildcard for them); others pass through; verbs keep '*'", () => {
    const [role] = desiredRbac(
      secretDef,
      secret('s', { access: [{ verbs: ['*'], subresources: ['*', 'extra'], users: ['a'] }] }),
    );
    expect(role.rules).toEqual([
      {
        apiGroups: ['management.platform.sh'],
        resources: ['sharedsecrets', 'sharedsecrets/status', 'sharedsecrets/extra'],
        resourceNames: ['s'],
        verbs: ['*'],
      },
    ]);
  });

  test('subjects are deduplicated; teams become platform:team: groups', () => {
    const [, binding] = desiredRbac(
      secretDef,
      secret('s', { access: [{ verbs: ['get'], users: ['a', 'a'], teams: ['t'] }] }),
    );
    expect(binding.subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'a' },
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'platform:team:t' },
    ]);
  });

  test('a cluster-scoped kind gets cluster-wide kinds and no namespace', () => {
    const obj = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'Cluster',
      metadata: { name: 'eu', uid: 'u' },
      spec: { owner: { user: 'o' } },
    };
    const [role, binding] = desiredRbac(clusterDef, obj);
    expect([role.kind, binding.kind]).toEqual(['ClusterRole', 'ClusterRoleBinding']);
    expect(role.metadata.namespace).toBeUndefined();
    expect(role.metadata.labels).not.toHaveProperty(['management.platform.sh/source-namespace']);
  });
});

describe('generatedName', () => {
  test('short names are spelled out', () => {
    expect(generatedName(secretDef, { name: 'db', uid: 'u1' }, 'access-3')).toBe('platform-sharedsecret-db-access-3');
  });

  test('long names are cut with a hash of the whole name and the uid: at most 63 characters, and two long names that share a prefix differ', () => {
    const a = generatedName(secretDef, { name: `${'x'.repeat(240)}-a`, uid: 'u1' }, 'access-12');
    const b = generatedName(secretDef, { name: `${'x'.repeat(240)}-b`, uid: 'u1' }, 'access-12');
    const again = generatedName(secretDef, { name: `${'x'.repeat(240)}-a`, uid: 'u2' }, 'access-12');
    for (const n of [a, b, again]) expect(n.length).toBeLessThanOrEqual(63);
    expect(new Set([a, b, again]).size).toBe(3);
    expect(a).toMatch(/^platform-sharedsecret-x+-[0-9a-f]{16}-access-12$/);
  });

  test('a cut never leaves a dash or dot before the hash', () => {
    const name = generatedName(secretDef, { name: `${'a'.repeat(19)}.-${'b'.repeat(100)}`, uid: 'u1' }, 'owner');
    expect(name).not.toMatch(/[-.]-[0-9a-f]{16}-owner$/);
  });
});
