/**
 * JSON as Go writes it where kube's bytes are visible: object keys sorted (Go marshals maps that way), `<`, `>`,
 * `&`, U+2028 and U+2029 escaped, other control characters as \u00XX, floats in strconv's 'f' format unless the
 * exponent is below -6 or from 21 up. Two encoders differ in one detail: encoding/json since Go 1.22 writes
 * backspace and form feed as \b and \f, json-iterator (structured-merge-diff's field paths) as \u0008 and \u000c.
 * A lone surrogate is written as U+FFFD, which is what Go's JSON decoder made of it.
 */
import { isPlainObject } from '../types.js';
import { isInt64 } from './fmt.js';
import { compareStrings } from './strings.js';

export type GoJSONEncoder = 'encoding/json' | 'json-iterator';

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

/** A JSON string literal with Go's escapes. */
export function goJSONString(s: string, encoder: GoJSONEncoder = 'encoding/json'): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = s.charCodeAt(i + 1);
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        out += s[i] + s[i + 1];
        i++;
      } else {
        out += '\ufffd';
      }
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
      case 0x08:
        out += encoder === 'encoding/json' ? '\\b' : '\\u0008';
        continue;
      case 0x0c:
        out += encoder === 'encoding/json' ? '\\f' : '\\u000c';
        continue;
      case 0x3c:
      case 0x3e:
      case 0x26:
      case 0x2028:
      case 0x2029:
        out += `\\u${hex4(c)}`;
        continue;
    }
    out += c < 0x20 ? `\\u${hex4(c)}` : s[i];
  }
  return `${out}"`;
}

/**
 * A decoded JSON number as encoding/json writes it: a whole number within int64 in full (kube decodes those as
 * int64), others as a float64 (strconv 'f' with the shortest digits, or 'e' below 1e-6 and from 1e21).
 */
export function goJSONNumber(n: number): string {
  if (!Number.isFinite(n)) return 'null';
  if (Object.is(n, -0)) return '-0';
  if (isInt64(n)) return n.toFixed(0);
  // JavaScript switches to exponents at the same thresholds and spells them as Go does ("1e+21", "1e-7").
  return String(n);
}

/** json.Marshal of a decoded JSON value: maps with sorted keys, compact; undefined members left out. */
export function goJSON(value: unknown, encoder: GoJSONEncoder = 'encoding/json'): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return goJSONString(value, encoder);
  if (typeof value === 'number') return goJSONNumber(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map((v) => goJSON(v, encoder)).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort(compareStrings);
    return `{${keys.map((k) => `${goJSONString(k, encoder)}:${goJSON(value[k], encoder)}`).join(',')}}`;
  }
  return 'null';
}
