/** The cache of the host's review answers (src/auth/reviewcache.ts): how long an answer is kept, and how many. */
import { expect, test } from '@jest/globals';
import { ReviewCache } from '../../src/auth/reviewcache.js';

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

test('an answer is kept for its TTL and not a moment longer; a TTL of 0 keeps nothing', () => {
  const c = clock();
  const cache = new ReviewCache<string>(10, c.now);
  cache.set('a', 'allowed', 1000);
  cache.set('b', 'denied', 0);
  c.advance(999);
  expect([cache.get('a'), cache.get('b')]).toEqual(['allowed', undefined]);
  c.advance(1);
  expect(cache.get('a')).toBeUndefined();
  expect(cache.size).toBe(0);
});

test('when full, expired answers go first, then the one stored longest ago, however often it was read', () => {
  const c = clock();
  const cache = new ReviewCache<number>(3, c.now);
  cache.set('old', 1, 10_000);
  cache.set('short', 2, 100);
  cache.set('mid', 3, 10_000);
  c.advance(100);
  cache.set('new', 4, 10_000);
  // 'short' had expired: it made the room, 'old' stays.
  expect([cache.get('old'), cache.get('short'), cache.get('mid'), cache.get('new')]).toEqual([1, undefined, 3, 4]);
  cache.get('old');
  cache.set('newer', 5, 10_000);
  expect([cache.get('old'), cache.get('mid'), cache.get('new'), cache.get('newer')]).toEqual([undefined, 3, 4, 5]);
  expect(cache.size).toBe(3);
});

test('concurrent misses for one key ask once; a failure is not kept', async () => {
  const cache = new ReviewCache<string>();
  let asked = 0;
  const load = async () => `answer ${++asked}`;
  const [a, b] = await Promise.all([cache.getOrLoad('k', load, () => 1000), cache.getOrLoad('k', load, () => 1000)]);
  expect([a, b, asked]).toEqual(['answer 1', 'answer 1', 1]);
  await expect(
    cache.getOrLoad(
      'x',
      () => Promise.reject(new Error('host down')),
      () => 1000,
    ),
  ).rejects.toThrow('host down');
  expect(await cache.getOrLoad('x', load, () => 1000)).toBe('answer 2');
});
