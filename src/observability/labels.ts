/**
 * A request's metric labels, as kube-apiserver's endpoints/metrics names them: the verb by HTTP method (GET and LIST
 * told apart by scope, WATCH, APPLY for server-side apply), the scope (resource, namespace, cluster, or '' for
 * non-resource paths), and for non-resource requests the path in `subresource`.
 *
 * Labels never take a value the client can choose freely: an unknown resource or subresource counts as '', and a
 * non-resource path that is not one this server serves counts as "other", so scanners cannot grow the series.
 */
import type { RequestInfo } from '../apimachinery/request.js';
import type { ServedActions } from '../actions/served.js';
import type { Registry } from '../registry/registry.js';

export const COMPONENT = 'apiserver';

export interface RequestLabels {
  verb: string;
  dry_run: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
  component: string;
}

/** What this server serves, to keep labels to known values. */
export interface ServedApis {
  /** Whether group/version/resource (with its subresource, '' for none) is served. */
  serves(group: string, version: string, resource: string, subresource: string): boolean;
  /** Whether a non-resource path is one of the discovery or document paths (e.g. /apis/<group>/<version>). */
  servesPath(path: string): boolean;
}

const VERBS = new Set([
  'APPLY',
  'CONNECT',
  'CREATE',
  'DELETE',
  'DELETECOLLECTION',
  'GET',
  'LIST',
  'PATCH',
  'POST',
  'PROXY',
  'PUT',
  'UPDATE',
  'WATCH',
]);
const APPLY_PATCH = 'application/apply-patch+yaml';

/** Non-resource paths counted by name whatever the answer (health, metrics, version, discovery roots, OpenAPI roots, OIDC). */
export const FIXED_PATHS = new Set([
  '/healthz',
  '/livez',
  '/readyz',
  '/metrics',
  '/version',
  '/api',
  '/apis',
  '/openapi/v2',
  '/openapi/v3',
  '/.well-known/openid-configuration',
  '/openid/v1/jwks',
]);

/** kube's CleanScope. */
export function scopeOf(info: RequestInfo): string {
  if (info.name || info.verb === 'create') return 'resource';
  if (info.namespace) return 'namespace';
  if (info.isResourceRequest) return 'cluster';
  return '';
}

/** kube's reported verb: CanonicalVerb (GET or LIST by scope), then WATCH and APPLY; anything else is "other". */
export function reportedVerb(method: string, info: RequestInfo, contentType: string | undefined): string {
  const scope = scopeOf(info);
  let verb = method.toUpperCase();
  if (verb === 'GET' || verb === 'HEAD') verb = scope !== 'resource' && scope !== '' ? 'LIST' : 'GET';
  if (info.verb === 'watch') verb = 'WATCH';
  if (verb === 'PATCH' && (contentType ?? '').split(';')[0].trim().toLowerCase() === APPLY_PATCH) verb = 'APPLY';
  return VERBS.has(verb) ? verb : 'other';
}

/** kube's cleanDryRun: '' without dryRun, the sorted distinct values, or "invalid". */
export function dryRunLabel(query: URLSearchParams): string {
  const values = query.getAll('dryRun');
  if (!values.length) return '';
  if (values.some((v) => v !== 'All')) return 'invalid';
  return 'All';
}

function trimmed(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

export function requestLabels(
  method: string,
  info: RequestInfo,
  query: URLSearchParams,
  contentType: string | undefined,
  served: ServedApis,
): RequestLabels {
  const labels: RequestLabels = {
    verb: reportedVerb(method, info, contentType),
    dry_run: dryRunLabel(query),
    group: '',
    version: '',
    resource: '',
    subresource: '',
    scope: scopeOf(info),
    component: COMPONENT,
  };
  if (info.isResourceRequest) {
    if (served.serves(info.apiGroup, info.apiVersion, info.resource, '')) {
      labels.group = info.apiGroup;
      labels.version = info.apiVersion;
      labels.resource = info.resource;
      if (info.subresource && served.serves(info.apiGroup, info.apiVersion, info.resource, info.subresource))
        labels.subresource = info.subresource;
    }
    return labels;
  }
  const path = trimmed(info.path);
  labels.subresource = FIXED_PATHS.has(path) || served.servesPath(path) ? path : 'other';
  return labels;
}

/** What is served: the registry's resources (with status when they have it), the actions, and their discovery documents. */
export function servedBy(registry: Registry, actions: ServedActions): ServedApis {
  const documents = new Set<string>();
  for (const { name, versions } of registry.groups()) {
    documents.add(`/apis/${name}`);
    for (const v of versions) documents.add(`/apis/${name}/${v}`).add(`/openapi/v3/apis/${name}/${v}`);
  }
  return {
    serves(group, version, resource, subresource) {
      if (actions.find(group, version, resource, subresource)) return true;
      const store = registry.lookup(group, version, resource);
      return !!store && (subresource === '' || (subresource === 'status' && store.def.hasStatus));
    },
    servesPath: (path) => documents.has(path),
  };
}
