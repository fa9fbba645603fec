/** How the command line client prints what it got: `-o table` (the default for lists), `json` or `yaml`. */
import yaml from 'js-yaml';
import { humanDuration } from '../apimachinery/duration.js';
import { usage } from './errors.js';

export const FORMATS = ['table', 'json', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

export function formatOf(value: string | undefined, allowed: readonly string[] = FORMATS): string {
  const format = value ?? allowed[0];
  if (!allowed.includes(format)) throw usage(`-o ${format} is not a format here; use one of ${allowed.join(', ')}`);
  return format;
}

/**
 * The control characters a terminal acts on (C0 but tab and newline, DEL, C1: cursor moves, a window title, an
 * answer typed back as if by the user), written as \xNN instead. What a server or another tenant chose (a message, a
 * key, a value) reaches a terminal only this way.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function printable(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** `value` as JSON or YAML text, ending in a newline. */
export function serialized(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : yaml.dump(value, { noRefs: true });
}

/** Rows under a header, columns padded as kubectl pads them (three spaces between). */
export function table(header: string[], rows: string[][]): string {
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
