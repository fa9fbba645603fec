/**
 * kube-apiserver's max-in-flight filter (--max-requests-inflight, --max-mutating-requests-inflight): past either
 * limit a request is refused at once with 429 and `Retry-After: 1` (client-go retries only then) instead of queuing
 * behind the others. Long-running requests (watches) are not counted, and system:masters is never limited, so an
 * administrator can still act on an overloaded server. 0 turns a limit off.
 */
import type { NextFunction, Request, Response } from 'express';
import { requestContext, requestUser } from '../apimachinery/request.js';
import { whenRequestDone } from '../apimachinery/requestend.js';
import * as errors from '../apimachinery/status.js';
import { isMaster } from '../apimachinery/user.js';
import type { InFlightCounts } from '../observability/metrics.js';

const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);

/** The most requests served at once, by kind (the counts' kinds). */
export type InFlightLimits = InFlightCounts;

export function maxInFlight(
  limits: InFlightLimits,
  running: InFlightCounts = { readOnly: 0, mutating: 0 },
  /** How long after its request ended a handler still at work keeps counting (the response grace). */
  handlerGraceMs = 0,
) {
  return (req: Request, res: Response, next: NextFunction) => {
    const { info } = requestContext(req);
    if (info.verb === 'watch' || isMaster(requestUser(req))) return next();
    const kind: keyof InFlightLimits =
      !info.isResourceRequest || READ_ONLY_VERBS.has(info.verb) ? 'readOnly' : 'mutating';
    if (limits[kind] > 0 && running[kind] >= limits[kind]) throw errors.tooManyRequests();
    running[kind]++;
    // Once the answer is sent, or the client or its connection is gone first, and the handler is done, as kube's
    // counts the request until its handler returns (apimachinery/requestend.ts).
    whenRequestDone(res, () => running[kind]--, handlerGraceMs);
    next();
  };
}
