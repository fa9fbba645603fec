/**
 * The object counts a list's seats are estimated from (kube's object count tracker, which reads storage's counts
 * once a minute): the watch caches' counts by resource, read again at most every `maxAgeMs`, since counting goes
 * through every object the caches hold.
 */
import type { Registry } from '../registry/registry.js';
import type { Clock } from './queueset.js';
import type { ObjectCount } from './seats.js';

export function watchCacheObjectCount(registry: Registry, maxAgeMs = 10_000, clock: Clock = Date.now): ObjectCount {
  let counts = new Map<string, number>();
  let readAt = -Infinity;
  return (group, resource) => {
    if (clock() - readAt >= maxAgeMs) {
      counts = new Map();
      for (const [cacheGroup, cache] of registry.caches)
        for (const [plural, size] of cache.sizes()) counts.set(`${cacheGroup}/${plural}`, size.objects);
      readAt = clock();
    }
    const served = registry.definitions.some((d) => d.group === group && d.plural === resource);
    return served ? (counts.get(`${group}/${resource}`) ?? 0) : undefined;
  };
}
