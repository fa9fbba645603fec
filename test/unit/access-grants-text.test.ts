/**
 * What the watch cache keeps of an object for authorization (access/model.ts `grantsText`) answers every question
 * `objectGrants` answers of the whole object, the same way: lists narrowed to what a caller may see read only that
 * text, so anything it lost would show a caller objects it may not see, or hide ones it may.
 */
import { describe, expect, test } from '@jest/globals';
import { grantsText, objectGrants, objectOfGrants, OWNED_ACCESS_KEYS } from '../../src/access/model.js';
import type { KubeObject } from '../../src/apimachinery/types.js';

const metadata = { name: 'x', namespace: 'ns', labels: { team: 'a' } };
// Stored fields are attacker-written: every shape the schema would refuse is here too.
const specs: unknown[] = [
  undefined,
  null,
  'owner',
  ['owner'],
  {},
  { data: { k: 'v' } },
  { owner: { user: 'alice' } },
  { owner: { team: 'red' } },
  { owner: { user: 5 } },
  { owner: 'alice' },
  { access: [{ verbs: ['get'], users: ['bob'] }] },
  { access: [{ verbs: ['*'], teams: ['red'], subresources: ['status'] }] },
  { access: [{ verbs: ['get', 'list'], users: 'bob' }] },
  { access: [null, 7, { verbs: 'get', users: ['bob'] }, { verbs: ['watch'], users: ['bob'], subresources: ['*'] }] },
  { access: { verbs: ['get'], users: ['bob'] } },
  { owner: { user: 'carol' }, access: [{ verbs: ['update'], teams: ['blue'] }], data: { k: 'v' } },
  { user: 'bob' },
  { team: 'red' },
  { user: ['bob'], team: { name: 'red' } },
];
const users = [
  { name: 'alice', groups: ['system:authenticated'] },
  { name: 'bob', groups: ['system:authenticated'] },
  { name: 'carol', groups: ['platform:team:blue', 'system:authenticated'] },
  { name: 'dave', groups: ['platform:team:red', 'system:authenticated'] },
];
const verbs = ['get', 'list', 'watch', 'update', 'delete'];
const subresources = ['', 'status', 'kubeconfig'];

describe('grantsText', () => {
  test('answers as the whole object does, for every kind of object, user, verb and subresource', () => {
    let asked = 0;
    for (const resource of ['sharedsecrets', OWNED_ACCESS_KEYS])
      for (const spec of specs) {
        const obj = { apiVersion: 'management.platform.sh/v1', kind: 'K', metadata, spec } as KubeObject;
        const kept = objectOfGrants(grantsText(obj));
        for (const user of users)
          for (const verb of verbs)
            for (const sub of subresources) {
              asked++;
              expect([spec, user.name, verb, sub, objectGrants(resource, kept, user, verb, sub)]).toEqual([
                spec,
                user.name,
                verb,
                sub,
                objectGrants(resource, obj, user, verb, sub),
              ]);
            }
      }
    // Some of them are allowed, some not: the comparison is not between two answers that are always false.
    const allowed = specs.filter((spec) =>
      users.some((u) => objectGrants('sharedsecrets', { metadata, spec } as KubeObject, u, 'get')),
    );
    expect(allowed.length).toBeGreaterThan(4);
    expect(asked).toBe(2 * specs.length * users.length * verbs.length * subresources.length);
  });

  test('keeps nothing but the grants: secret data and metadata stay out of it', () => {
    const text = grantsText({ metadata, spec: { owner: { user: 'a' }, data: { password: 'hunter2' } } });
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('team');
    expect(grantsText({ metadata, spec: { data: { k: 'v' } } })).toBe('{}');
  });
});
