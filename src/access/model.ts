/**
 * The owner/access model of this API's objects, read from the object itself: a kind with access lists (those built
 * with ownedKindStrategy in src/kinds/: SharedSecret, ProjectSecret, Cluster, Project, VirtualClusterInstance
 * today) lets its `spec.owner` do everything with it, and each `spec.access`
 * entry grant its verbs (`*` = all) on the object and on the listed subresources to its users and teams; an
 * OwnedAccessKey belongs to its user or team. The object-access authorizer (auth/objectaccess.ts), the kinds' write
 * rules (validation.ts) and the host RBAC mapping (rbac.ts) all read objects through these shapes.
 *
 * The folder holds the whole access model: this, its write rules (validation.ts), its host RBAC (rbac.ts) and what an
 * access key's scope allows (scope.ts, scopecover.ts). It imports only apimachinery and sits below the registry,
 * whose kind strategies enforce its rules on every write, as kube keeps an API's types and validation
 * (pkg/apis/rbac, pkg/apis/rbac/validation) below its registry and the authorizer and controllers that use them above.
 */
import type { KubeObject } from '../apimachinery/types.js';
import { AUTHENTICATED_GROUP, TEAM_GROUP_PREFIX, teamsOf, type UserInfo } from '../apimachinery/user.js';

/** `spec.owner`: a user or a team (never both, see validation.ts). */
export type Owner = { user?: string; team?: string };

/** What the spec of every kind with an owner and an access list has (each such kind's generated spec type has it). */
export interface OwnedSpec {
  owner?: Owner;
  access?: AccessEntry[];
}

/** One entry of `spec.access`: its verbs, on the object and the listed subresources, for its users and teams. */
export interface AccessEntry {
  name?: string;
  verbs?: string[];
  subresources?: string[];
  users?: string[];
  teams?: string[];
}

/**
 * The most a `spec.access` list may hold: the `maxItems` of the kinds' CRDs (crds/), which the store checks on every
 * write (test/unit/access-rbac.test.ts keeps the two the same). They bound what one object can ask of the host
 * cluster: the access sync makes one Role and RoleBinding per distinct set of verbs and subresources, so at most
 * `entries` of each, and a binding has at most `entries * (users + teams)` subjects (rbac.ts).
 *
 * Why these: 64 entries is far more than a list kept by hand needs, and 130 generated objects per object is the
 * most one tenant's write can cost the host. 32 users and 32 teams per entry keep the largest binding (4,096
 * subjects, about 340 kB with names of 20 characters) well within what the host stores in one object (etcd's 1.5
 * MiB); more users fit in another entry with the same verbs, which costs the host nothing more, or in a team.
 * Verbs: the eight a request can have, `*`, and room for custom ones; subresources: a kind has a few.
 */
export const ACCESS_LIMITS = { entries: 64, verbs: 16, subresources: 16, users: 32, teams: 32 } as const;

/** The resource whose objects belong to `spec.user` or `spec.team` instead of having access lists. */
export const OWNED_ACCESS_KEYS = 'ownedaccesskeys';

/** Whether `user` is `owner` or in its team. */
export function ownedBy(owner: Owner | undefined, user: UserInfo): boolean {
  if (!owner) return false;
  return (!!owner.user && owner.user === user.name) || (!!owner.team && teamsOf(user).includes(owner.team));
}

/**
 * The identity an owner is asked about when it is not the caller (what a synced ProjectSecret's owner may still
 * read): a user by its name alone, a team as its group (platform:team:<team>, as a team's access key acts), both
 * authenticated. Groups a user has only at login (system:masters among them) are not known here and do not count.
 */
export function ownerIdentity(owner: Owner | undefined): UserInfo | undefined {
  if (owner?.user) return { name: owner.user, groups: [AUTHENTICATED_GROUP] };
  if (owner?.team) {
    const group = `${TEAM_GROUP_PREFIX}${owner.team}`;
    return { name: group, groups: [group, AUTHENTICATED_GROUP] };
  }
  return undefined;
}

/** Whether `obj` (of `resource`) itself lets `user` do `verb` (on `subresource`, if any). */
export function objectGrants(
  resource: string,
  obj: KubeObject,
  user: UserInfo,
  verb: string,
  subresource = '',
): boolean {
  const spec = obj.spec ?? {};
  if (resource === OWNED_ACCESS_KEYS) return ownedBy({ user: spec.user, team: spec.team }, user);
  if (ownedBy(spec.owner, user)) return true;
  const teams = teamsOf(user);
  return list<AccessEntry>(spec.access).some((entry) => {
    const forUser = list(entry?.users).includes(user.name) || list(entry?.teams).some((t) => teams.includes(t));
    const verbs = list(entry?.verbs);
    const subresources = list(entry?.subresources);
    const forVerb = verbs.includes('*') || verbs.includes(verb);
    const forSubresource = !subresource || subresources.includes('*') || subresources.includes(subresource);
    return forUser && forVerb && forSubresource;
  });
}

/**
 * What `objectGrants` reads of an object, as JSON text: its spec's owner, access list, user and team (a spec that is
 * not an object has none of them, as there). The watch cache keeps it beside each object's JSON, so that narrowing a
 * list or watch to what a caller may see decodes no object, and objects with the same text are checked once. Any
 * field `objectGrants` comes to read must be kept here too (test/unit/access-grants-text.test.ts compares the two).
 */
export function grantsText(obj: unknown): string {
  const spec = (obj as { spec?: unknown } | null)?.spec;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return NO_GRANTS;
  const { owner, access, user, team } = spec as Record<string, unknown>;
  if (owner === undefined && access === undefined && user === undefined && team === undefined) return NO_GRANTS;
  return JSON.stringify({ owner, access, user, team });
}

const NO_GRANTS = '{}';

/** An object holding no more than what `grantsText` kept: what `objectGrants` needs of it. */
export function objectOfGrants(text: string): KubeObject {
  return { spec: JSON.parse(text) } as KubeObject;
}

/**
 * A list as stored, or none: stored data is not trusted to have the schema's types (a string's `includes` would match
 * any part of it).
 */
export function list<T = string>(v: unknown): T[] {
  return Array.isArray(v) ? v : [];
}
