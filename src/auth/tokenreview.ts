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
import { ReviewCache } from './reviewcache.js';
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

/** A per-process HMAC key, so cache keys say nothing about tokens even in a heap dump. */
const CACHE_KEY_SECRET = randomBytes(32);

/** The cache key of a token (and the audiences asked for): HMAC-SHA256, hex. */
export function tokenCacheKey(token: string, audiences: readonly string[] = []): string {
  const audienceHash = createHash('sha256').update(JSON.stringify(audiences)).digest('hex');
  return createHmac('sha256', CACHE_KEY_SECRET).update(audienceHash).update('\0').update(token).digest('hex');
}

export class TokenReviewAuthenticator implements Authenticator {
  private readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly cache: ReviewCache<TokenReviewResult>;
  private readonly ttlMs: number;
  private readonly audiences: string[];

  constructor(
    private readonly host: TokenReviewer,
    opts: TokenReviewAuthenticatorOptions = {},
  ) {
    this.ttlMs = opts.cacheTtlMs ?? 10_000;
    this.audiences = opts.audiences ?? [];
    this.cache = new ReviewCache(opts.maxEntries, opts.now);
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
