/**
 * What an access key's scope and (deprecated) rules let it do: a Restriction that narrows what the key's identity
 * may do and never widens it. Authorization still decides as for any caller; the restriction is checked on top.
 *
 * A key has a restriction when its `scope` lists anything (roles, projects, spaces, virtualClusters, clusters,
 * rules), when it has `rules`, or when `allowPlatformCli` (at `spec` or in `scope`) is true. A key with none of these
 * is not restricted. Both placements of rules and allowPlatformCli are read (scopespec.ts). A key holding a restricting
 * field this server does not understand (an unknown field, a wrong type: stored data is not trusted) may make no
 * request but discovery.
 *
 * A restricted key may make a request when at least one of these allows it (each entry is a grant, and the key
 * may do what any grant allows; nothing else):
 * - Discovery and health, for every restricted key so that clients can start: GET of /api, /apis, /apis/<g>,
 *   /apis/<g>/<v>, /version, /openapi/v2, /openapi/v3 and below, /healthz, /livez, /readyz (and below), and
 *   /api/v1/namespaces/<ns> (kubectl's namespace check after a NotFound); and a SelfSubjectReview (`kubectl auth
 *   whoami`, the client's `whoami`), which tells the key only who it is.
 * - `scope.projects` entry <p> ('*' = every project): any request on objects in namespace `p-<p>`, and on the
 *   cluster-scoped `projects` object named <p> (and its subresources). Requests into the `p-*` namespace of a
 *   project not listed get nothing from this grant.
 * - `scope.spaces` entry {project, space} ('*' for either = all): `spaceinstances` named <space> (and their
 *   subresources) in namespace `p-<project>`. An entry without a project matches nothing.
 * - `scope.virtualClusters` entry {project, virtualCluster}: the same for `virtualclusterinstances` (e.g. their
 *   kubeconfig subresource).
 * - `scope.clusters` entry <c> ('*' = every cluster): any request on the management API's `clusters` object
 *   named <c> and its subresources. Only '*' allows requests that name no cluster in the URL (create,
 *   deletecollection), since the cluster they touch is not known when authorizing.
 * - `scope.roles` entry `platformCLI` (also spelled `platform-cli`), or `allowPlatformCli: true`: the read-only
 *   requests a command line client needs, i.e. get, list and watch of management.platform.sh resources (the main
 *   resource and its status, no other subresource: those may hand out credentials, such as a kubeconfig). Where
 *   the scope limits clusters or projects, those limits still hold for these reads: a key with `scope.clusters`
 *   reads only the listed clusters, and a key with projects, spaces or virtual clusters reads nothing in the `p-*`
 *   namespace (nor the `projects` object) of a project `scope.projects` does not list. A role entry's own
 *   `projects` limit its reads to those projects (their `p-*` namespaces and `projects` objects) and its
 *   `virtualClusters` to `virtualclusterinstances` of those names. Other role names grant nothing here (they belong
 *   to components this server does not run).
 * - `rules` (and `scope.rules`) entry: kube RBAC-style matching of the request:
 *   - verbs: empty or '*' = every verb.
 *   - resources [{group, resources, resourceNames}]: empty = every resource in every group (group '' is the core
 *     group, '*' every group); resources: empty or '*' = all, 'res' the resource, 'res/sub' a subresource,
 *     'res/*' every subresource of res, '*\/sub' that subresource of every resource; resourceNames: empty = every
 *     object, else the request must name one of them.
 *   - namespaces: empty or '*' = every namespace; "" matches cluster-scoped requests.
 *   - nonResourceURLs: exact paths, or a prefix ending in '/*' ('*' alone matches every path); a '*' anywhere
 *     else is taken literally. A rule applies to resource requests, to non-resource paths, or (when it lists
 *     neither resources nor nonResourceURLs) to both.
 *   - requestTargets: empty = every request; every request to this server is a "Management" request.
 *   - cluster: a rule with a cluster applies only to requests to that connected cluster, which this server does not
 *     serve: such a rule matches no request here. A rule naming virtualClusters likewise concerns only requests to
 *     those virtual clusters and matches no request here (ignoring the limit would widen the rule).
 *
 * Lists and watches: a list or watch of a collection (no name) is allowed when a grant could cover some of its
 * objects (e.g. a list of clusters under `scope.clusters`, a list across all namespaces under `scope.projects`,
 * a list under a rule with resourceNames or namespaces); the caller then keeps only the objects for which
 * `check` with the object's name and namespace (same verb) allows. So `check` with a name answers per object.
 *
 * Part of the access model (src/access), below the registry: the access key authenticator applies it, and the
 * OwnedAccessKey strategy compares an update's restriction with the stored one through it (scopecover.ts).
 */
import { GROUP_NAME } from '../apimachinery/group.js';
import type { RequestAttributesLite, Restriction } from '../apimachinery/user.js';
import {
  hasRestriction,
  readRestriction,
  restrictionProblem,
  type AccessKeyRule,
  type CliGrant,
  type KeyRestrictionSpec,
  type NamedInProject,
  type ReadRestriction,
} from './scopespec.js';

