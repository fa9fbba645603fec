/**
 * Audit events (audit.k8s.io/v1 Event) as kube-apiserver writes them: who (user, source IPs, user agent) did what
 * (verb, requestURI, objectRef) and the answer (responseStatus), with the authorization decision in annotations; at
 * level Request the object sent (requestObject), at RequestResponse the answer too (responseObject), as a reader
 * sees them (auditbodies.ts: never a hidden field, nor an action's answer). The policy (auditpolicy.ts) says which
 * level and stages a request gets; the events go to the log file (here) and the webhook (auditwebhook.ts).
 *
 * The log holds at most AUDIT_LOG_BUFFER_BYTES (64 MiB) of lines its file or stdout has not taken yet (a disk or a
 * reader of stdout that stalls); a line past it is dropped, counted in kube's apiserver_audit_error_total{plugin="log"}
 * (where kube's log backend counts the lines it fails to write: it writes each in the request, which then waits for
 * the disk) and logged in counted lines (auditdrops.ts). A worker's lines are written by the primary, which bounds
 * its stdout alike, logs what it drops and tells the worker, which counts them. At shutdown the log waits for its
 * file or stdout to take what it holds.
 *
 * Stages: RequestReceived once the user is known, ResponseStarted for a watch once it is established,
 * ResponseComplete for every request, each unless the policy omits it. A request that fails authentication gets one
 * ResponseStarted event with an empty user, as kube's failed-authentication audit writes it.
 *
 * responseStatus carries code, status, reason and details as the Status sent; its message (and the causes'
 * messages) only when the server built it from the request's metadata: an Invalid or BadRequest message may quote
 * the body (a field's value, which may be secret data), and an internal error's may say anything. A failure's
 * responseObject is that same Status.
 */
import type { RequestInfo, RequestObjectMeta } from '../apimachinery/request.js';
import type { Status } from '../apimachinery/status.js';
import type { UserInfo } from '../apimachinery/user.js';
import type { Logger } from '../log.js';
import { withoutManagedFields } from './auditbodies.js';
import type { DropLog } from './auditdrops.js';
import { AUDIT_LOG_BUFFER_BYTES, auditLogDrops, stdoutWritten, writeStdoutLine } from './auditlogbuffer.js';
import type { Level, RequestAuditConfig, Stage } from './auditpolicy.js';
import { RotatingFile, type RotatingFileOptions } from './rotatingfile.js';

export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: Exclude<Level, 'None'>;
  auditID: string;
  stage: Stage;
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
  responseStatus?: {
    metadata: Record<string, never>;
    status?: string;
    message?: string;
    reason?: string;
    details?: Status['details'];
    code: number;
  };
  requestObject?: unknown;
  responseObject?: unknown;
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
  /** The bodies, as a reader sees them, for levels Request and RequestResponse. */
  bodies?: { request?: () => unknown; response?: () => unknown };
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

