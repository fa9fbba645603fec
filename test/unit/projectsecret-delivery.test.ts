/**
 * What a ProjectSecret's spec.delivery means (src/kinds/projectsecret/delivery.ts): the targets as read (the host
 * when absent, nowhere when empty), their line keys, the keys each Secret type needs, and the errors a write gets.
 */
import { describe, expect, test } from '@jest/globals';
import {
  deliveryErrors,
  missingKeys,
  namedTargets,
  parseTargetKey,
  targetKey,
} from '../../src/kinds/projectsecret/delivery.js';
import type { ProjectSecret } from '../../src/kinds/projectsecret/types.js';

const ps = (spec: Record<string, unknown>): ProjectSecret =>
  ({ apiVersion: 'management.platform.sh/v1', kind: 'ProjectSecret', metadata: { name: 'x' }, spec }) as ProjectSecret;
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('targets', () => {
  test('absent: the host alone, as before targets existed; empty: nowhere', () => {
    expect(namedTargets(ps({})).map(targetKey)).toEqual(['host']);
    expect(namedTargets(ps({ delivery: { type: 'Opaque' } })).map(targetKey)).toEqual(['host']);
    expect(namedTargets(ps({ delivery: { targets: [] } }))).toEqual([]);
  });

  test('each entry has one line key, which reads back as the same place', () => {
    const targets = [
      { host: {} },
      { virtualCluster: { name: 'shop', namespace: 'default' } },
      { cluster: { name: 'edge', namespace: 'apps' } },
    ];
    const keys = namedTargets(ps({ delivery: { targets } })).map(targetKey);
    expect(keys).toEqual(['host', 'virtualCluster/shop/default', 'cluster/edge/apps']);
    for (const key of keys) expect(targetKey(parseTargetKey(key)!)).toBe(key);
    expect(parseTargetKey('cluster/edge')).toBeUndefined();
    expect(parseTargetKey('secret/a/b')).toBeUndefined();
  });
});

describe('the keys a type needs', () => {
  test.each([
    ['Opaque', [], []],
    ['kubernetes.io/tls', ['tls.crt'], ['tls.key']],
    ['kubernetes.io/dockerconfigjson', [], ['.dockerconfigjson']],
    ['kubernetes.io/basic-auth', ['password'], []],
    ['kubernetes.io/basic-auth', [], ['username or password']],
    ['kubernetes.io/ssh-auth', ['known_hosts'], ['ssh-privatekey']],
    ['example.com/custom', [], []],
  ])('%s with %j misses %j', (type, keys, missing) => {
    expect(missingKeys(type, keys)).toEqual(missing);
  });
});

describe('errors of a write', () => {
  const messages = (spec: Record<string, unknown>, synced = false) =>
    deliveryErrors(ps(spec), synced).map((e) => `${e.field}: ${e.type}: ${e.detail ?? ''}`);

  test('a namespace or name that cannot be one, and a place named twice', () => {
    const errs = messages({
      delivery: {
        targets: [
          { cluster: { name: 'Edge!', namespace: 'apps' } },
          { virtualCluster: { name: '*', namespace: 'Not_A_Namespace' } },
          { cluster: { name: 'edge', namespace: 'apps' } },
          { cluster: { name: 'edge', namespace: 'apps' } },
        ],
      },
    });
    expect(errs).toEqual([
      expect.stringMatching(/^spec\.delivery\.targets\[0\]\.cluster\.name: FieldValueInvalid/),
      expect.stringMatching(/^spec\.delivery\.targets\[1\]\.virtualCluster\.namespace: FieldValueInvalid/),
      expect.stringMatching(/^spec\.delivery\.targets\[3\]: FieldValueDuplicate/),
    ]);
  });

  test("a type's missing key is named; a synced one's data is the server's, not checked here", () => {
    const spec = { data: { 'tls.crt': b64('c') }, delivery: { type: 'kubernetes.io/tls' } };
    expect(messages(spec)).toEqual([
      'spec.data[tls.key]: FieldValueRequired: a Secret of type kubernetes.io/tls needs the key tls.key',
    ]);
    expect(messages(spec, true)).toEqual([]);
  });

  test('credentials kube makes itself are never delivered', () => {
    for (const type of ['kubernetes.io/service-account-token', 'bootstrap.kubernetes.io/token'])
      expect(messages({ data: {}, delivery: { type } })).toEqual([
        expect.stringMatching(/^spec\.delivery\.type: FieldValueForbidden: .* is not delivered/),
      ]);
  });
});
