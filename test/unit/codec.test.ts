/** The stored form of objects, and the served JSON the watch cache makes from it without decoding. */
import { expect, test } from '@jest/globals';
import { decode, encode, servedJson } from '../../src/storage/codec.js';
import type { StoredObject } from '../../src/storage/interface.js';

const object = (extra: Record<string, unknown> = {}): StoredObject =>
  ({
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecret',
    metadata: { name: 'a', namespace: 'ns', labels: { b: '1', a: '2' }, resourceVersion: '5', selfLink: '/x' },
    spec: { data: { z: 'x', a: 'y' }, note: 'a "metadata":{ inside a string' },
    ...extra,
  }) as StoredObject;

test('stored bytes leave out resourceVersion and selfLink and sort keys', () => {
  expect(encode(object())).toBe(
    '{"apiVersion":"management.platform.sh/v1","kind":"SharedSecret","metadata":{"labels":{"a":"2","b":"1"},"name":"a","namespace":"ns"},"spec":{"data":{"a":"y","z":"x"},"note":"a \\"metadata\\":{ inside a string"}}',
  );
});

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
