/**
 * The HTTP app: authenticate, authorize, read the body, then serve discovery, health, version or a resource.
 * Every failure on the way is a StatusError written by one error handler.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Attributes, Authorizer, Decision } from '../apimachinery/authorizer.js';
import * as errors from '../apimachinery/status.js';
import { AUTHENTICATED_GROUP, type UserInfo } from '../apimachinery/user.js';
import { ANONYMOUS_USER, AuthenticationError, type Authenticator } from '../auth/types.js';
import { isDNS1123Label } from '../apimachinery/validation.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { Logger } from '../log.js';
import type { AuditLog } from '../observability/audit.js';
import { servedBy } from '../observability/labels.js';
import type { Metrics } from '../observability/metrics.js';
import { observeRequests } from '../observability/observe.js';
import type { Registry } from '../registry/registry.js';
import type { AuthorizeOther } from '../registry/strategy.js';
import { MAX_BODY_BYTES } from './body.js';
import { apiGroupDocument, apiGroupList, apiResourceList, apiVersions } from './discovery.js';
import { healthHandler, type HealthCheck } from './health.js';
import { requestDeadline } from './deadline.js';
import type { GracefulShutdown } from './shutdown.js';
import type { ConnectionGuard } from './connections.js';
import { maxInFlight, type InFlightLimits } from './inflight.js';
import { negotiateResponse } from './negotiation.js';
import { OIDC_PATHS, oidcHandler, type OidcOptions } from './oidc.js';
import { OpenAPIService, isOpenAPIPath } from './openapi.js';
import { resolveRequestInfo, type RequestInfo } from './requestinfo.js';
import { forbidden } from './forbidden.js';
import { handleResource } from './resources.js';
import { writeError, writeObject } from './responses.js';
import { versionInfo } from './version.js';

export interface AppOptions {
  registry: Registry;
  authenticator: Authenticator;
  authorizer: Authorizer;
  health: { livez: HealthCheck[]; readyz: HealthCheck[]; healthz: HealthCheck[] };
  /** For a list or watch the authorizer does not allow: which objects the caller may still see. */
  visibleTo?: (attrs: Attributes) => ((obj: KubeObject) => boolean) | undefined;
  /** host:port clients reach this server at, for /api's serverAddressByClientCIDRs. */
  serverAddress: string;
  /** --max-requests-inflight and --max-mutating-requests-inflight (0: no limit). */
  maxInFlight?: InFlightLimits;
  /** --request-timeout (ms; 0: none) and --min-request-timeout (s) for watches without timeoutSeconds. */
  timeouts?: { requestTimeoutMs: number; minRequestTimeoutSeconds: number };
  /** Counts requests in flight and ends watches when the server shuts down. */
  shutdown?: GracefulShutdown;
  /** The token issuer's OpenID discovery and keys. */
  oidc?: OidcOptions;
  /** Served at /metrics, and told of every request. */
  metrics?: Metrics;
  /** --audit-log-path: every request is audited there. */
  audit?: AuditLog;
  /** --authorization-always-allow-paths (default: the health paths). */
  alwaysAllowPaths?: string[];
  /** Told of each authenticated request, so its connection no longer counts as unauthenticated. */
  connections?: Pick<ConnectionGuard, 'authenticated'>;
  log: Logger;
}

const HEALTH_PATHS = ['/healthz', '/livez', '/readyz'];

/**
 * Paths anyone may read without credentials: --authorization-always-allow-paths (a trailing * makes a prefix), and
 * what kube's system:public-info-viewer allows.
 */
function publicPaths(alwaysAllow: string[] = HEALTH_PATHS): (path: string) => boolean {
  const exact = new Set([...alwaysAllow.filter((p) => !p.endsWith('*')), '/version', ...OIDC_PATHS]);
  const prefixes = alwaysAllow.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (path) => exact.has(trimmed(path)) || prefixes.some((prefix) => path.startsWith(prefix));
}

interface Locals {
  info: RequestInfo;
  user: UserInfo;
  /** What authorization decided, for the audit log. */
  authorization?: { decision: 'allow' | 'forbid'; reason?: string };
  /** Set when a list or watch may show only some objects to this caller. */
  visible?: (obj: KubeObject) => boolean;
  /** Whether this caller may do something else too (e.g. delete an owner it sets blockOwnerDeletion on). */
  authorizeOther: AuthorizeOther;
}

function locals(res: Response): Locals {
  return res.locals as Locals;
}

