/**
 * Serving the OpenAPI documents: the v3 root with hashes, ETag / If-None-Match, Accept, and who may read them.
 * The documents themselves are tested in openapi-documents.test.ts.
 */
import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { buildOpenAPIV3 } from '../../src/apimachinery/openapi/documents.js';
import { newRequestContext } from '../../src/apimachinery/request.js';
import { discoveryAuthorizer } from '../../src/auth/authorizer.js';
import type { Attributes } from '../../src/apimachinery/authorizer.js';
import { AUTHENTICATED_GROUP } from '../../src/apimachinery/user.js';
import { OpenAPIService, etagMatches, isOpenAPIPath, negotiateDocument } from '../../src/http/openapi.js';
import { resolveRequestInfo } from '../../src/http/requestinfo.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { statusOf } from '../support/errors.js';

const GROUP = 'management.platform.sh';
const defs = loadDefinitions();
const service = new OpenAPIService(defs);

describe('paths', () => {
  test('the openapi paths', () => {
    for (const p of [
      '/openapi/v2',
      '/openapi/v3',
      '/openapi/v3/apis/management.platform.sh/v1',
      '/openapi/v3/anything',
    ])
      expect(isOpenAPIPath(p)).toBe(true);
    for (const p of ['/openapi', '/openapi/v1', '/openapi/v2/x', '/openapi/v3x', '/apis'])
      expect(isOpenAPIPath(p)).toBe(false);
  });
});

describe('v3 root', () => {
  test('lists the group-version with the hash of its document, as handler3 does', () => {
    const root = JSON.parse(service.v3Root.body.toString());
    const doc = service.v3.get(`apis/${GROUP}/v1`)!;
    const hash = createHash('sha512').update(doc.body).digest('hex').toUpperCase();
    expect(root).toEqual({
      paths: { [`apis/${GROUP}/v1`]: { serverRelativeURL: `/openapi/v3/apis/${GROUP}/v1?hash=${hash}` } },
    });
    expect(doc.hash).toBe(hash);
    expect(doc.etag).toBe(`"${hash}"`);
    // The document served is the one built from the definitions.
    expect(JSON.parse(doc.body.toString())).toEqual(buildOpenAPIV3(defs, GROUP, 'v1'));
  });
});

