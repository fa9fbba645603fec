/**
 * JSON patch (RFC 6902) and JSON merge patch (RFC 7386) of an object, with kube's answers when they fail. A result
 * shares nothing with the patch: the store prunes the result in place, and applies the same patch again when an
 * attempt fails on a cached object or a conflict, so a shared value would come back pruned, and pass.
 */
import jsonpatch from 'fast-json-patch';
import * as errors from './status.js';
import { isPlainObject } from './types.js';

/** kube-apiserver refuses JSON patches with more operations than this (413). */
export const MAX_JSON_PATCH_OPERATIONS = 10000;

export function applyJsonPatch<T>(doc: T, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw errors.badRequest('a JSON patch must be a JSON array of operations');
  if (patch.length > MAX_JSON_PATCH_OPERATIONS) {
    throw errors.requestEntityTooLarge(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${patch.length}`,
    );
  }
  const prototypal = patch.findIndex(throughPrototype);
  if (prototypal >= 0)
    throw errors.patchRejected(
      `a path through "__proto__" or "constructor/prototype" is refused: no object here has such a field, and a patch may not add one (operation ${prototypal}: ${JSON.stringify(withoutValue(patch[prototypal]))})`,
    );
  try {
    return jsonpatch.applyPatch(doc, structuredClone(patch) as jsonpatch.Operation[], true, false).newDocument;
  } catch (err) {
    throw errors.patchRejected(describeJsonPatchError(err));
  }
}

/**
 * Whether an operation's path or from goes through "__proto__", or "constructor" then "prototype": fast-json-patch
 * refuses those (following them would set an object's prototype, not a field) with a message about its own flags.
 */
function throughPrototype(operation: unknown): boolean {
  if (!isPlainObject(operation)) return false;
  return [operation.path, operation.from].some((pointer) => {
    if (typeof pointer !== 'string') return false;
    const keys = pointer.split('/').map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    return keys.some((k, i) => k === '__proto__' || (k === 'prototype' && keys[i - 1] === 'constructor'));
  });
}

/** Names the failing operation by its op and paths, never by its value (which may be a secret the caller sent). */
function describeJsonPatchError(err: unknown): string {
  if (err instanceof jsonpatch.JsonPatchError && err.name === 'TEST_OPERATION_FAILED' && isPlainObject(err.operation)) {
    return `test operation ${err.index ?? ''} failed: the value at ${JSON.stringify(err.operation.path)} is not the one the test expects, so nothing was changed`;
  }
  if (err instanceof jsonpatch.JsonPatchError) {
    const at = err.operation ? ` (operation ${err.index ?? ''}: ${JSON.stringify(withoutValue(err.operation))})` : '';
    return `${err.message.split('\n')[0]}${at}`;
  }
  return (err as Error).message;
}

function withoutValue(operation: unknown): unknown {
  if (!isPlainObject(operation)) return operation;
  const { value: _value, ...rest } = operation;
  return rest;
}

export function applyMergePatch(doc: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) throw errors.badRequest('a merge patch must be a JSON object');
  return merge(doc, structuredClone(patch));
}

function merge(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    // defineProperty, so that a "__proto__" key stays a plain field
    else
      Object.defineProperty(out, key, {
        value: merge(out[key], value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}
