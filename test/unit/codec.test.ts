/** The stored form of objects (storage/codec.ts): sorted JSON, and the copy a write answers with instead of parsing it back. */
import { expect, test } from '@jest/globals';
import { decode, encodeWithCopy } from '../../src/storage/codec.js';
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
