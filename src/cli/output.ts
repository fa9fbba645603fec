/** How the command line client prints what it got: `-o table` (the default for lists), `json` or `yaml`. */
import yaml from 'js-yaml';
import { humanDuration } from '../apimachinery/duration.js';
import { usage } from './errors.js';
import { jsonPrintable, oneLine } from './terminal.js';

export const FORMATS = ['table', 'json', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

export function formatOf(value: string | undefined, allowed: readonly string[] = FORMATS): string {
  const format = value ?? allowed[0];
  if (!allowed.includes(format)) throw usage(`-o ${format} is not a format here; use one of ${allowed.join(', ')}`);
  return format;
}

/** `value` as JSON or YAML text, ending in a newline. */
export function serialized(value: unknown, format: 'json' | 'yaml'): string {
  if (format === 'yaml') return yaml.dump(value, { noRefs: true });
  return `${jsonPrintable(JSON.stringify(value, null, 2))}\n`;
}

/** Rows under a header, columns padded as kubectl pads them (three spaces between). */
export function table(header: string[], given: string[][]): string {
  // Escaped before the widths are counted: a cell is one line, and its columns stay in place.
  const rows = given.map((r) => r.map(oneLine));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('   ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** kubectl's AGE of a timestamp (apimachinery/duration.ts, as the server's tables show it). */
export function age(timestamp: string | undefined, now = Date.now()): string {
  const at = Date.parse(timestamp ?? '');
  return Number.isNaN(at) ? '<unknown>' : humanDuration(now - at);
}
