/**
 * The request's span (kube's WithTracing filter, endpoints/filters/traces.go) and the handler's (the "Create",
 * "Get", ... spans of kube's endpoints/handlers), with kube's names and attributes. The request's `traceparent`
 * (kube-apiserver's, when it proxies to this server, or a client's) is the parent, and decides the sampling when it
 * has one; every span made while the request is served (authentication, authorization, admission, etcd, calls to
 * the host and to clusters) is a child of the request's, and calls out carry its `traceparent` on.
 *
 * Attributes are what the request log has: never a header's value but the user agent and accept, never a body.
 * Only in the chain when tracing is configured (app.ts).
 */
import type { NextFunction, Request, Response } from 'express';
import type { RequestInfo } from '../apimachinery/request.js';
import { requestContext } from '../apimachinery/request.js';
import { whenRequestEnds } from '../apimachinery/requestend.js';
import { tracer, type SpanAttributes } from '../tracing.js';

/** As kube's lazyTruncatedUserAgent. */
const MAX_USER_AGENT_LENGTH = 256;

export function traceRequests() {
  return (req: Request, res: Response, next: NextFunction) => {
    const context = requestContext(req);
    const attributes: SpanAttributes = {
      'http.request.method': req.method,
      'http.target': req.originalUrl,
      'network.protocol.version': req.httpVersion,
      'user_agent.original': truncated(req.headers['user-agent']),
      'audit-id': auditId(res),
    };
    tracer().serve(req.headers, spanName(req.method, context.info), attributes, (span, end) => {
      context.trace = tracer().current();
      whenRequestEnds(res, () => {
        span.setAttributes({ 'http.response.status_code': res.statusCode });
        if (res.statusCode >= 500) span.fail(new Error(context.status?.message ?? `HTTP ${res.statusCode}`));
        end();
      });
      next();
    });
  };
}

/** Runs the handler of a resource request in kube's handler span ("Create", "Get", "List", ...). */
export function inHandlerSpan<T>(req: Request, res: Response, handle: () => Promise<T>): Promise<T> {
  // Not even the attributes are gathered for a request that is not traced.
  if (!tracer().current()) return handle();
  const info = requestContext(req).info;
  return tracer().inSpan(HANDLER_SPANS[info.verb] ?? info.verb, handlerAttributes(req, res, info), () => handle());
}

const HANDLER_SPANS: Record<string, string> = {
  create: 'Create',
  get: 'Get',
  list: 'List',
  // kube serves a watch from its list handler.
  watch: 'List',
  update: 'Update',
  patch: 'Patch',
  delete: 'Delete',
  deletecollection: 'Delete',
};

/** kube's traceFields (endpoints/handlers/trace_util.go), and the namespace. */
function handlerAttributes(req: Request, res: Response, info: RequestInfo): SpanAttributes {
  return {
    accept: truncated(req.headers.accept),
    'audit-id': auditId(res),
    client: req.socket.remoteAddress,
    protocol: `HTTP/${req.httpVersion}`,
    resource: info.resource,
    scope: info.namespace ? 'namespace' : info.name ? 'resource' : 'cluster',
    namespace: info.namespace || undefined,
    url: info.path,
    'user-agent': truncated(req.headers['user-agent']),
    verb: info.verb.toUpperCase(),
  };
}

/** kube's getSpanNameFromRequestInfo: `POST /apis/<group>/<version>/namespaces/{:namespace}/<resource>/{:name}`. */
export function spanName(method: string, info: RequestInfo): string {
  if (!info.isResourceRequest) return method;
  let name = info.apiGroup ? `/apis/${info.apiGroup}` : '/api';
  name += `/${info.apiVersion}`;
  if (info.namespace) name += '/namespaces/{:namespace}';
  name += `/${info.resource}`;
  if (info.name) name += '/{:name}';
  if (info.subresource) name += `/${info.subresource}`;
  return `${method} ${name}`;
}

function truncated(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header.join(', ') : header;
  return value && value.length > MAX_USER_AGENT_LENGTH ? `${value.slice(0, MAX_USER_AGENT_LENGTH)}...` : value;
}

function auditId(res: Response): string | undefined {
  const id = res.getHeader('Audit-Id');
  return typeof id === 'string' ? id : undefined;
}
