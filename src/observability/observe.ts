/**
 * One express middleware that sees every request from before authentication to the last byte, so that 401s, 403s,
 * 429s and 504s are counted, logged and audited like any other answer:
 *
 * - an audit ID per request: the `Audit-Id` header kube-apiserver forwards when it has one, else a new UUID; sent
 *   back as `Audit-Id` (as kube does) and written in the request log line and the audit events;
 * - apiserver_request_total and apiserver_request_duration_seconds when the request ends (however it ends), and
 *   apiserver_longrunning_requests while a watch is open (from the moment the watch handler says its 200 went out);
 * - a request log line at --v=3 and more, and for every 5xx at any level (as an error);
 * - the audit events, at the level and stages the audit policy gives the request (decided once, when the first event
 *   is due: the user is known by then, or authentication failed).
 *
 * A request log line has the audit ID (and the trace ID of a sampled request), user, verb, resource, namespace, name, code, latency and user agent, and the
 * path without its query; never headers or bodies.
 *
 * All it knows of the request it reads from the request's context, which the filters after it fill in.
 */
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { requestContext, type RequestContext } from '../apimachinery/request.js';
import { whenRequestEnds } from '../apimachinery/requestend.js';
import type { Logger } from '../log.js';
import { authenticatedByFrontProxy } from '../auth/requestheader.js';
import { auditEvent, type AuditedRequest, type AuditSink } from './audit.js';
import type { PolicyEvaluator, RequestAuditConfig, Stage } from './auditpolicy.js';
import { requestLabels, type ServedApis } from './labels.js';
import type { Metrics } from './metrics.js';
import { peerIP, sourceIPs } from './sourceips.js';

/** klog's level of kube-apiserver's per-request httplog line. */
export const REQUEST_LOG_VERBOSITY = 3;

export const AUDIT_ID_HEADER = 'Audit-Id';

/** Where audit events go, and which requests and stages get them. */
export interface Auditing {
  sink: AuditSink;
  policy: PolicyEvaluator;
}

export interface ObserveOptions {
  log: Logger;
  metrics?: Metrics;
  audit?: Auditing;
  served: ServedApis;
}

export function observeRequests(opts: ObserveOptions) {
  const { log, metrics, audit, served } = opts;
  return (req: Request, res: Response, next: NextFunction) => {
    const received = new Date();
    const start = performance.now();
    const context = requestContext(req);
    const auditID = auditIdOf(req.headers['audit-id']);
    res.setHeader(AUDIT_ID_HEADER, auditID);

    // Read now: once the connection is gone its address is too.
    const srcIP = peerIP(req.socket.remoteAddress);
    const request = (code: number): AuditedRequest => ({
      auditID,
      requestURI: req.originalUrl,
      info: context.info,
      user: context.user,
      sourceIPs: sourceIPs(req.headers, srcIP, authenticatedByFrontProxy(req)),
      userAgent: req.headers['user-agent'],
      received,
      code,
      status: context.status,
      authorization: context.authorization,
      auditAnnotations: context.auditAnnotations,
      requestObject: context.requestObject,
      bodies: context.auditBodies,
    });
    let auditConfig: RequestAuditConfig | undefined;
    const writeAudit = (stage: Stage, code: number) => {
      if (!audit) return;
      auditConfig ??= audit.policy.evaluate(context.info, context.user);
      if (auditConfig.level === 'None' || auditConfig.omitStages.includes(stage)) return;
      audit.sink.write(auditEvent(request(code), stage, new Date(), auditConfig));
    };
    context.authenticated = () => writeAudit('RequestReceived', 0);
    const labels = () => requestLabels(req.method, context.info, context.query, req.headers['content-type'], served);

    // A watch is long-running from the moment its 200 goes out (the watch handler says when): counted as open, and
    // audited as ResponseStarted.
    let watchEnded: (() => void) | undefined;
    context.streamStarted = () => {
      if (watchEnded) return;
      watchEnded = metrics?.longRunningStarted(labels()) ?? (() => {});
      writeAudit('ResponseStarted', res.statusCode);
    };
    context.watchTerminated = () => metrics?.watchTerminated(labels());

    // However the request ends: answered, its client gone, its connection cut (apimachinery/requestend.ts).
    whenRequestEnds(res, () => {
      watchEnded?.();
      const code = res.statusCode;
      const ms = performance.now() - start;
      metrics?.observeRequest(labels(), code, ms / 1000);
      // kube audits a failed authentication as one ResponseStarted event without a user.
      writeAudit(code === 401 && !context.user ? 'ResponseStarted' : 'ResponseComplete', code);
      if (code >= 500 || log.v(REQUEST_LOG_VERBOSITY)) {
        const fields = requestLogFields(req, context, auditID, code, ms, srcIP);
        if (code >= 500) log.error('HTTP', fields);
        else log.info('HTTP', fields);
      }
    });
    next();
  };
}

function requestLogFields(
  req: Request,
  context: RequestContext,
  auditID: string,
  code: number,
  ms: number,
  srcIP: string,
): Record<string, unknown> {
  const { info } = context;
  const fields: Record<string, unknown> = { auditID, verb: info.verb, path: info.path };
  // The request's own span: the line is written once the request's span has ended.
  if (context.trace) Object.assign(fields, { traceID: context.trace.traceId, spanID: context.trace.spanId });
  if (info.isResourceRequest) {
    fields.apiGroup = info.apiGroup;
    fields.resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    if (info.namespace) fields.namespace = info.namespace;
    if (info.name) fields.name = info.name;
  }
  if (context.user) fields.user = context.user.name;
  fields.code = code;
  if (context.status?.reason) fields.reason = context.status.reason;
  fields.latencyMs = Math.round(ms * 1000) / 1000;
  fields.userAgent = req.headers['user-agent'] ?? '';
  fields.srcIP = srcIP;
  // HTTP/1.1 or HTTP/2.0, as Go's r.Proto: which one a client negotiated (kube's trace fields have it too).
  fields.protocol = `HTTP/${req.httpVersion}`;
  return fields;
}

/**
 * The Audit-Id a front proxy (kube-apiserver) sent, so both audit logs share the ID; a new UUID when there is none,
 * or when it is not a short printable token.
 */
function auditIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && /^[\x21-\x7e]{1,128}$/.test(value) ? value : randomUUID();
}
