/**
 * Resource requests: find the resource's store (or its action), refuse what kube's installer has no route for
 * (405 or 404), decode the request, call the store, and encode its answer in the negotiated shape. The object rules
 * live in the store and the kinds' strategies, not here; what the caller may also do is asked of the authorizers
 * handed in at start.
 */
import type { Request, Response } from 'express';
import type { Authorizer } from '../apimachinery/authorizer.js';
import { checkNesting } from '../apimachinery/nesting.js';
import { applyJsonPatch, applyMergePatch } from '../apimachinery/patch.js';
import { requestContext, requestUser, type RequestContext, type RequestInfo } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import type { ServedActions } from '../actions/served.js';
import { auditedJsonPatch, auditedObject } from '../observability/auditbodies.js';
import { requireTypeMeta } from '../registry/decoding.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { Registry } from '../registry/registry.js';
import type { DeleteOptions, Store } from '../registry/store.js';
import type { FieldPath } from '../registry/hiddenfields.js';
import type { AuthorizeOther } from '../registry/strategy.js';
import { handleAction } from './actions.js';
import { parseObjectBody, rawBody } from './body.js';
import { parseListQuery, parseWatchQuery } from './listoptions.js';
import {
  APPLY_PATCH_TYPE,
  JSON_PATCH_TYPE,
  MERGE_PATCH_TYPE,
  contentType,
  negotiate,
  requestEncoding,
  type Encoding,
} from './negotiation.js';
import { duplicateFields } from '../apimachinery/strictjson.js';
import {
  applyOptions,
  deleteOptions,
  rejectForceOnNonApplyPatch,
  writeOptions,
  type ParsedWriteOptions,
} from './options.js';
import { wholeList } from './listanswer.js';
import { withWarnings, writeList, writeObject } from './responses.js';
import { bulkJob } from '../storage/bulkturns.js';
import { forbidden } from './forbidden.js';
import { shaper, type Shaper } from './shapes.js';
import { serveWatch } from './watch.js';
import { watchTimeoutSeconds } from './deadline.js';

const PATCH_TYPES = [JSON_PATCH_TYPE, MERGE_PATCH_TYPE, APPLY_PATCH_TYPE];

export interface ServingOptions {
  /** How long a watch without timeoutSeconds lasts at least (--min-request-timeout). */
  minRequestTimeoutSeconds: number;
  /** Ends every watch (at shutdown). */
  watchesEnd?: AbortSignal;
  /** What else the caller may do (the credential's restriction included): built once, at start. */
  authorizer: Authorizer;
}

export async function handleResource(
  req: Request,
  res: Response,
  registry: Registry,
  actions: ServedActions,
  serving: ServingOptions,
): Promise<void> {
  const { info, query, visible } = requestContext(req);
  const user = requestUser(req);
  const authorizeOther: AuthorizeOther = (attrs) => serving.authorizer.authorize({ ...attrs, user });
  const action = actions.find(info.apiGroup, info.apiVersion, info.resource, info.subresource);
  if (action) return handleAction(req, res, action, authorizeOther, registry.admissionChain);
  const { store, def } = servedStore(registry, info);

  const namespace = def.namespaced && info.namespace ? info.namespace : undefined;
  const answer = info.verb === 'list' ? 'list' : info.verb === 'watch' ? 'watch' : 'object';
  const target = negotiate(req.headers.accept, answer);
  const shape = shaper(target, def, store.strategy, query);
  const hidden = store.strategy.hiddenFields ?? [];
  const bodies: StoreRequest['bodies'] = (requestContext(req).auditBodies = {});
  const r: StoreRequest = {
    req,
    res,
    store,
    info,
    query,
    namespace,
    subresource: info.subresource ? 'status' : undefined,
    shape,
    encoding: target.encoding,
    bodies,
    hidden,
    reply: (to, code, body) => {
      bodies.response = () => auditedObject(body, hidden);
      writeObject(to, code, body, target.encoding);
    },
    caller: { user, authorize: authorizeOther, auditAnnotations: (requestContext(req).auditAnnotations ??= {}) },
    notSupported: () => errors.methodNotSupported(def.groupResource, info.verb || req.method),
  };

  switch (info.verb) {
    case 'get':
      return getObject(r);
    case 'list':
      return listObjects(r, visible);
    case 'watch':
      return watchObjects(r, visible, serving);
    case 'create':
      return createObject(r);
    case 'update':
      return replaceObject(r);
    case 'patch':
      return patchObject(r);
    case 'deletecollection':
      return deleteObjects(r);
    case 'delete': {
      if (r.subresource) throw r.notSupported();
      return deleteObject(req, res, store, namespace, info.name, query, r.caller, (obj, status) =>
        r.reply(res, status, shape.object(obj)),
      );
    }
    default:
      throw r.notSupported();
  }
}

