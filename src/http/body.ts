/** Request bodies: size-limited raw bytes, decoded as JSON or YAML into a plain object. */
import express, { type Request } from 'express';
import yaml from 'js-yaml';
import { MAX_NESTING_DEPTH, checkNesting } from '../apimachinery/nesting.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { Encoding } from './negotiation.js';

/** kube-apiserver's default request body limit (3 MiB). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * Core schema (no custom types). js-yaml 4.3's maxDepth (missing from its types) keeps its recursive parser off
 * deep documents; it counts scalars and flow keys as levels too, so it is set a little above the limit that
 * checkNesting then applies exactly, as for JSON.
 */
const YAML_OPTIONS: yaml.LoadOptions = { schema: yaml.CORE_SCHEMA, ...{ maxDepth: MAX_NESTING_DEPTH + 2 } };

/**
 * The filter that reads the body (express's body-parser), as raw bytes whatever the Content-Type, up to
 * MAX_BODY_BYTES. Bodies are taken uncompressed, as kube-apiserver takes them: a Content-Encoding is 415.
 */
export function readBody() {
  return express.raw({ type: () => true, limit: MAX_BODY_BYTES, inflate: false });
}

/** body-parser's failures in Status terms; undefined for any other error. */
export function bodyError(err: unknown): errors.StatusError | undefined {
  const failure = err as { type?: string; encoding?: string; message?: string } | undefined;
  switch (failure?.type) {
    case 'entity.too.large':
      return errors.requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`);
    case 'encoding.unsupported':
      return errors.unsupportedContentEncoding(String(failure.encoding ?? ''));
    case 'charset.unsupported':
      return errors.unsupportedMediaType(['application/json', 'application/yaml']);
    case 'request.aborted':
    case 'request.size.invalid':
      return errors.badRequest(failure.message ?? '');
    default:
      return undefined;
  }
}

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/** The first bytes of a body, for error messages (kube's summarizeData). */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, 30).toString();
  return body.length > 30 ? `${head} ...` : head;
}

/**
 * Parses JSON or YAML, refusing documents nested too deeply or (YAML) expanding too far through aliases;
 * `what` names the expected type in errors ("SharedSecret", "DeleteOptions").
 */
export function parseBody(body: Buffer, encoding: Encoding, what: string): unknown {
  const text = body.toString('utf8');
  try {
    const value = encoding === 'json' ? JSON.parse(text) : (yaml.load(text, YAML_OPTIONS) ?? null);
    checkNesting(value);
    return value;
  } catch (err) {
    // js-yaml's own depth guard is said the way checkNesting says it.
    const reason = String((err as Error).message)
      .split('\n')[0]
      .replace(/^nesting exceeded maxDepth.*/, `exceeded max depth: nested more than ${MAX_NESTING_DEPTH} levels`);
    const why = encoding === 'json' ? `couldn't get version/kind; json parse error: ${reason}` : `yaml: ${reason}`;
    throw errors.badRequest(
      `the object provided is unrecognized (must be of type ${what}): ${why} (${summarize(body)})`,
    );
  }
}

export function parseObjectBody(body: Buffer, encoding: Encoding, what: string): Record<string, unknown> {
  const value = parseBody(body, encoding, what);
  if (!isPlainObject(value)) {
    throw errors.badRequest(
      `the object provided is unrecognized (must be of type ${what}): the body must be a ${encoding === 'json' ? 'JSON' : 'YAML'} object (${summarize(body)})`,
    );
  }
  return value;
}