function trimmed(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

export function createApp(opts: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use((req: Request, res: Response, next: NextFunction) => {
    refuseDotSegments(req.originalUrl);
    const url = new URL(req.originalUrl, 'https://x');
    locals(res).info = resolveRequestInfo(req.method, url.pathname, url.searchParams);
    next();
  });
  // Before authentication, so that 401s, 403s and 429s are counted, logged and audited too.
  app.use(observeRequests({ log: opts.log, metrics: opts.metrics, audit: opts.audit, served: servedBy(opts.registry) }));
  if (opts.shutdown) app.use(opts.shutdown.track());
  const isPublic = publicPaths(opts.alwaysAllowPaths);
  // The deadline covers everything after it, authentication included (a slow TokenReview counts).
  app.use(requestDeadline({ requestTimeoutMs: opts.timeouts?.requestTimeoutMs ?? 0 }));
  app.use(authenticate(opts.authenticator, isPublic, opts.connections));
  app.use(maxInFlight(opts.maxInFlight ?? { readOnly: 0, mutating: 0 }, opts.metrics?.inFlight));
  app.use(findNamespace(opts.registry, opts.authorizer));
  app.use(authorize(opts.authorizer, opts.visibleTo, isPublic));
  // Bodies are read only once the caller is known and allowed, and are taken uncompressed, as kube-apiserver takes
  // them (a Content-Encoding is 415).
  app.use(express.raw({ type: () => true, limit: MAX_BODY_BYTES, inflate: false }));

  const health = {
    '/healthz': healthHandler('healthz', opts.health.healthz),
    '/livez': healthHandler('livez', opts.health.livez),
    '/readyz': healthHandler('readyz', opts.health.readyz),
  } as Record<string, (req: Request, res: Response) => Promise<void>>;
  // The OpenAPI documents depend only on the definitions and actions: built once, here.
  const openapi = new OpenAPIService(opts.registry.definitions, opts.registry.actions);
  const oidc = opts.oidc && oidcHandler(opts.oidc);

  const serving = { minRequestTimeoutSeconds: opts.timeouts?.minRequestTimeoutSeconds ?? 1800, watchesEnd: opts.shutdown?.watchesEnd };
  app.use(async (req: Request, res: Response) => {
    const { info } = locals(res);
    if (info.isResourceRequest) return handleResource(req, res, info, opts.registry, serving);
    const path = trimmed(info.path);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw errors.methodNotSupported({ group: '', resource: '' }, req.method);
    }
    if (health[path]) return health[path](req, res);
    if (path === '/metrics' && opts.metrics) return void res.type(opts.metrics.contentType).send(await opts.metrics.text());
    if (isOpenAPIPath(path)) return openapi.serve(req, res, path);
    if (oidc && OIDC_PATHS.includes(path)) return oidc(req, res, path);
    const doc = nonResourceDocument(path, opts);
    if (!doc) throw errors.notFoundPath();
    writeObject(res, 200, doc, negotiateResponse(req.headers.accept));
  });

  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    writeError(res, bodyError(err) ?? err, opts.log);
  });
  return app;
}

function nonResourceDocument(path: string, opts: AppOptions): object | undefined {
  if (path === '/api') return apiVersions(opts.serverAddress);
  if (path === '/apis') return apiGroupList(opts.registry);
  if (path === '/version') return versionInfo;
  const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
  if (namespace) return namespaceDocument(decodeURIComponent(namespace[1]));
  const [, apis, group, version] = path.split('/');
  if (apis !== 'apis') return undefined;
  if (version === undefined) return apiGroupDocument(opts.registry, group);
  return apiResourceList(opts.registry, group, version);
}

/**
 * This server keeps no namespaces of its own: objects may live in any valid namespace, so as far as it knows
 * every such namespace exists. kubectl asks /api/v1/namespaces/<ns> after a NotFound (to say "namespace not
 * found" instead); answering it keeps the object's own NotFound in front of people. Behind kube-apiserver, the
 * real namespaces answer this.
 */
function namespaceDocument(name: string): object | undefined {
  if (isDNS1123Label(name).length) return undefined;
  return { kind: 'Namespace', apiVersion: 'v1', metadata: { name }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } };
}

/** body-parser's failures in Status terms. */
/**
 * `.` and `..` path segments (also %-encoded, or after a backslash, which URL parsing turns into a slash) would be
 * resolved away by URL parsing: `.../sharedsecrets/<name>/..` would become the collection, and a DELETE of it a
 * deletecollection. They are refused instead.
 */
function refuseDotSegments(originalUrl: string): void {
  const path = originalUrl.split('?')[0];
  if (path.split(/[/\\]/).some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment))) {
    throw errors.badRequest(`the path ${JSON.stringify(path)} has a "." or ".." segment; use the path without it`);
  }
}

