/**
 * The OwnedAccessKey strategy (src/kinds/ownedaccesskey/strategy.ts): who may create and change which keys, key
 * generation and hashing, what clients see, and the kind's validation. Through the store, the same with the
 * caller's identity; the HTTP round trips are in test/integration/accesskeys.test.ts.
 */
import { describe, expect, test } from '@jest/globals';
import type { KubeObject } from '../../src/apimachinery/types.js';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { buildRestriction } from '../../src/access/scope.js';
import { ACCESS_KEY_EXTRA, identityOf } from '../../src/auth/accesskeys.js';
import { ActivityRecorder } from '../../src/auth/activity.js';
import {
  GENERATED_KEY_PREFIX,
  generateAccessKey,
  hashAccessKey,
  isKeyHash,
  ownedAccessKeyStrategy,
} from '../../src/kinds/ownedaccesskey/strategy.js';
import { notFound } from '../../src/apimachinery/status.js';
import { carryOverFields, withoutFields } from '../../src/registry/hiddenfields.js';
import type { Strategy } from '../../src/registry/strategy.js';
import { statusOf } from '../support/errors.js';

// As the store sees it (objects of any kind): the tests read the answers' fields without narrowing them.
const strategy: Strategy = ownedAccessKeyStrategy;

const ALICE: UserInfo = { name: 'alice', groups: ['platform:team:dev', 'system:authenticated'] };
const ADMIN: UserInfo = { name: 'root', groups: ['system:masters'] };

function key(spec: Record<string, unknown> = {}, name = 'k1'): KubeObject {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'OwnedAccessKey',
    metadata: { name, creationTimestamp: '2030-01-01T00:00:00Z' },
    spec,
  };
}

/** `null`: a call from inside the server, with no user. */
function created(spec: Record<string, unknown>, user: UserInfo | null = ALICE): KubeObject {
  const obj = key(spec);
  strategy.prepareForCreate!(obj, user ?? undefined);
  return obj;
}

