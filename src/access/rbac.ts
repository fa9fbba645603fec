/**
 * What RBAC an object's `spec.owner` and `spec.access` stand for in the host cluster: for each access entry (and
 * for the owner) one Role and one RoleBinding (ClusterRole and ClusterRoleBinding for a cluster-scoped kind, since
 * a Role cannot grant a cluster-scoped resource). A RoleBinding grants its whole Role to all its subjects, so
 * entries with different verbs need different Roles; one pair per entry keeps each one exactly what its entry says,
 * and an edit to one entry touches only its pair.
 *
 * Pure: the access sync (controllers/accesssync.ts) compares these with what the host has.
 */
import { createHash } from 'node:crypto';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { KubeObject } from '../apimachinery/types.js';
import { TEAM_GROUP_PREFIX } from '../apimachinery/user.js';
import type { AccessEntry, Owner } from './model.js';

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

/** The Roles and bindings `obj` (of the kind `def`) asks for; empty when it has neither owner nor access. */
export function desiredRbac(def: SourceKind, obj: KubeObject): RbacObject[] {
  const spec = (obj.spec ?? {}) as { owner?: Owner; access?: AccessEntry[] };
  const grants: Array<{ suffix: string; verbs: string[]; subresources: string[]; subjects: Subject[] }> = [];
  const owner = ownerSubjects(spec.owner);
  if (owner.length) grants.push({ suffix: 'owner', verbs: ['*'], subresources: ['*'], subjects: owner });
  (spec.access ?? []).forEach((entry, i) => {
    const subjects = [...(entry.users ?? []).map(user), ...(entry.teams ?? []).map(team)];
    if (entry.verbs?.length && subjects.length)
      grants.push({
        suffix: `access-${i}`,
        verbs: unique(entry.verbs),
        subresources: entry.subresources ?? [],
        subjects: uniqueSubjects(subjects),
      });
  });

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
  return grants.flatMap((g): RbacObject[] => {
    const name = generatedName(def, { name: obj.metadata.name!, uid: obj.metadata.uid! }, g.suffix);
    return [
      {
        apiVersion: RBAC_API_VERSION,
        kind: roleKind,
        metadata: metadata(name),
        rules: [
          {
            apiGroups: [def.group],
            resources: resourcesOf(def, g.subresources),
            resourceNames: [obj.metadata.name!],
            verbs: g.verbs,
          },
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
  const hash = createHash('sha256').update(`${source.uid}/${name}`).digest('hex').slice(0, NAME_HASH_LENGTH);
  const room = MAX_NAME_LENGTH - `platform-${kind}--${hash}-${suffix}`.length;
  return `platform-${kind}-${name.slice(0, room).replace(/[-.]+$/, '')}-${hash}-${suffix}`;
}

/** The labels that find what was generated for `obj`. */
function sourceLabels(def: SourceKind, obj: KubeObject): Record<string, string> {
  return {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [SOURCE_KIND_LABEL]: def.kind,
    ...(def.namespaced ? { [SOURCE_NAMESPACE_LABEL]: obj.metadata.namespace! } : {}),
    [SOURCE_NAME_LABEL]: labelValue(obj.metadata.name!),
    [SOURCE_UID_LABEL]: obj.metadata.uid!,
  };
}

/**
 * Every resource the Roles generated for a kind may name (the owner's: the kind and each of its subresources). The
 * server must hold them itself to grant them (RBAC's escalation check): the Helm chart's ClusterRole gives it `*` on
 * exactly these for each kind whose strategy declares host RBAC.
 */
export function grantableResources(def: SourceKind): string[] {
  return resourcesOf(def, ['*']);
}

/** The kind's resource and the subresources asked for; '*' means each subresource the kind has (RBAC has no wildcard for them). */
function resourcesOf(def: SourceKind, subresources: string[]): string[] {
  const known = def.hasStatus ? ['status'] : [];
  const subs = subresources.includes('*') ? [...known, ...subresources.filter((s) => s !== '*')] : subresources;
  return unique([def.plural, ...subs.map((s) => `${def.plural}/${s}`)]);
}

function ownerSubjects(owner: Owner | undefined): Subject[] {
  if (owner?.user) return [user(owner.user)];
  if (owner?.team) return [team(owner.team)];
  return [];
}

const user = (name: string): Subject => ({ kind: 'User', apiGroup: RBAC_GROUP, name });
const team = (name: string): Subject => ({ kind: 'Group', apiGroup: RBAC_GROUP, name: `${TEAM_GROUP_PREFIX}${name}` });

function uniqueSubjects(subjects: Subject[]): Subject[] {
  const seen = new Set<string>();
  return subjects.filter((s) => !seen.has(`${s.kind}/${s.name}`) && !!seen.add(`${s.kind}/${s.name}`));
}

const unique = (values: string[]) => [...new Set(values)];

function labelValue(value: string): string {
  if (value.length <= MAX_LABEL_VALUE_LENGTH) return value;
  const hash = shortHash(value);
  return `${value.slice(0, MAX_LABEL_VALUE_LENGTH - hash.length - 1).replace(/[-._]+$/, '')}-${hash}`;
}

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 10);
}
