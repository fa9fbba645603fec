/**
 * What RBAC an object's `spec.owner` and `spec.access` stand for in the host cluster: one Role and one RoleBinding
 * for the owner, and one of each per distinct set of verbs and subresources among the access entries, the binding
 * holding the users and teams of every entry with that set (ClusterRole and ClusterRoleBinding for a cluster-scoped
 * kind, since a Role cannot grant a cluster-scoped resource). A RoleBinding grants its whole Role to all its
 * subjects, so different sets need different Roles; entries with the same set need not, and sharing one pair keeps
 * the host's objects, and the requests a change costs, bounded by the sets rather than the entries: adding a user
 * or an entry with a set that exists rewrites one binding, and the order of entries does not matter.
 *
 * The CRDs' limits (model.ts ACCESS_LIMITS) bound that: at most `entries` sets, and `entries * (users + teams)`
 * subjects in a binding. An object stored before the limits may ask for more: then none of its access entries is
 * made (only the owner's pair) and `refused` says why, for the access sync to report.
 *
 * Pure: the access sync (controllers/accesssync.ts) compares these with what the host has.
 */
import { createHash } from 'node:crypto';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { KubeObject } from '../apimachinery/types.js';
import { TEAM_GROUP_PREFIX } from '../apimachinery/user.js';
import { ACCESS_LIMITS, list, type AccessEntry, type Owner } from './model.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;

/** On every generated object, so all of them can be watched and swept. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'platform-management-api';
export const SOURCE_KIND_LABEL = `${GROUP_NAME}/source-kind`;
export const SOURCE_NAMESPACE_LABEL = `${GROUP_NAME}/source-namespace`;
export const SOURCE_NAME_LABEL = `${GROUP_NAME}/source-name`;
export const SOURCE_UID_LABEL = `${GROUP_NAME}/source-uid`;
/** The source's full namespace/name, which a label value (63 characters at most) may not hold. */
export const SOURCE_ANNOTATION = `${GROUP_NAME}/source`;

/** Generated names stay within a DNS label, readable in `kubectl get`, and valid for every RBAC kind. */
const MAX_NAME_LENGTH = 63;
const MAX_LABEL_VALUE_LENGTH = 63;
/** 64 bits of hash in a cut name: collisions are left to chance no longer than they must be. */
const NAME_HASH_LENGTH = 16;
/**
 * 40 bits of hash name a set of verbs and resources: among an object's 64 sets at most, a clash by chance is out of
 * reach, and one made on purpose (verbs are free text) only keeps that object's entries out of the host.
 */
const SET_HASH_LENGTH = 10;

/** The most Roles an object's access entries can ask for, and the most subjects of one binding, within the limits. */
export const MAX_ACCESS_ROLES = ACCESS_LIMITS.entries;
export const MAX_BINDING_SUBJECTS = ACCESS_LIMITS.entries * (ACCESS_LIMITS.users + ACCESS_LIMITS.teams);

/** What the mapping reads of a kind's definition (registry/definitions.ts's ResourceDefinition has it all). */
export interface SourceKind {
  group: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  hasStatus: boolean;
}

export type RbacKind = 'Role' | 'RoleBinding' | 'ClusterRole' | 'ClusterRoleBinding';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  verbs: string[];
}

export interface Subject {
  kind: 'User' | 'Group';
  apiGroup: string;
  name: string;
}

export interface RbacObject {
  apiVersion: string;
  kind: RbacKind;
  metadata: {
    name: string;
    namespace?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
  };
  rules?: PolicyRule[];
  roleRef?: { apiGroup: string; kind: 'Role' | 'ClusterRole'; name: string };
  subjects?: Subject[];
}

/** What an object asks for in the host cluster. */
export interface DesiredRbac {
  /** Its Roles and bindings, each Role before its binding; none when it has neither owner nor access. */
  objects: RbacObject[];
  /**
   * Why none of its access entries is made (they ask for more than the limits allow, in an object stored before
   * them, or two of their Roles would have the same name): then `objects` has only the owner's pair.
   */
  refused?: { reason: 'AccessListTooLarge' | 'AccessNameClash'; message: string };
}

/** One Role and its binding: the verbs on the resources, for the subjects. */
interface Grant {
  suffix: string;
  verbs: string[];
  resources: string[];
  subjects: Subject[];
}

