/**
 * Fields a kind keeps from every client (a secret's hash, a connector's opaque data). One declaration
 * (Strategy.hiddenFields) serves every path: answers and watch events leave them out, patches and applies act
 * on the object without them, admission (webhooks, policies: other parties) is sent the object without them, and
 * every update carries them over from the stored object, since a client cannot send back what it never saw.
 */
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';

/** A field as the keys leading to it, e.g. ['spec', 'identity', 'connectorData']. */
export type FieldPath = readonly string[];

/** The object without the fields; the object itself when it has none of them, otherwise a copy sharing the rest. */
export function withoutFields(obj: KubeObject, paths: readonly FieldPath[]): KubeObject {
  let out = obj;
  for (const path of paths) if (valueAt(out, path) !== undefined) out = withoutField(out, path) as KubeObject;
  return out;
}

/**
 * Puts back each field `next` does not have from `stored`, where `next` still has the object that held it: a
 * field is kept as long as its parent is, so removing the parent (e.g. all of `identity`) still removes it.
 */
export function carryOverFields(next: KubeObject, stored: KubeObject, paths: readonly FieldPath[]): void {
  for (const path of paths) {
    const value = valueAt(stored, path);
    const parent = valueAt(next, path.slice(0, -1));
    const last = path[path.length - 1];
    if (value === undefined || !isPlainObject(parent) || Object.hasOwn(parent, last)) continue;
    parent[last] = structuredClone(value);
  }
}

function valueAt(obj: unknown, path: FieldPath): unknown {
  let at = obj;
  for (const key of path) {
    if (!isPlainObject(at) || !Object.hasOwn(at, key)) return undefined;
    at = at[key];
  }
  return at;
}

/** A copy of `obj` along `path` only, without the last key. */
function withoutField(obj: unknown, path: FieldPath): unknown {
  if (!isPlainObject(obj)) return obj;
  const [key, ...rest] = path;
  if (!rest.length) {
    const { [key]: _dropped, ...others } = obj;
    return others;
  }
  return { ...obj, [key]: withoutField(obj[key], rest) };
}
