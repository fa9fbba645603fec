/** What an object's owner and access entries become in RBAC (src/access/rbac.ts), without a host. */
import { describe, expect, test } from '@jest/globals';
import { ACCESS_LIMITS, objectGrants } from '../../src/access/model.js';
import { desiredRbac, generatedName, isGeneratedName, type RbacObject } from '../../src/access/rbac.js';
import { kinds } from '../../src/kinds/index.js';
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

const objects = (spec: Record<string, unknown>, def = secretDef) => desiredRbac(def, secret('s', spec)).objects;
const roles = (objs: RbacObject[]) => objs.filter((o) => !o.roleRef);
const bindings = (objs: RbacObject[]) => objs.filter((o) => o.roleRef);

describe('desiredRbac', () => {
  test('nothing for an object with neither owner nor access', () => {
    expect(desiredRbac(secretDef, secret('s', {}))).toEqual({ objects: [] });
    expect(desiredRbac(secretDef, secret('s', { access: [] }))).toEqual({ objects: [] });
  });

  test("'*' subresources expand to the kind's own (RBAC has no wildcard for them); others pass through; '*' verbs stand alone", () => {
    const [role] = objects({ access: [{ verbs: ['get', '*'], subresources: ['*', 'extra'], users: ['a'] }] });
    expect(role.rules).toEqual([
      {
        apiGroups: ['management.platform.sh'],
        resources: ['sharedsecrets', 'sharedsecrets/extra', 'sharedsecrets/status'],
        resourceNames: ['s'],
        verbs: ['*'],
      },
    ]);
  });

  test('subjects are deduplicated and sorted, Users first; teams become platform:team: groups', () => {
    const [, binding] = objects({ access: [{ verbs: ['get'], users: ['b', 'a', 'b'], teams: ['t'] }] });
    expect(binding.subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'a' },
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'b' },
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'platform:team:t' },
    ]);
  });

  test('entries with the same verbs and subresources, however written, share one Role and binding holding all their subjects', () => {
    const objs = objects({
      access: [
        { verbs: ['get', 'list'], subresources: ['status'], users: ['a'] },
        { verbs: ['update'], users: ['a'] },
        { verbs: ['list', 'get', 'list'], subresources: ['*'], teams: ['t'], users: ['b'] },
        { verbs: ['update'], users: ['c', 'a'] },
      ],
    });
    expect(roles(objs).map((r) => r.rules![0].verbs)).toEqual([['get', 'list'], ['update']]);
    expect(bindings(objs).map((b) => b.subjects!.map((s) => s.name))).toEqual([
      ['a', 'b', 'platform:team:t'],
      ['a', 'c'],
    ]);
    for (const b of bindings(objs)) expect(b.roleRef!.name).toBe(b.metadata.name);
    expect(roles(objs).map((r) => r.metadata.name)).toEqual([
      expect.stringMatching(/^platform-sharedsecret-s-access-[0-9a-f]{10}$/),
      expect.stringMatching(/^platform-sharedsecret-s-access-[0-9a-f]{10}$/),
    ]);
  });

  test("a set's name stays when other entries come or move: a new set adds its pair, a user added changes one binding, nothing else is rewritten", () => {
    const a = { verbs: ['get'], users: ['a'] };
    const b = { verbs: ['update'], users: ['b'] };
    const before = objects({ access: [a, b] });
    const after = objects({ access: [{ verbs: ['delete'], users: ['c'] }, b, { ...a, users: ['a', 'd'] }] });
    const byName = (objs: RbacObject[]) => new Map(objs.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
    const was = byName(before);
    const changed = [...byName(after)].filter(([key, o]) => JSON.stringify(was.get(key)) !== JSON.stringify(o));
    expect(changed.map(([key]) => key.split('/')[0])).toEqual(['Role', 'RoleBinding', 'RoleBinding']);
  });

  test('within the limits, every object is made: as many Roles as distinct sets, the largest binding whole', () => {
    const { entries, users, teams } = ACCESS_LIMITS;
    const verbs = (i: number) =>
      ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'].filter((_, b) => (i + 1) & (1 << b));
    const distinct = Array.from({ length: entries }, (_, i) => ({ verbs: verbs(i), users: ['a'] }));
    expect(desiredRbac(secretDef, secret('s', { owner: { user: 'o' }, access: distinct }))).toEqual({
      objects: expect.any(Array),
    });
    expect(objects({ owner: { user: 'o' }, access: distinct })).toHaveLength(2 * (entries + 1));
    const full = Array.from({ length: entries }, (_, i) => ({
      verbs: ['get'],
      users: Array.from({ length: users }, (_, j) => `u-${i}-${j}`),
      teams: Array.from({ length: teams }, (_, j) => `t-${i}-${j}`),
    }));
    expect(bindings(objects({ access: full }))[0].subjects).toHaveLength(entries * (users + teams));
  });

  test('an object stored before the limits that asks for more Roles gets only its owner pair, and says why', () => {
    const verbs = (i: number) =>
      ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'].filter((_, b) => (i + 1) & (1 << b));
    const access = Array.from({ length: 100 }, (_, i) => ({ verbs: verbs(i), users: ['a'] }));
    const { objects: objs, refused } = desiredRbac(secretDef, secret('s', { owner: { user: 'o' }, access }));
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Role/platform-sharedsecret-s-owner',
      'RoleBinding/platform-sharedsecret-s-owner',
    ]);
    expect(refused).toEqual({
      reason: 'AccessListTooLarge',
      message:
        'spec.access asks for 100 Roles (one per distinct set of verbs and subresources), more than the 64 an object may have: none of its entries is granted in the host cluster until spec.access is within its limits (64 entries of at most 32 users and 32 teams)',
    });
  });

  test('... or a binding with more subjects than a valid object can have', () => {
    const access = Array.from({ length: 2100 }, (_, i) => ({ verbs: ['get'], users: [`u-${i}`], teams: [`t-${i}`] }));
    expect(desiredRbac(clusterDef, { ...secret('s', { access }), kind: 'Cluster' })).toEqual({
      objects: [],
      refused: {
        reason: 'AccessListTooLarge',
        message:
          'spec.access asks for a ClusterRoleBinding of 4200 users and teams (those of the entries granting get), more than the 4096 one may have: none of its entries is granted in the host cluster until spec.access is within its limits (64 entries of at most 32 users and 32 teams)',
      },
    });
  });

  test('two sets whose names clash (verbs are free text, so one can be searched for) make none of the entries, instead of two objects fighting over one name', () => {
    // Found by trying verbs: both sets hash to f7c478c3ea.
    const access = [
      { verbs: ['xcndfx'], users: ['a'] },
      { verbs: ['xeektw'], users: ['b'] },
    ];
    expect(desiredRbac(secretDef, secret('s', { access }))).toEqual({
      objects: [],
      refused: {
        reason: 'AccessNameClash',
        message:
          'two sets of verbs and subresources in spec.access would have Roles of the same name (ending in access-f7c478c3ea): none of its entries is granted in the host cluster until the verbs of one of them change',
      },
    });
  });

  test('a cluster-scoped kind gets cluster-wide kinds and no namespace', () => {
    const obj = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'Cluster',
      metadata: { name: 'eu', uid: 'u' },
      spec: { owner: { user: 'o' } },
    };
    const [role, binding] = desiredRbac(clusterDef, obj).objects;
    expect([role.kind, binding.kind]).toEqual(['ClusterRole', 'ClusterRoleBinding']);
    expect(role.metadata.namespace).toBeUndefined();
    expect(role.metadata.labels).not.toHaveProperty(['management.platform.sh/source-namespace']);
  });
});