/** The Roles and bindings `obj` (of the kind `def`) asks for. */
export function desiredRbac(def: SourceKind, obj: KubeObject): DesiredRbac {
  const spec = (obj.spec ?? {}) as { owner?: Owner; access?: AccessEntry[] };
  const grants: Grant[] = [];
  const owner = ownerSubjects(spec.owner);
  if (owner.length) grants.push({ suffix: 'owner', verbs: ['*'], resources: resourcesOf(def, ['*']), subjects: owner });
  const access = accessGrants(def, list<AccessEntry>(spec.access));
  const refused = refusal(def, access);
  if (!refused) grants.push(...access);

  const namespaced = def.namespaced;
  const roleKind = namespaced ? 'Role' : 'ClusterRole';
  const bindingKind = namespaced ? 'RoleBinding' : 'ClusterRoleBinding';
  const metadata = (name: string) => ({
    name,
    ...(namespaced ? { namespace: obj.metadata.namespace! } : {}),
    labels: sourceLabels(def, obj),
    annotations: {
      [SOURCE_ANNOTATION]: `${def.kind} ${namespaced ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`,
    },
  });
  const objects = grants.flatMap((g): RbacObject[] => {
    const name = generatedName(def, { name: obj.metadata.name!, uid: obj.metadata.uid! }, g.suffix);
    return [
      {
        apiVersion: RBAC_API_VERSION,
        kind: roleKind,
        metadata: metadata(name),
        rules: [
          { apiGroups: [def.group], resources: g.resources, resourceNames: [obj.metadata.name!], verbs: g.verbs },
        ],
      },
      {
        apiVersion: RBAC_API_VERSION,
        kind: bindingKind,
        metadata: metadata(name),
        roleRef: { apiGroup: RBAC_GROUP, kind: roleKind, name },
        subjects: g.subjects,
      },
    ];
  });
  return refused ? { objects, refused } : { objects };
}

/**
 * One grant per distinct set of verbs and resources, with the subjects of every entry asking for it, deduplicated
 * and sorted (Users, then Groups, by name) so that neither the order of entries nor repeats change a binding.
 * Named `access-<hash of the set>`: a set keeps its name whatever happens to other entries.
 */
function accessGrants(def: SourceKind, entries: AccessEntry[]): Grant[] {
  const bySet = new Map<string, Grant>();
  for (const entry of entries) {
    // Stored data is not trusted to have the schema's types: a list of another type grants nothing.
    const subjects = [...list(entry?.users).map(user), ...list(entry?.teams).map(team)];
    const entryVerbs = list(entry?.verbs);
    if (!entryVerbs.length || !subjects.length) continue;
    // RBAC's '*' matches every verb: the others beside it add nothing.
    const verbs = entryVerbs.includes('*') ? ['*'] : unique(entryVerbs).sort();
    const resources = resourcesOf(def, list(entry?.subresources));
    const set = JSON.stringify([verbs, resources]);
    const grant = bySet.get(set);
    if (grant) grant.subjects.push(...subjects);
    else bySet.set(set, { suffix: `access-${shortHash(set, SET_HASH_LENGTH)}`, verbs, resources, subjects });
  }
  return [...bySet.values()].map((g) => ({ ...g, subjects: sortedSubjects(g.subjects) }));
}

/**
 * Why `grants` may not be made, if so: they go beyond what an object within the CRDs' limits can ask for, or two
 * sets got the same name (which would have the sync write both, in turn, for ever).
 */
function refusal(def: SourceKind, grants: Grant[]): DesiredRbac['refused'] {
  const [role, binding] = def.namespaced ? ['Role', 'RoleBinding'] : ['ClusterRole', 'ClusterRoleBinding'];
  const { entries, users, teams } = ACCESS_LIMITS;
  const untilWithin = `none of its entries is granted in the host cluster until spec.access is within its limits (${entries} entries of at most ${users} users and ${teams} teams)`;
  if (grants.length > MAX_ACCESS_ROLES)
    return {
      reason: 'AccessListTooLarge',
      message: `spec.access asks for ${grants.length} ${role}s (one per distinct set of verbs and subresources), more than the ${MAX_ACCESS_ROLES} an object may have: ${untilWithin}`,
    };
  const crowded = grants.find((g) => g.subjects.length > MAX_BINDING_SUBJECTS);
  if (crowded)
    return {
      reason: 'AccessListTooLarge',
      message: `spec.access asks for a ${binding} of ${crowded.subjects.length} users and teams (those of the entries granting ${crowded.verbs.join(', ')}), more than the ${MAX_BINDING_SUBJECTS} one may have: ${untilWithin}`,
    };
  const suffixes = grants.map((g) => g.suffix);
  const clash = suffixes.find((s, i) => suffixes.indexOf(s) !== i);
  if (clash)
    return {
      reason: 'AccessNameClash',
      message: `two sets of verbs and subresources in spec.access would have ${role}s of the same name (ending in ${clash}): none of its entries is granted in the host cluster until the verbs of one of them change`,
    };
  return undefined;
}

/**
 * `platform-<kind>-<name>-<suffix>`, or with the name cut and a hash when that would be too long. The hash covers
 * the source's uid as well as its whole name, so that sources whose long names share a prefix (or a source
 * deleted and made again) get names of their own; whatever still collides is refused by the ownership check.
 */
export function generatedName(def: SourceKind, source: { name: string; uid: string }, suffix: string): string {
  const kind = def.kind.toLowerCase();
  const plain = `platform-${kind}-${source.name}-${suffix}`;
  if (plain.length <= MAX_NAME_LENGTH) return plain;
  const name = source.name;
  const hash = nameHash(source);
  const room = MAX_NAME_LENGTH - `platform-${kind}--${hash}-${suffix}`.length;
  return `platform-${kind}-${name.slice(0, room).replace(/[-.]+$/, '')}-${hash}-${suffix}`;
}

