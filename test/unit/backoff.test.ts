/** The waits between tries (src/apimachinery/backoff.ts): what every retrying loop of the server waits. */
import { describe, expect, test } from '@jest/globals';
import { Backoff, exponentialBackoff, withJitter } from '../../src/apimachinery/backoff.js';

const waits = (backoff: Backoff, n: number) => Array.from({ length: n }, () => backoff.next());

describe('Backoff', () => {
  test('doubles from the first wait up to the cap, and stays there (the watches: 200 ms to 5 s)', () => {
    expect(waits(new Backoff({ initialMs: 200, maxMs: 5000 }), 8)).toEqual([
      200, 400, 800, 1600, 3200, 5000, 5000, 5000,
    ]);
  });

  test('after a reset the next failure waits the first wait again', () => {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
    expect(waits(backoff, 3)).toEqual([500, 1000, 2000]);
    backoff.reset();
    expect(waits(backoff, 2)).toEqual([500, 1000]);
  });

  test("another factor, without a cap (the audit webhook's kube retry: 1.5 times longer each time)", () => {
    expect(waits(new Backoff({ initialMs: 10_000, factor: 1.5 }), 4)).toEqual([10_000, 15_000, 22_500, 33_750]);
  });

  test('a cap below the first wait is every wait', () => {
    expect(waits(new Backoff({ initialMs: 3000, maxMs: 2000 }), 2)).toEqual([2000, 2000]);
  });
});

test('one sequence per key from one factory, each its own (the work queue: a failing key does not slow another)', () => {
  const factory = exponentialBackoff({ initialMs: 1000, maxMs: 300_000 });
  let a = factory.next(undefined);
  a = a.next(undefined);
  a = a.next(undefined);
  const b = factory.next(undefined);
  expect([a.duration, b.duration]).toEqual([4000, 1000]);
  expect(a.next(undefined).duration).toBe(8000);
});

test("kube's wait.Jitter: the wait plus up to the fraction of it, as the random number says", () => {
  expect(withJitter(1000, 0.2, () => 0)).toBe(1000);
  expect(withJitter(1000, 0.2, () => 0.5)).toBe(1100);
  expect(withJitter(1000, 0.2, () => 0.999)).toBeCloseTo(1199.8);
  for (let i = 0; i < 100; i++) {
    const ms = withJitter(1000, 0.2);
    expect(ms).toBeGreaterThanOrEqual(1000);
    expect(ms).toBeLessThan(1200);
  }
});
