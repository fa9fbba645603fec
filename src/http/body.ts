/** Request bodies: size-limited raw bytes, decoded as JSON or YAML into a plain object. */
import type { Request } from 'express';
import yaml from 'js-yaml';
import * as errors from '../apimachinery/status.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { Encoding } from './negotiation.js';

/** kube-apiserver's default request body limit (3 MiB). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/** The first bytes of a body, for error messages (kube's summarizeData). */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, 30).toString();
  return body.length > 30 ? `${head} ...` : head;
}

/** Parses JSON or YAML; `what` names the expected type in errors ("SharedSecret", "DeleteOptions"). */
export function parseBody(body: Buffer, encoding: Encoding, what: string): unknown {
  const text = body.toString('utf8');
  try {
    if (encoding === 'json') return JSON.parse(text);
    return yaml.load(text, { schema: yaml.CORE_SCHEMA }) ?? null;
  } catch (err) {
    const why = encoding === 'json' ? `couldn't get version/kind; json parse error: ${(err as Error).message}` : `yaml: ${(err as Error).message.split('\n')[0]}`;
    throw errors.badRequest(`the object provided is unrecognized (must be of type ${what}): ${why} (${summarize(body)})`);
  }
}

export function parseObjectBody(body: Buffer, encoding: Encoding, what: string): Record<string, unknown> {
  const value = parseBody(body, encoding, what);
  if (!isPlainObject(value)) {
    throw errors.badRequest(`the object provided is unrecognized (must be of type ${what}): the body must be a ${encoding === 'json' ? 'JSON' : 'YAML'} object (${summarize(body)})`);
  }
  return value;
}