const READ_VERBS = new Set(['get', 'list', 'watch']);
const PROJECT_NAMESPACE_PREFIX = 'p-';

const DISCOVERY_PATHS = [
  /^\/api$/,
  /^\/apis$/,
  /^\/apis\/[^/]+$/,
  /^\/apis\/[^/]+\/[^/]+$/,
  /^\/version$/,
  /^\/api\/v1\/namespaces\/[^/]+$/,
  /^\/openapi\/v2$/,
  /^\/openapi\/v3(\/.*)?$/,
  /^\/(healthz|livez|readyz)(\/.*)?$/,
];

export interface RestrictionOptions {
  /**
   * Whether a resource is namespaced (undefined when not known). Only sharpens answers for lists across all
   * namespaces; without it such a list is allowed and filtered per object.
   */
  isNamespaced?: (group: string, resource: string) => boolean | undefined;
}

const DENIED_REASON = "the access key's scope does not allow this request";

function arr<T>(v: T[] | undefined | null): T[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * The key's restriction, or undefined when it has no scope, no rules and no allowPlatformCli. A key whose restricting
 * fields hold anything this server does not understand (scopespec.ts restrictionProblem) gets a restriction that
 * allows nothing but discovery, naming the field.
 */
export function buildRestriction(
  spec: KeyRestrictionSpec | undefined,
  opts: RestrictionOptions = {},
): Restriction | undefined {
  const problem = restrictionProblem(spec);
  if (problem) return new NotUnderstood(problem);
  if (!hasRestriction(spec)) return undefined;
  return new ScopeRestriction(readRestriction(spec), opts);
}

/** A key whose restriction is not understood: it may make no request but discovery, since it cannot be narrowed. */
class NotUnderstood implements Restriction {
  private readonly reason: string;

  constructor(field: string) {
    this.reason = `the access key's ${field} is not understood by this server, so the key is allowed no request`;
  }

  check(req: RequestAttributesLite): { allowed: boolean; reason?: string } {
    return isDiscoveryRequest(req) ? { allowed: true } : { allowed: false, reason: this.reason };
  }
}

function projectOf(namespace: string): string | undefined {
  return namespace.startsWith(PROJECT_NAMESPACE_PREFIX) && namespace.length > PROJECT_NAMESPACE_PREFIX.length
    ? namespace.slice(PROJECT_NAMESPACE_PREFIX.length)
    : undefined;
}

function trimSlashes(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

/** A SelfSubjectReview (`kubectl auth whoami`): it tells the caller only who it is. */
export function isSelfReview(req: RequestAttributesLite): boolean {
  return (
    req.isResourceRequest &&
    req.verb === 'create' &&
    req.apiGroup === 'authentication.k8s.io' &&
    req.resource === 'selfsubjectreviews' &&
    !req.subresource
  );
}

export function isDiscoveryRequest(req: RequestAttributesLite): boolean {
  if (req.isResourceRequest || (req.verb !== 'get' && req.verb !== 'head')) return false;
  const path = trimSlashes(req.path);
  return DISCOVERY_PATHS.some((p) => p.test(path));
}

function isCollectionRead(req: RequestAttributesLite): boolean {
  return req.isResourceRequest && !req.name && (req.verb === 'list' || req.verb === 'watch');
}

/** A name list where '*' is everything. */
function listed(names: string[], name: string): boolean {
  return names.includes('*') || names.includes(name);
}

class ScopeRestriction implements Restriction {
  constructor(
    private readonly r: ReadRestriction,
    private readonly opts: RestrictionOptions,
  ) {}

  check(req: RequestAttributesLite): { allowed: boolean; reason?: string } {
    const allowed =
      isDiscoveryRequest(req) ||
      isSelfReview(req) ||
      this.projectGrant(req) ||
      this.namedInProjectGrant(req, 'spaceinstances', this.r.spaces) ||
      this.namedInProjectGrant(req, 'virtualclusterinstances', this.r.virtualClusters) ||
      this.clusterGrant(req) ||
      this.r.cli.some((grant) => this.cliGrant(grant, req)) ||
      this.r.rules.some((rule) => this.ruleMatches(rule, req));
    return allowed ? { allowed: true } : { allowed: false, reason: DENIED_REASON };
  }

  /** Whether a request with no namespace may concern a namespaced resource (a list across all namespaces). */
  private mayBeNamespaced(req: RequestAttributesLite): boolean {
    return this.opts.isNamespaced?.(req.apiGroup, req.resource) !== false;
  }

  /** Projects, spaces or virtual clusters limit which projects the key reaches. */
  private get limitsProjects(): boolean {
    return this.r.projects.length > 0 || this.r.spaces.length > 0 || this.r.virtualClusters.length > 0;
  }

  /** Whether the request concerns one of `projects` (a collection read across namespaces is filtered per object). */
  private inProjects(projects: string[], req: RequestAttributesLite): boolean {
    if (!req.isResourceRequest) return false;
    if (req.namespace) {
      const project = projectOf(req.namespace);
      return project !== undefined && listed(projects, project);
    }
    if (req.apiGroup === GROUP_NAME && req.resource === 'projects') {
      return req.name ? listed(projects, req.name) : isCollectionRead(req) || projects.includes('*');
    }
    // A list across all namespaces: the objects of the listed projects' namespaces are kept.
    return isCollectionRead(req) && this.mayBeNamespaced(req);
  }

  private projectGrant(req: RequestAttributesLite): boolean {
    return this.r.projects.length > 0 && this.inProjects(this.r.projects, req);
  }

  private namedInProjectGrant(req: RequestAttributesLite, resource: string, entries: NamedInProject[]): boolean {
    if (!req.isResourceRequest || !entries.length || req.resource !== resource) return false;
    if (!req.namespace) return isCollectionRead(req);
    const project = projectOf(req.namespace);
    if (project === undefined) return false;
    return entries.some((e) => {
      if (!e.project || !(e.project === '*' || e.project === project)) return false;
      if (e.name === '*') return true;
      return req.name ? e.name === req.name : isCollectionRead(req);
    });
  }

  private clusterGrant(req: RequestAttributesLite): boolean {
    const clusters = this.r.clusters;
    if (!req.isResourceRequest || !clusters.length || req.apiGroup !== GROUP_NAME || req.resource !== 'clusters')
      return false;
    if (clusters.includes('*')) return true;
    return req.name ? clusters.includes(req.name) : isCollectionRead(req);
  }

  private cliGrant(grant: CliGrant, req: RequestAttributesLite): boolean {
    if (!req.isResourceRequest || req.apiGroup !== GROUP_NAME || !READ_VERBS.has(req.verb)) return false;
    if (req.subresource && req.subresource !== 'status') return false;
    // The role's own limits: only its projects, only its virtual clusters.
    if (grant.projects && !this.inProjects(grant.projects, req)) return false;
    if (grant.virtualClusters) {
      if (req.resource !== 'virtualclusterinstances') return false;
      if (req.name ? !listed(grant.virtualClusters, req.name) : !isCollectionRead(req)) return false;
    }
    if (req.resource === 'clusters' && this.r.clusters.length) return this.clusterGrant(req);
    if (this.limitsProjects) {
      const project = projectOf(req.namespace);
      if (project !== undefined && !listed(this.r.projects, project)) return false;
      if (req.resource === 'projects' && req.name && !listed(this.r.projects, req.name)) return false;
    }
    return true;
  }

  private ruleMatches(rule: AccessKeyRule, req: RequestAttributesLite): boolean {
    // A rule for a connected cluster, or for virtual clusters, never matches a management request.
    if (str(rule.cluster) !== '' || arr(rule.virtualClusters).length) return false;
    const targets = arr(rule.requestTargets);
    if (targets.length && !targets.includes('Management')) return false;
    const verbs = arr(rule.verbs);
    if (verbs.length && !verbs.includes('*') && !verbs.includes(req.verb)) return false;
    const resources = arr(rule.resources);
    const urls = arr(rule.nonResourceURLs);
    if (!req.isResourceRequest) {
      if (!urls.length) return !resources.length;
      return urls.some((u) => nonResourceURLMatches(str(u), req.path));
    }
    if (urls.length && !resources.length) return false;
    if (!this.namespaceMatches(arr(rule.namespaces), req)) return false;
    if (!resources.length) return true;
    return resources.some((gr) => {
      if (typeof gr !== 'object' || gr === null) return false;
      const group = str(gr.group);
      if (group !== '*' && group !== req.apiGroup) return false;
      if (!resourceMatches(arr(gr.resources), req.resource, req.subresource)) return false;
      const names = arr(gr.resourceNames);
      if (!names.length) return true;
      return req.name ? names.includes(req.name) : isCollectionRead(req);
    });
  }

  private namespaceMatches(namespaces: string[], req: RequestAttributesLite): boolean {
    if (!namespaces.length || namespaces.includes('*')) return true;
    if (namespaces.includes(req.namespace)) return true;
    // A list across all namespaces: the objects of the listed namespaces are kept.
    return !req.namespace && isCollectionRead(req) && this.mayBeNamespaced(req);
  }
}

function resourceMatches(patterns: string[], resource: string, subresource: string): boolean {
  if (!patterns.length) return true;
  const full = subresource ? `${resource}/${subresource}` : resource;
  return patterns.some(
    (p) => p === '*' || p === full || (!!subresource && (p === `${resource}/*` || p === `*/${subresource}`)),
  );
}

/** kube's NonResourceURLs: exact, or a prefix ending in '/*'; '*' alone matches every path. */
export function nonResourceURLMatches(pattern: string, path: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('/*') && !pattern.slice(0, -1).includes('*')) return path.startsWith(pattern.slice(0, -1));
  return pattern === path;
}
