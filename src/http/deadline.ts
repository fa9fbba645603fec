/**
 * Request deadlines, as kube-apiserver's WithRequestDeadline and WithTimeoutForNonLongRunningRequests: a request
 * that is not answered within --request-timeout (or the shorter `?timeout=` it asks for) gets 504 Timeout, and
 * whatever it was doing may still finish in the background (a write may still land, as with kube). Watches are
 * long-running: no deadline, but without `timeoutSeconds` they end after a random time between
 * --min-request-timeout and twice that, so clients spread their re-watches.
 *
 * The deadline bounds the answer too: a request that has not ended a grace after it (its answer still being
 * written to a client that does not take it, or the 504 itself) is cut, with its connection, and gives back what
 * it holds (apimachinery/requestend.ts). kube's timeout filter cuts such an answer at the deadline itself (it
 * aborts the handler still writing: the HTTP/1 connection is closed, the HTTP/2 stream reset); the grace lets an
 * answer handed over just before the deadline reach a client that reads it.
 */
import type { NextFunction, Request, Response } from 'express';
import { parseGoDuration } from '../apimachinery/duration.js';
import { requestContext } from '../apimachinery/request.js';
import { cutUnlessEnded, whenRequestEnds } from '../apimachinery/requestend.js';
import * as errors from '../apimachinery/status.js';
import { writeStatus } from './responses.js';

export interface DeadlineOptions {
  /** --request-timeout; 0: none. */
  requestTimeoutMs: number;
  /** How long after its deadline a request may take to end before its response is cut. */
  responseGraceMs: number;
}

export function requestDeadline(opts: DeadlineOptions) {
  return (req: Request, res: Response, next: NextFunction) => {
    const { info, query } = requestContext(req);
    if (info.verb === 'watch') return next();
    const timeoutMs = requestTimeoutMs(query, opts.requestTimeoutMs);
    if (timeoutMs > 0) {
      const timer = setTimeout(() => {
        if (!res.headersSent)
          writeStatus(res, errors.timeout('Timeout: request did not complete within the allotted timeout', 0).status);
        cutUnlessEnded(res, opts.responseGraceMs);
      }, timeoutMs);
      whenRequestEnds(res, () => clearTimeout(timer));
    }
    next();
  };
}

/** The deadline of a request other than a watch: --request-timeout, or the shorter `?timeout=` (ms; 0: none). */
export function requestTimeoutMs(query: URLSearchParams, flagMs: number): number {
  const asked = query.get('timeout');
  if (!asked) return flagMs;
  const ms = parseGoDuration(asked);
  if (ms === undefined)
    throw errors.badRequest(
      `invalid timeout specified in the request URL: ${JSON.stringify(asked)} is not a duration such as 30s or 1m`,
    );
  return ms > 0 && (flagMs === 0 || ms < flagMs) ? ms : flagMs;
}

/** How long a watch without `timeoutSeconds` lasts: between --min-request-timeout and twice it, at random. */
export function watchTimeoutSeconds(minRequestTimeoutSeconds: number): number {
  return Math.floor(minRequestTimeoutSeconds * (1 + Math.random()));
}
