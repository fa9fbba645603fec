/** Go durations (time.ParseDuration, without a sign), as kube takes them in flags and in `?timeout=`. */
const GO_DURATION = /^(\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `30s`, `1m30s`, `250ms`, `1.5h`, `0` in milliseconds; undefined when the text is not a duration. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!GO_DURATION.test(text)) return undefined;
  return [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)].reduce((ms, [, n, unit]) => ms + Number(n) * UNIT_MS[unit], 0);
}