/** The store of the resource asked for; 404 for what kube's installer has no route for. */
function servedStore(registry: Registry, info: RequestInfo): { store: Store; def: ResourceDefinition } {
  const store = registry.lookup(info.apiGroup, info.apiVersion, info.resource);
  const def = store?.def;
  if (!store || !def || info.extraParts.length) throw errors.notFoundPath();
  if (info.subresource && !(info.subresource === 'status' && def.hasStatus)) throw errors.notFoundPath();
  // Named objects of a namespaced kind live only under a namespace; cluster-scoped kinds never do.
  if (def.namespaced ? !info.namespace && info.name !== '' : info.namespace !== '') throw errors.notFoundPath();
  return { store, def };
}

/** A request on a kind's store, as each verb's step below takes it. */
interface StoreRequest {
  req: Request;
  res: Response;
  store: Store;
  info: RequestInfo;
  query: URLSearchParams;
  /** Its namespace; none for a cluster-scoped kind or across namespaces. */
  namespace: string | undefined;
  subresource: 'status' | undefined;
  /** The answer's shape, as negotiated. */
  shape: Shaper;
  encoding: Encoding;
  /** For an audit at level Request or more: what was sent and answered, as a reader sees it (auditbodies.ts). */
  bodies: NonNullable<RequestContext['auditBodies']>;
  hidden: readonly FieldPath[];
  /** Writes an object answer (and what the audit records of it). */
  reply(res: Response, code: number, body: unknown): void;
  /** What every write carries about its caller. */
  caller: { user: UserInfo; authorize: AuthorizeOther; auditAnnotations: Record<string, string> };
  /** The 405 of a verb the route has not. */
  notSupported(): errors.StatusError;
}

async function getObject({ req, res, store, info, query, namespace, shape, reply }: StoreRequest): Promise<void> {
  const resourceVersion = query.get('resourceVersion') || undefined;
  // The object authorization read for this request (consistently, after it came) is the answer to a consistent get.
  const read = resourceVersion === undefined ? requestContext(req).authorizedObject : undefined;
  const same = read?.metadata.name === info.name && (read.metadata.namespace ?? '') === (namespace ?? '');
  const obj = read && same ? read : await store.get(namespace, info.name, resourceVersion);
  return reply(res, 200, shape.object(obj));
}

async function listObjects(r: StoreRequest, visible: RequestContext['visible']): Promise<void> {
  // One bulk job from filtering to the last byte sent: the list keeps its place among the others.
  const bulk = bulkJob();
  const list = r.shape.list(await r.store.list(r.namespace, { ...parseListQuery(r.query, visible), bulk }));
  r.bodies.response = () => auditedObject(wholeList(list), r.hidden);
  return writeList(r.res, 200, list, r.encoding, bulk);
}

function watchObjects(r: StoreRequest, visible: RequestContext['visible'], serving: ServingOptions): Promise<void> {
  const parsed = parseWatchQuery(r.query, r.info.name || undefined, visible);
  const opts = {
    ...parsed,
    timeoutSeconds: parsed.timeoutSeconds ?? watchTimeoutSeconds(serving.minRequestTimeoutSeconds),
  };
  return serveWatch(
    r.req,
    r.res,
    r.store.def,
    opts,
    r.shape.watch(),
    (sink) => r.store.watch(r.namespace, opts, sink),
    serving.watchesEnd,
  );
}

async function createObject(r: StoreRequest): Promise<void> {
  const { req, res, store, info, query, namespace, shape } = r;
  if (info.name || (store.def.namespaced && !namespace)) throw r.notSupported();
  const opts = { ...writeOptions('CreateOptions', query, req.headers['user-agent']), ...r.caller };
  const obj = readObject(req, store.def, opts);
  r.bodies.request = () => auditedObject(obj, r.hidden);
  const created = await store.create(namespace, obj, opts);
  return r.reply(withWarnings(res, opts.warnings), 201, shape.object(created));
}

/** PUT: the object replaced by the one sent. */
async function replaceObject(r: StoreRequest): Promise<void> {
  const { req, res, store, info, query, namespace, shape } = r;
  // No PUT or PATCH route on a collection (kube's installer registers none): 405, not a lookup of ''.
  if (!info.name) throw r.notSupported();
  const opts = { ...writeOptions('UpdateOptions', query, req.headers['user-agent']), ...r.caller };
  const obj = readObject(req, store.def, opts);
  r.bodies.request = () => auditedObject(obj, r.hidden);
  const updated = await store.update(namespace, info.name, { replace: obj }, r.subresource, opts);
  return r.reply(withWarnings(res, opts.warnings), 200, shape.object(updated));
}

