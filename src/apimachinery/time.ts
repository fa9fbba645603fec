/** metav1.Time as JSON: RFC 3339 in UTC with second precision ("2025-05-01T10:00:00Z"). */
export function nowRFC3339(now = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function sameInstant(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a === b || Date.parse(a) === Date.parse(b);
}
