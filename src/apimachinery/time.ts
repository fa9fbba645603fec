/**
 * metav1.Time as the store writes and compares it: RFC 3339 in UTC with second precision, and two times the same
 * when Go would decode them to the same instant.
 */
import { parseRFC3339, sameGoTime } from './golang/time.js';

/** metav1.Time as JSON: RFC 3339 in UTC with second precision ("2025-05-01T10:00:00Z"). */
export function nowRFC3339(now = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Both absent, the same text, or texts Go parses to the same instant ("…T12:00:00+02:00" is "…T10:00:00Z"). */
export function sameInstant(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  if (a === b) return true;
  const x = parseRFC3339(a);
  const y = parseRFC3339(b);
  return x !== undefined && y !== undefined && sameGoTime(x, y);
}

/** Whether a value is a time as Go decodes metav1.Time and MicroTime: RFC 3339 text (else decoding fails: 400). */
export function isRFC3339(value: unknown): boolean {
  return typeof value === 'string' && parseRFC3339(value) !== undefined;
}
