/**
 * What one request carries through the server, as kube's request.Context carries RequestInfo and the user
 * (k8s.io/apiserver/pkg/endpoints/request): read once from the URL by the first filter, completed by the filters
 * after it (authentication, authorization), and read by the handlers and by the request log, metrics and audit.
 *
 * It lives here, low, so that http (which fills it) and observability (which reads it) both may import it. It is
 * kept in a WeakMap keyed by the request rather than on a property of it: only this module creates a context, once,
 * and no type claims a context (or a user) on a request that has not got one yet.
 */
import type { IncomingMessage } from 'node:http';
import type { Attributes } from './authorizer.js';
import type { Status } from './status.js';
import type { KubeObject } from './types.js';
import type { UserInfo } from './user.js';

/**
 * What a request asks for, read from its path and method (kube's RequestInfo): the attributes authorization decides
 * on (the user aside), and what routing needs besides.
 */
export interface RequestInfo extends Omit<Attributes, 'user'> {
  /** Path segments after the resource name and subresource, which no resource has. */
  extraParts: string[];
}

/** The metadata of the object a create or update sent, as sent (attacker-written: any type). */
export interface RequestObjectMeta {
  name?: unknown;
  namespace?: unknown;
  uid?: unknown;
  resourceVersion?: unknown;
}

export interface RequestContext {
  /** What the request asks for. Only the namespace may still change: found by name for some actions. */
  readonly info: RequestInfo;
  /** The URL's query parameters, parsed with its path, once. */
  readonly query: URLSearchParams;
  /** Who asks; set by authentication (anonymous on a public path). Read it through requestUser after that. */
  user?: UserInfo;
  /** What authorization decided, for the audit log. */
  authorization?: { decision: 'allow' | 'forbid'; reason?: string };
  /** What admission plugins said of the request for its audit event (webhooks' and policies' annotations). */
  auditAnnotations?: Record<string, string>;
  /**
   * Set by authorization when a list or watch may show only some objects to this caller (it reads only their name,
   * namespace and labels and what access/model.ts `grantsText` keeps of them).
   */
  visible?: (obj: KubeObject) => boolean;
  /**
   * Set by authorization when a get of an object was allowed by the object's own grant: the object as read for
   * that, consistently and after the request came, which the get answers with (a tenant's get is one read of etcd,
   * not two; a get of resourceVersion "" asks for no fresher a state).
   */
  authorizedObject?: KubeObject;
  /** The Status answered, left where every failure is written, for the request log and the audit. */
  status?: Status;
  /** Left by the resource handler once it has read the object of a create or update: it completes the audit's objectRef. */
  requestObject?: RequestObjectMeta;
  /**
   * Left by the resource handler for an audit at level Request or more: the body sent and the answer, as a reader
   * sees them (never a hidden field). Called only when the policy asks for them.
   */
  auditBodies?: { request?: () => unknown; response?: () => unknown };
  /** Set by the request observer; called by authentication once the user is known (the RequestReceived stage). */
  authenticated?: () => void;
  /**
   * Set by the request observer; called by the watch handler once the watch's 200 is sent, from which moment the
   * watch counts as long-running and is audited as ResponseStarted.
   */
  streamStarted?: () => void;
  /** Set by the request observer; called by the watch handler when it ends a watch whose client does not keep up. */
  watchTerminated?: () => void;
  /** The request's span, when tracing is on and the request is sampled: its log line names the trace. */
  trace?: { traceId: string; spanId: string };
}

const contexts = new WeakMap<IncomingMessage, RequestContext>();

/** Gives the request its context; once only, by the first filter. */
export function newRequestContext(req: IncomingMessage, info: RequestInfo, query: URLSearchParams): RequestContext {
  if (contexts.has(req)) throw new Error('the request already has a context');
  const context: RequestContext = { info, query };
  contexts.set(req, context);
  return context;
}

/** The request's context; every filter and handler after the first one may count on it. */
export function requestContext(req: IncomingMessage): RequestContext {
  const context = contexts.get(req);
  if (!context) throw new Error('the request has no context: the filter that reads the URL has not run');
  return context;
}

/** The context, if the request got one (not when its URL was refused before). */
export function findRequestContext(req: IncomingMessage): RequestContext | undefined {
  return contexts.get(req);
}

/** Who asks, once authentication has run (kube's request.UserFrom). */
export function requestUser(req: IncomingMessage): UserInfo {
  const { user } = requestContext(req);
  if (!user) throw new Error('the request has no user: authentication has not run');
  return user;
}
