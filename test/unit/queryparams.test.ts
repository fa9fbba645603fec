/**
 * Boolean query parameters read as kube reads them (runtime.Convert_Slice_string_To_bool): false only for `0` and
 * `false` in any case, true for anything else, `True` from the Python client and an empty `?watch` included.
 */
import { describe, expect, test } from '@jest/globals';
import { queryBool } from '../../src/apimachinery/queryparams.js';
import { parseWatchQuery } from '../../src/http/listoptions.js';
import { applyOptions, deleteOptions } from '../../src/http/options.js';
import { resolveRequestInfo } from '../../src/http/requestinfo.js';

const q = (s = '') => new URLSearchParams(s);

describe('queryBool', () => {
  test.each(['0', 'false', 'False', 'FALSE', 'fAlSe', 'falſe'])('%j is false', (value) => {
    expect(queryBool(q(`b=${encodeURIComponent(value)}`), 'b')).toBe(false);
  });

  test.each(['true', 'True', 'TRUE', '1', '', 'yes', 'f', 'F', 'no', 'off', '00', ' false', 'false ', '2'])(
    '%j is true (as in kube: only 0 and false are false)',
    (value) => {
      expect(queryBool(q(`b=${encodeURIComponent(value)}`), 'b')).toBe(true);
    },
  );

  test('a parameter without "=" is true; an absent one is undefined', () => {
    expect(queryBool(q('b'), 'b')).toBe(true);
    expect(queryBool(q('other=1'), 'b')).toBeUndefined();
  });

  test('only the first value counts', () => {
    expect(queryBool(q('b=false&b=true'), 'b')).toBe(false);
    expect(queryBool(q('b=True&b=0'), 'b')).toBe(true);
  });
});

describe('every boolean parameter goes through it', () => {
  const coll = '/apis/g/v1/namespaces/a/sharedsecrets';

  test.each([
    ['watch=True', 'watch'],
    ['watch=1', 'watch'],
    ['watch', 'watch'],
    ['watch=false', 'list'],
    ['watch=0', 'list'],
    ['watch=FALSE', 'list'],
    ['', 'list'],
  ])('GET a collection with %j is a %s', (query, verb) => {
    expect(resolveRequestInfo('GET', coll, q(query)).verb).toBe(verb);
  });

  test('GET an object with watch=True watches it', () => {
    expect(resolveRequestInfo('GET', `${coll}/x`, q('watch=True')).verb).toBe('watch');
    expect(resolveRequestInfo('GET', `${coll}/x`, q('watch=False')).verb).toBe('get');
  });

  test('allowWatchBookmarks and sendInitialEvents', () => {
    expect(parseWatchQuery(q('allowWatchBookmarks=True')).allowWatchBookmarks).toBe(true);
    expect(parseWatchQuery(q('allowWatchBookmarks=False')).allowWatchBookmarks).toBe(false);
    expect(parseWatchQuery(q()).allowWatchBookmarks).toBe(false);
    const watchList = parseWatchQuery(q('sendInitialEvents=True&resourceVersionMatch=NotOlderThan'));
    expect(watchList.sendInitialEvents).toBe(true);
    expect(parseWatchQuery(q('sendInitialEvents=False&resourceVersionMatch=NotOlderThan')).sendInitialEvents).toBe(
      false,
    );
    expect(parseWatchQuery(q()).sendInitialEvents).toBeUndefined();
  });

  test('force of an apply', () => {
    expect(applyOptions(q('fieldManager=m&force=True')).force).toBe(true);
    expect(applyOptions(q('fieldManager=m&force=False')).force).toBe(false);
    expect(applyOptions(q('fieldManager=m')).force).toBe(false);
  });

  test('orphanDependents of a delete', () => {
    expect(deleteOptions(undefined, q('orphanDependents=True')).orphanDependents).toBe(true);
    expect(deleteOptions(undefined, q('orphanDependents=False')).orphanDependents).toBe(false);
    expect(deleteOptions(undefined, q()).orphanDependents).toBeUndefined();
  });
});