/** The stored form of a key object made by `user`. */
function stored(spec: Record<string, unknown>, user: UserInfo | null = ADMIN): KubeObject {
  return deepFreeze(strategy.toStorage!(created(spec, user)));
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

describe('create: whose key', () => {
  test('spec.user defaults to the caller', () => {
    expect(created({}).spec.user).toBe('alice');
  });

  test('a team key caller defaults spec.team instead', () => {
    const team: UserInfo = { name: 'platform:team:dev', groups: ['platform:team:dev'] };
    const obj = created({}, team);
    expect(obj.spec.team).toBe('dev');
    expect(obj.spec.user).toBeUndefined();
  });

  test('a given user, team or subject is not overridden', () => {
    expect(created({ team: 'dev' }).spec).toMatchObject({ team: 'dev' });
    expect(created({ team: 'dev' }).spec.user).toBeUndefined();
    expect(created({ subject: 'alice' }).spec.user).toBeUndefined();
  });

  test('a caller may create keys for itself and for its teams', () => {
    expect(() => created({ user: 'alice' })).not.toThrow();
    expect(() => created({ team: 'dev' })).not.toThrow();
    expect(() => created({ subject: 'alice' })).not.toThrow();
  });

  test('but not for someone else: 403 naming the caller and what it may not do', () => {
    for (const spec of [{ user: 'bob' }, { team: 'ops' }, { subject: 'ci-bot' }]) {
      const err = statusOf(() => created(spec));
      expect(err.code).toBe(403);
      expect(err.status.reason).toBe('Forbidden');
      expect(err.status.details).toMatchObject({
        name: 'k1',
        group: 'management.platform.sh',
        kind: 'ownedaccesskeys',
      });
      expect(err.message).toMatch(
        /^ownedaccesskeys\.management\.platform\.sh "k1" is forbidden: User "alice" cannot create resource "ownedaccesskeys" in API group "management\.platform\.sh" at the cluster scope: may not create access keys for /,
      );
    }
    expect(statusOf(() => created({ user: 'bob' })).message).toContain('for user "bob"');
    expect(statusOf(() => created({ team: 'ops' })).message).toContain('for team "ops"');
  });

  test('only system:masters may set groups', () => {
    const err = statusOf(() => created({ groups: ['admins'] }));
    expect(err.code).toBe(403);
    expect(err.message).toContain('only members of system:masters may set spec.groups');
    expect(created({ user: 'bob', groups: ['admins'] }, ADMIN).spec).toMatchObject({ user: 'bob', groups: ['admins'] });
  });

  test('a restricted credential (a scoped key) may not create keys', () => {
    const scoped: UserInfo = { ...ALICE, restriction: buildRestriction({ allowPlatformCli: true }) };
    const err = statusOf(() => created({}, scoped));
    expect(err.code).toBe(403);
    expect(err.message).toContain('a credential with a scope or rules may not create or change access keys');
    expect(
      statusOf(() => created({}, { ...ADMIN, restriction: buildRestriction({ allowPlatformCli: true }) })).code,
    ).toBe(403);
  });

  test('calls from inside the server (no user) are trusted', () => {
    expect(created({ user: 'anyone', groups: ['g'] }, null).spec.user).toBe('anyone');
  });
});

describe('key material', () => {
  test('a missing or empty key is generated: 256 random bits, base64url, recognisable prefix', () => {
    const a = created({}).spec.key;
    const b = created({ key: '' }).spec.key;
    for (const k of [a, b]) {
      expect(k.startsWith(GENERATED_KEY_PREFIX)).toBe(true);
      const raw = Buffer.from(k.slice(GENERATED_KEY_PREFIX.length), 'base64url');
      expect(raw).toHaveLength(32);
      expect(k).toMatch(/^pak_[A-Za-z0-9_-]{43}$/);
    }
    expect(a).not.toBe(b);
    expect(new Set(Array.from({ length: 50 }, generateAccessKey)).size).toBe(50);
  });

  test('a given key is kept', () => {
    expect(created({ key: 'my-own-key-123' }).spec.key).toBe('my-own-key-123');
  });

  test('storage holds sha256:<hex> of the key, never the key', () => {
    const obj = created({ key: 'my-own-key-123' });
    const out = strategy.toStorage!(obj);
    expect(out.spec.key).toBe(hashAccessKey('my-own-key-123'));
    expect(out.spec.key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(JSON.stringify(out)).not.toContain('my-own-key-123');
    expect(isKeyHash(out.spec.key)).toBe(true);
    expect(isKeyHash('my-own-key-123')).toBe(false);
    // The prepared object is left as it was (the create answer shows it), and a stored hash is not hashed again.
    expect(obj.spec.key).toBe('my-own-key-123');
    expect(strategy.toStorage!(out)).toBe(out);
  });

  test('clients never see the key or identity.connectorData; the create answer alone shows the key', () => {
    const prepared = created({ key: 'k-secret', identity: { username: 'alice', connectorData: 'opaque' } }, ADMIN);
    const s = deepFreeze(strategy.toStorage!(prepared));
    expect(s.spec.identity.connectorData).toBe('opaque');
    const client = withoutFields(s, strategy.hiddenFields!);
    expect(client.spec.key).toBeUndefined();
    expect('key' in client.spec).toBe(false);
    expect(client.spec.identity).toEqual({ username: 'alice' });
    expect(s.spec.key).toBe(hashAccessKey('k-secret'));
    const answer = strategy.createResponse!(client, prepared);
    expect(answer.spec.key).toBe('k-secret');
    expect(answer.spec.identity).toEqual({ username: 'alice' });
  });

  test("kubectl's last-applied-configuration loses the key and connectorData", () => {
    const applied = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'OwnedAccessKey',
      metadata: { name: 'k1' },
      spec: { key: 'k-secret', identity: { connectorData: 'opaque', email: 'a@b' } },
    };
    const obj = key({ key: 'k-secret' });
    obj.metadata.annotations = {
      'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(applied) + '\n',
      other: 'x',
    };
    strategy.prepareForCreate!(obj, ALICE);
    const text = obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'];
    expect(text).not.toContain('k-secret');
    expect(text).not.toContain('opaque');
    expect(JSON.parse(text).spec).toEqual({ identity: { email: 'a@b' } });
    expect(obj.metadata.annotations.other).toBe('x');
  });
});

describe('update', () => {
  const update = (old: KubeObject, spec: Record<string, unknown>, user: UserInfo = ALICE) => {
    const next = { ...structuredClone(old), spec };
    strategy.prepareForUpdate!(next, old, user);
    return next;
  };

  test('without a key keeps the stored hash', () => {
    const old = stored({ user: 'alice', key: 'k-secret' });
    const next = update(old, { user: 'alice', displayName: 'CI' });
    expect(next.spec.key).toBe(hashAccessKey('k-secret'));
    expect(strategy.validateUpdate!(next, old)).toEqual([]);
  });

  test('with the same key is accepted and stores the same hash', () => {
    const old = stored({ user: 'alice', key: 'k-secret' });
    expect(update(old, { user: 'alice', key: 'k-secret' }).spec.key).toBe(hashAccessKey('k-secret'));
  });

  test('with another key is 422 "field is immutable", never echoing a key', () => {
    const old = stored({ user: 'alice', key: 'k-secret' });
    const err = statusOf(() => update(old, { user: 'alice', key: 'k-other' }));
    expect(err.code).toBe(422);
    expect(err.message).toBe(
      'OwnedAccessKey.management.platform.sh "k1" is invalid: spec.key: Invalid value: "<redacted>": field is immutable',
    );
    expect(err.status.details?.causes).toEqual([
      { reason: 'FieldValueInvalid', field: 'spec.key', message: 'Invalid value: "<redacted>": field is immutable' },
    ]);
    expect(JSON.stringify(err.status)).not.toMatch(/k-other|k-secret|sha256/);
  });

  test('identity.connectorData is kept when an update sends identity without it', () => {
    const old = stored({ user: 'alice', identity: { username: 'alice', connectorData: 'opaque' } });
    const carried = (spec: Record<string, unknown>) => {
      const next = { ...structuredClone(old), spec };
      carryOverFields(next, old, strategy.hiddenFields!);
      return next.spec;
    };
    expect(carried({ user: 'alice', identity: { username: 'alice2' } }).identity).toEqual({
      username: 'alice2',
      connectorData: 'opaque',
    });
    expect(carried({ user: 'alice' }).identity).toBeUndefined();
    expect(carried({ user: 'alice', identity: { connectorData: 'sent' } }).identity).toEqual({ connectorData: 'sent' });
  });

  test('a non-master may not move the key to anyone, itself or its own team included: 403 naming the field', () => {
    const old = stored({ user: 'alice' });
    expect(statusOf(() => update(old, { user: 'bob' })).message).toBe(
      'ownedaccesskeys.management.platform.sh "k1" is forbidden: User "alice" cannot update resource "ownedaccesskeys" in API group "management.platform.sh" at the cluster scope: spec.user: only members of system:masters may change whom a key acts as',
    );
    expect(statusOf(() => update(old, { team: 'dev' })).message).toContain(
      'spec.user: only members of system:masters may change whom a key acts as',
    );
    expect(statusOf(() => update(stored({ team: 'dev' }), { subject: 'alice' })).message).toContain(
      'spec.team: only members of system:masters',
    );
  });

  test('a non-master may neither add, remove nor replace groups a master set (reordering is no change)', () => {
    const old = stored({ user: 'alice', groups: ['granted', 'other'] });
    for (const groups of [['granted', 'other', 'more'], ['granted'], [], undefined, ['system:masters', 'other']]) {
      const err = statusOf(() => update(old, { user: 'alice', groups }));
      expect(err.code).toBe(403);
      expect(err.message).toContain('spec.groups: only members of system:masters may change the groups of a key');
    }
    expect(() => update(old, { user: 'alice', groups: ['other', 'granted'] })).not.toThrow();
  });

  test('a master may change anything but the key', () => {
    const old = stored({ user: 'alice' });
    expect(update(old, { user: 'bob', groups: ['x'] }, ADMIN).spec).toMatchObject({ user: 'bob', groups: ['x'] });
  });

  test('a master, and the server itself (no user), may widen and revive a key', () => {
    const old = stored({
      user: 'alice',
      groups: ['system:masters'],
      scope: { roles: [{ role: 'platformCLI' }] },
      disabled: true,
      ttl: 60,
    });
    for (const user of [ADMIN, undefined]) {
      const next = { ...structuredClone(old), spec: { user: 'alice', ttl: 0, ttlAfterLastActivity: true } };
      expect(() => strategy.prepareForUpdate!(next, old, user)).not.toThrow();
    }
  });

  test('a status write keeps the stored hash, which validates', () => {
    const old = stored({ user: 'alice' });
    const next = { ...structuredClone(old), status: { lastActivity: '2026-01-01T00:00:00Z' } };
    expect(strategy.validateUpdate!(next, old)).toEqual([]);
  });
});

describe('update outside system:masters only weakens a key', () => {
  // Issued by a master to alice: acts as a master, but only for the command line client's reads of cluster c1.
  const issued = {
    user: 'alice',
    groups: ['system:masters'],
    scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }, { cluster: 'c2' }] },
    ttl: 3600,
  };
  const update = (old: KubeObject, spec: Record<string, unknown>, user: UserInfo = ALICE) => {
    const next = { ...structuredClone(old), spec };
    strategy.prepareForUpdate!(next, old, user);
    return next;
  };
  const refusal = (old: KubeObject, spec: Record<string, unknown>, user: UserInfo = ALICE) => {
    const err = statusOf(() => update(old, spec, user));
    expect(err.code).toBe(403);
    expect(err.status.reason).toBe('Forbidden');
    return err.message.replace(/^.* at the cluster scope: /, '');
  };
  const SCOPE = 'spec.scope: only members of system:masters may remove or widen the scope of a key';

  test('removing or widening the scope is 403 naming spec.scope', () => {
    const old = stored(issued);
    const { scope: _scope, ...unscoped } = issued;
    expect(refusal(old, unscoped)).toBe(SCOPE);
    expect(refusal(old, { ...issued, scope: {} })).toBe(SCOPE);
    expect(refusal(old, { ...issued, scope: { roles: [{ role: 'platformCLI' }] } })).toBe(SCOPE); // CLI reads of every cluster
    expect(refusal(old, { ...issued, scope: { ...issued.scope, clusters: [{ cluster: '*' }] } })).toBe(SCOPE);
    expect(refusal(old, { ...issued, scope: { ...issued.scope, projects: [{ project: 'p1' }] } })).toBe(SCOPE);
  });

  test('the same holds for a team member changing a team key', () => {
    const old = stored({ ...issued, user: undefined, team: 'dev' });
    expect(refusal(old, { team: 'dev', groups: ['system:masters'], ttl: 3600 })).toBe(SCOPE);
    expect(() =>
      update(old, {
        ...issued,
        user: undefined,
        team: 'dev',
        scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }] },
      }),
    ).not.toThrow();
  });

  test('rules and allowPlatformCli: removing or widening is 403 naming the field', () => {
    const old = stored({
      user: 'alice',
      rules: [{ verbs: ['get'], resources: [{ group: 'management.platform.sh', resources: ['clusters'] }] }],
    });
    expect(refusal(old, { user: 'alice' })).toBe(
      'spec.rules: only members of system:masters may remove or widen the rules of a key',
    );
    expect(
      refusal(old, {
        user: 'alice',
        rules: [
          { verbs: ['get', 'delete'], resources: [{ group: 'management.platform.sh', resources: ['clusters'] }] },
        ],
      }),
    ).toContain('spec.rules:');
    expect(
      refusal(old, {
        user: 'alice',
        rules: [{ verbs: ['get'], resources: [{ group: 'management.platform.sh', resources: ['clusters'] }] }],
        allowPlatformCli: true,
      }),
    ).toBe('spec.allowPlatformCli: only members of system:masters may remove or widen the scope of a key');
    expect(
      refusal(stored({ user: 'alice', allowPlatformCli: true }), { user: 'alice', allowPlatformCli: false }),
    ).toContain('spec.allowPlatformCli:');
  });

  test('a narrower scope, rules, disabled: true and a shorter or added ttl are fine', () => {
    const old = stored(issued);
    expect(() =>
      update(old, { ...issued, scope: { roles: [{ role: 'platformCLI' }], clusters: [{ cluster: 'c1' }] } }),
    ).not.toThrow();
    expect(() => update(old, { ...issued, scope: { clusters: [{ cluster: 'c1' }] } })).not.toThrow();
    expect(() => update(old, { ...issued, disabled: true, ttl: 60, displayName: 'CI' })).not.toThrow();
    // An unrestricted key may be given any scope; a key without ttl any ttl.
    expect(() =>
      update(stored({ user: 'alice' }), { user: 'alice', scope: { projects: [{ project: '*' }] }, ttl: 10 }),
    ).not.toThrow();
  });

  test('clearing disabled is 403 naming spec.disabled', () => {
    const old = stored({ user: 'alice', disabled: true });
    for (const disabled of [false, undefined]) {
      expect(refusal(old, { user: 'alice', disabled })).toBe(
        'spec.disabled: only members of system:masters may enable a disabled key',
      );
    }
  });

  test('removing or lengthening ttl is 403 naming spec.ttl', () => {
    const old = stored(issued);
    for (const ttl of [0, undefined, 3601]) {
      expect(refusal(old, { ...issued, ttl })).toBe(
        'spec.ttl: only members of system:masters may remove or lengthen the ttl of a key',
      );
    }
    // A ttl that is no ttl at all is validation's to refuse.
    expect(strategy.validate!(update(old, { ...issued, ttl: -5 })).map((e) => e.field)).toContain('spec.ttl');
  });

  test('changing ttlAfterLastActivity either way is 403 naming it', () => {
    const msg =
      'spec.ttlAfterLastActivity: only members of system:masters may change when the ttl of a key starts counting';
    expect(refusal(stored(issued), { ...issued, ttlAfterLastActivity: true })).toBe(msg);
    expect(refusal(stored({ ...issued, ttlAfterLastActivity: true }), { ...issued, ttlAfterLastActivity: false })).toBe(
      msg,
    );
    expect(() => update(stored(issued), { ...issued, ttlAfterLastActivity: false })).not.toThrow();
  });

  // Outside system:masters a status write is refused by the store, for every kind (accesskeys.test.ts, auth-matrix).
  test('status writes: masters and the server (no user) may, a master with a scoped credential may not', () => {
    const old = stored(issued);
    const next = { ...structuredClone(old), status: { lastActivity: '2026-01-01T00:00:00Z' } };
    expect(() => strategy.prepareForStatusUpdate!(next, old, ADMIN)).not.toThrow();
    expect(() => strategy.prepareForStatusUpdate!(next, old, undefined)).not.toThrow();
    const scopedAdmin = { ...ADMIN, restriction: buildRestriction({ allowPlatformCli: true }) };
    expect(statusOf(() => strategy.prepareForStatusUpdate!(next, old, scopedAdmin)).code).toBe(403);
  });

  test('status.lastActivity may not be written into the future, by anyone; one already stored does not block other writes', () => {
    const old = stored({ user: 'alice' });
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const errs = strategy.validateUpdate!({ ...structuredClone(old), status: { lastActivity: future } }, old);
    expect(errs.map((e) => `${e.field}:${e.type}`)).toEqual(['status.lastActivity:FieldValueInvalid']);
    expect(errs[0].detail).toContain('must not be in the future');
    const past = new Date(Date.now() - 1000).toISOString();
    expect(strategy.validateUpdate!({ ...structuredClone(old), status: { lastActivity: past } }, old)).toEqual([]);
    const tampered = deepFreeze({ ...structuredClone(old), status: { lastActivity: future } });
    expect(
      strategy.validateUpdate!({ ...structuredClone(tampered), spec: { ...tampered.spec, disabled: true } }, tampered),
    ).toEqual([]);
  });
});

