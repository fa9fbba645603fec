/**
 * The TokenReview webhook of direct cluster endpoint tokens: `POST /authenticate/direct-cluster-endpoint[/<cluster>]`,
 * in the format of kube's webhook token authenticator (--authentication-token-webhook-config-file). A TokenReview of
 * authentication.k8s.io v1 or v1beta1 in, one of the same version out; the review itself is
 * auth/directtokenreview.ts.
 *
 * kube's webhook takes any answer but a 2xx as an error (retried, then the request fails), so a refused token is a
 * 200 with `status.authenticated: false` and the reason in `status.error`; a body that is no TokenReview is a 400
 * Status. The token is never written back: the answer's spec holds only the audiences, and no error quotes the body
 * (a body's first bytes may be the token).
 */
import type { Request, Response } from 'express';
import yaml from 'js-yaml';
import * as errors from '../apimachinery/status.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { DirectTokenReviewer } from '../auth/directtokenreview.js';
import { rawBody } from './body.js';
import { requestEncoding } from './negotiation.js';
import { writeObject } from './responses.js';

const GROUP = 'authentication.k8s.io';
const VERSIONS = ['v1', 'v1beta1'];
const EXPECTED = `a TokenReview of apiVersion ${VERSIONS.map((v) => `${GROUP}/${v}`).join(' or ')}, as a kube-apiserver's token webhook posts it`;

interface TokenReviewRequest {
  apiVersion: string;
  token: string;
  audiences: string[];
}

export function tokenReviewHandler(
  reviewer: DirectTokenReviewer,
): (req: Request, res: Response, cluster: string | undefined) => Promise<void> {
  return async (req, res, cluster) => {
    if (req.method !== 'POST') throw errors.methodNotSupported({ group: GROUP, resource: 'tokenreviews' }, req.method);
    const review = tokenReviewOf(parsed(req));
    const result = await reviewer.review(review.token, review.audiences, cluster);
    const status = result.authenticated
      ? { authenticated: true, user: result.user, audiences: result.audiences }
      : { authenticated: false, error: result.error };
    // The user a cluster may cache for its --authentication-token-webhook-cache-ttl; no other cache may keep it.
    res.setHeader('Cache-Control', 'no-store');
    writeObject(res, 200, {
      apiVersion: review.apiVersion,
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: review.audiences.length ? { audiences: review.audiences } : {},
      status,
    });
  };
}

/** A kind or apiVersion as sent, for the message (a string at most a short one; anything else by its type). */
function named(value: unknown): string {
  if (typeof value !== 'string') return value === undefined ? '(none)' : `(a ${typeof value})`;
  return value.length <= 64 ? JSON.stringify(value) : '(a long string)';
}

/** The body as an object; a parse failure names no part of it. */
function parsed(req: Request): unknown {
  const encoding = requestEncoding(req.headers['content-type']);
  const text = rawBody(req).toString('utf8');
  try {
    return encoding === 'json' ? JSON.parse(text) : yaml.load(text, { schema: yaml.CORE_SCHEMA });
  } catch {
    throw errors.badRequest(`the body is not valid ${encoding === 'json' ? 'JSON' : 'YAML'}: expected ${EXPECTED}`);
  }
}

function tokenReviewOf(body: unknown): TokenReviewRequest {
  if (!isPlainObject(body)) throw errors.badRequest(`the body is not an object: expected ${EXPECTED}`);
  const { apiVersion, kind, spec } = body;
  if (kind !== 'TokenReview' || typeof apiVersion !== 'string' || !VERSIONS.some((v) => apiVersion === `${GROUP}/${v}`))
    throw errors.badRequest(`the body is kind ${named(kind)} of apiVersion ${named(apiVersion)}: expected ${EXPECTED}`);
  if (!isPlainObject(spec) || typeof spec.token !== 'string' || spec.token === '')
    throw errors.badRequest('spec.token is required: the bearer token to review, a non-empty string');
  const audiences = spec.audiences ?? [];
  if (!Array.isArray(audiences) || !audiences.every((a) => typeof a === 'string'))
    throw errors.badRequest('spec.audiences must be a list of strings');
  return { apiVersion, token: spec.token, audiences };
}
