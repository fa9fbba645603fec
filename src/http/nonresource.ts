/**
 * Requests for what is not a resource: health, metrics, OpenAPI, the token issuer's OpenID documents, version,
 * discovery and the API Priority and Fairness dumps, only GET and HEAD; and the TokenReview webhook of direct
 * cluster endpoint tokens (tokenreview.ts), a POST. An unknown path is 404.
 */
import type { Request, Response } from 'express';
import { requestContext } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { isDNS1123Label } from '../apimachinery/validation.js';
import type { ServedActions } from '../actions/served.js';
import type { FlowControl } from '../flowcontrol/controller.js';
import type { Metrics } from '../observability/metrics.js';
import type { Registry } from '../registry/registry.js';
import { AggregatedDiscovery } from './aggregateddiscovery.js';
import { apiGroupDocument, apiGroupList, apiResourceList, apiVersions } from './discovery.js';
import { DEBUG_PREFIX, flowControlDump } from './flowcontroldebug.js';
import { healthHandler, type HealthCheck } from './health.js';
import { negotiateAggregatedDiscovery, negotiateResponse } from './negotiation.js';
import { OIDC_PATHS, oidcHandler, type OidcOptions } from './oidc.js';
import { OpenAPIService, isOpenAPIPath } from './openapi.js';
import { writeObject } from './responses.js';
import { reviewTarget, type DirectTokenReviewer } from '../auth/directtokenreview.js';
import { tokenReviewHandler } from './tokenreview.js';
import { versionInfo } from './version.js';

export interface NonResourceOptions {
  registry: Registry;
  health: { livez: HealthCheck[]; readyz: HealthCheck[]; healthz: HealthCheck[] };
  /** Read at each request (a getter may give it once the port is bound). */
  serverAddress: string;
  oidc?: OidcOptions;
  metrics?: Metrics;
  /** API Priority and Fairness, when on: its debug dumps. */
  flowControl?: { controller: FlowControl };
  /** Answers the TokenReview webhook of direct cluster endpoint tokens (not served when unset). */
  tokenReview?: DirectTokenReviewer;
}

export function nonResourceHandler(
  opts: NonResourceOptions,
  actions: ServedActions,
): (req: Request, res: Response) => Promise<void> {
  const health = {
    '/healthz': healthHandler('healthz', opts.health.healthz),
    '/livez': healthHandler('livez', opts.health.livez),
    '/readyz': healthHandler('readyz', opts.health.readyz),
  } as Record<string, (req: Request, res: Response) => Promise<void>>;
  // The OpenAPI documents depend only on the definitions and actions: built once, here.
  const openapi = new OpenAPIService(opts.registry.definitions, actions.all);
  const aggregated = new AggregatedDiscovery(opts.registry, actions);
  const oidc = opts.oidc && oidcHandler(opts.oidc);
  const tokenReview = opts.tokenReview && tokenReviewHandler(opts.tokenReview);

  return async (req, res) => {
    const path = trimmed(requestContext(req).info.path);
    const review = tokenReview && reviewTarget(path);
    if (review) return tokenReview(req, res, review.cluster);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw errors.methodNotSupported({ group: '', resource: '' }, req.method);
    }
    if (health[path]) return health[path](req, res);
    if (path === '/metrics' && opts.metrics)
      return void res.type(opts.metrics.contentType).send(await opts.metrics.text());
    if (isOpenAPIPath(path)) return openapi.serve(req, res, path);
    if (opts.flowControl && path.startsWith(DEBUG_PREFIX)) {
      const dump = flowControlDump(opts.flowControl.controller, path);
      if (dump !== undefined) return void res.type('text/plain; charset=utf-8').send(dump);
    }
    if (oidc && OIDC_PATHS.includes(path)) return oidc(req, res, path);
    if (path === '/api' || path === '/apis') {
      const target = negotiateAggregatedDiscovery(req.headers.accept);
      if (target) return aggregated.serve(req, res, path, target);
    }
    const doc = nonResourceDocument(path, opts, actions);
    if (!doc) throw errors.notFoundPath();
    writeObject(res, 200, doc, negotiateResponse(req.headers.accept));
  };
}

function trimmed(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

function nonResourceDocument(path: string, opts: NonResourceOptions, actions: ServedActions): object | undefined {
  if (path === '/api') return apiVersions(opts.serverAddress);
  if (path === '/apis') return apiGroupList(opts.registry);
  if (path === '/version') return versionInfo;
  const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
  if (namespace) return namespaceDocument(decodeURIComponent(namespace[1]));
  const [, apis, group, version] = path.split('/');
  if (apis !== 'apis') return undefined;
  if (version === undefined) return apiGroupDocument(opts.registry, group);
  return apiResourceList(opts.registry, actions, group, version);
}

/**
 * This server keeps no namespaces of its own: objects may live in any valid namespace, so as far as it knows
 * every such namespace exists. kubectl asks /api/v1/namespaces/<ns> after a NotFound (to say "namespace not
 * found" instead); answering it keeps the object's own NotFound in front of people. Behind kube-apiserver, the
 * real namespaces answer this.
 */
function namespaceDocument(name: string): object | undefined {
  if (isDNS1123Label(name).length) return undefined;
  return {
    kind: 'Namespace',
    apiVersion: 'v1',
    metadata: { name },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}
