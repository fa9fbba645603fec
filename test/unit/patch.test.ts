import { describe, expect, test } from '@jest/globals';
import { applyJsonPatch, applyMergePatch } from '../../src/apimachinery/patch.js';
import { statusOf } from '../support/errors.js';

const doc = () => ({
  metadata: { name: 's1', annotations: { a: '1' } },
  spec: { data: { k: 'dg==' }, displayName: 'x' },
});

describe('JSON patch', () => {
  test("applies the spec's example: add one annotation", () => {
    const out = applyJsonPatch(doc(), [{ op: 'add', path: '/metadata/annotations/team', value: 'blue' }]) as any;
    expect(out.metadata.annotations).toEqual({ a: '1', team: 'blue' });
  });

  test('does not change the document it was given', () => {
    const original = doc();
    applyJsonPatch(original, [{ op: 'remove', path: '/spec/displayName' }]);
    expect(original.spec.displayName).toBe('x');
  });

  test('a failed test op is 422 Invalid and says why', () => {
    const err = statusOf(() => applyJsonPatch(doc(), [{ op: 'test', path: '/spec/displayName', value: 'y' }]));
    expect(err.code).toBe(422);
    expect(err.reason).toBe('Invalid');
    expect(err.status.message).toBe('the server rejected our request due to an error in our request');
    // Under the field `patch`, so kubectl prints "The request is invalid: patch: test operation 0 failed: ...".
    expect(err.status.details?.causes).toEqual([
      {
        reason: 'UnexpectedServerResponse',
        field: 'patch',
        message:
          'test operation 0 failed: the value at "/spec/displayName" is not the one the test expects, so nothing was changed',
      },
    ]);
  });

  test('a failed operation is named by its op and path, never by the value it sent (it may be a secret)', () => {
    const err = statusOf(() =>
      applyJsonPatch(doc(), [{ op: 'test', path: '/spec/displayName', value: 'pak_guessed-secret' }]),
    );
    expect(err.status.details?.causes?.[0].message).toContain('"/spec/displayName"');
    expect(JSON.stringify(err.status)).not.toContain('pak_guessed-secret');
  });

  test('a path that does not exist is 422', () => {
    expect(statusOf(() => applyJsonPatch(doc(), [{ op: 'replace', path: '/spec/nope/deeper', value: 1 }])).code).toBe(
      422,
    );
  });

  test('an unknown op is 422', () => {
    expect(statusOf(() => applyJsonPatch(doc(), [{ op: 'frobnicate', path: '/spec' }])).code).toBe(422);
  });

  test('a patch that is not an array is 400', () => {
    expect(statusOf(() => applyJsonPatch(doc(), { op: 'add' })).code).toBe(400);
  });

  test('more than 10000 operations is 413', () => {
    const ops = Array.from({ length: 10001 }, () => ({ op: 'test', path: '/spec/displayName', value: 'x' }));
    const err = statusOf(() => applyJsonPatch(doc(), ops));
    expect(err.code).toBe(413);
    expect(err.status.message).toBe(
      'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001',
    );
  });

  test('refuses to reach the prototype', () => {
    expect(statusOf(() => applyJsonPatch(doc(), [{ op: 'add', path: '/__proto__/polluted', value: true }])).code).toBe(
      422,
    );
    expect(({} as any).polluted).toBeUndefined();
  });

  test('a path through "__proto__" is refused saying so, and naming the operation without its value', () => {
    const patch = [
      { op: 'test', path: '/spec/displayName', value: 'x' },
      { op: 'add', path: '/spec/__proto__', value: { secret: 'hunter2' } },
    ];
    const err = statusOf(() => applyJsonPatch(doc(), patch));
    expect({ code: err.code, reason: err.reason }).toEqual({ code: 422, reason: 'Invalid' });
    expect(err.status.details?.causes).toEqual([
      {
        reason: 'UnexpectedServerResponse',
        field: 'patch',
        message:
          'a path through "__proto__" or "constructor/prototype" is refused: no object here has such a field, and a patch may not add one (operation 1: {"op":"add","path":"/spec/__proto__"})',
      },
    ]);
  });
});

test('a result shares nothing with the patch: changing it leaves the patch as sent, to be applied again', () => {
  const value = { list: [{ a: 1 }] };
  const json = [{ op: 'add', path: '/spec/extra', value }];
  const viaJson = applyJsonPatch(doc(), json) as any;
  viaJson.spec.extra.list[0].a = 2;
  const merge = { spec: { extra: value } };
  const viaMerge = applyMergePatch(doc(), merge) as any;
  viaMerge.spec.extra.list[0].a = 3;
  expect(value).toEqual({ list: [{ a: 1 }] });
});

describe('merge patch (RFC 7386)', () => {
  test('merges objects, replaces scalars and arrays, and null removes', () => {
    const out = applyMergePatch(doc(), {
      spec: { displayName: null, data: { k2: 'eA==' } },
      metadata: { labels: { l: 'v' } },
    }) as any;
    expect(out.spec).toEqual({ data: { k: 'dg==', k2: 'eA==' } });
    expect(out.metadata.labels).toEqual({ l: 'v' });
    expect(out.metadata.annotations).toEqual({ a: '1' });
  });

  test('a "__proto__" key stays an ordinary field', () => {
    const out = applyMergePatch(doc(), JSON.parse('{"spec":{"__proto__":{"polluted":true}}}')) as any;
    expect(({} as any).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(out.spec, '__proto__')).toBe(true);
  });

  test('a patch that is not an object is 400', () => {
    expect(statusOf(() => applyMergePatch(doc(), ['x'])).code).toBe(400);
  });
});
