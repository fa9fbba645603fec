/** How flag values are read, shared by the concerns; each error names the flag and what it takes. */
import { parseGoDuration } from '../apimachinery/duration.js';
import { FlagError } from './flag.js';

export const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Go-style durations as kube-apiserver's flags take them: "5m", "30s", "1h30m", "250ms", "0". */
export function duration(flag: string, value: string): number {
  const ms = parseGoDuration(value);
  if (ms === undefined)
    throw new FlagError(`--${flag} must be a duration such as 5m, 30s or 1h (got ${JSON.stringify(value)})`);
  if (ms < 0) throw new FlagError(`--${flag} must not be negative (got ${JSON.stringify(value)})`);
  return ms;
}

export function nonZeroDuration(flag: string, value: string): number {
  const ms = duration(flag, value);
  if (ms === 0) throw new FlagError(`--${flag} must be longer than 0 (got ${JSON.stringify(value)})`);
  return ms;
}

export function atLeast(flag: string, ms: number, min: number): number {
  if (ms < min) throw new FlagError(`--${flag} must be at least ${min / 1000}s (got ${ms}ms)`);
  return ms;
}

/** A limit given as a duration and kept in whole seconds: 0 for none, else at least `minMs`. */
export function optionalSeconds(flag: string, value: string, minMs: number): number {
  const ms = duration(flag, value);
  return ms && Math.floor(atLeast(flag, ms, minMs) / 1000);
}

export function count(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new FlagError(`--${flag} must be a whole number, 0 or more (got ${JSON.stringify(value)})`);
  return n;
}

export function positive(flag: string, value: string): number {
  const n = count(flag, value);
  if (n === 0) throw new FlagError(`--${flag} must be 1 or more (got ${JSON.stringify(value)})`);
  return n;
}

export function positiveNumber(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new FlagError(`--${flag} must be a number above 0 (got ${JSON.stringify(value)})`);
  return n;
}

export function bool(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new FlagError(`--${flag} must be true or false (got ${JSON.stringify(value)})`);
}
