/** Writing answers: objects in the negotiated encoding, and every error as a metav1.Status in one place. */
import type { Response } from 'express';
import yaml from 'js-yaml';
import { findRequestContext } from '../apimachinery/request.js';
import { internalError, StatusError, type Status } from '../apimachinery/status.js';
import { goQuote } from '../apimachinery/golang/strconv.js';
import type { Logger } from '../log.js';
import { listJson, toJson } from './json.js';
import { JSON_TYPE, YAML_TYPE, type Encoding } from './negotiation.js';

/** An answer already sent (a 504 once the deadline passed) is never followed by another. */
export function writeObject(res: Response, code: number, obj: unknown, encoding: Encoding = 'json'): void {
  if (res.headersSent) return;
  if (encoding === 'yaml') {
    res
      .status(code)
      .type(YAML_TYPE)
      .send(yaml.dump(obj, { noRefs: true, lineWidth: -1 }));
    return;
  }
  const items = (obj as { items?: unknown }).items;
  res
    .status(code)
    .type(JSON_TYPE)
    .send(`${Array.isArray(items) ? listJson(obj as { items: unknown[] }) : toJson(obj)}\n`);
}

/** Warnings go back as `Warning: 299 - "<text>"` headers, one per distinct warning (a retried write repeats them). */
export function withWarnings(res: Response, warnings: string[]): Response {
  for (const w of new Set(warnings)) res.append('Warning', `299 - ${goQuote(w)}`);
  return res;
}

/** Errors are always JSON (as kube-apiserver sends them); a Retry-After goes with retryAfterSeconds. */
export function writeStatus(res: Response, status: Status): void {
  if (res.headersSent) return;
  // For the request log and the audit event (a URL refused before the request had a context has none of those).
  const context = findRequestContext(res.req);
  if (context) context.status = status;
  const retry = status.details?.retryAfterSeconds;
  if (retry && retry > 0) res.setHeader('Retry-After', String(retry));
  res
    .status(status.code)
    .type(JSON_TYPE)
    .send(`${JSON.stringify(status)}\n`);
}

export function writeError(res: Response, err: unknown, log: Logger): void {
  if (err instanceof StatusError) {
    writeStatus(res, err.status);
    return;
  }
  log.error('internal error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  writeStatus(res, internalError(err).status);
}
