/**
 * Whether one access key restriction stays within another, by what scope.ts lets each do: a holder outside
 * system:masters may change a key's scope, rules and allowPlatformCli only to something that allows no more.
 *
 * The comparison is conservative. Each grant of the new restriction must be covered by one grant of the same kind
 * in the old one: a project, space, virtual cluster or cluster by an old entry naming it (or '*'), the command line
 * client's reads by the old key having them with no fewer limits, a rule by one old rule that matches every request
 * it matches. A change that allows no more only through several old grants together is refused (a master may
 * still make it).
 */
import { nonResourceURLMatches } from './scope.js';
import {
  hasRestriction,
  readRestriction,
  type AccessKeyRule,
  type CliGrant,
  type KeyRestrictionSpec,
  type NamedInProject,
} from './scopespec.js';

/** The spec field through which a restriction allows more than another. */
export type WideningField = 'scope' | 'rules' | 'allowPlatformCli' | 'scope.rules' | 'scope.allowPlatformCli';

type Entry = Record<string, unknown>;

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function isEntry(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A name list where '*' is everything: every new name is listed in the old list. */
function namesCovered(next: string[], old: string[]): boolean {
  return old.includes('*') || next.every((n) => old.includes(n));
}

/** A limit (undefined: none) that allows nothing the old limit does not. */
function limitCovered(next: string[] | undefined, old: string[] | undefined): boolean {
  return old === undefined || (next !== undefined && namesCovered(next, old));
}

function namedInProjectCovered(next: NamedInProject[], old: NamedInProject[]): boolean {
  return next.every((n) =>
    old.some((o) => (o.project === '*' || o.project === n.project) && (o.name === '*' || o.name === n.name)),
  );
}

/** A grant of the CLI's reads covered by one old grant with no fewer limits. */
function cliCovered(next: CliGrant, old: CliGrant[]): boolean {
  return old.some(
    (o) => limitCovered(next.projects, o.projects) && limitCovered(next.virtualClusters, o.virtualClusters),
  );
}

/** Where `spec` asks for the CLI's reads, for the message of a change that adds them. */
function cliField(spec: KeyRestrictionSpec): WideningField {
  if (spec.allowPlatformCli === true) return 'allowPlatformCli';
  return spec.scope?.allowPlatformCli === true ? 'scope.allowPlatformCli' : 'scope';
}

/** The field of `next` whose scope (roles, projects, spaces, virtual clusters, clusters, CLI reads) reaches beyond `old`'s. */
function scopeWidening(next: KeyRestrictionSpec, old: KeyRestrictionSpec): WideningField | undefined {
  const n = readRestriction(next);
  const o = readRestriction(old);
  if (!n.cli.every((grant) => cliCovered(grant, o.cli))) return cliField(next);
  // The CLI's reads are limited by the clusters and projects listed: they may not lose those limits.
  const limitsProjects = (r: typeof n) => r.projects.length > 0 || r.spaces.length > 0 || r.virtualClusters.length > 0;
  if (n.cli.length && ((o.clusters.length > 0 && n.clusters.length === 0) || (limitsProjects(o) && !limitsProjects(n))))
    return 'scope';
  const covered =
    n.otherRoles.every((r) => o.otherRoles.includes(r)) &&
    namesCovered(n.projects, o.projects) &&
    namesCovered(n.clusters, o.clusters) &&
    namedInProjectCovered(n.spaces, o.spaces) &&
    namedInProjectCovered(n.virtualClusters, o.virtualClusters);
  return covered ? undefined : 'scope';
}

/**
 * A list where empty (or, with a wildcard, one containing it) means everything: the new list allows nothing the old
 * does not.
 */
function listCovered(next: unknown[], old: unknown[], wildcard?: string): boolean {
  if (old.length === 0 || (wildcard !== undefined && old.includes(wildcard))) return true;
  return next.length > 0 && next.every((v) => old.includes(v));
}

function isPrefixPattern(url: string): boolean {
  return url.endsWith('/*') && !url.slice(0, -1).includes('*');
}

/** Every path the URL pattern `next` matches, `old` matches too. */
function urlCovered(next: string, old: string): boolean {
  if (old === '*') return true;
  if (next === '*') return false;
  if (isPrefixPattern(next)) return isPrefixPattern(old) && next.slice(0, -1).startsWith(old.slice(0, -1));
  return nonResourceURLMatches(old, next);
}

/** Every resource (or subresource) the pattern `next` matches, `old` matches too. */
function resourcePatternCovered(next: string, old: string): boolean {
  if (old === '*' || old === next) return true;
  const [resource, subresource, ...rest] = next.split('/');
  if (subresource === undefined || rest.length || resource === '*' || subresource === '*') return false;
  return old === `${resource}/*` || old === `*/${subresource}`;
}

function groupResourcesCovered(next: unknown, old: unknown): boolean {
  // An entry that is not an object matches nothing (scope.ts): it allows nothing, and covers nothing.
  if (!isEntry(next)) return true;
  if (!isEntry(old)) return false;
  if (str(old.group) !== '*' && str(old.group) !== str(next.group)) return false;
  const oldResources = arr(old.resources);
  if (!(oldResources.length === 0 || oldResources.includes('*'))) {
    const nextResources = arr(next.resources);
    if (
      nextResources.length === 0 ||
      !nextResources.every((p) => oldResources.some((q) => resourcePatternCovered(str(p), str(q))))
    )
      return false;
  }
  return listCovered(arr(next.resourceNames), arr(old.resourceNames));
}

/** What a rule reaches of one kind of request: everything, nothing, or the requests its entries match. */
type Reach = 'all' | 'none' | unknown[];

/** Resource requests: a rule with only nonResourceURLs reaches none; one with neither resources nor URLs, all. */
function resourceReach(rule: AccessKeyRule): Reach {
  const resources = arr(rule.resources);
  if (resources.length) return resources;
  return arr(rule.nonResourceURLs).length ? 'none' : 'all';
}

/** Non-resource paths: a rule with only resources reaches none; one with neither, all. */
function urlReach(rule: AccessKeyRule): Reach {
  const urls = arr(rule.nonResourceURLs);
  if (urls.length) return urls;
  return arr(rule.resources).length ? 'none' : 'all';
}

function reachCovered(next: Reach, old: Reach, covered: (n: unknown, o: unknown) => boolean): boolean {
  if (next === 'none' || old === 'all') return true;
  if (next === 'all' || old === 'none') return false;
  return next.every((n) => old.some((o) => covered(n, o)));
}

/** Every request the rule `next` matches, `old` matches too. */
function ruleCovered(next: AccessKeyRule, old: AccessKeyRule): boolean {
  // A rule for a connected cluster matches only that cluster's requests; one without a cluster, every request.
  if (str(old.cluster) !== '' && str(old.cluster) !== str(next.cluster)) return false;
  return (
    listCovered(arr(next.verbs), arr(old.verbs), '*') &&
    listCovered(arr(next.requestTargets), arr(old.requestTargets)) &&
    listCovered(arr(next.namespaces), arr(old.namespaces), '*') &&
    virtualClustersCovered(arr(next.virtualClusters), arr(old.virtualClusters)) &&
    reachCovered(resourceReach(next), resourceReach(old), groupResourcesCovered) &&
    reachCovered(urlReach(next), urlReach(old), (n, o) => urlCovered(str(n), str(o)))
  );
}

/** virtualClusters (empty: no limit) are compared as whole entries. */
function virtualClustersCovered(next: unknown[], old: unknown[]): boolean {
  if (old.length === 0) return true;
  return next.length > 0 && next.every((n) => old.some((o) => JSON.stringify(o) === JSON.stringify(n)));
}

/** The field that made `spec` restricted (for a change that removes every restriction). */
function restrictingField(spec: KeyRestrictionSpec): WideningField {
  if (hasRestriction({ scope: spec.scope })) return 'scope';
  return arr(spec.rules).length ? 'rules' : 'allowPlatformCli';
}

/**
 * The field through which `next` (a key's new scope, rules and allowPlatformCli) may allow a request `old` does
 * not; undefined when every request `next` allows, `old` allows too.
 */
export function restrictionWidening(
  next: KeyRestrictionSpec | undefined,
  old: KeyRestrictionSpec | undefined,
): WideningField | undefined {
  if (!hasRestriction(old)) return undefined;
  if (!hasRestriction(next)) return restrictingField(old!);
  const scope = scopeWidening(next!, old!);
  if (scope) return scope;
  const oldRules = readRestriction(old).rules;
  const uncovered = (rules: unknown) =>
    !arr(rules)
      .filter(isEntry)
      .every((n) => oldRules.some((o) => ruleCovered(n as AccessKeyRule, o)));
  if (uncovered(next!.rules)) return 'rules';
  return uncovered(next!.scope?.rules) ? 'scope.rules' : undefined;
}
