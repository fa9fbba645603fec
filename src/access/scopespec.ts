/**
 * The fields of an access key (OwnedAccessKey, DirectClusterEndpointToken) that restrict it, read once for scope.ts
 * (what a request may do) and scopecover.ts (whether a change widens a key).
 *
 * Two placements are read, and every field given in either restricts:
 * - ours: `spec.rules` and `spec.allowPlatformCli` (both deprecated), beside `spec.scope`;
 * - upstream's: `spec.scope.rules` and `spec.scope.allowPlatformCli` (upstream's allowLoftCli, renamed as the role
 *   loft-cli is platform-cli here). The rules of both places form one list of grants; either allowPlatformCli
 *   grants the command line client's reads.
 * A role entry may name the projects and virtual clusters it applies to (`scope.roles[].projects`,
 * `.virtualClusters`): the role then grants nothing outside them.
 *
 * Stored data is attacker-written: `restrictionProblem` finds any field here that this server does not understand
 * (an unknown key, a value of the wrong type), and a key holding one is then refused everything (scope.ts), so that
 * nothing it does not understand can make a key wider than its author asked.
 */

export interface ScopeRole {
  role?: string;
  /** Projects the role applies to ('*' = all); empty or absent: no limit. */
  projects?: string[];
  /** Virtual clusters (instance names) the role applies to ('*' = all); empty or absent: no limit. */
  virtualClusters?: string[];
}