describe('serving', () => {
  function call(path: string, headers: Record<string, string> = {}, url = path) {
    const out = { status: 0, headers: {} as Record<string, string>, body: undefined as Buffer | undefined };
    const res = {
      status(code: number) {
        out.status = code;
        return res;
      },
      setHeader(name: string, value: string) {
        out.headers[name.toLowerCase()] = value;
      },
      end(body?: Buffer) {
        out.body = body;
      },
    };
    const req = {
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
      originalUrl: url,
    } as unknown as Request;
    // What the first filter gives every request: its parsed URL.
    const parsed = new URL(url, 'https://x');
    newRequestContext(req, resolveRequestInfo('GET', parsed.pathname, parsed.searchParams), parsed.searchParams);
    service.serve(req, res as unknown as Response, path);
    return out;
  }

  test('JSON with an ETag, and 304 when If-None-Match matches', () => {
    for (const [path, doc] of [
      ['/openapi/v2', service.v2],
      ['/openapi/v3', service.v3Root],
      [`/openapi/v3/apis/${GROUP}/v1`, service.v3.get(`apis/${GROUP}/v1`)!],
    ] as const) {
      const first = call(path);
      expect(first.status).toBe(200);
      expect(first.headers['content-type']).toBe('application/json');
      expect(first.headers.etag).toBe(doc.etag);
      expect(first.body).toEqual(doc.body);
      const again = call(path, { 'If-None-Match': doc.etag });
      expect(again.status).toBe(304);
      expect(again.body).toBeUndefined();
      expect(call(path, { 'If-None-Match': '"stale"' }).status).toBe(200);
    }
  });

  test('the hash query is accepted; only the current hash makes the answer cacheable for good', () => {
    const doc = service.v3.get(`apis/${GROUP}/v1`)!;
    const path = `/openapi/v3/apis/${GROUP}/v1`;
    const current = call(path, {}, `${path}?hash=${doc.hash}`);
    expect(current.status).toBe(200);
    expect(current.headers['cache-control']).toBe('public, immutable');
    const stale = call(path, {}, `${path}?hash=0123`);
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual(doc.body);
    expect(stale.headers['cache-control']).toBeUndefined();
  });

  test('Accept: JSON or protobuf as asked, with the JSON ETag and Vary: Accept; 406 for neither; 404 for unknown group-versions', () => {
    const V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';
    const V3_PROTOBUF = 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf';
    const v3doc = service.v3.get(`apis/${GROUP}/v1`)!;
    for (const [path, doc, answered, asked] of [
      // client-go's OpenAPISchema asks for v2 with the `@` form alone; kube answers with the `.` form.
      ['/openapi/v2', service.v2, V2_PROTOBUF, 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'],
      ['/openapi/v2', service.v2, V2_PROTOBUF, V2_PROTOBUF],
      [
        `/openapi/v3/apis/${GROUP}/v1`,
        v3doc,
        V3_PROTOBUF,
        'application/com.github.proto-openapi.spec.v3@v1.0+protobuf',
      ],
      [`/openapi/v3/apis/${GROUP}/v1`, v3doc, V3_PROTOBUF, V3_PROTOBUF],
    ] as const) {
      const proto = call(path, { Accept: asked });
      expect(proto.status).toBe(200);
      expect(proto.headers['content-type']).toBe(answered);
      expect(proto.headers.vary).toBe('Accept');
      expect(proto.body).toEqual(doc.protobuf!.body());
      expect(proto.body!.subarray(0, 40)).not.toEqual(doc.body.subarray(0, 40));
      // One ETag for both forms, as kube-openapi gives (the answer varies by Accept).
      expect(proto.headers.etag).toBe(doc.etag);
      expect(call(path, { Accept: asked, 'If-None-Match': doc.etag }).status).toBe(304);
      // Preferences are read as goautoneg orders them: quality first, then a named type before a wildcard.
      expect(call(path, { Accept: `application/json;q=0.5, ${asked}` }).headers['content-type']).toBe(answered);
      expect(call(path, { Accept: `*/*, ${asked}` }).headers['content-type']).toBe(answered);
      expect(call(path, { Accept: `${asked};q=0.5, application/json` }).headers['content-type']).toBe(
        'application/json',
      );
      for (const accept of ['application/json', '*/*', 'application/*', `application/json, ${asked}`]) {
        const json = call(path, { Accept: accept });
        expect(json.headers['content-type']).toBe('application/json');
        expect(json.body).toEqual(doc.body);
      }
      const refused = statusOf(() => call(path, { Accept: 'text/html' }));
      expect(refused.status).toMatchObject({ code: 406, reason: 'NotAcceptable' });
      expect(refused.status.message).toContain(`application/json, ${answered}`);
    }
    // The other version's protobuf is not this document's.
    expect(
      statusOf(() => call('/openapi/v2', { Accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf' }))
        .status,
    ).toMatchObject({ code: 406, reason: 'NotAcceptable' });
    // The root answers JSON whatever is asked, as handler3 does.
    const root = call('/openapi/v3', { Accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf' });
    expect(root.status).toBe(200);
    expect(root.headers['content-type']).toBe('application/json');
    for (const p of [
      '/openapi/v3/apis/other.example.com/v1',
      '/openapi/v3/apis/management.platform.sh/v2',
      '/openapi/v3/api/v1',
    ]) {
      expect(statusOf(() => call(p)).status).toMatchObject({ code: 404, reason: 'NotFound' });
    }
  });

  test('etagMatches: exact, weak, lists and *', () => {
    expect(etagMatches(undefined, '"A"')).toBe(false);
    expect(etagMatches('', '"A"')).toBe(false);
    expect(etagMatches('"A"', '"A"')).toBe(true);
    expect(etagMatches('W/"A"', '"A"')).toBe(true);
    expect(etagMatches('"B", "A"', '"A"')).toBe(true);
    expect(etagMatches('*', '"A"')).toBe(true);
    expect(etagMatches('"B"', '"A"')).toBe(false);
    expect(etagMatches('A', '"A"')).toBe(false);
  });

  test('negotiateDocument', () => {
    expect(negotiateDocument(undefined, 'v2')).toBe('json');
    expect(negotiateDocument('', 'v2')).toBe('json');
    expect(negotiateDocument('application/json', 'v2')).toBe('json');
    expect(negotiateDocument('application/*', 'v3')).toBe('json');
    expect(negotiateDocument('application/json;q=0', 'v2')).toBeUndefined();
    expect(negotiateDocument('application/com.github.proto-openapi.spec.v2@v1.0+protobuf', 'v2')).toBe('protobuf');
    expect(negotiateDocument('application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'v2')).toBe('protobuf');
    expect(negotiateDocument('application/com.github.proto-openapi.spec.v2@v1.0+protobuf', 'v3')).toBeUndefined();
    expect(negotiateDocument('application/com.github.proto-openapi.spec.v3@v1.0+protobuf', 'v3')).toBe('protobuf');
    expect(negotiateDocument('application/vnd.kubernetes.protobuf', 'v2')).toBeUndefined();
  });
});

describe('authorization', () => {
  const attrs = (path: string, groups: string[], verb = 'get'): Attributes => ({
    user: { name: 'alice', groups },
    verb,
    isResourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  });

  test('every authenticated user may GET the OpenAPI documents (system:discovery)', async () => {
    for (const path of ['/openapi/v2', '/openapi/v3', `/openapi/v3/apis/${GROUP}/v1`]) {
      expect(await discoveryAuthorizer.authorize(attrs(path, ['dev', AUTHENTICATED_GROUP]))).toEqual({
        decision: 'allow',
      });
      expect((await discoveryAuthorizer.authorize(attrs(path, ['system:unauthenticated']))).decision).toBe('noOpinion');
      expect((await discoveryAuthorizer.authorize(attrs(path, [AUTHENTICATED_GROUP], 'post'))).decision).toBe(
        'noOpinion',
      );
    }
    expect((await discoveryAuthorizer.authorize(attrs('/openapi/v1', [AUTHENTICATED_GROUP]))).decision).toBe(
      'noOpinion',
    );
  });
});