function bodyError(err: any): errors.StatusError | undefined {
  if (err?.type === 'entity.too.large') return errors.requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`);
  if (err?.type === 'encoding.unsupported') return errors.unsupportedContentEncoding(String(err.encoding ?? ''));
  if (err?.type === 'charset.unsupported') return errors.unsupportedMediaType(['application/json', 'application/yaml']);
  if (err?.type === 'request.aborted' || err?.type === 'request.size.invalid') return errors.badRequest(err.message);
  return undefined;
}

function authenticate(authenticator: Authenticator, isPublic: (path: string) => boolean, connections?: AppOptions['connections']) {
  return async (req: Request, res: Response, next: NextFunction) => {
    let user: UserInfo | undefined;
    try {
      user = await authenticator.authenticate(req);
    } catch (err) {
      if (err instanceof AuthenticationError) throw errors.unauthorized(err.message);
      throw err;
    }
    if (user) {
      const groups = user.groups.includes(AUTHENTICATED_GROUP) ? user.groups : [...user.groups, AUTHENTICATED_GROUP];
      locals(res).user = { ...user, groups };
      connections?.authenticated(req);
    } else if (isPublic(locals(res).info.path)) {
      locals(res).user = ANONYMOUS_USER;
    } else {
      throw errors.unauthorized();
    }
    next();
  };
}

/**
 * The spec's `{api}/virtualclusterinstances/<name>/kubeconfig` names no namespace: for actions that allow it, the
 * object is looked for by name among those the caller may use. Exactly one: the request goes on as if its path
 * named that namespace. Several: 409 listing their paths. None: it goes on as it is (authorization at the
 * cluster scope answers 403, or the action 404). Objects the caller may not use are never revealed.
 */
function findNamespace(registry: Registry, authorizer: Authorizer) {
  return async (_req: Request, res: Response, next: NextFunction) => {
    const { info, user } = locals(res);
    if (!info.isResourceRequest || info.namespace || !info.name) return next();
    const action = registry.action(info.apiGroup, info.apiVersion, info.resource, info.subresource);
    const store = registry.lookup(info.apiGroup, info.apiVersion, info.resource);
    if (!action?.anyNamespace || !store) return next();
    const sameName = await store.list(undefined, { predicate: { matches: (o) => o.metadata.name === info.name, empty: false } });
    const usable: string[] = [];
    for (const obj of sameName.items) {
      const namespace = obj.metadata.namespace ?? '';
      if ((await decide(authorizer, { ...info, user, namespace })).decision === 'allow') usable.push(namespace);
    }
    if (usable.length === 1) info.namespace = usable[0];
    if (usable.length > 1) {
      const paths = usable.map((ns) => `/apis/${info.apiGroup}/${info.apiVersion}/namespaces/${ns}/${info.resource}/${info.name}/${info.subresource}`);
      throw errors.conflict(
        { group: info.apiGroup, resource: info.resource },
        info.name,
        `the name is used in ${usable.length} namespaces (${usable.join(', ')}); ask for one of ${paths.join(', ')}`,
      );
    }
    next();
  };
}

/**
 * Authorization: the authorizers' union decides; a list or watch it does not allow shows only the objects the
 * caller may see instead of failing; and a credential's own restriction (an access key's scope) narrows both.
 */
function authorize(authorizer: Authorizer, visibleTo: AppOptions['visibleTo'], isPublic: (path: string) => boolean) {
  return async (_req: Request, res: Response, next: NextFunction) => {
    const { info, user } = locals(res);
    if (!info.isResourceRequest && isPublic(info.path)) {
      locals(res).authorization = { decision: 'allow', reason: 'always allowed path' };
      return next();
    }
    const attrs: Attributes = { user, ...info };
    const restricted = user.restriction?.check(attrs);
    if (restricted && !restricted.allowed) {
      locals(res).authorization = { decision: 'forbid', reason: restricted.reason };
      throw forbidden(attrs, restricted.reason);
    }
    const decision = await authorizer.authorize(attrs);
    let visible: ((obj: KubeObject) => boolean) | undefined;
    locals(res).authorization = { decision: 'allow' };
    if (decision.decision === 'allow' && (await grantedForThisNameOnly(authorizer, attrs))) {
      visible = visibleTo?.(attrs);
      if (visible) locals(res).authorization = { decision: 'allow', reason: 'only while the object lets the user see it' };
    }
    if (decision.decision !== 'allow') {
      visible = visibleTo?.(attrs);
      locals(res).authorization = visible ? { decision: 'allow', reason: 'only the objects the user may see' } : { decision: 'forbid', reason: decision.reason };
      if (!visible) throw forbidden(attrs, decision.reason);
    }
    const restriction = user.restriction;
    if (restriction && (info.verb === 'list' || info.verb === 'watch')) {
      const seen = visible ?? (() => true);
      const meta = (obj: KubeObject) => ({ name: obj.metadata.name ?? '', namespace: obj.metadata.namespace ?? '' });
      visible = (obj) => seen(obj) && restriction.check({ ...attrs, ...meta(obj) }).allowed;
    }
    locals(res).visible = visible;
    locals(res).authorizeOther = (other) => decide(authorizer, { ...other, user });
    next();
  };
}

/**
 * A watch outlives its authorization. One of a single object that is allowed for that name only (by the object's
 * access list, or by host RBAC naming it, which the access sync generates from that list) is served filtered like
 * a collection watch, so that a grant revoked while it runs ends what it shows.
 */
async function grantedForThisNameOnly(authorizer: Authorizer, attrs: Attributes): Promise<boolean> {
  if (attrs.verb !== 'watch' || !attrs.name) return false;
  return (await authorizer.authorize({ ...attrs, name: '' })).decision !== 'allow';
}

/** What the caller may do besides the request itself: its credential's restriction first, then the authorizers. */
async function decide(authorizer: Authorizer, attrs: Attributes): Promise<Decision> {
  const limited = attrs.user.restriction?.check(attrs);
  if (limited && !limited.allowed) return { decision: 'deny', reason: limited.reason };
  return authorizer.authorize(attrs);
}
