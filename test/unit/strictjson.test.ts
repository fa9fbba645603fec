import { describe, expect, test } from '@jest/globals';
import { duplicateFieldMessages, duplicateFields } from '../../src/apimachinery/strictjson.js';

describe('duplicateFields', () => {
  test('none in a plain object', () => {
    expect(
      duplicateFields('{"apiVersion":"v1","kind":"X","metadata":{"name":"a"},"spec":{"a":[1,2,{"b":null}]}}'),
    ).toEqual([]);
  });

  test.each([
    ['top level', '{"kind":"A","kind":"B"}', ['kind']],
    ['in spec', '{"spec":{"displayName":"x","displayName":"y"}}', ['spec.displayName']],
    ['in a label map', '{"metadata":{"labels":{"a":"1","b":"2","a":"3"}}}', ['metadata.labels.a']],
    [
      'in an array element',
      '{"spec":{"access":[{"verbs":["get"]},{"users":[],"verbs":[],"verbs":["*"]}]}}',
      ['spec.access[1].verbs'],
    ],
    ['in a nested array', '{"a":[[{"x":1,"x":2}]]}', ['a[0][0].x']],
    ['in a top-level array', '[{"a":1,"a":2}]', ['[0].a']],
    [
      'a key with dots and slashes',
      '{"metadata":{"annotations":{"x.io/y":"1","x.io/y":"2"}}}',
      ['metadata.annotations.x.io/y'],
    ],
    ['an empty key', '{"":1,"":2}', ['']],
    ['under an empty key', '{"a":{"":{"b":1,"b":2}}}', ['a..b']],
    ['several, in document order', '{"b":1,"a":{"y":1,"x":1,"y":2},"b":2,"c":[{"z":0,"z":0}]}', ['a.y', 'b', 'c[0].z']],
    ['the duplicate before what is inside it', '{"a":1,"a":{"b":1,"b":2}}', ['a', 'a.b']],
    ['what is inside the first before the duplicate', '{"a":{"b":1,"b":2},"a":3}', ['a.b', 'a']],
    ['each path once', '{"a":1,"a":2,"a":3,"s":[{"k":1,"k":2},{"k":1,"k":2}]}', ['a', 's[0].k', 's[1].k']],
    ['keys compared decoded', '{"\\u0061":1,"a":2,"\\"q\\"":1,"\\"q\\"":2}', ['a', '"q"']],
    ['escaped lone surrogates both become U+FFFD, as in Go', '{"\\ud800":1,"\\udc00":2}', ['\ufffd']],
    ['surrogate pairs stay distinct', '{"\\ud83d\\ude00":1,"\\ud83d\\ude01":2}', []],
    ['same key in sibling objects is fine', '{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}', []],
    [
      'pretty-printed with every value type',
      '{\n  "a" : "s\\"t\\\\r\\n\\u00e9" ,\n\t"b": -1.5e+10, "c": [ true , false , null , 0, 0.25, 1E-3 ],\r\n  "d": {}, "e": [], "a": "again"\n}\n',
      ['a'],
    ],
  ])('%s', (_name, text, expected) => {
    expect(duplicateFields(text)).toEqual(expected);
  });

  test('stops at 100 paths, as sigs.k8s.io/json does', () => {
    const fields = Array.from({ length: 150 }, (_, i) => `"k${i}":1,"k${i}":2`).join(',');
    const found = duplicateFields(`{${fields}}`);
    expect(found).toHaveLength(100);
    expect(found[0]).toBe('k0');
    expect(found[99]).toBe('k99');
  });

  test('deep nesting does not overflow the stack', () => {
    const depth = 9000;
    const text = '{"a":'.repeat(depth) + '{"x":1,"x":2}' + '}'.repeat(depth);
    const found = duplicateFields(text);
    expect(found).toHaveLength(1);
    expect(found[0]).toBe(`${'a.'.repeat(depth)}x`);
    expect(duplicateFields('['.repeat(20000) + ']'.repeat(20000))).toEqual([]);
  });

  test.each([
    ['empty', ''],
    ['truncated', '{"a":1,"a":2'],
    ['trailing text', '{"a":1,"a":2}x'],
    ['two documents', '{"a":1,"a":2} {}'],
    ['single quotes', "{'a':1,'a':2}"],
    ['trailing comma', '{"a":1,"a":2,}'],
    ['missing colon', '{"a" 1,"a":2}'],
    ['bad escape', '{"a\\x":1,"a\\x":2}'],
    ['control character in a string', '{"a":"\n","a":2}'],
    ['leading zero', '{"a":01,"a":2}'],
    ['bare word', '{"a":nul,"a":2}'],
    ['number without digits', '{"a":-,"a":2}'],
    ['unbalanced', '{"a":[1,2},"a":2}'],
  ])('invalid JSON (%s) gives []', (_name, text) => {
    expect(() => duplicateFields(text)).not.toThrow();
    expect(duplicateFields(text)).toEqual([]);
  });

  test('messages as kube words them', () => {
    expect(duplicateFieldMessages(['spec.displayName', 'metadata.labels.a"b'])).toEqual([
      'duplicate field "spec.displayName"',
      'duplicate field "metadata.labels.a\\"b"',
    ]);
  });
});
