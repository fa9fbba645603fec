/**
 * JSON as Go writes it where managed fields need byte-exact text: object keys sorted (Go marshals maps that
 * way), `<`, `>`, `&`, U+2028 and U+2029 escaped (encoding/json's and json-iterator's HTML-safe default), lone
 * surrogates written as U+FFFD. Used for `k:`/`v:` path elements and the last-applied annotation.
 */
import { isPlainObject } from '../types.js';

/** Byte order of the UTF-8 encodings (Go's strings.Compare), which is code point order. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (D800-DFFF) stands for a code point above FFFF, above every other UTF-16 unit.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

const hex = (n: number) => n.toString(16).padStart(4, '0');

/** A JSON string literal with Go's escapes. */
export function goJSONString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += s[i] + s[i + 1];
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      out += '\\ufffd';
      continue;
    }
    switch (c) {
      case 0x22:
        out += '\\"';
        continue;
      case 0x5c:
        out += '\\\\';
        continue;
      case 0x0a:
        out += '\\n';
        continue;
      case 0x0d:
        out += '\\r';
        continue;
      case 0x09:
        out += '\\t';
        continue;
      case 0x3c:
      case 0x3e:
      case 0x26:
      case 0x2028:
      case 0x2029:
        out += `\\u${hex(c)}`;
        continue;
    }
    out += c < 0x20 ? `\\u${hex(c)}` : s[i];
  }
  return `${out}"`;
}

/** strconv.FormatFloat(f, 'f'/'e', -1, 64) as encoding/json picks them. */
function goNumber(n: number): string {
  if (!Number.isFinite(n)) return 'null';
  if (Object.is(n, -0)) return '-0';
  // JavaScript switches to exponents at the same thresholds (1e21, 1e-6) and prints "1e+21", "1e-7" like Go.
  return String(n);
}

/** json.Marshal of a decoded JSON value: maps with sorted keys, compact. */
export function goJSON(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return goJSONString(value);
  if (typeof value === 'number') return goNumber(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(goJSON).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort(compareStrings);
    return `{${keys.map((k) => `${goJSONString(k)}:${goJSON(value[k])}`).join(',')}}`;
  }
  return 'null';
}

/** fmt's %v of a decoded JSON value (map[k:v], [a b], <nil>). */
export function goValue(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return goNumberOrBool(value);
  if (Array.isArray(value)) return `[${value.map(goValue).join(' ')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort(compareStrings);
    return `map[${keys.map((k) => `${k}:${goValue(value[k])}`).join(' ')}]`;
  }
  return String(value);
}

function goNumberOrBool(v: number | boolean): string {
  if (typeof v === 'boolean') return String(v);
  // %v of a float64 is %g: exponent from 1e21 up and below 1e-4.
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e21)) {
    const [m, e] = v.toExponential().split('e');
    const exp = Number(e);
    return `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(v);
}
