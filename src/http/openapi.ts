/**
 * Serving the OpenAPI documents (/openapi/v2, /openapi/v3, /openapi/v3/apis/<group>/<version>) as kube-openapi's
 * handlers do: each built once from the definitions and actions (apimachinery/openapi builds them), hashed, sent
 * with an ETag and answered 304 on a matching If-None-Match; JSON only (a client that accepts only protobuf gets
 * 406); the v3 root's `hash` query makes an answer cacheable for good.
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Json } from '../apimachinery/openapi/common.js';
import { buildOpenAPIV2, buildOpenAPIV3 } from '../apimachinery/openapi/documents.js';
import type { StoredKind } from '../apimachinery/openapi/kinds.js';
import type { ServedAction } from '../apimachinery/openapi/operations.js';
import { requestContext } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { JSON_TYPE, parseMediaRanges } from './negotiation.js';

export const OPENAPI_V2_PATH = '/openapi/v2';
export const OPENAPI_V3_PATH = '/openapi/v3';

/** kube-openapi's name for the v3 protobuf encoding; we serve JSON only. */
export const OPENAPI_V3_PROTOBUF_TYPE = 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf';

/** The key of a group-version in the v3 root, as kube-openapi's handler3 names it. */
export function groupVersionKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** handler3's discovery document: each group-version and the URL of its document, with the document's hash. */
export function buildOpenAPIV3Root(hashes: Map<string, string>): Json {
  const paths: Json = {};
  for (const [key, hash] of [...hashes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    paths[key] = { serverRelativeURL: `${OPENAPI_V3_PATH}/${key}?${new URLSearchParams({ hash })}` };
  }
  return { paths };
}

export interface ServedDocument {
  body: Buffer;
  /** Upper-case hex SHA-512 of the body, as kube-openapi computes it (the v3 root's `hash`). */
  hash: string;
  /** The ETag header value: the hash, quoted. */
  etag: string;
}

export function servedDocument(doc: unknown): ServedDocument {
  const body = Buffer.from(JSON.stringify(doc));
  const hash = createHash('sha512').update(body).digest('hex').toUpperCase();
  return { body, hash, etag: `"${hash}"` };
}

/** If-None-Match against an ETag (weak comparison, lists and `*`), as net/http's ServeContent decides a 304. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => {
    const c = candidate.trim();
    return c === '*' || (c !== '' && strip(c) === strip(etag));
  });
}

/** Whether an Accept header lets us answer JSON (absent means anything). */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return parseMediaRanges(accept).some((r) => r.type === JSON_TYPE || r.type === 'application/*' || r.type === '*/*');
}

export function isOpenAPIPath(path: string): boolean {
  return path === OPENAPI_V2_PATH || path === OPENAPI_V3_PATH || path.startsWith(`${OPENAPI_V3_PATH}/`);
}

/** The documents for a set of definitions, built once, and the handler that serves them. */
export class OpenAPIService {
  readonly v2: ServedDocument;
  readonly v3Root: ServedDocument;
  /** By root key, e.g. "apis/management.platform.sh/v1". */
  readonly v3: Map<string, ServedDocument>;

  constructor(definitions: StoredKind[], actions: ServedAction[] = []) {
    this.v2 = servedDocument(buildOpenAPIV2(definitions, actions));
    this.v3 = new Map();
    for (const { group, version } of definitions) {
      const key = groupVersionKey(group, version);
      if (!this.v3.has(key)) this.v3.set(key, servedDocument(buildOpenAPIV3(definitions, group, version, actions)));
    }
    this.v3Root = servedDocument(buildOpenAPIV3Root(new Map([...this.v3].map(([key, doc]) => [key, doc.hash]))));
  }

  /** Serves a GET or HEAD of an /openapi path (see isOpenAPIPath); errors are thrown as StatusErrors. */
  serve(req: Request, res: Response, path: string): void {
    if (path === OPENAPI_V3_PATH) {
      // handler3 answers its discovery document in JSON whatever the Accept header says.
      return this.write(req, res, this.v3Root, false);
    }
    if (path === OPENAPI_V2_PATH) {
      // The protobuf form (what client-go's OpenAPISchema asks for) is not served: 406, as kube-openapi does.
      if (!acceptsJson(req.headers.accept)) throw errors.notAcceptable([JSON_TYPE]);
      return this.write(req, res, this.v2, true);
    }
    const doc = this.v3.get(path.slice(OPENAPI_V3_PATH.length + 1));
    if (!doc) throw errors.notFoundPath();
    if (!acceptsJson(req.headers.accept)) throw errors.notAcceptable([JSON_TYPE]);
    // The `hash` in the URL only busts caches; a stale one still gets the current document.
    const hash = requestContext(req).query.get('hash');
    if (hash && hash === doc.hash) {
      res.setHeader('Cache-Control', 'public, immutable');
      res.setHeader('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
    }
    this.write(req, res, doc, true);
  }

  private write(req: Request, res: Response, doc: ServedDocument, varyAccept: boolean): void {
    if (varyAccept) res.setHeader('Vary', 'Accept');
    res.setHeader('ETag', doc.etag);
    if (etagMatches(req.headers['if-none-match'], doc.etag)) {
      res.status(304).end();
      return;
    }
    res.status(200);
    res.setHeader('Content-Type', JSON_TYPE);
    res.setHeader('Content-Length', String(doc.body.length));
    res.end(doc.body);
  }
}