/** The event of one stage at the request's level (never None: such requests have no events). */
export function auditEvent(
  r: AuditedRequest,
  stage: Stage,
  at: Date,
  config: RequestAuditConfig = { level: 'Metadata', omitStages: [], omitManagedFields: false },
): AuditEvent {
  const level = config.level === 'None' ? 'Metadata' : config.level;
  const event: AuditEvent = {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level,
    auditID: r.auditID,
    stage,
    requestURI: r.requestURI,
    verb: r.info.verb,
    user: r.user ? userOf(r.user) : {},
    sourceIPs: r.sourceIPs,
    ...(r.userAgent ? { userAgent: r.userAgent } : {}),
    ...(r.info.isResourceRequest ? { objectRef: objectRefOf(r.info, r.requestObject) } : {}),
    // kube has no answer yet when the request is received.
    ...(stage === 'RequestReceived' ? {} : { responseStatus: responseStatusOf(r) }),
    requestReceivedTimestamp: microTime(r.received),
    stageTimestamp: microTime(at),
  };
  if (level !== 'Metadata') {
    const body = (b: unknown) => (config.omitManagedFields ? withoutManagedFields(b) : b);
    const sent = r.bodies?.request?.();
    if (sent !== undefined) event.requestObject = body(sent);
    if (level === 'RequestResponse' && stage === 'ResponseComplete') {
      const answered = r.status?.status === 'Failure' ? failureStatusOf(r) : r.bodies?.response?.();
      if (answered !== undefined) event.responseObject = body(answered);
    }
  }
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

/** A failure as its responseObject: the Status as responseStatus tells it (messages that may quote a body left out). */
function failureStatusOf(r: AuditedRequest): unknown {
  const { metadata: _m, ...status } = responseStatusOf(r);
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, ...status };
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

function responseStatusOf(r: AuditedRequest): NonNullable<AuditEvent['responseStatus']> {
  const out: NonNullable<AuditEvent['responseStatus']> = { metadata: {}, code: r.code };
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

/**
 * A worker's stdout: its lines go to the primary, which writes them whole (two processes writing lines longer than a
 * pipe's atomic write, 4 KiB, to one stdout can interleave them), or drops them when its stdout holds too much.
 */
export interface ForwardedStdout {
  write(line: string): void;
  /** Resolves once the lines written before are with the primary (the worker's exit would lose those it holds). */
  written(): Promise<void>;
  /** `dropped` is called for each line the primary dropped. */
  onDropped(dropped: () => void): void;
}

export interface AuditLogOptions {
  /** Where lines for '-' go (default: this process's stdout). */
  stdout?: ForwardedStdout;
  /** A file, or '-' for stdout. */
  path: string;
  maxSizeBytes: number;
  maxBackups: number;
  maxAgeDays: number;
  onError?: RotatingFileOptions['onError'];
  /** Where dropped events are logged. */
  log: Logger;
  /** Counts dropped events: apiserver_audit_error_total{plugin="log"}. */
  failed: (events: number) => void;
}

/** Where audit events go: the log file, the webhook. write() never blocks nor throws: a failure is the sink's to log. */
export interface AuditSink {
  write(event: AuditEvent): void;
  close(): Promise<void>;
}

/** Every sink gets every event. */
export function allSinks(sinks: AuditSink[]): AuditSink {
  if (sinks.length === 1) return sinks[0];
  return {
    write: (event) => sinks.forEach((s) => s.write(event)),
    close: async () => void (await Promise.all(sinks.map((s) => s.close()))),
  };
}

/** Where audit events go: a rotated file, or stdout. */
export class AuditLog implements AuditSink {
  /** Writes a line; false when it is dropped (with it, the bytes not yet written would pass the bound). */
  private readonly output: (line: string) => boolean;
  /** Resolves once what was written is in the file, or with stdout (or the primary). */
  private readonly flushed: () => Promise<void>;
  private readonly drops: DropLog;
  private closed = false;

  constructor(private readonly opts: AuditLogOptions) {
    this.drops = auditLogDrops(opts.log, opts.path);
    if (opts.path !== '-') {
      const file = new RotatingFile({
        path: opts.path,
        maxSizeBytes: opts.maxSizeBytes,
        maxBackups: opts.maxBackups,
        maxAgeDays: opts.maxAgeDays,
        maxPendingBytes: AUDIT_LOG_BUFFER_BYTES,
        onError: opts.onError,
      });
      this.output = (line) => file.write(line);
      this.flushed = () => file.close();
    } else if (opts.stdout) {
      const stdout = opts.stdout;
      // The primary logs what it drops; each worker counts its own lines among them.
      stdout.onDropped(() => opts.failed(1));
      this.output = (line) => (stdout.write(line), true);
      this.flushed = () => stdout.written();
    } else {
      this.output = writeStdoutLine;
      this.flushed = stdoutWritten;
    }
  }

  /** After close(), events (of connections cut by the shutdown) are dropped. */
  write(event: AuditEvent): void {
    if (this.closed) return;
    if (!this.output(`${JSON.stringify(event)}\n`)) this.dropped();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.drops.close();
    await this.flushed();
  }

  private dropped(): void {
    this.opts.failed(1);
    this.drops.dropped();
  }
}