describe('validation', () => {
  const errs = (spec: Record<string, unknown>) =>
    strategy.validate!(key({ key: 'k-0123456789', ...spec })).map((e) => `${e.field}:${e.type}`);

  test('exactly one of user, team and subject', () => {
    expect(errs({})).toEqual(['spec.user:FieldValueRequired']);
    expect(errs({ user: 'a' })).toEqual([]);
    expect(errs({ user: 'a', team: 't' })).toEqual(['spec.team:FieldValueForbidden']);
    expect(errs({ team: 't', subject: 's' })).toEqual(['spec.subject:FieldValueForbidden']);
  });

  test('ttl is not negative', () => {
    expect(errs({ user: 'a', ttl: -1 })).toEqual(['spec.ttl:FieldValueInvalid']);
    expect(errs({ user: 'a', ttl: 0 })).toEqual([]);
  });

  test('type is one of the known kinds', () => {
    for (const type of ['', 'User', 'Login', 'Other', 'Reset', 'OIDCRefreshToken', 'NetworkPeer', 'Workspace'])
      expect(errs({ user: 'a', type })).toEqual([]);
    expect(errs({ user: 'a', type: 'Robot' })).toEqual(['spec.type:FieldValueNotSupported']);
  });

  test('keys that cannot be bearer tokens, or look like stored hashes, are refused without echoing them', () => {
    for (const k of ['has space', 'tab\there', `sha256:${'0'.repeat(64)}`]) {
      const found = strategy.validate!(key({ user: 'a', key: k }));
      expect(found.map((e) => e.field)).toEqual(['spec.key']);
      expect(found[0].value).toBe('<redacted>');
    }
  });

  test('scope entries name something; rules with resourceNames need resources', () => {
    expect(
      errs({ user: 'a', scope: { projects: [{}], clusters: [{ cluster: '' }], roles: [{ role: 'platformCLI' }] } }),
    ).toEqual([
      'spec.scope.projects[0].project:FieldValueRequired',
      'spec.scope.clusters[0].cluster:FieldValueRequired',
    ]);
    expect(errs({ user: 'a', rules: [{ resources: [{ group: '', resourceNames: ['x'] }] }] })).toEqual([
      'spec.rules[0].resources[0].resources:FieldValueRequired',
    ]);
    expect(errs({ user: 'a', rules: [{ verbs: ['GET'] }] })).toEqual(['spec.rules[0].verbs[0]:FieldValueInvalid']);
  });
});

