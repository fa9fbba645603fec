/**
 * The audit log (--audit-log-path): one JSON line per audit.k8s.io/v1 Event, at level Metadata as kube-apiserver
 * writes them: who (user, source IPs, user agent) did what (verb, requestURI, objectRef) and the answer
 * (responseStatus), with the authorization decision in annotations. Request and response bodies are never written.
 *
 * Stages, as kube writes them under a policy that omits RequestReceived: ResponseComplete for every request, and
 * before it ResponseStarted for a watch once it is established. A request that fails authentication gets one
 * ResponseStarted event with an empty user, as kube's failed-authentication audit writes it.
 *
 * responseStatus carries code, status, reason and details as the Status sent; its message (and the causes'
 * messages) only when the server built it from the request's metadata: an Invalid or BadRequest message may quote
 * the body (a field's value, which may be secret data), and an internal error's may say anything.
 */
import type { RequestInfo, RequestObjectMeta } from '../apimachinery/request.js';
import type { Status } from '../apimachinery/status.js';
import type { UserInfo } from '../apimachinery/user.js';
import { RotatingFile, type RotatingFileOptions } from './rotatingfile.js';

export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: 'Metadata';
  auditID: string;
  stage: 'ResponseStarted' | 'ResponseComplete';
  requestURI: string;
  verb: string;
  user: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    uid?: string;
    apiGroup?: string;
    apiVersion?: string;
    resourceVersion?: string;
    subresource?: string;
  };
  responseStatus: {
    metadata: Record<string, never>;
    status?: string;
    message?: string;
    reason?: string;
    details?: Status['details'];
    code: number;
  };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** What the audit knows of a request when an event is written. */
export interface AuditedRequest {
  auditID: string;
  requestURI: string;
  info: RequestInfo;
  /** Absent when authentication failed. */
  user?: UserInfo;
  sourceIPs: string[];
  userAgent?: string;
  received: Date;
  code: number;
  /** The Status answered, when one was (failures). */
  status?: Status;
  /** Set by authorization when it ran. */
  authorization?: { decision: 'allow' | 'forbid'; reason?: string };
  /** Left by admission plugins (webhooks, policies). */
  auditAnnotations?: Record<string, string>;
  /** The metadata of the object a create or update sent, which completes objectRef (kube's LogRequestObject). */
  requestObject?: RequestObjectMeta;
}

/** Reasons whose messages the server writes from the request's metadata alone (paths, names, users, limits). */
const SAFE_MESSAGE_REASONS = new Set([
  'Unauthorized',
  'Forbidden',
  'NotFound',
  'AlreadyExists',
  'Conflict',
  'Gone',
  'Expired',
  'MethodNotAllowed',
  'NotAcceptable',
  'UnsupportedMediaType',
  'RequestEntityTooLarge',
  'TooManyRequests',
  'Timeout',
  'ServerTimeout',
  'ServiceUnavailable',
]);

export function auditEvent(r: AuditedRequest, stage: AuditEvent['stage'], at: Date): AuditEvent {
  const event: AuditEvent = {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'Metadata',
    auditID: r.auditID,
    stage,
    requestURI: r.requestURI,
    verb: r.info.verb,
    user: r.user ? userOf(r.user) : {},
    sourceIPs: r.sourceIPs,
    ...(r.userAgent ? { userAgent: r.userAgent } : {}),
    ...(r.info.isResourceRequest ? { objectRef: objectRefOf(r.info, r.requestObject) } : {}),
    responseStatus: responseStatusOf(r),
    requestReceivedTimestamp: microTime(r.received),
    stageTimestamp: microTime(at),
  };
  if (r.authorization || (r.auditAnnotations && Object.keys(r.auditAnnotations).length)) {
    event.annotations = {
      ...r.auditAnnotations,
      ...(r.authorization && {
        'authorization.k8s.io/decision': r.authorization.decision,
        'authorization.k8s.io/reason': r.authorization.reason ?? '',
      }),
    };
  }
  return event;
}

function userOf(u: UserInfo): AuditEvent['user'] {
  return {
    username: u.name,
    ...(u.uid ? { uid: u.uid } : {}),
    groups: u.groups,
    ...(u.extra && Object.keys(u.extra).length ? { extra: u.extra } : {}),
  };
}

/** What the URL names, completed by the sent object's metadata where the URL is silent (a create's name). */
function objectRefOf(info: RequestInfo, sent: RequestObjectMeta = {}): AuditEvent['objectRef'] {
  const text = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  const ref: NonNullable<AuditEvent['objectRef']> = { resource: info.resource };
  const namespace = info.namespace || text(sent.namespace);
  if (namespace) ref.namespace = namespace;
  const name = info.name || text(sent.name);
  if (name) ref.name = name;
  if (text(sent.uid)) ref.uid = text(sent.uid);
  if (info.apiGroup) ref.apiGroup = info.apiGroup;
  ref.apiVersion = info.apiVersion;
  if (text(sent.resourceVersion)) ref.resourceVersion = text(sent.resourceVersion);
  if (info.subresource) ref.subresource = info.subresource;
  return ref;
}

function responseStatusOf(r: AuditedRequest): AuditEvent['responseStatus'] {
  const out: AuditEvent['responseStatus'] = { metadata: {}, code: r.code };
  const s = r.status;
  if (!s || s.status !== 'Failure') {
    // kube's message for a failed authentication: which credentials were tried, never their values.
    if (r.code === 401 && !r.user) out.message = s?.message ?? 'Authentication failed';
    return out;
  }
  const safe = s.reason !== undefined && SAFE_MESSAGE_REASONS.has(s.reason);
  out.status = s.status;
  if (safe && s.message) out.message = s.message;
  if (s.reason) out.reason = s.reason;
  if (s.details) {
    const { causes, ...rest } = s.details;
    out.details = {
      ...rest,
      ...(causes
        ? {
            causes: causes.map((c) =>
              safe ? c : { ...(c.reason ? { reason: c.reason } : {}), ...(c.field ? { field: c.field } : {}) },
            ),
          }
        : {}),
    };
  }
  return out;
}

/** metav1.MicroTime: RFC 3339 with microseconds, UTC. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/Z$/, '000Z');
}

export interface AuditLogOptions {
  /** A file, or '-' for stdout. */
  path: string;
  maxSizeBytes: number;
  maxBackups: number;
  maxAgeDays: number;
  onError?: RotatingFileOptions['onError'];
}

/** Where audit events go: a rotated file, or stdout. */
export class AuditLog {
  private readonly file?: RotatingFile;
  private closed = false;

  constructor(opts: AuditLogOptions) {
    if (opts.path !== '-') {
      this.file = new RotatingFile({
        path: opts.path,
        maxSizeBytes: opts.maxSizeBytes,
        maxBackups: opts.maxBackups,
        maxAgeDays: opts.maxAgeDays,
        onError: opts.onError,
      });
    }
  }

  /** After close(), events (of connections cut by the shutdown) are dropped. */
  write(event: AuditEvent): void {
    if (this.closed) return;
    const line = `${JSON.stringify(event)}\n`;
    if (this.file) this.file.write(line);
    else process.stdout.write(line);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.file?.close();
  }
}