describe('ACCESS_LIMITS', () => {
  test('are the maxItems of spec.access in every CRD that has it, which the store enforces', () => {
    const withAccess = defs.filter((d) => d.schema.properties?.spec?.properties?.access);
    // The owned kinds (kinds/owned.ts), from the one list of kinds.
    const owned = kinds.filter((k) => k.strategy.access).map((k) => k.ref.kind);
    expect(withAccess.map((d) => d.kind).sort()).toEqual(owned.sort());
    for (const d of withAccess) {
      const access = d.schema.properties!.spec.properties!.access;
      const item = access.items!.properties!;
      expect({
        kind: d.kind,
        entries: access.maxItems,
        verbs: item.verbs.maxItems,
        subresources: item.subresources.maxItems,
        users: item.users.maxItems,
        teams: item.teams.maxItems,
      }).toEqual({ kind: d.kind, ...ACCESS_LIMITS });
    }
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

describe('isGeneratedName: only the names the server makes for a source, so the only ones it replaces or deletes', () => {
  const foo = { name: 'foo', uid: 'uid-foo' };
  const fooBar = { name: 'foo-bar', uid: 'uid-foo-bar' };
  const accessName = (source: { name: string; uid: string }, spec: Record<string, unknown>, def = secretDef) =>
    desiredRbac(def, { metadata: { name: source.name, namespace: 'ns', uid: source.uid }, spec }).objects[0].metadata
      .name;
  const generatedFor = (source: { name: string; uid: string }, name: string) =>
    isGeneratedName(secretDef, source, name);

  test("the owner's name, each access set's and an earlier version's access-<index> are the source's own", () => {
    expect(generatedFor(foo, generatedName(secretDef, foo, 'owner'))).toBe(true);
    expect(generatedFor(foo, accessName(foo, { access: [{ verbs: ['get'], users: ['a'] }] }))).toBe(true);
    expect(generatedFor(foo, 'platform-sharedsecret-foo-access-0')).toBe(true);
    expect(generatedFor(foo, 'platform-sharedsecret-foo-access-17')).toBe(true);
  });

  test("the security review's names: another source's whose name starts with this one's, and names never generated", () => {
    expect(generatedFor(foo, generatedName(secretDef, fooBar, 'owner'))).toBe(false);
    expect(generatedFor(foo, accessName(fooBar, { access: [{ verbs: ['get'], users: ['a'] }] }))).toBe(false);
    expect(generatedFor(foo, generatedName(secretDef, fooBar, 'access-1a2b3c'))).toBe(false);
    expect(generatedFor(foo, 'platform-sharedsecret-foo-anything-at-all')).toBe(false);
    expect(generatedFor(foo, 'platform-sharedsecret-foo-x')).toBe(false);
    // foo-bar's own names are still foo-bar's.
    expect(generatedFor(fooBar, generatedName(secretDef, fooBar, 'owner'))).toBe(true);
  });

  test('suffixes of almost the right shape are not generated: a hash of another length or case, an index with a leading zero', () => {
    for (const suffix of ['access-1a2b3c', 'access-1A2B3C4D5E', 'access-1a2b3c4d5e6', 'access-01', 'access-', 'owners'])
      expect([suffix, generatedFor(foo, `platform-sharedsecret-foo-${suffix}`)]).toEqual([suffix, false]);
  });

  test("long names, cut with the source's hash: the same rule holds", () => {
    const long = { name: `${'l'.repeat(200)}-end`, uid: 'uid-long' };
    expect(generatedFor(long, generatedName(secretDef, long, 'owner'))).toBe(true);
    expect(generatedFor(long, generatedName(secretDef, long, 'access-3'))).toBe(true);
    expect(
      generatedFor(long, accessName(long, { access: [{ verbs: ['get'], subresources: ['status'], users: ['a'] }] })),
    ).toBe(true);
    // A name with the source's hash, cut to make room for a suffix the server never gives.
    expect(generatedFor(long, generatedName(secretDef, long, 'bar-owner'))).toBe(false);
    expect(generatedFor(long, generatedName(secretDef, { ...long, uid: 'another' }, 'owner'))).toBe(false);
  });

  test('no name past 63 characters is generated, even one generatedName gives for an index no version made', () => {
    // 100 digits leave no room for the source's name: what the access sync would keep of such a name is anyone's
    // to make as long as the host takes.
    const huge = generatedName(secretDef, foo, `access-${'9'.repeat(100)}`);
    expect(huge.length).toBeGreaterThan(63);
    expect(generatedFor(foo, huge)).toBe(false);
    expect(generatedFor(foo, generatedName(secretDef, foo, `access-${'9'.repeat(16)}`))).toBe(true);
  });

  test("a Cluster's names are not a SharedSecret's of the same name", () => {
    expect(generatedFor(foo, generatedName(clusterDef, foo, 'owner'))).toBe(false);
    expect(isGeneratedName(clusterDef, foo, generatedName(clusterDef, foo, 'owner'))).toBe(true);
  });
});

describe('stored data of the wrong types grants nothing (it is not trusted to have the schema types)', () => {
  const alice = { name: 'alice', groups: ['platform:team:dev'] };
  const malformed = [
    { verbs: 'get', users: ['alice'] },
    { verbs: ['get'], users: 'malice' },
    { verbs: ['get'], teams: 'devs' },
    'alice',
    null,
  ];

  test('objectGrants: a string where a list belongs matches nothing, not a part of it', () => {
    for (const entry of malformed)
      expect(objectGrants('sharedsecrets', secret('s', { access: [entry] }), alice, 'get')).toBe(false);
    expect(objectGrants('sharedsecrets', secret('s', { access: 'alice' }), alice, 'get')).toBe(false);
    expect(
      objectGrants(
        'sharedsecrets',
        secret('s', { access: [{ verbs: ['get'], subresources: 'status', users: ['alice'] }] }),
        alice,
        'get',
        'status',
      ),
    ).toBe(false);
  });

  test('desiredRbac: such entries make no Role or binding, and the sync does not fail on them', () => {
    expect(desiredRbac(secretDef, secret('s', { access: malformed }))).toEqual({ objects: [] });
    expect(desiredRbac(secretDef, secret('s', { access: { verbs: ['get'] } }))).toEqual({ objects: [] });
  });
});
