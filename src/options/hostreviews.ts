/** The host cluster's TokenReview and SubjectAccessReview: how long their answers are cached. */
import type { Options } from './flag.js';
import { duration } from './values.js';

export interface HostReviewsConfig {
  authenticationTokenWebhookCacheTtlMs: number;
  authorizationWebhookCacheAuthorizedTtlMs: number;
  authorizationWebhookCacheUnauthorizedTtlMs: number;
}

export const hostReviewsOptions: Options<HostReviewsConfig> = {
  concern: 'hostreviews',
  flags: [
    {
      name: 'authentication-token-webhook-cache-ttl',
      arg: 'duration',
      default: '10s',
      help: 'How long TokenReview answers, accepted or rejected, are cached ({default}; 0 disables).',
      apply: (c, v) => (c.authenticationTokenWebhookCacheTtlMs = duration('authentication-token-webhook-cache-ttl', v)),
    },
    {
      name: 'authorization-webhook-cache-authorized-ttl',
      arg: 'duration',
      default: '10s',
      help: 'How long allowed SubjectAccessReview answers are cached ({default}; 0 disables).',
      apply: (c, v) =>
        (c.authorizationWebhookCacheAuthorizedTtlMs = duration('authorization-webhook-cache-authorized-ttl', v)),
    },
    {
      name: 'authorization-webhook-cache-unauthorized-ttl',
      arg: 'duration',
      default: '10s',
      help: 'How long SubjectAccessReview answers that do not allow are cached ({default}; 0 disables).',
      apply: (c, v) =>
        (c.authorizationWebhookCacheUnauthorizedTtlMs = duration('authorization-webhook-cache-unauthorized-ttl', v)),
    },
  ],
};
