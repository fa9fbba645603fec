/**
 * The stored form of objects (storage/codec.ts): sorted JSON, the copy a write answers with instead of parsing it back,
 * and the served JSON the watch cache makes from stored text without decoding it.
 */
import { expect, test } from '@jest/globals';
import { decode, encode, encodeWithCopy, servedJson } from '../../src/storage/codec.js';
import type { StoredObject } from '../../src/storage/interface.js';

test('keys are sorted at every level; resourceVersion and selfLink are never stored', () => {
  const obj = {
    spec: { b: 1, a: [{ z: 1, y: 2 }] },
    metadata: { name: 'n', resourceVersion: '5', selfLink: '/x', labels: { b: '2', a: '1' } },
    apiVersion: 'v1',
  } as unknown as StoredObject;
  expect(encodeWithCopy(obj).bytes).toBe(
    '{"apiVersion":"v1","metadata":{"labels":{"a":"1","b":"2"},"name":"n"},"spec":{"a":[{"y":2,"z":1}],"b":1}}',
  );
});

test('the copy is what decoding the bytes gives, whatever JSON leaves out or changes, and shares nothing', () => {
  const shared = { deep: ['x'] };
  const odd = JSON.parse('{"__proto__": {"polluted": true}, "kept": 1}') as Record<string, unknown>;
  const obj = {
    metadata: { name: 'n', resourceVersion: '7' },
    spec: {
      missing: undefined,
      fn: () => 1,
      list: [undefined, NaN, Infinity, -0, null, () => 1, 'a'],
      nan: NaN,
      shared,
      odd,
    },
  } as unknown as StoredObject;
  const { bytes, copy } = encodeWithCopy(obj);
  expect(copy).toStrictEqual(JSON.parse(bytes));
  expect(Object.getPrototypeOf((copy.spec as { odd: object }).odd)).toBe(Object.prototype);
  expect(decode(bytes, '9')).toStrictEqual({ ...copy, metadata: { ...copy.metadata, resourceVersion: '9' } });
  (copy.spec as { shared: { deep: string[] } }).shared.deep.push('y');
  expect(shared.deep).toEqual(['x']);
  expect(obj.metadata.resourceVersion).toBe('7');
});

const object = (extra: Record<string, unknown> = {}): StoredObject =>
  ({
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecret',
    metadata: { name: 'a', namespace: 'ns', labels: { b: '1', a: '2' }, resourceVersion: '5', selfLink: '/x' },
    spec: { data: { z: 'x', a: 'y' }, note: 'a "metadata":{ inside a string' },
    ...extra,
  }) as StoredObject;

test('the served JSON made from stored text is the decoded object with the revision, resourceVersion first', () => {
  const stored = encode(object());
  const json = servedJson(stored, '42');
  expect(JSON.parse(json)).toEqual(decode(stored, '42'));
  expect(json).toContain('"metadata":{"resourceVersion":"42","labels"');
  expect(servedJson('{"kind":"X","metadata":{}}', '7')).toBe('{"kind":"X","metadata":{"resourceVersion":"7"}}');
});

test('text not laid out as encode writes it is decoded and encoded again, never spliced', () => {
  // A resourceVersion already in the text (here in the spec) would be read after the spliced one: decode instead.
  const withRv = JSON.stringify({ metadata: { name: 'a' }, spec: { resourceVersion: 'mine' } });
  expect(JSON.parse(servedJson(withRv, '9'))).toEqual({
    metadata: { name: 'a', resourceVersion: '9' },
    spec: { resourceVersion: 'mine' },
  });
  // An object before metadata could hold a "metadata" key of its own.
  const nested = '{"a":{"metadata":{"x":1}},"metadata":{"name":"a"}}';
  expect(JSON.parse(servedJson(nested, '3'))).toEqual({
    a: { metadata: { x: 1 } },
    metadata: { name: 'a', resourceVersion: '3' },
  });
});
