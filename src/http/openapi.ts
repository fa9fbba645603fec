/**
 * Serving the OpenAPI documents (/openapi/v2, /openapi/v3, /openapi/v3/apis/<group>/<version>) as kube-openapi's
 * handlers do: each built once from the definitions and actions (apimachinery/openapi builds them), hashed, sent
 * with an ETag and answered 304 on a matching If-None-Match; in JSON or, when the client asks for it, in protobuf
 * (gnostic's openapi_v2/openapi_v3 Document, what client-go's OpenAPISchema reads) with the same ETag, as the
 * answers vary by Accept; the v3 root's `hash` query makes an answer cacheable for good.
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Json } from '../apimachinery/openapi/common.js';
import { buildOpenAPIV2, buildOpenAPIV3 } from '../apimachinery/openapi/documents.js';
import type { StoredKind } from '../apimachinery/openapi/kinds.js';
import type { ServedAction } from '../apimachinery/openapi/operations.js';
import { openAPIV2Protobuf, openAPIV3Protobuf } from '../apimachinery/openapi/protobuf.js';
import { requestContext } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { JSON_TYPE, parseMediaRanges } from './negotiation.js';

export const OPENAPI_V2_PATH = '/openapi/v2';
export const OPENAPI_V3_PATH = '/openapi/v3';

/**
 * The protobuf media types of each document version, as kube-openapi's handlers name them: clients ask for the
 * `@v1.0` form (client-go's OpenAPISchema: `spec.v2@v1.0+protobuf`), and both forms are answered with the `.v1.0` one.
 */
export const OPENAPI_PROTOBUF_TYPES = {
  v2: {
    answered: 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
    accepted: ['com.github.proto-openapi.spec.v2@v1.0+protobuf', 'com.github.proto-openapi.spec.v2.v1.0+protobuf'],
  },
  v3: {
    answered: 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf',
    accepted: ['com.github.proto-openapi.spec.v3@v1.0+protobuf', 'com.github.proto-openapi.spec.v3.v1.0+protobuf'],
  },
} as const;

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
  /** The JSON form. */
  body: Buffer;
  /** Upper-case hex SHA-512 of the JSON body, as kube-openapi computes it (the v3 root's `hash`). */
  hash: string;
  /** The ETag header value: the hash, quoted (the protobuf form has the same: answers vary by Accept). */
  etag: string;
  /** The protobuf form, encoded from the JSON body on first use as kube-openapi's cache does; none for the v3 root. */
  protobuf?: { type: string; body: () => Buffer };
}

export function servedDocument(
  doc: unknown,
  protobuf?: { type: string; encode: (doc: unknown) => Buffer },
): ServedDocument {
  const body = Buffer.from(JSON.stringify(doc));
  const hash = createHash('sha512').update(body).digest('hex').toUpperCase();
  let encoded: Buffer | undefined;
  return {
    body,
    hash,
    etag: `"${hash}"`,
    protobuf: protobuf && {
      type: protobuf.type,
      body: () => (encoded ??= protobuf.encode(JSON.parse(body.toString()))),
    },
  };
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

/**
 * The form of a document an Accept header asks for, as kube-openapi's handlers choose: the entries by quality, a
 * specific type before a wildcard (goautoneg's order), and for each the first of JSON and protobuf it matches;
 * undefined when none fits (absent means anything).
 */
export function negotiateDocument(accept: string | undefined, version: 'v2' | 'v3'): 'json' | 'protobuf' | undefined {
  if (!accept || !accept.trim()) return 'json';
  const specificity = (type: string) => (type.startsWith('*/') ? 0 : type.endsWith('/*') ? 1 : 2);
  const ranges = parseMediaRanges(accept).sort((a, b) => b.q - a.q || specificity(b.type) - specificity(a.type));
  const forms: Array<['json' | 'protobuf', string[]]> = [
    ['json', ['json']],
    ['protobuf', [...OPENAPI_PROTOBUF_TYPES[version].accepted]],
  ];
  for (const { type } of ranges) {
    const [main, sub = ''] = type.split('/');
    if (main !== 'application' && main !== '*') continue;
    const form = forms.find(([, subtypes]) => sub === '*' || subtypes.includes(sub));
    if (form) return form[0];
  }
  return undefined;
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
    const v2Protobuf = { type: OPENAPI_PROTOBUF_TYPES.v2.answered, encode: openAPIV2Protobuf };
    const v3Protobuf = { type: OPENAPI_PROTOBUF_TYPES.v3.answered, encode: openAPIV3Protobuf };
    this.v2 = servedDocument(buildOpenAPIV2(definitions, actions), v2Protobuf);
    this.v3 = new Map();
    for (const { group, version } of definitions) {
      const key = groupVersionKey(group, version);
      if (this.v3.has(key)) continue;
      this.v3.set(key, servedDocument(buildOpenAPIV3(definitions, group, version, actions), v3Protobuf));
    }
    this.v3Root = servedDocument(buildOpenAPIV3Root(new Map([...this.v3].map(([key, doc]) => [key, doc.hash]))));
  }

  /** Serves a GET or HEAD of an /openapi path (see isOpenAPIPath); errors are thrown as StatusErrors. */
  serve(req: Request, res: Response, path: string): void {
    if (path === OPENAPI_V3_PATH) {
      // handler3 answers its discovery document in JSON whatever the Accept header says.
      return this.write(req, res, this.v3Root, 'json');
    }
    if (path === OPENAPI_V2_PATH) return this.write(req, res, this.v2, this.negotiate(req, res, 'v2'));
    const doc = this.v3.get(path.slice(OPENAPI_V3_PATH.length + 1));
    if (!doc) throw errors.notFoundPath();
    const form = this.negotiate(req, res, 'v3');
    // The `hash` in the URL only busts caches; a stale one still gets the current document.
    const hash = requestContext(req).query.get('hash');
    if (hash && hash === doc.hash) {
      res.setHeader('Cache-Control', 'public, immutable');
      res.setHeader('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
    }
    this.write(req, res, doc, form);
  }

  /** The form a versioned document is answered in; the answer varies by Accept, even a 406. */
  private negotiate(req: Request, res: Response, version: 'v2' | 'v3'): 'json' | 'protobuf' {
    res.setHeader('Vary', 'Accept');
    const form = negotiateDocument(req.headers.accept, version);
    if (!form) throw errors.notAcceptable([JSON_TYPE, OPENAPI_PROTOBUF_TYPES[version].answered]);
    return form;
  }

  private write(req: Request, res: Response, doc: ServedDocument, form: 'json' | 'protobuf'): void {
    res.setHeader('ETag', doc.etag);
    if (etagMatches(req.headers['if-none-match'], doc.etag)) {
      res.status(304).end();
      return;
    }
    const [type, body] =
      form === 'protobuf' && doc.protobuf ? [doc.protobuf.type, doc.protobuf.body()] : [JSON_TYPE, doc.body];
    res.status(200);
    res.setHeader('Content-Type', type);
    res.setHeader('Content-Length', String(body.length));
    res.end(body);
  }
}
