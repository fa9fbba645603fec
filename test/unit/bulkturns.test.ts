/**
 * Bulk turns (src/storage/bulkturns.ts): one slice of bulk work per turn of the event loop, the longest waiting
 * first, and the I/O that came in meanwhile served between two slices, however many bulk requests run.
 */
import { expect, test } from '@jest/globals';
import { nextBulkTurn } from '../../src/storage/bulkturns.js';

test('turns go round the waiting workers in order, one per turn of the event loop, other work in between', async () => {
  const order: string[] = [];
  const worker = async (name: string) => {
    for (let i = 0; i < 3; i++) {
      await nextBulkTurn();
      order.push(name);
      if (name !== 'a') continue;
      // What another request needs meanwhile: a timer due before the next turn (the slice outlasts it), which the
      // event loop runs before it hands out the next bulk turn.
      setTimeout(() => order.push('io'), 0);
      const end = performance.now() + 3;
      while (performance.now() < end);
    }
  };
  await Promise.all([worker('a'), worker('b'), worker('c')]);
  expect(order.filter((x) => x !== 'io')).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
  // Each timer set during a's slice ran before the slice after it.
  expect(order.slice(0, 3)).toEqual(['a', 'io', 'b']);
  expect(order.filter((x) => x === 'io')).toHaveLength(3);
});
