/**
 * Status fields only the server writes (src/registry/serverstatus.ts): what a status write by a client (system:masters
 * included) and by the server itself leaves of them, and that a value of the wrong type is left for validation.
 */
import { describe, expect, test } from '@jest/globals';
import { isString, keepServerStatus } from '../../src/registry/serverstatus.js';

const master = { name: 'root', groups: ['system:masters'] };
const keep = keepServerStatus([
  { name: 'fixed', wellTyped: isString, serverWrites: 'never' },
  { name: 'once', wellTyped: isString, serverWrites: 'once' },
  { name: 'server', wellTyped: isString, serverWrites: 'always' },
]);
const obj = (status?: unknown) => ({ metadata: { name: 'x' }, ...(status === undefined ? {} : { status }) });

/** The status `status` becomes when written over `stored` by `user` (the server when undefined). */
function written(status: unknown, stored: unknown, user: typeof master | undefined): unknown {
  const next = obj(structuredClone(status));
  keep(next, obj(stored), user);
  return next.status;
}

describe('a client (system:masters too)', () => {
  test('cannot change, add or remove any of them', () => {
    const stored = { fixed: 'a', once: 'b', server: 'c', phase: 'old' };
    expect(written({ fixed: 'x', once: 'y', server: 'z', phase: 'new' }, stored, master)).toEqual({
      ...stored,
      phase: 'new',
    });
    expect(written({ phase: 'new' }, stored, master)).toEqual({ ...stored, phase: 'new' });
    expect(written(undefined, stored, master)).toEqual({ fixed: 'a', once: 'b', server: 'c' });
    // A status of null (a PUT may send it, and nothing refuses it) is none written: they stay.
    expect(written(null, stored, master)).toEqual({ fixed: 'a', once: 'b', server: 'c' });
    expect(written({ fixed: 'x', once: 'y', server: 'z' }, {}, master)).toEqual({});
  });

  test('a value of the wrong type is left as written, for validation to refuse', () => {
    expect(written({ fixed: 7, once: ['y'], server: { z: 1 } }, { fixed: 'a' }, master)).toEqual({
      fixed: 7,
      once: ['y'],
      server: { z: 1 },
    });
    expect(written('no object', { fixed: 'a' }, master)).toBe('no object');
  });

  test('a null is no value, and no error: it is put back (pruning would drop it, removing the field)', () => {
    const stored = { fixed: 'a', once: 'b', server: 'c' };
    expect(written({ fixed: null, once: null, server: null }, stored, master)).toEqual(stored);
    expect(written({ fixed: null }, {}, master)).toEqual({});
  });
});

describe('the server', () => {
  test("sets a 'once' field only while none is stored, an 'always' one whenever, a 'never' one not at all", () => {
    expect(written({ fixed: 'x', once: 'y', server: 'z' }, {}, undefined)).toEqual({ once: 'y', server: 'z' });
    expect(written({ fixed: 'x', once: 'y', server: 'z' }, { fixed: 'a', once: 'b', server: 'c' }, undefined)).toEqual({
      fixed: 'a',
      once: 'b',
      server: 'z',
    });
    expect(written({}, { fixed: 'a', once: 'b', server: 'c' }, undefined)).toEqual({ fixed: 'a', once: 'b' });
  });
});
