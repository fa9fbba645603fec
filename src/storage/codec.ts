/**
 * How objects are laid down as bytes: JSON with object keys sorted (so that equal objects encode equally and an
 * update that changes nothing is recognised, as Go's encoding of unstructured maps does), without
 * `resourceVersion` or `selfLink`, which are never stored.
 */
import type { StoredObject } from './interface.js';

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortKeys(v);
  }
  return out;
}

export function encode(obj: StoredObject): string {
  const { resourceVersion: _rv, selfLink: _sl, ...metadata } = obj.metadata ?? {};
  return JSON.stringify(sortKeys({ ...obj, metadata }));
}

export function decode<T extends StoredObject>(bytes: string | Buffer, revision: string): T {
  const obj = JSON.parse(bytes.toString()) as T;
  obj.metadata = { ...obj.metadata, resourceVersion: String(revision) };
  return obj;
}
