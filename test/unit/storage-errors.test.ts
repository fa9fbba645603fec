/** The one table from storage failures to the Status a client gets (storage/errors.ts). */
import { expect, test } from '@jest/globals';
import { decodeContinue } from '../../src/apimachinery/continue.js';
import { StatusError } from '../../src/apimachinery/status.js';
import { interpretStorageError } from '../../src/storage/errors.js';
import { StorageError, type StorageErrorCode } from '../../src/storage/interface.js';

const target = {
  groupResource: { group: 'management.platform.sh', resource: 'clusters' },
  name: 'a',
  operation: 'update',
};

function statusOf(code: StorageErrorCode, ctx = target, revisions?: { requested: number; current: number }) {
  const out = interpretStorageError(
    new StorageError(code, '/registry/management.platform.sh/clusters/a', `etcd said ${code}`, revisions),
    ctx,
  );
  expect(out).toBeInstanceOf(StatusError);
  const { code: http, reason, message, details } = (out as StatusError).status;
  return { http, reason, message, details };
}

test('each storage failure is the Status kube answers with', () => {
  expect(statusOf('KeyNotFound')).toMatchObject({
    http: 404,
    reason: 'NotFound',
    message: 'clusters.management.platform.sh "a" not found',
  });
  expect(statusOf('KeyExists')).toMatchObject({
    http: 409,
    reason: 'AlreadyExists',
    message: 'clusters.management.platform.sh "a" already exists',
  });
  expect(statusOf('TooLarge')).toMatchObject({ http: 413, reason: 'RequestEntityTooLarge' });
  expect(statusOf('Compacted')).toMatchObject({
    http: 410,
    reason: 'Expired',
    message: 'The resourceVersion for the provided list is too old.',
  });
  expect(statusOf('FutureRevision', target, { requested: 90, current: 12 })).toMatchObject({
    http: 504,
    reason: 'Timeout',
    message: 'Timeout: Too large resource version: 90, current: 12',
  });
  // The message names the key, never a stored value.
  expect(statusOf('Internal')).toMatchObject({
    http: 500,
    reason: 'InternalError',
    message: 'Internal error occurred: etcd said Internal',
  });
  expect(statusOf('Unreachable')).toMatchObject({
    http: 500,
    reason: 'ServerTimeout',
    message:
      'The update operation against clusters.management.platform.sh could not be completed at this time, please try again.',
  });
});

test('a continued list whose revision was compacted gets a token that continues at the current revision', () => {
  const out = interpretStorageError(new StorageError('Compacted', '/registry/x/', 'compacted'), {
    ...target,
    name: '',
    operation: 'list',
    continueFrom: 'ns/b\u0000',
  });
  const status = (out as StatusError).status;
  expect(status).toMatchObject({ code: 410, reason: 'Expired' });
  expect(decodeContinue(status.metadata.continue!)).toMatchObject({ revision: -1, start: 'ns/b\u0000' });
});

test('other errors pass unchanged', () => {
  const err = new Error('not storage');
  expect(interpretStorageError(err, target)).toBe(err);
});
