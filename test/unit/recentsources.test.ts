/** Sources remembered for a while (src/http/recentsources.ts): forgotten after their time, the least recent first. */
import { expect, jest, test } from '@jest/globals';
import { RecentSources } from '../../src/http/recentsources.js';

test('a source is remembered for its time from when it was last seen, and at most so many, the least recent forgotten', () => {
  jest.useFakeTimers({ now: 0 });
  try {
    const recent = new RecentSources(1000, 2);
    recent.remember('10.0.0.1');
    jest.advanceTimersByTime(600);
    recent.remember('10.0.0.2');
    recent.remember('10.0.0.1'); // seen again: its time starts anew, and it is now the most recent
    jest.advanceTimersByTime(600);
    expect([recent.has('10.0.0.1'), recent.has('10.0.0.2')]).toEqual([true, true]);
    // A third: the least recent (10.0.0.2) goes to keep two.
    recent.remember('10.0.0.3');
    expect([recent.has('10.0.0.1'), recent.has('10.0.0.2'), recent.has('10.0.0.3')]).toEqual([true, false, true]);
    expect(recent.size).toBe(2);
    jest.advanceTimersByTime(401);
    expect(recent.has('10.0.0.1')).toBe(false);
    expect(recent.has('10.0.0.3')).toBe(true);
  } finally {
    jest.useRealTimers();
  }
});

test("a source seen for someone is one of their latest few: one user's many addresses push out neither others' nor their own latest", () => {
  const recent = new RecentSources(60_000, 10, 2);
  recent.remember('10.0.0.1', 'admin');
  for (const source of ['10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.4']) recent.remember(source, 'tenant');
  expect(['10.0.0.1', '10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.4'].map((s) => recent.has(s))).toEqual([
    true,
    false,
    false,
    true,
    true,
  ]);
  expect(recent.size).toBe(3);
  // Seen again for another: it is theirs now, and the tenant may keep another.
  recent.remember('10.0.1.4', 'admin');
  recent.remember('10.0.1.5', 'tenant');
  expect(['10.0.0.1', '10.0.1.3', '10.0.1.4', '10.0.1.5'].map((s) => recent.has(s))).toEqual([true, true, true, true]);
});
