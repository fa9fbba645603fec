/**
 * fmt's `%v` as kube prints decoded JSON values in messages and table cells: a whole number within int64 as an
 * integer (kube decodes those as int64), any other number as a float64, which `%v` prints with strconv's 'g' and
 * the shortest digits, so 1234567.5 is "1.2345675e+06" and 0.00001 "1e-05"; maps as `map[k:v]` with sorted keys,
 * slices as `[a b]`, nil as `<nil>`.
 */
import { isPlainObject } from '../types.js';
import { compareStrings, goString } from './strings.js';

const INT64_LIMIT = 2 ** 63;

/** Whether kube decodes this JSON number as an int64 (whole and in range) rather than a float64. */
export function isInt64(v: number): boolean {
  return Number.isInteger(v) && Math.abs(v) < INT64_LIMIT;
}

/** `%v` of a float64: strconv.FormatFloat(v, 'g', -1, 64), in exponent form when the exponent is < -4 or >= 6. */
export function formatFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  // Shortest round-trip digits and the decimal exponent.
  const [mantissa, expText] = v.toExponential().split('e');
  const exp = Number(expText);
  const sign = mantissa.startsWith('-') ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  // With the shortest digits strconv's 'g' decides on the exponent form as if the precision were 6.
  if (exp < -4 || exp >= 6) {
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
    return `${sign}${digits[0]}${frac}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const fracPart = digits.slice(exp + 1);
  return `${sign}${intPart}${fracPart ? `.${fracPart}` : ''}`;
}

/** `%v` of a decoded JSON number: int64 when whole and in range, float64 otherwise. */
export function formatNumber(v: number): string {
  return isInt64(v) ? v.toFixed(0) : formatFloat(v);
}

/** `%v` of a decoded JSON value (map[k:v], [a b], <nil>). */
export function goValue(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return goString(value);
  if (typeof value === 'number') return formatNumber(value);
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(goValue).join(' ')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort(compareStrings);
    return `map[${keys.map((k) => `${goString(k)}:${goValue(value[k])}`).join(' ')}]`;
  }
  return String(value);
}
