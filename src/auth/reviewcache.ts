/**
 * The host's answers to the reviews the server asks it for (TokenReview, SubjectAccessReview), kept for a TTL and
 * bounded in number on lru-cache: when full, expired answers go first, then the one stored longest ago (a read does
 * not keep an answer longer). Concurrent misses for the same key ask the host once.
 */
import LRUCache from 'lru-cache';

export class ReviewCache<V> {
  private readonly entries: LRUCache<string, { value: V; expires: number }>;
  private readonly inflight = new Map<string, Promise<V>>();

  constructor(
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.entries = new LRUCache({ max: maxEntries });
  }

  get(key: string): V | undefined {
    // peek, not get: lru-cache's get would make a much-read answer the last to go.
    const entry = this.entries.peek(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.entries.del(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    if (!this.entries.has(key) && this.entries.itemCount >= this.maxEntries) this.dropExpired();
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }

  get size(): number {
    return this.entries.itemCount;
  }

  /**
   * The cached value, else the one `load` gives (shared with concurrent callers for the same key) with the TTL
   * `ttlFor` picks for it. Failures of `load` are not cached.
   */
  async getOrLoad(key: string, load: () => Promise<V>, ttlFor: (value: V) => number): Promise<V> {
    const cached = this.get(key);
    if (cached !== undefined) return cached;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = load().then((value) => {
        this.set(key, value, ttlFor(value));
        return value;
      });
      const settled = () => this.inflight.delete(key);
      pending.then(settled, settled);
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private dropExpired(): void {
    const now = this.now();
    const expired: string[] = [];
    this.entries.forEach((entry, key) => entry.expires <= now && expired.push(key));
    for (const key of expired) this.entries.del(key);
  }
}