const nameHash = (source: { name: string; uid: string }) =>
  createHash('sha256').update(`${source.uid}/${source.name}`).digest('hex').slice(0, NAME_HASH_LENGTH);

/**
 * The suffixes generatedName is given: the owner's, an access set's (`access-<hash of the set>`), and the
 * `access-<index>` of earlier versions' pair per entry, which the sync still deletes. None holds another's shape
 * after a dash, so a name ends in one of them at most.
 */
const GENERATED_SUFFIX = new RegExp(`-(owner|access-(?:[0-9a-f]{${SET_HASH_LENGTH}}|0|[1-9][0-9]*))$`);

/**
 * Whether `name` is one generatedName gives the source: the names of what the server makes for it, and so the only
 * ones it replaces or deletes (a label saying an object was made for a source is no proof). Only the suffixes the
 * server makes count: `platform-sharedsecret-foo-bar-owner` starts like a name of `foo`'s, but it is `foo-bar`'s.
 */
export function isGeneratedName(def: SourceKind, source: { name: string; uid: string }, name: string): boolean {
  // generatedName goes past the limit only for an index no earlier version made (its room for the source's name
  // runs out): a name that long is someone else's, however it ends.
  if (name.length > MAX_NAME_LENGTH) return false;
  const suffix = GENERATED_SUFFIX.exec(name)?.[1];
  return suffix !== undefined && generatedName(def, source, suffix) === name;
}

/** The labels that find what was generated for `obj`. */
function sourceLabels(def: SourceKind, obj: KubeObject): Record<string, string> {
  const values: Record<string, string> = {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [SOURCE_KIND_LABEL]: def.kind,
    [SOURCE_NAMESPACE_LABEL]: obj.metadata.namespace!,
    [SOURCE_NAME_LABEL]: labelValue(obj.metadata.name!),
    [SOURCE_UID_LABEL]: obj.metadata.uid!,
  };
  return Object.fromEntries(sourceLabelKeys(def.namespaced).map((k) => [k, values[k]]));
}

/** The keys of sourceLabels: what the sync compares of a host object's labels (a cluster-scoped source has no namespace). */
export function sourceLabelKeys(namespaced: boolean): string[] {
  return [
    MANAGED_BY_LABEL,
    SOURCE_KIND_LABEL,
    ...(namespaced ? [SOURCE_NAMESPACE_LABEL] : []),
    SOURCE_NAME_LABEL,
    SOURCE_UID_LABEL,
  ];
}

/**
 * Every resource the Roles generated for a kind may name (the owner's: the kind and each of its subresources). The
 * server must hold them itself to grant them (RBAC's escalation check): the Helm chart's ClusterRole gives it `*` on
 * exactly these for each kind whose strategy declares host RBAC.
 */
export function grantableResources(def: SourceKind): string[] {
  return resourcesOf(def, ['*']);
}

/**
 * The kind's resource, then those of the subresources asked for in order of name; '*' means each subresource the
 * kind has (RBAC has no wildcard for them). The same subresources, however written, give the same list.
 */
function resourcesOf(def: SourceKind, subresources: string[]): string[] {
  const known = def.hasStatus ? ['status'] : [];
  const subs = subresources.includes('*') ? [...known, ...subresources.filter((s) => s !== '*')] : subresources;
  return [
    def.plural,
    ...unique(subs)
      .sort()
      .map((s) => `${def.plural}/${s}`),
  ];
}

function ownerSubjects(owner: Owner | undefined): Subject[] {
  if (owner?.user) return [user(owner.user)];
  if (owner?.team) return [team(owner.team)];
  return [];
}

const user = (name: string): Subject => ({ kind: 'User', apiGroup: RBAC_GROUP, name });
const team = (name: string): Subject => ({ kind: 'Group', apiGroup: RBAC_GROUP, name: `${TEAM_GROUP_PREFIX}${name}` });

/** Without repeats; Users before Groups, each in order of name. */
function sortedSubjects(subjects: Subject[]): Subject[] {
  const of = (kind: Subject['kind']): Subject[] =>
    unique(subjects.filter((s) => s.kind === kind).map((s) => s.name))
      .sort()
      .map((name) => ({ kind, apiGroup: RBAC_GROUP, name }));
  return [...of('User'), ...of('Group')];
}

const unique = (values: string[]) => [...new Set(values)];

function labelValue(value: string): string {
  if (value.length <= MAX_LABEL_VALUE_LENGTH) return value;
  const hash = shortHash(value);
  return `${value.slice(0, MAX_LABEL_VALUE_LENGTH - hash.length - 1).replace(/[-._]+$/, '')}-${hash}`;
}

function shortHash(value: string, length = 10): string {
  return createHash('sha256').update(value).digest('hex').slice(0, length);
}
