/**
 * Durations as the server uses them: Go durations read from flags, `?timeout=` and the KMS configuration (in
 * milliseconds, for timers), and ages as kube prints them (apimachinery pkg/util/duration.HumanDuration).
 */
import { parseDuration } from './golang/duration.js';

/** time.ParseDuration in milliseconds (`30s`, `1m30s`, `.5s`, `-1h`, `0`); undefined when Go refuses the text. */
export function parseGoDuration(text: string): number | undefined {
  const parsed = parseDuration(text);
  return parsed.ok ? Number(parsed.nanoseconds) / 1e6 : undefined;
}

/**
 * duration.HumanDuration for a duration in milliseconds: "45s", "5m", "7m30s", "3h", "2h5m", "2d", "3d4h",
 * "400d", "2y30d", "9y"; "0s" for up to 2 seconds in the future, "<invalid>" beyond.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}
