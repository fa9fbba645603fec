/**
 * Bearer tokens reviewed by the host cluster (kube's delegated webhook token authenticator): POST a TokenReview,
 * use status.user when status.authenticated. Answers, accepted and rejected, are cached for the TTL
 * (--authentication-token-webhook-cache-ttl, 10 s by default) under an HMAC-SHA256 of the token, never the token
 * itself; a host that cannot answer is a 401 and is not cached. Tokens are never logged nor put in messages.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { UserInfo } from '../apimachinery/user.js';
import type { TokenReviewResult } from '../host/cluster.js';
import { AuthenticationError, bearerToken, type Authenticator } from './types.js';

/** What the authenticator needs of the host cluster (HostCluster has it). */
export interface TokenReviewer {
  tokenReview(token: string, audiences?: string[]): Promise<TokenReviewResult>;
}

export interface TokenReviewAuthenticatorOptions {
  /** How long answers are kept (default 10 s); 0 disables the cache. */
  cacheTtlMs?: number;
  /** Audiences to ask the host about (kube's --api-audiences); default none. */
  audiences?: string[];
  /** Bound on cached answers (default 10000). */
  maxEntries?: number;
  /** For tests: the current time in ms. */
  now?: () => number;
  /** Where host failures are reported (never with a token). */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * A small map whose entries expire, bounded in size (expired entries go first, then the oldest), with the
 * in-flight lookups shared so concurrent misses for the same key ask once.
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly inflight = new Map<string, Promise<V>>();

  constructor(
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.prune();
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }

  get size(): number {
    return this.entries.size;
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

  private prune(): void {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expires <= now) this.entries.delete(k);
    // Still full: drop the oldest (Map keeps insertion order).
    for (const k of this.entries.keys()) {
      if (this.entries.size < this.maxEntries) break;
      this.entries.delete(k);
    }
  }
}

/** A per-process HMAC key, so cache keys say nothing about tokens even in a heap dump. */
const CACHE_KEY_SECRET = randomBytes(32);

/** The cache key of a token (and the audiences asked for): HMAC-SHA256, hex. */
export function tokenCacheKey(token: string, audiences: readonly string[] = []): string {
  const audienceHash = createHash('sha256').update(JSON.stringify(audiences)).digest('hex');
  return createHmac('sha256', CACHE_KEY_SECRET).update(audienceHash).update('\0').update(token).digest('hex');
}

export class TokenReviewAuthenticator implements Authenticator {
  private readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly cache: ExpiringCache<TokenReviewResult>;
  private readonly ttlMs: number;
  private readonly audiences: string[];

  constructor(
    private readonly host: TokenReviewer,
    opts: TokenReviewAuthenticatorOptions = {},
  ) {
    this.ttlMs = opts.cacheTtlMs ?? 10_000;
    this.audiences = opts.audiences ?? [];
    this.cache = new ExpiringCache(opts.maxEntries, opts.now);
    this.log = opts.log;
  }

  /** Undefined without a bearer token; the user for a token the host accepts; AuthenticationError otherwise. */
  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const token = bearerToken(req);
    if (token === undefined) return undefined;
    let result: TokenReviewResult;
    try {
      result = await this.cache.getOrLoad(
        tokenCacheKey(token, this.audiences),
        () => this.host.tokenReview(token, this.audiences.length ? this.audiences : undefined),
        () => this.ttlMs,
      );
    } catch (err) {
      // The operator hears why (HostClusterError messages never hold the token); the caller only "Unauthorized",
      // as from kube-apiserver: nothing about the host's state reaches someone without valid credentials.
      this.log?.('TokenReview failed', { error: (err as Error).message });
      throw new AuthenticationError();
    }
    if (!result.authenticated || !result.user) throw new AuthenticationError();
    const { user } = result;
    return { ...user, groups: [...user.groups], ...(user.extra ? { extra: { ...user.extra } } : {}) };
  }
}
