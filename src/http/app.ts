/**
 * The HTTP app: the filter chain (as kube's DefaultBuildHandlerChain) in front of the handlers for resources and
 * for everything else. Each filter is a file of its own; every failure on the way is a StatusError written by the
 * one error handler at the end.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { ServedActions } from '../actions/served.js';
import type { Authorizer } from '../apimachinery/authorizer.js';
import { requestContext } from '../apimachinery/request.js';
import { requestHandled } from '../apimachinery/requestend.js';
import type { DirectTokenReviewer } from '../auth/directtokenreview.js';
import type { Authenticator } from '../auth/types.js';
import { restrictedAuthorizer } from '../auth/restriction.js';
import type { FlowControl } from '../flowcontrol/controller.js';
import type { ObjectCount } from '../flowcontrol/seats.js';
import type { Logger } from '../log.js';
import { servedBy } from '../observability/labels.js';
import type { Metrics } from '../observability/metrics.js';
import { observeRequests, type Auditing } from '../observability/observe.js';
import type { Registry } from '../registry/registry.js';
import { authenticate } from './authentication.js';
import { authorize, publicPaths, type VisibleTo } from './authorization.js';
import { bodyError, readBody } from './body.js';
import { filterChain } from './chain.js';
import type { ConnectionGuard } from './connections.js';
import { requestDeadline } from './deadline.js';
import { findNamespace } from './findnamespace.js';
import type { HealthCheck } from './health.js';
import { maxInFlight, type InFlightLimits } from './inflight.js';
import { nonResourceHandler } from './nonresource.js';
import { priorityAndFairness } from './priorityandfairness.js';
import type { OidcOptions } from './oidc.js';
import { withRequestInfo } from './requestinfo.js';
import { handleResource } from './resources.js';
import { writeError } from './responses.js';
import type { GracefulShutdown } from './shutdown.js';
import { inHandlerSpan, traceRequests } from './tracing.js';
import { tracingEnabled } from '../tracing.js';

export interface AppOptions {
  registry: Registry;
  /** The actions served beside the registry's resources (none when unset). */
  actions?: ServedActions;
  authenticator: Authenticator;
  authorizer: Authorizer;
  health: { livez: HealthCheck[]; readyz: HealthCheck[]; healthz: HealthCheck[] };
  /** For a list or watch the authorizer does not allow: which objects the caller may still see. */
  visibleTo?: VisibleTo;
  /** host:port clients reach this server at, for /api's serverAddressByClientCIDRs. */
  serverAddress: string;
  /** --max-requests-inflight and --max-mutating-requests-inflight (0: no limit), when flowControl is not set. */
  maxInFlight?: InFlightLimits;
  /** API Priority and Fairness in place of the max-in-flight limits, and the object counts a list's seats read. */
  flowControl?: { controller: FlowControl; objectCount: ObjectCount };
  /**
   * --request-timeout (ms; 0: none), how long after it a response may take to end before it is cut (ms), and
   * --min-request-timeout (s) for watches without timeoutSeconds.
   */
  timeouts?: { requestTimeoutMs: number; responseGraceMs: number; minRequestTimeoutSeconds: number };
  /** Counts requests in flight and ends watches when the server shuts down. */
  shutdown?: GracefulShutdown;
  /** The token issuer's OpenID discovery and keys. */
  oidc?: OidcOptions;
  /** The TokenReview webhook of direct cluster endpoint tokens. */
  tokenReview?: DirectTokenReviewer;
  /** Served at /metrics, and told of every request. */
  metrics?: Metrics;
  /** --audit-log-path and --audit-webhook-config-file, by --audit-policy-file. */
  audit?: Auditing;
  /** --authorization-always-allow-paths (default: the health paths). */
  alwaysAllowPaths?: string[];
  /** Told of each authenticated request, so its connection no longer counts as unauthenticated. */
  connections?: Pick<ConnectionGuard, 'authenticated'>;
  log: Logger;
}

