/**
 * How objects are laid down as bytes: JSON with object keys sorted (so that equal objects encode equally and an
 * update that changes nothing is recognised, as Go's encoding of unstructured maps does), without
 * `resourceVersion` or `selfLink`, which are never stored.
 */
import type { StoredObject } from './interface.js';

/** What JSON.stringify leaves out of an object, and writes as null in an array. */
const unencodable = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/**
 * A deep copy with object keys sorted, of plain objects and arrays only (any object is copied by its own keys), that
 * holds exactly what JSON.parse(JSON.stringify(copy)) would (no undefined, non-finite numbers as null): the bytes
 * and the copy are then the same object.
 */
function sortedCopy(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : null;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => (unencodable(v) ? null : sortedCopy(v)));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    // An own "__proto__" (JSON.parse makes them) would set the copy's prototype: JSON never carried it.
    if (!unencodable(v) && key !== '__proto__') out[key] = sortedCopy(v);
  }
  return out;
}

/** The stored bytes of `obj`, and a copy of it that is what decoding them gives (without parsing them again). */
export function encodeWithCopy<T extends StoredObject>(obj: T): { bytes: string; copy: T } {
  const { resourceVersion: _rv, selfLink: _sl, ...metadata } = obj.metadata ?? {};
  const copy = sortedCopy({ ...obj, metadata }) as T;
  return { bytes: JSON.stringify(copy), copy };
}

export function encode(obj: StoredObject): string {
  return encodeWithCopy(obj).bytes;
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

/** A decoded object as read at `revision`. */
export function withRevision<T extends StoredObject>(obj: T, revision: string): T {
  obj.metadata = { ...obj.metadata, resourceVersion: String(revision) };
  return obj;
}

export function decode<T extends StoredObject>(bytes: string | Buffer, revision: string): T {
  return withRevision(JSON.parse(bytes.toString()) as T, revision);
}