describe('the identity a key acts as', () => {
  const obj = (spec: Record<string, unknown>) => ({ ...key(spec, 'ci'), spec: { ...spec, key: hashAccessKey('x') } });

  test('user key: the user, its platform:user group and the key groups', () => {
    expect(identityOf(obj({ user: 'alice', groups: ['g1'] }))).toEqual({
      name: 'alice',
      groups: ['g1', 'platform:user:alice'],
      extra: { [ACCESS_KEY_EXTRA]: ['ci'] },
    });
  });

  test('team key: platform:team:<team>, in that group', () => {
    expect(identityOf(obj({ team: 'dev' }))).toEqual({
      name: 'platform:team:dev',
      groups: ['platform:team:dev'],
      extra: { [ACCESS_KEY_EXTRA]: ['ci'] },
    });
  });

  test('subject key: the subject and the key groups', () => {
    expect(identityOf(obj({ subject: 'robot', groups: ['g'] }))).toEqual({
      name: 'robot',
      groups: ['g'],
      extra: { [ACCESS_KEY_EXTRA]: ['ci'] },
    });
  });
});

describe('ActivityRecorder', () => {
  test('record is synchronous; writes happen on ticks, at most once per interval per key', async () => {
    let clock = 1_000_000;
    const writes: [string, string][] = [];
    const rec = new ActivityRecorder({
      write: async (n, t) => void writes.push([n, t]),
      minIntervalMs: 60_000,
      tickMs: 0,
      now: () => clock,
    });
    rec.record('a');
    rec.record('b');
    expect(writes).toEqual([]);
    expect(rec.lastSeen('a')).toBe(clock);
    await rec.tick();
    expect(writes.map(([n]) => n).sort()).toEqual(['a', 'b']);
    clock += 10_000;
    rec.record('a');
    await rec.tick();
    expect(writes).toHaveLength(2);
    expect(rec.lastSeen('a')).toBe(clock);
    clock += 60_000;
    await rec.tick();
    expect(writes).toHaveLength(3);
    expect(writes[2]).toEqual(['a', new Date(1_010_000).toISOString().replace(/\.\d{3}Z$/, 'Z')]);
    await rec.tick();
    expect(writes).toHaveLength(3);
  });

  test('flush writes everything pending at once; failures stay pending; 404 forgets the key', async () => {
    const clock = 5_000_000;
    const writes: string[] = [];
    let fail = true;
    const rec2 = new ActivityRecorder({
      write: async (n) => {
        if (n === 'gone') throw notFound({ group: 'management.platform.sh', resource: 'ownedaccesskeys' }, n);
        if (fail && n === 'flaky') throw new Error('etcd down');
        writes.push(n);
      },
      minIntervalMs: 60_000,
      tickMs: 0,
      now: () => clock,
    });
    rec2.record('flaky');
    rec2.record('ok');
    rec2.record('gone');
    await rec2.flush();
    expect(writes).toEqual(['ok']);
    expect(rec2.lastSeen('gone')).toBeUndefined();
    expect(rec2.lastSeen('flaky')).toBe(clock);
    fail = false;
    await rec2.flush();
    expect(writes).toEqual(['ok', 'flaky']);
    rec2.stop();
  });
});
