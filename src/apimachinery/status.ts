/**
 * metav1.Status errors. Every failure of a request is thrown as a StatusError and written in one place
 * (http/responses.ts). Constructors mirror apimachinery's pkg/api/errors so reasons, codes and messages match.
 */
import { aggregateMessage, errorBody, type FieldError } from './field.js';
import { groupKindString, groupResourceString, type GroupKind, type GroupResource } from './types.js';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string; resourceVersion?: string };
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

export class StatusError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
    this.name = 'StatusError';
  }

  get code(): number {
    return this.status.code;
  }

  get reason(): string | undefined {
    return this.status.reason;
  }
}

function failure(code: number, reason: string, message: string, details?: StatusDetails): StatusError {
  const status: Status = details
    ? { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code }
    : { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  return new StatusError(status);
}

function resourceDetails(gr: GroupResource, name?: string): StatusDetails {
  const details: StatusDetails = {};
  if (name) details.name = name;
  if (gr.group) details.group = gr.group;
  details.kind = gr.resource;
  return details;
}

export function successStatus(details: StatusDetails): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details, code: 200 };
}

export function notFound(gr: GroupResource, name: string): StatusError {
  return failure(
    404,
    'NotFound',
    `${groupResourceString(gr)} ${JSON.stringify(name)} not found`,
    resourceDetails(gr, name),
  );
}

/** The generic 404 for paths and resources the server does not serve. */
export function notFoundPath(): StatusError {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

export function alreadyExists(gr: GroupResource, name: string): StatusError {
  return failure(
    409,
    'AlreadyExists',
    `${groupResourceString(gr)} ${JSON.stringify(name)} already exists`,
    resourceDetails(gr, name),
  );
}

export function generateNameConflict(gr: GroupResource, name: string, retryAfterSeconds: number): StatusError {
  const message = `${groupResourceString(gr)} ${JSON.stringify(name)} already exists, the server was not able to generate a unique name for the object`;
  return failure(409, 'AlreadyExists', message, { ...resourceDetails(gr, name), retryAfterSeconds });
}

export function conflict(gr: GroupResource, name: string, why: string): StatusError {
  return failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${groupResourceString(gr)} ${JSON.stringify(name)}: ${why}`,
    resourceDetails(gr, name),
  );
}

export const OBJECT_MODIFIED =
  'the object has been modified; please apply your changes to the latest version and try again';

export function invalid(gk: GroupKind, name: string, errs: readonly FieldError[]): StatusError {
  const details: StatusDetails = {};
  if (name) details.name = name;
  if (gk.group) details.group = gk.group;
  details.kind = gk.kind;
  details.causes = errs.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field }));
  return failure(
    422,
    'Invalid',
    `${groupKindString(gk)} ${JSON.stringify(name)} is invalid: ${aggregateMessage(errs)}`,
    details,
  );
}

export function badRequest(message: string): StatusError {
  return failure(400, 'BadRequest', message);
}

export function unauthorized(message = 'Unauthorized'): StatusError {
  return failure(401, 'Unauthorized', message);
}

/** `gr` empty means a non-resource path: the message is then "forbidden: ...". */
export function forbidden(gr: GroupResource | undefined, name: string, why: string): StatusError {
  if (!gr || !gr.resource) return failure(403, 'Forbidden', `forbidden: ${why}`, {});
  const subject = name ? `${groupResourceString(gr)} ${JSON.stringify(name)}` : groupResourceString(gr);
  return failure(403, 'Forbidden', `${subject} is forbidden: ${why}`, resourceDetails(gr, name));
}

export function methodNotSupported(gr: GroupResource, verb: string): StatusError {
  return failure(
    405,
    'MethodNotAllowed',
    `${verb} is not supported on resources of kind ${JSON.stringify(groupResourceString(gr))}`,
    resourceDetails(gr),
  );
}

export function notAcceptable(accepted: readonly string[]): StatusError {
  return failure(406, 'NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`);
}

export function unsupportedMediaType(accepted: readonly string[]): StatusError {
  return failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

/** 415 for a compressed request body: bodies are taken as sent, uncompressed (as kube-apiserver does). */
export function unsupportedContentEncoding(encoding: string): StatusError {
  return failure(
    415,
    'UnsupportedMediaType',
    `Content-Encoding ${JSON.stringify(encoding)} is not supported: send the request body uncompressed`,
  );
}

export function requestEntityTooLarge(limit: string): StatusError {
  return failure(413, 'RequestEntityTooLarge', `Request entity too large: ${limit}`);
}

export function internalError(err: unknown): StatusError {
  const text = err instanceof Error ? err.message : String(err);
  return failure(500, 'InternalError', `Internal error occurred: ${text}`, { causes: [{ message: text }] });
}

export function serverTimeout(gr: GroupResource, operation: string, retryAfterSeconds = 2): StatusError {
  const message = `The ${operation} operation against ${groupResourceString(gr)} could not be completed at this time, please try again.`;
  return failure(500, 'ServerTimeout', message, {
    group: gr.group || undefined,
    kind: gr.resource,
    name: operation,
    retryAfterSeconds,
  });
}

/**
 * 429 TooManyRequests (errors.NewTooManyRequests), by default as kube-apiserver's max-in-flight filter answers it
 * (clients retry on Retry-After).
 */
export function tooManyRequests(
  message = 'Too many requests, please try again later.',
  retryAfterSeconds = 1,
): StatusError {
  return failure(429, 'TooManyRequests', message, { retryAfterSeconds });
}

/** 429 for a request a shutting-down server will not start (kube's --shutdown-send-retry-after): try another replica. */
export function shuttingDown(): StatusError {
  return failure(429, 'TooManyRequests', 'The apiserver is shutting down, please try again later.', {
    retryAfterSeconds: 1,
  });
}

/** 504 Timeout: the request could not be completed in time (kube's StatusReasonTimeout). */
export function timeout(message: string, retryAfterSeconds = 1): StatusError {
  return failure(504, 'Timeout', message, retryAfterSeconds ? { retryAfterSeconds } : {});
}

/** 410 Expired: a resourceVersion or continue token older than what is kept. */
export function expired(message: string): StatusError {
  return failure(410, 'Expired', message);
}

export function expiredContinue(): StatusError {
  return expired(
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  );
}

/** 504 for a resourceVersion the server has not reached; clients list again with no resourceVersion. */
export function resourceVersionTooLarge(requested: number, current: number): StatusError {
  return failure(504, 'Timeout', `Timeout: Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
}

export function serviceUnavailable(message: string): StatusError {
  return failure(503, 'ServiceUnavailable', message);
}

/**
 * errors.NewGenericServerResponse(422, ...): the message kube sends when a patch cannot be applied. kube's cause has
 * no field, so kubectl prints "The request is invalid: : ..."; naming the field `patch` makes it "...: patch: ...".
 */
export function patchRejected(why: string): StatusError {
  return failure(422, 'Invalid', 'the server rejected our request due to an error in our request', {
    causes: [{ reason: 'UnexpectedServerResponse', message: why, field: 'patch' }],
  });
}

export function isStatusError(err: unknown, reason?: string): err is StatusError {
  return err instanceof StatusError && (reason === undefined || err.reason === reason);
}