/** A server-side apply, or a JSON or merge patch. */
async function patchObject(r: StoreRequest): Promise<void> {
  const { req, res, store, info, query, namespace, subresource, shape, hidden } = r;
  if (!info.name) throw r.notSupported();
  if (contentType(req.headers['content-type']) === APPLY_PATCH_TYPE) {
    const opts = {
      ...applyOptions(query),
      ...r.caller,
      authorizeCreate: createAuthorizer(info, r.caller.user, r.caller.authorize),
    };
    const config = parseObjectBody(rawBody(req), 'yaml', store.def.kind) as KubeObject;
    r.bodies.request = () => auditedObject(config, hidden);
    const { object, created } = await store.apply(namespace, info.name, config, subresource, opts);
    return r.reply(withWarnings(res, opts.warnings), created ? 201 : 200, shape.object(object));
  }
  rejectForceOnNonApplyPatch(query);
  const opts = { ...writeOptions('PatchOptions', query, req.headers['user-agent']), ...r.caller };
  const patch = readPatch(req, opts, (doc, type) => {
    r.bodies.request = () => (type === JSON_PATCH_TYPE ? auditedJsonPatch(doc, hidden) : auditedObject(doc, hidden));
  });
  const patched = await store.update(namespace, info.name, { patch }, subresource, opts);
  return r.reply(withWarnings(res, opts.warnings), 200, shape.object(patched));
}

/** DELETE on a collection. */
async function deleteObjects(r: StoreRequest): Promise<void> {
  if (r.store.def.namespaced && !r.namespace) throw r.notSupported();
  const opts = { ...deleteOptionsOf(r.req, r.query), ...r.caller, warnings: [] as string[] };
  const deleted = await r.store.deleteCollection(r.namespace, parseListQuery(r.query), opts);
  return r.reply(withWarnings(r.res, opts.warnings), 200, wholeList(r.shape.list(deleted)));
}

/**
 * An apply that creates is authorized as a create of that object too (kube's create-on-update check in its patch
 * handler): `patch` alone must not make new objects.
 */
function createAuthorizer(info: RequestInfo, user: UserInfo, authorizeOther: AuthorizeOther): () => Promise<void> {
  return async () => {
    const attrs = { ...info, verb: 'create', subresource: '' };
    const decision = await authorizeOther(attrs);
    if (decision.decision !== 'allow') throw forbidden({ ...attrs, user }, decision.reason);
  };
}

function deleteOptionsOf(req: Request, query: URLSearchParams) {
  const body = rawBody(req);
  return deleteOptions(
    body.length ? parseObjectBody(body, requestEncoding(req.headers['content-type']), 'DeleteOptions') : undefined,
    query,
  );
}

/** The object in the body, which names its apiVersion and kind; duplicate JSON keys are noted for fieldValidation. */
function readObject(
  req: Request,
  def: ResourceDefinition,
  opts: ParsedWriteOptions & { duplicateFields?: string[] },
): KubeObject {
  const encoding = requestEncoding(req.headers['content-type']);
  const body = rawBody(req);
  const obj = parseObjectBody(body, encoding, def.kind) as KubeObject;
  requireTypeMeta(obj, def);
  // For the audit log: the object's name completes what the URL says (a create names it only here).
  if (isPlainObject(obj.metadata)) requestContext(req).requestObject = obj.metadata;
  if (encoding === 'json') opts.duplicateFields = duplicateFields(body.toString('utf8'));
  return obj;
}

/** The patch document, as a function of the current object (re-applied if a concurrent write wins). */
function readPatch(
  req: Request,
  opts: ParsedWriteOptions & { duplicateFields?: string[] },
  read: (doc: unknown, type: string) => void,
): (current: KubeObject) => KubeObject {
  const type = contentType(req.headers['content-type']);
  if (type !== JSON_PATCH_TYPE && type !== MERGE_PATCH_TYPE) throw errors.unsupportedMediaType(PATCH_TYPES);
  let doc: unknown;
  try {
    doc = JSON.parse(rawBody(req).toString('utf8'));
    checkNesting(doc);
  } catch (err) {
    throw errors.badRequest(`error decoding patch: ${(err as Error).message}`);
  }
  read(doc, type);
  if (type === JSON_PATCH_TYPE) return (current) => applyJsonPatch(current, doc) as KubeObject;
  opts.duplicateFields = duplicateFields(rawBody(req).toString('utf8'));
  return (current) => applyMergePatch(current, doc) as KubeObject;
}

async function deleteObject(
  req: Request,
  res: Response,
  store: Store,
  namespace: string | undefined,
  name: string,
  query: URLSearchParams,
  caller: Pick<DeleteOptions, 'user'>,
  writeRemaining: (obj: KubeObject, status: number) => void,
): Promise<void> {
  const opts = { ...deleteOptionsOf(req, query), warnings: [] as string[] };
  const result = await store.delete(namespace, name, { ...opts, ...caller });
  withWarnings(res, opts.warnings);
  // An object kept by its finalizers is answered as it now is; a removed one with a Success Status. kube says
  // 202 Accepted instead of 200 only to the deprecated orphanDependents=false (to keep older clients working).
  if (!result.deleted) return writeRemaining(result.object, opts.orphanDependents === false ? 202 : 200);
  const { group, plural } = store.def;
  const status = errors.successStatus({ name, group, kind: plural, uid: result.object.metadata.uid });
  requestContext(req).auditBodies!.response = () => status;
  writeObject(res, 200, status);
}
