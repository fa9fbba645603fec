/**
 * Go's time.ParseDuration, as kube-apiserver reads `?timeout=`, its duration flags and the KMS timeout:
 * `[-+]?([0-9]*(\.[0-9]*)?unit)+` or a bare `0`, units ns, us, µs (U+00B5 or U+03BC), ms, s, m, h, at most
 * 2^63-1 ns, fractions truncated to the nanosecond. Go takes `.5s`, `5.s` and `1µs`; so does this.
 */

const MAX_INT64 = 2n ** 63n - 1n;
const OVERFLOW = 2n ** 63n;

const UNITS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  '\u00b5s': 1_000n,
  '\u03bcs': 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

export type DurationResult = { ok: true; nanoseconds: bigint } | { ok: false; error: string };

/** time's own quote(): ASCII as is (with `"` and `\` escaped), other bytes as \xNN of their UTF-8. */
function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0x80 || c < 0x20) {
      for (const byte of Buffer.from(ch, 'utf8')) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += c === 0x22 || c === 0x5c ? `\\${ch}` : ch;
    }
  }
  return `${out}"`;
}

const isDigit = (s: string, i: number) => i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39;

/** time.ParseDuration: the duration in nanoseconds, or Go's error text. */
export function parseDuration(text: string): DurationResult {
  const invalid = (): DurationResult => ({ ok: false, error: `time: invalid duration ${quote(text)}` });
  let s = text;
  let negative = false;
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return { ok: true, nanoseconds: 0n };
  if (s === '') return invalid();
  let total = 0n;
  let i = 0;
  while (i < s.length) {
    if (s[i] !== '.' && !isDigit(s, i)) return invalid();
    // The whole part; more than 2^63 is an overflow.
    let whole = 0n;
    const start = i;
    for (; isDigit(s, i); i++) {
      whole = whole * 10n + BigInt(s.charCodeAt(i) - 0x30);
      if (whole > OVERFLOW) return invalid();
    }
    const pre = i > start;
    // The fraction: digits past what 63 bits hold are read but ignored.
    let fraction = 0n;
    let scale = 1;
    let post = false;
    if (s[i] === '.') {
      i++;
      const fracStart = i;
      let overflowed = false;
      for (; isDigit(s, i); i++) {
        if (overflowed) continue;
        if (fraction > MAX_INT64 / 10n) {
          overflowed = true;
          continue;
        }
        const next = fraction * 10n + BigInt(s.charCodeAt(i) - 0x30);
        if (next > OVERFLOW) {
          overflowed = true;
          continue;
        }
        fraction = next;
        scale *= 10;
      }
      post = i > fracStart;
    }
    if (!pre && !post) return invalid();
    const unitStart = i;
    while (i < s.length && s[i] !== '.' && !isDigit(s, i)) i++;
    const unitText = s.slice(unitStart, i);
    if (!unitText) return { ok: false, error: `time: missing unit in duration ${quote(text)}` };
    const unit = UNITS[unitText];
    if (unit === undefined)
      return { ok: false, error: `time: unknown unit ${quote(unitText)} in duration ${quote(text)}` };
    if (whole > OVERFLOW / unit) return invalid();
    let v = whole * unit;
    if (fraction > 0n) {
      // Go computes the fraction in float64, "nanosecond accurate for fractions of hours", and truncates.
      v += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (v > OVERFLOW) return invalid();
    }
    total += v;
    if (total > OVERFLOW) return invalid();
  }
  if (negative) return { ok: true, nanoseconds: -total };
  if (total > MAX_INT64) return invalid();
  return { ok: true, nanoseconds: total };
}
