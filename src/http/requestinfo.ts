/**
 * The first filter (kube's WithRequestInfo): the one place the URL is parsed. What the request asks for is read
 * from its path and method (after kube's endpoints/request/requestinfo.go) and, with the query, becomes the
 * request's context, which every later filter and handler reads. Both the aggregated form (/apis/...) and the
 * direct form (/orchestrator/management/apis/...) are understood.
 */
import type { NextFunction, Request, Response } from 'express';
import { queryBool } from '../apimachinery/queryparams.js';
import { newRequestContext, type RequestInfo } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';

export const DIRECT_PREFIX = '/orchestrator/management';

const methodVerbs: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  HEAD: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

export function withRequestInfo() {
  return (req: Request, _res: Response, next: NextFunction) => {
    refuseDotSegments(req.originalUrl);
    const url = new URL(req.originalUrl, 'https://x');
    newRequestContext(req, resolveRequestInfo(req.method, url.pathname, url.searchParams), url.searchParams);
    next();
  };
}

/**
 * `.` and `..` path segments (also %-encoded, or after a backslash, which URL parsing turns into a slash) would be
 * resolved away by URL parsing: `.../sharedsecrets/<name>/..` would become the collection, and a DELETE of it a
 * deletecollection. They are refused instead.
 */
function refuseDotSegments(originalUrl: string): void {
  const path = originalUrl.split('?')[0];
  if (path.split(/[/\\]/).some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment))) {
    throw errors.badRequest(`the path ${JSON.stringify(path)} has a "." or ".." segment; use the path without it`);
  }
}

export function stripDirectPrefix(path: string): string {
  if (path === DIRECT_PREFIX) return '/';
  return path.startsWith(`${DIRECT_PREFIX}/`) ? path.slice(DIRECT_PREFIX.length) : path;
}

export function resolveRequestInfo(method: string, rawPath: string, query: URLSearchParams): RequestInfo {
  const path = stripDirectPrefix(rawPath);
  const info: RequestInfo = {
    path,
    isResourceRequest: false,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    extraParts: [],
  };
  let parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodeSegment);
  // /apis/<group>/<version>/<resource>...: fewer parts is discovery, not a resource.
  if (parts[0] !== 'apis' || parts.length < 4) return info;
  info.apiGroup = parts[1];
  info.apiVersion = parts[2];
  parts = parts.slice(3);
  info.isResourceRequest = true;
  info.verb = methodVerbs[method] ?? '';

  if (parts[0] === 'namespaces' && parts.length > 1) {
    info.namespace = parts[1];
    if (parts.length > 2) parts = parts.slice(2);
  }
  [info.resource, info.name = '', info.subresource = '', ...info.extraParts] = parts;

  const watch = queryBool(query, 'watch') ?? false;
  if (!info.name && info.verb === 'get') info.verb = watch ? 'watch' : 'list';
  // A watch of one object (GET .../name?watch=true) is a watch of the collection narrowed to that name.
  if (info.name && !info.subresource && info.verb === 'get' && watch) info.verb = 'watch';
  if (!info.name && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