export interface AccessKeyRule {
  verbs?: string[];
  resources?: { group?: string; resources?: string[]; resourceNames?: string[] }[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  requestTargets?: string[];
  cluster?: string;
  virtualClusters?: { name?: string; namespace?: string }[];
}

/** The fields of an OwnedAccessKey (or DirectClusterEndpointToken) spec that restrict it. */
export interface KeyRestrictionSpec {
  scope?: {
    roles?: ScopeRole[];
    projects?: { project?: string }[];
    spaces?: { project?: string; space?: string }[];
    virtualClusters?: { project?: string; virtualCluster?: string }[];
    clusters?: { cluster?: string }[];
    rules?: AccessKeyRule[];
    allowPlatformCli?: boolean;
  };
  rules?: AccessKeyRule[];
  allowPlatformCli?: boolean;
}

/** Scope role names that stand for the command line client's read-only access (loft-cli's names, renamed). */
export const CLI_ROLES: readonly string[] = ['platformCLI', 'platform-cli'];

export interface NamedInProject {
  project: string;
  name: string;
}

/** One grant of the command line client's reads, limited to projects and virtual clusters when they are listed. */
export interface CliGrant {
  /** Undefined: every project. */
  projects?: string[];
  /** Undefined: every virtual cluster, and everything else the reads reach. */
  virtualClusters?: string[];
}

/** A key's restricting fields, both placements merged. */
export interface ReadRestriction {
  projects: string[];
  spaces: NamedInProject[];
  virtualClusters: NamedInProject[];
  clusters: string[];
  /** Roles that grant nothing on this server (kept: a narrower key must not gain them). */
  otherRoles: string[];
  cli: CliGrant[];
  rules: AccessKeyRule[];
}

type Entry = Record<string, unknown>;

function isEntry(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** A limit list: undefined (no limit) when empty; an entry that is no name ('' or not a string) matches nothing. */
function limit(v: unknown): string[] | undefined {
  const list = arr(v).map(str);
  return list.length ? list : undefined;
}

/** The key's restricting fields as one; entries that are not objects grant nothing and are left out. */
export function readRestriction(spec: KeyRestrictionSpec | undefined): ReadRestriction {
  const scope: Entry = isEntry(spec?.scope) ? spec.scope : {};
  const entries = (list: unknown) => arr(list).filter(isEntry);
  const names = (list: unknown, field: string) => entries(list).map((e) => str(e[field]));
  const inProject = (list: unknown, field: string) =>
    entries(list).map((e) => ({ project: str(e.project), name: str(e[field]) }));
  const roles = entries(scope.roles);
  const cli: CliGrant[] = roles
    .filter((r) => CLI_ROLES.includes(str(r.role)))
    .map((r) => ({ projects: limit(r.projects), virtualClusters: limit(r.virtualClusters) }));
  if (spec?.allowPlatformCli === true || scope.allowPlatformCli === true) cli.push({});
  return {
    projects: names(scope.projects, 'project').filter(Boolean),
    spaces: inProject(scope.spaces, 'space'),
    virtualClusters: inProject(scope.virtualClusters, 'virtualCluster'),
    clusters: names(scope.clusters, 'cluster').filter(Boolean),
    otherRoles: roles.map((r) => str(r.role)).filter((r) => !CLI_ROLES.includes(r)),
    cli,
    rules: [...entries(spec?.rules), ...entries(scope.rules)] as AccessKeyRule[],
  };
}

/** Whether a key spec has anything that restricts it. */
export function hasRestriction(spec: KeyRestrictionSpec | undefined): boolean {
  const s: Entry = isEntry(spec?.scope) ? spec.scope : {};
  return (
    spec?.allowPlatformCli === true ||
    s.allowPlatformCli === true ||
    arr(spec?.rules).length > 0 ||
    ['roles', 'projects', 'spaces', 'virtualClusters', 'clusters', 'rules'].some((f) => arr(s[f]).length > 0)
  );
}

/** What a field holds: a scalar type, a list of strings, a list of objects of a shape, or an object of a shape. */
type Shape = 'string' | 'boolean' | 'strings' | { list: Fields } | { object: Fields };
interface Fields {
  [field: string]: Shape;
}

const RULE: Fields = {
  verbs: 'strings',
  resources: { list: { group: 'string', resources: 'strings', resourceNames: 'strings' } },
  namespaces: 'strings',
  nonResourceURLs: 'strings',
  requestTargets: 'strings',
  cluster: 'string',
  virtualClusters: { list: { name: 'string', namespace: 'string' } },
};

const RESTRICTING: Fields = {
  scope: {
    object: {
      roles: { list: { role: 'string', projects: 'strings', virtualClusters: 'strings' } },
      projects: { list: { project: 'string' } },
      spaces: { list: { project: 'string', space: 'string' } },
      virtualClusters: { list: { project: 'string', virtualCluster: 'string' } },
      clusters: { list: { cluster: 'string' } },
      rules: { list: RULE },
      allowPlatformCli: 'boolean',
    },
  },
  rules: { list: RULE },
  allowPlatformCli: 'boolean',
};

/**
 * The first restricting field of `spec` (scope, rules, allowPlatformCli and all below) this server does not
 * understand, as a path such as `spec.scope.roles[0].namespaces`; undefined when it understands them all. A null is
 * read as absent, as kube reads it.
 */
export function restrictionProblem(spec: unknown): string | undefined {
  if (!isEntry(spec)) return undefined;
  const restricting: Entry = {};
  for (const field of Object.keys(RESTRICTING)) if (field in spec) restricting[field] = spec[field];
  return fieldsProblem(restricting, RESTRICTING, 'spec');
}

function fieldsProblem(value: Entry, fields: Fields, at: string): string | undefined {
  for (const [key, v] of Object.entries(value)) {
    const path = `${at}.${key}`;
    if (!Object.hasOwn(fields, key)) return path;
    const problem = shapeProblem(v, fields[key], path);
    if (problem) return problem;
  }
  return undefined;
}

function shapeProblem(value: unknown, shape: Shape, at: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (shape === 'string' || shape === 'boolean') return typeof value === shape ? undefined : at;
  if (shape === 'strings') {
    if (!Array.isArray(value)) return at;
    const i = value.findIndex((v) => typeof v !== 'string');
    return i < 0 ? undefined : `${at}[${i}]`;
  }
  if ('object' in shape) return isEntry(value) ? fieldsProblem(value, shape.object, at) : at;
  if (!Array.isArray(value)) return at;
  for (const [i, item] of value.entries()) {
    const problem = isEntry(item) ? fieldsProblem(item, shape.list, `${at}[${i}]`) : `${at}[${i}]`;
    if (problem) return problem;
  }
  return undefined;
}
