/**
 * Bulk turns (src/storage/bulkturns.ts): one slice of bulk work per turn of the event loop, to the job that began
 * first, and what other requests need (here a timer) served between two slices, however many bulk jobs run.
 */
import { expect, test } from '@jest/globals';
import { bulkJob } from '../../src/storage/bulkturns.js';

test('turns go to the job that began first until it is done, one per turn of the event loop, other work in between', async () => {
  const order: string[] = [];
  const worker = async (name: string) => {
    const job = bulkJob();
    for (let i = 0; i < 3; i++) {
      await job.turn();
      order.push(name);
      // What another request needs meanwhile: a timer due before the next turn (the slice outlasts it).
      setTimeout(() => order.push('io'), 0);
      const end = performance.now() + 3;
      while (performance.now() < end);
    }
  };
  await Promise.all([worker('a'), worker('b'), worker('c')]);
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(order.filter((x) => x !== 'io')).toEqual(['a', 'a', 'a', 'b', 'b', 'b', 'c', 'c', 'c']);
  // Each slice's timer ran before the next slice: never two slices in one turn.
  expect(order).toEqual(['a', 'b', 'c'].flatMap((n) => [n, 'io', n, 'io', n, 'io']));
});
