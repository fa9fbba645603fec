/** Small helpers for JSON values held as plain objects and arrays. */
import { isPlainObject } from '../types.js';

/** Sets a key, also when it is "__proto__". */
export function put(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

export function get(obj: Record<string, unknown> | undefined, key: string): unknown {
  return obj && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

export const asList = (v: unknown) => (Array.isArray(v) ? v : undefined);
export const asMap = (v: unknown) => (isPlainObject(v) ? v : undefined);
