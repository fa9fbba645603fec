/**
 * Go's time.Parse(time.RFC3339, …), which metav1.Time's JSON decoding uses, and time.Time's String(). Go is laxer
 * than RFC 3339 here (its fallback parser takes a one-digit hour, a comma before the fraction, and zone offsets
 * up to ±24:60), and the server must accept and refuse exactly what kube-apiserver does.
 */

/** An instant as Go holds it: whole seconds since the Unix epoch and the nanoseconds within that second. */
export interface GoTime {
  seconds: number;
  nanos: number;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysIn(month: number, year: number): number {
  if (month === 2) return isLeap(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (any year; no two-digit-year mapping as Date.UTC has). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

/** time.Parse(time.RFC3339, text) (Go 1.20 and later), or undefined where Go returns an error. */
export function parseRFC3339(text: string): GoTime | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offset = 0;
  if (m[8]) {
    const [oh, om] = [Number(m[9]), Number(m[10])];
    // Go's range test is ">" on purpose: "some people do write offsets of 24 hours or 60 minutes".
    if (oh > 24 || om > 60) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
  // Digits past the ninth are dropped, not rounded.
  const nanos = m[7] ? Number(m[7].slice(0, 9).padEnd(9, '0')) : 0;
  return { seconds, nanos };
}

/** The instant in epoch milliseconds (sub-millisecond digits dropped), for Date arithmetic. */
export function goTimeMillis(t: GoTime): number {
  return t.seconds * 1000 + Math.floor(t.nanos / 1e6);
}

/** Whether two times are the same instant (time.Time.Equal). */
export function sameGoTime(a: GoTime, b: GoTime): boolean {
  return a.seconds === b.seconds && a.nanos === b.nanos;
}

/** time.Time.String() of the instant in UTC: "2006-01-02 15:04:05.999999999 +0000 UTC". */
export function formatTime(t: GoTime): string {
  const d = new Date(t.seconds * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const y = d.getUTCFullYear();
  const year = y < 0 ? `-${pad(-y, 4)}` : pad(y, 4);
  let out = `${year}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  if (t.nanos !== 0) out += `.${String(t.nanos).padStart(9, '0').replace(/0+$/, '')}`;
  return `${out} +0000 UTC`;
}
