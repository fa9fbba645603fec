import { describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { MAX_NESTING_DEPTH, NestingError, checkNesting } from '../../src/apimachinery/nesting.js';
import { parseFlags } from '../../src/config.js';
import { parseGoDuration } from '../../src/apimachinery/duration.js';
import { watchTimeoutSeconds } from '../../src/http/deadline.js';

function arrays(levels: number): unknown {
  return JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);
}

describe('checkNesting', () => {
  test(`accepts ${MAX_NESTING_DEPTH} levels of objects and arrays, refuses one more, at any depth without recursion`, () => {
    expect(() => checkNesting(arrays(MAX_NESTING_DEPTH))).not.toThrow();
    expect(() => checkNesting(arrays(MAX_NESTING_DEPTH + 1))).toThrow(
      new NestingError(`exceeded max depth: nested more than ${MAX_NESTING_DEPTH} levels`),
    );
    expect(() => checkNesting(arrays(1_000_000))).toThrow(NestingError);
    expect(() => checkNesting({ a: 'x'.repeat(100), b: [1, 2, { c: null }] })).not.toThrow();
  });

  test('refuses documents that expand through YAML aliases the way go-yaml does, and keeps ordinary reuse', () => {
    // 9 anchors of 10 → 10^9 nodes from a few hundred bytes.
    const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    expect(() => checkNesting(yaml.load(lines.join('\n')))).toThrow(
      new NestingError('document contains excessive aliasing'),
    );
    // Reuse of one anchor hundreds of times, small in total, is fine (go-yaml allows 99% aliases in small documents).
    const reuse = ['base: &b {x: 1, y: [1, 2, 3]}', ...Array.from({ length: 300 }, (_, i) => `k${i}: *b`)].join('\n');
    expect(() => checkNesting(yaml.load(reuse))).not.toThrow();
    // A large document without aliases is never counted as aliased.
    expect(() => checkNesting({ items: Array.from({ length: 500_000 }, (_, i) => ({ i })) })).not.toThrow();
  });
});

describe('deadlines', () => {
  test('?timeout= takes Go durations', () => {
    expect(parseGoDuration('30s')).toBe(30_000);
    expect(parseGoDuration('1m30s')).toBe(90_000);
    expect(parseGoDuration('250ms')).toBe(250);
    expect(parseGoDuration('1.5h')).toBe(5_400_000);
    expect(parseGoDuration('0')).toBe(0);
    // Go takes these too (kube then ignores a timeout that is not positive).
    expect(parseGoDuration('.5s')).toBe(500);
    expect(parseGoDuration('5.s')).toBe(5000);
    expect(parseGoDuration('1µs')).toBe(0.001);
    expect(parseGoDuration('-1s')).toBe(-1000);
    for (const bad of ['', '30', 's', '.s', '1d', 'soon', '1s ', '1e3s']) expect(parseGoDuration(bad)).toBeUndefined();
  });

  test('watches without timeoutSeconds last between --min-request-timeout and twice that', () => {
    for (let i = 0; i < 200; i++) {
      const s = watchTimeoutSeconds(1800);
      expect(s).toBeGreaterThanOrEqual(1800);
      expect(s).toBeLessThan(3600);
    }
  });

  test('flags: --request-timeout a duration (default 1m, 0 for none), --min-request-timeout whole seconds (default 1800, at least 1)', () => {
    expect(parseFlags([])).toMatchObject({ requestTimeoutMs: 60_000, minRequestTimeoutSeconds: 1800 });
    expect(parseFlags(['--request-timeout=2m', '--min-request-timeout=300'])).toMatchObject({
      requestTimeoutMs: 120_000,
      minRequestTimeoutSeconds: 300,
    });
    expect(parseFlags(['--request-timeout=0'])!.requestTimeoutMs).toBe(0);
    expect(() => parseFlags(['--request-timeout=60'])).toThrow(
      '--request-timeout must be a duration such as 5m, 30s or 1h (got "60")',
    );
    // Whatever Go's time.ParseDuration takes: a fraction without a whole part or digits, a micro sign.
    expect(parseFlags(['--request-timeout=.5s'])!.requestTimeoutMs).toBe(500);
    expect(parseFlags(['--request-timeout=5.s'])!.requestTimeoutMs).toBe(5000);
    expect(parseFlags(['--request-timeout=1500µs'])!.requestTimeoutMs).toBe(1.5);
    expect(() => parseFlags(['--request-timeout=-1m'])).toThrow('--request-timeout must not be negative (got "-1m")');
    expect(() => parseFlags(['--min-request-timeout=0'])).toThrow('--min-request-timeout must be at least 1s');
    expect(() => parseFlags(['--min-request-timeout=1m'])).toThrow('--min-request-timeout must be a whole number');
  });

  test('flags: --shutdown-delay-duration a duration, 0 by default', () => {
    expect(parseFlags([])!.shutdownDelayMs).toBe(0);
    expect(parseFlags(['--shutdown-delay-duration=15s'])!.shutdownDelayMs).toBe(15_000);
    expect(() => parseFlags(['--shutdown-delay-duration=soon'])).toThrow(
      '--shutdown-delay-duration must be a duration',
    );
  });
});
