/**
 * Authorization delegated to the host cluster (kube's webhook authorizer with a SubjectAccessReview): allowed is
 * allow, denied is deny, neither is no opinion, with the host's reason. Answers are cached, allowed ones for
 * --authorization-webhook-cache-authorized-ttl and the others for --authorization-webhook-cache-unauthorized-ttl
 * (10 s each by default). A host that cannot answer fails the authorizer (never allow, never a deny: kube's webhook
 * authorizer returns its error, which the union passes on and the authorization filter answers with 500), and is
 * not cached.
 */
import { createHash } from 'node:crypto';
import type { Attributes, Authorizer, Decision } from '../apimachinery/authorizer.js';
import * as errors from '../apimachinery/status.js';
import { subjectAccessReviewSpec, type SubjectAccessReviewResult } from '../host/cluster.js';
import { HostClusterError } from '../host/kuberequest.js';
import { ReviewCache } from './reviewcache.js';

/** What the authorizer needs of the host cluster (HostCluster has it). */
export interface SubjectAccessReviewer {
  subjectAccessReview(attrs: Attributes): Promise<SubjectAccessReviewResult>;
}

export interface SubjectAccessReviewAuthorizerOptions {
  /** How long allowed answers are kept (default 10 s); 0 disables. */
  allowTtlMs?: number;
  /** How long answers that do not allow are kept (default 10 s); 0 disables. */
  denyTtlMs?: number;
  /** Bound on cached answers (default 10000). */
  maxEntries?: number;
  /** For tests: the current time in ms. */
  now?: () => number;
  /** Where host failures are reported (never with a token). */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class SubjectAccessReviewAuthorizer implements Authorizer {
  private readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly cache: ReviewCache<SubjectAccessReviewResult>;
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;

  constructor(
    private readonly host: SubjectAccessReviewer,
    opts: SubjectAccessReviewAuthorizerOptions = {},
  ) {
    this.allowTtlMs = opts.allowTtlMs ?? 10_000;
    this.denyTtlMs = opts.denyTtlMs ?? 10_000;
    this.cache = new ReviewCache(opts.maxEntries, opts.now);
    this.log = opts.log;
  }

  async authorize(attrs: Attributes): Promise<Decision> {
    let review: SubjectAccessReviewResult;
    try {
      review = await this.cache.getOrLoad(
        cacheKey(attrs),
        () => this.host.subjectAccessReview(attrs),
        (r) => (r.allowed && !r.denied ? this.allowTtlMs : this.denyTtlMs),
      );
    } catch (err) {
      // Logged for the operator; the caller is told what failed, not the host's address or answer.
      this.log?.('SubjectAccessReview failed', { error: (err as Error).message });
      throw hostFailure(err);
    }
    // kube's webhook authorizer: an answer both allowing and denying is a deny.
    if (review.denied) return { decision: 'deny', reason: review.reason };
    if (review.allowed) return { decision: 'allow' };
    return { decision: 'noOpinion', reason: review.reason || review.evaluationError || undefined };
  }
}

/**
 * What the caller is told when the host did not decide: 429 when the host said it was overloaded (clients retry
 * after Retry-After), else kube's 500 for an authorizer's error.
 */
function hostFailure(err: unknown): errors.StatusError {
  if (err instanceof HostClusterError && err.code === 429)
    return errors.tooManyRequests(
      'the host cluster is too busy to review whether this request is allowed (SubjectAccessReview); please try again later',
    );
  return errors.internalError(
    new Error(
      'the host cluster did not answer the SubjectAccessReview that decides whether this request is allowed; please try again (the server log says why)',
    ),
  );
}

/** The SubjectAccessReview spec with extra keys sorted (what kube keys its cache by), hashed. */
function cacheKey(attrs: Attributes): string {
  const spec = subjectAccessReviewSpec(attrs);
  const extra = spec.extra
    ? Object.fromEntries(Object.entries(spec.extra).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : undefined;
  return createHash('sha256')
    .update(JSON.stringify({ ...spec, extra }))
    .digest('hex');
}