/**
 * The filters, in the order a request meets them, and why there (each gives back what it took when the request
 * ends, however it ends: apimachinery/requestend.ts):
 *
 * 1. request info (requestinfo.ts): the one parse of the URL, into the request's context that all the rest reads;
 * 2. observe (observability/observe.ts): before anything can refuse the request, so that 401s, 403s, 429s and 504s
 *    are counted, logged and audited too;
 * 3. shutdown (shutdown.ts): counts the request in flight (or refuses a new watch once watches have ended);
 * 4. deadline (deadline.ts): covers everything after it, authentication included (a slow TokenReview counts), and
 *    the answer: one not taken by its client a grace after the deadline is cut;
 * 5. authentication (authentication.ts): who asks;
 * 6. priority and fairness (priorityandfairness.ts), or with it off max in flight (inflight.ts): after
 *    authentication, since both look at who asks, and before the work of authorization;
 * 7. find namespace (findnamespace.ts): needs the user, and goes before authorization, which then decides on the
 *    namespace found;
 * 8. authorization (authorization.ts);
 * 9. body (body.ts): read only once the caller is known and allowed.
 *
 * With --tracing-config-file, tracing (tracing.ts) comes right after observe: the request's span, which every step
 * after it is a child of (kube's WithTracing, also before authentication). Without it the filter is not there at all.
 *
 * Then the handler: a resource (resources.ts, or an action) or anything else (nonresource.ts). Filters and handler
 * run as one express middleware (chain.ts), the error handler after them.
 *
 * Where kube has the same filter the order is kube's (WithRequestInfo, WithWaitGroup, WithRequestDeadline,
 * WithAuthentication, WithPriorityAndFairness or WithMaxInFlightLimit, WithAuthorization). Finding the namespace is this server's own; kube
 * audits from inside authentication, with a separate audit of failed authentication, where one observer does both here.
 */
export function createApp(opts: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const isPublic = publicPaths(opts.alwaysAllowPaths);
  const actions = opts.actions ?? new ServedActions();
  const serving = {
    minRequestTimeoutSeconds: opts.timeouts?.minRequestTimeoutSeconds ?? 1800,
    watchesEnd: opts.shutdown?.watchesEnd,
    authorizer: restrictedAuthorizer(opts.authorizer),
  };
  const nonResource = nonResourceHandler(opts, actions);
  app.use(
    filterChain(
      withRequestInfo(),
      observeRequests({
        log: opts.log,
        metrics: opts.metrics,
        audit: opts.audit,
        served: servedBy(opts.registry, actions),
      }),
      ...(tracingEnabled() ? [traceRequests()] : []),
      ...(opts.shutdown ? [opts.shutdown.track()] : []),
      requestDeadline({
        requestTimeoutMs: opts.timeouts?.requestTimeoutMs ?? 0,
        responseGraceMs: opts.timeouts?.responseGraceMs ?? 0,
      }),
      authenticate(opts.authenticator, isPublic, opts.connections),
      opts.flowControl
        ? priorityAndFairness(opts.flowControl.controller, {
            requestTimeoutMs: opts.timeouts?.requestTimeoutMs ?? 0,
            objectCount: opts.flowControl.objectCount,
            metrics: opts.metrics?.flowControl(opts.flowControl.controller),
            inFlight: opts.metrics?.inFlight,
            handlerGraceMs: opts.timeouts?.responseGraceMs ?? 0,
          })
        : maxInFlight(
            opts.maxInFlight ?? { readOnly: 0, mutating: 0 },
            opts.metrics?.inFlight,
            opts.timeouts?.responseGraceMs ?? 0,
          ),
      findNamespace(opts.registry, actions, opts.authorizer),
      authorize(opts.authorizer, opts.visibleTo, isPublic),
      readBody(),
      async (req: Request, res: Response) => {
        try {
          if (requestContext(req).info.isResourceRequest)
            return await inHandlerSpan(req, res, () => handleResource(req, res, opts.registry, actions, serving));
          return await nonResource(req, res);
        } finally {
          // What the request holds for its work is given back once this is done too (apimachinery/requestend.ts).
          requestHandled(res);
        }
      },
    ),
  );

  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    writeError(res, bodyError(err) ?? err, opts.log);
    requestHandled(res);
  });
  return app;
}
