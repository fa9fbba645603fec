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

/**
 * The JSON of a stored object as it is served (`metadata.resourceVersion` added), made from its stored text without
 * decoding it: the revision goes first in `metadata`, which `encode` wrote as the first object in the text. Text
 * that is not laid out that way (or already names a resourceVersion somewhere) goes the sure way, through decode.
 */
export function servedJson(plaintext: string, revision: string): string {
  const at = plaintext.indexOf(METADATA);
  const open = at + METADATA.length;
  if (at < 0 || plaintext.indexOf('{', 1) !== open - 1 || plaintext.includes('"resourceVersion"'))
    return JSON.stringify(decode(plaintext, revision));
  const rv = `"resourceVersion":${JSON.stringify(String(revision))}`;
  return `${plaintext.slice(0, open)}${rv}${plaintext[open] === '}' ? '' : ','}${plaintext.slice(open)}`;
}

const METADATA = '"metadata":{';

export function decode<T extends StoredObject>(bytes: string | Buffer, revision: string): T {
  const obj = JSON.parse(bytes.toString()) as T;
  obj.metadata = { ...obj.metadata, resourceVersion: String(revision) };
  return obj;
}
