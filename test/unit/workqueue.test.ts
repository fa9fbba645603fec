/**
 * The controllers' work queue (src/controllers/workqueue.ts): keys of one flow take at most maxPerFlow workers and
 * the others go on with everyone else's keys in the order they came; a key added later comes once, at its earliest
 * time; spreadOver puts each key at its own point of a period, the same in every period. No timing: workers are
 * promises the test settles.
 */
import { describe, expect, jest, test } from '@jest/globals';
import { WorkQueue, phaseOf } from '../../src/controllers/workqueue.js';

/** A queue worked by `workers` handlers the test finishes one key at a time. */
function worked(queue: WorkQueue, workers: number) {
  const running = new Map<string, () => void>();
  const started: string[] = [];
  let wake: (() => void) | undefined;
  void queue.work(
    workers,
    (key) =>
      new Promise<void>((resolve) => {
        started.push(key);
        running.set(key, resolve);
        wake?.();
      }),
    () => {},
  );
  return {
    started,
    running: () => [...running.keys()].sort(),
    finish(key: string) {
      running.get(key)!();
      running.delete(key);
    },
    /** Resolves once `n` keys have started. */
    async startedAtLeast(n: number) {
      while (started.length < n) await new Promise<void>((r) => (wake = r));
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('work queue flows', () => {
  test("a flow whose keys do not end holds maxPerFlow workers; the other workers take others' keys in order", async () => {
    const queue = new WorkQueue({ flowOf: (key) => key.split('/')[0], maxPerFlow: 2 });
    const w = worked(queue, 4);
    for (let i = 0; i < 10; i++) queue.add(`bob/${i}`);
    queue.add('alice/1');
    queue.add('carol/1');
    await w.startedAtLeast(4);
    await settle();
    expect(w.running()).toEqual(['alice/1', 'bob/0', 'bob/1', 'carol/1']);
    w.finish('alice/1');
    queue.add('alice/2');
    await w.startedAtLeast(5);
    await settle();
    // bob still has his two; the free worker took alice's next, not bob's third.
    expect(w.started.at(-1)).toBe('alice/2');
    w.finish('bob/0');
    await w.startedAtLeast(6);
    expect(w.started.at(-1)).toBe('bob/2');
    queue.shutdown();
  });

  test('without flows every worker is used', async () => {
    const queue = new WorkQueue();
    const w = worked(queue, 3);
    for (let i = 0; i < 5; i++) queue.add(`bob/${i}`);
    await w.startedAtLeast(3);
    expect(w.running()).toEqual(['bob/0', 'bob/1', 'bob/2']);
    queue.shutdown();
  });

  test('a flow counts a key in the flow it was taken in, even when its flow changes meanwhile', async () => {
    const flows = new Map([['k', 'one']]);
    const queue = new WorkQueue({ flowOf: (key) => flows.get(key) ?? key, maxPerFlow: 1 });
    const w = worked(queue, 2);
    queue.add('k');
    await w.startedAtLeast(1);
    flows.set('k', 'two');
    flows.set('x', 'one');
    queue.add('x');
    await settle();
    expect(w.running()).toEqual(['k']);
    w.finish('k');
    await w.startedAtLeast(2);
    expect(w.running()).toEqual(['x']);
    queue.shutdown();
  });
});

describe('later and spread', () => {
  test('addAfter keeps the earliest time asked for, and comes once', async () => {
    const queue = new WorkQueue();
    queue.addAfter('k', 60_000);
    queue.addAfter('k', 1);
    queue.addAfter('k', 30_000);
    const got = await queue.get();
    expect(got).toBe('k');
    queue.done('k');
    expect(queue.length).toBe(0);
    queue.shutdown();
  });

  test('joinSpread: a key first seen during a period gets its point of this period', async () => {
    jest.useFakeTimers({ now: 0 });
    try {
      const key = ['a', 'b', 'c', 'd', 'e', 'f'].find((k) => phaseOf(k) > 0.5)!;
      const point = Math.floor(phaseOf(key) * 10_000);
      const queue = new WorkQueue();
      queue.spreadOver([], 10_000);
      jest.advanceTimersByTime(100);
      queue.joinSpread(key);
      jest.advanceTimersByTime(point - 101);
      expect(queue.length).toBe(0);
      jest.advanceTimersByTime(2);
      expect(queue.length).toBe(1);
      // A key whose point of this period has passed waits for the next spread.
      const early = ['a', 'b', 'c', 'd', 'e', 'f'].find((k) => Math.floor(phaseOf(k) * 10_000) < point)!;
      queue.joinSpread(early);
      jest.advanceTimersByTime(10_000);
      expect(queue.length).toBe(1);
      queue.shutdown();
    } finally {
      jest.useRealTimers();
    }
  });

  test('spreadOver: keys land across the period, each at the same point every time', () => {
    const buckets = new Array(10).fill(0);
    for (let i = 0; i < 1000; i++) buckets[Math.floor(phaseOf(`p-team/vc-${i}`) * 10)]++;
    // An even spread: every tenth of the period gets 100 ± 40 of 1,000 names that differ in a digit or two.
    for (const n of buckets) expect(Math.abs(n - 100)).toBeLessThan(40);
    expect(phaseOf('cluster-7')).toBe(phaseOf('cluster-7'));
    expect(phaseOf('cluster-7')).not.toBe(phaseOf('cluster-8'));
  });
});
