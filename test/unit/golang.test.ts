/**
 * Every Go-compatibility helper against Go itself: test/fixtures/go-outputs.json holds what Go's standard library
 * answers for each input (written by scripts/go-fixtures/main.go, which says how to run it). Strings reach Go as
 * JSON texts and reach the helpers through JSON.parse, as request bodies reach both servers.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from '@jest/globals';
import { parseGoDuration } from '../../src/apimachinery/duration.js';
import { formatFloat, goValue } from '../../src/apimachinery/golang/fmt.js';
import { parseDuration } from '../../src/apimachinery/golang/duration.js';
import { goJSON, goJSONNumber } from '../../src/apimachinery/golang/json.js';
import { compareStrings } from '../../src/apimachinery/golang/strings.js';
import { formatTime, parseRFC3339 } from '../../src/apimachinery/golang/time.js';
import { jsonPathText } from '../../src/apimachinery/jsonpath.js';
import { goQuote } from '../../src/apimachinery/golang/strconv.js';

interface GoOutputs {
  go: string;
  compare: { inputs: string[]; sorted: number[]; compare: number[][] };
  rfc3339: { input: string; ok: boolean; unix?: number; nanos?: number; string?: string; error?: string }[];
  duration: { input: string; ok: boolean; nanoseconds?: string; error?: string }[];
  float: { input: string; v: string; json: string }[];
  values: { json: string; v: string; marshal: string }[];
  quote: { json: string; quote: string }[];
}

const go = JSON.parse(readFileSync(new URL('../fixtures/go-outputs.json', import.meta.url), 'utf8')) as GoOutputs;

/**
 * The fixture's Go (Debian's 1.19) writes backspace and form feed as \u0008 and \u000c; encoding/json writes
 * \b and \f since Go 1.22, which kube-apiserver 1.33 and kubectl are built with. json-iterator did not change.
 */
const since122 = (marshalled: string) => marshalled.replace(/\\u0008/g, '\\b').replace(/\\u000c/g, '\\f');

describe(`helpers answer as ${go.go} does`, () => {
  test('strings.Compare and sort.Strings', () => {
    const strings = go.compare.inputs.map((text) => JSON.parse(text) as string);
    for (const [i, a] of strings.entries()) {
      for (const [j, b] of strings.entries()) {
        expect([go.compare.inputs[i], go.compare.inputs[j], compareStrings(a, b)]).toEqual([
          go.compare.inputs[i],
          go.compare.inputs[j],
          go.compare.compare[i][j],
        ]);
      }
    }
    const sorted = strings
      .map((s, i) => ({ s, i }))
      .sort((x, y) => compareStrings(x.s, y.s))
      .map((x) => x.i);
    expect(sorted).toEqual(go.compare.sorted);
  });

  test.each(go.rfc3339)('time.Parse(time.RFC3339, $input)', (c) => {
    const t = parseRFC3339(c.input);
    if (!c.ok) {
      expect(t).toBeUndefined();
      return;
    }
    expect(t).toEqual({ seconds: c.unix ?? 0, nanos: c.nanos ?? 0 });
    expect(formatTime(t!)).toBe(c.string);
  });

  test.each(go.duration)('time.ParseDuration($input)', (c) => {
    expect(parseDuration(c.input)).toEqual(
      c.ok ? { ok: true, nanoseconds: BigInt(c.nanoseconds!) } : { ok: false, error: c.error },
    );
    expect(parseGoDuration(c.input)).toBe(c.ok ? Number(BigInt(c.nanoseconds!)) / 1e6 : undefined);
  });

  test.each(go.float)('float64 $input: %v and encoding/json', (c) => {
    const f = Number(c.input);
    expect(formatFloat(f)).toBe(c.v);
    expect(goJSONNumber(f)).toBe(c.json);
  });

  test.each(go.values)('decoded $json: %v, json.Marshal and the jsonpath printer', (c) => {
    const value: unknown = JSON.parse(c.json);
    expect(goValue(value)).toBe(c.v);
    expect(goJSON(value, 'json-iterator')).toBe(c.marshal);
    expect(goJSON(value, 'encoding/json')).toBe(since122(c.marshal));
    const composite = value !== null && typeof value === 'object';
    expect(jsonPathText(value)).toBe(value === null ? '<no value>' : composite ? since122(c.marshal) : c.v);
  });

  test.each(go.quote)('strconv.Quote($json)', (c) => {
    expect(goQuote(JSON.parse(c.json) as string)).toBe(c.quote);
  });
});

describe('where Go since 1.20 differs from the fixture Go', () => {
  // time.Parse range-checks zone offsets since Go 1.20 ("if hr > 24", "if mm > 60"); Go 1.19 took any two digits.
  test.each(['2025-05-01T10:00:00+25:00', '2025-05-01T10:00:00-99:00', '2025-05-01T10:00:00+23:61'])(
    'time.Parse(time.RFC3339, %s) fails',
    (input) => {
      expect(parseRFC3339(input)).toBeUndefined();
    },
  );
});
