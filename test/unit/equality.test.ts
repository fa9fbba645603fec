import { expect, test } from '@jest/globals';
import { canonicalJson, jsonEqual } from '../../src/apimachinery/equality.js';

test('objects are equal by their fields, in any order; arrays by their items, in order', () => {
  expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
  expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
  expect(jsonEqual({ a: 1 }, { b: 1 })).toBe(false);
});

test('a "__proto__" field (JSON.parse makes it an own field) is a field: it never equals another one', () => {
  // Compared through the prototype, {"__proto__": {}} looked equal to any object of one field.
  expect(jsonEqual(JSON.parse('{"__proto__": {}}'), { user: 'root' })).toBe(false);
  expect(jsonEqual({ user: 'root' }, JSON.parse('{"__proto__": {}}'))).toBe(false);
  expect(jsonEqual(JSON.parse('{"__proto__": {"a": 1}}'), JSON.parse('{"__proto__": {"a": 1}}'))).toBe(true);
});

test('canonicalJson: the same text exactly when jsonEqual, so that a digest of it can stand in for the value', () => {
  const pairs: Array<[unknown, unknown]> = [
    [
      { a: 1, b: [1, { c: 2, d: null }] },
      { b: [1, { d: null, c: 2 }], a: 1 },
    ],
    [{ a: 1, b: undefined }, { a: 1 }],
    [{ a: [1, 2] }, { a: [2, 1] }],
    [{ a: null }, {}],
    [{ a: '1' }, { a: 1 }],
    [[{}], [[]]],
    [JSON.parse('{"__proto__": {}}'), { user: 'root' }],
    [JSON.parse('{"__proto__": {"a": 1}}'), JSON.parse('{"__proto__": {"a": 1}}')],
    [{ 'a"b': 1 }, { 'a\\"b': 1 }],
  ];
  for (const [a, b] of pairs) expect([a, b, canonicalJson(a) === canonicalJson(b)]).toEqual([a, b, jsonEqual(a, b)]);
  expect(canonicalJson({ b: 1, a: [true, 'x'] })).toBe('{"a":[true,"x"],"b":1}');
});
