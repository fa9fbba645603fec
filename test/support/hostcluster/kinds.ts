/**
 * The kinds the stand-in's object store serves with the full REST verbs (objectstore, objectrest): the four RBAC
 * kinds and core v1 Secrets. Each has its group, kind and scope, whether a PUT may create it, the fields a
 * fieldSelector may name, and kube's decoding, defaulting and validation of it as far as the stand-in models them.
 */
import { fieldError, type FieldError } from '../../../src/apimachinery/field.js';
import * as errors from '../../../src/apimachinery/status.js';
import { canonical, type KubeObj } from './objects.js';
import { normalizeSecret, secretDecodeError, validateSecret } from './secretvalidation.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';

export interface KindInfo {
  /** The API group ('' for core); the version is always v1. */
  group: string;
  kind: string;
  namespaced: boolean;
  /** A PUT of a missing object creates it (kube's AllowCreateOnUpdate: yes for RBAC kinds, no for Secrets). */
  createOnUpdate: boolean;
  /** The fields a fieldSelector may name besides metadata.name and metadata.namespace, with the object's values. */
  extraFields?: (obj: KubeObj) => Record<string, string>;
  /** What kube's decoding cannot read as this kind (Go's error text), before anything else looks at a body. */
  decodeError?: (obj: KubeObj) => string | undefined;
  /** kube's defaulting and conversion at decode; returns a new object. */
  normalize?: (obj: KubeObj) => KubeObj;
  /** kube's validation of a create (no `previous`) or an update. */
  validate?: (obj: KubeObj, previous?: KubeObj) => FieldError[];
}

/** A binding names its role, and never changes roleRef. */
function validateBinding(obj: KubeObj, previous?: KubeObj): FieldError[] {
  if (!obj.roleRef?.kind || !obj.roleRef?.name) return [fieldError.required('roleRef')];
  if (previous && canonical(previous.roleRef) !== canonical(obj.roleRef))
    return [fieldError.invalid('roleRef', obj.roleRef, 'cannot change roleRef')];
  return [];
}

export const KINDS = {
  roles: { group: RBAC_GROUP, kind: 'Role', namespaced: true, createOnUpdate: true },
  rolebindings: {
    group: RBAC_GROUP,
    kind: 'RoleBinding',
    namespaced: true,
    createOnUpdate: true,
    validate: validateBinding,
  },
  clusterroles: { group: RBAC_GROUP, kind: 'ClusterRole', namespaced: false, createOnUpdate: true },
  clusterrolebindings: {
    group: RBAC_GROUP,
    kind: 'ClusterRoleBinding',
    namespaced: false,
    createOnUpdate: true,
    validate: validateBinding,
  },
  secrets: {
    group: '',
    kind: 'Secret',
    namespaced: true,
    createOnUpdate: false,
    extraFields: (o) => ({ type: o.type ?? '' }),
    decodeError: secretDecodeError,
    normalize: normalizeSecret,
    validate: validateSecret,
  },
} as const satisfies Record<string, KindInfo>;

export type StoredResource = keyof typeof KINDS;
export type RbacResource = 'roles' | 'rolebindings' | 'clusterroles' | 'clusterrolebindings';

/** The kind's entry, typed as the interface (the table's literal types lack the optional members). */
export const kindOf = (resource: StoredResource): KindInfo => KINDS[resource];

export const apiVersionOf = (resource: StoredResource): string => {
  const { group } = KINDS[resource];
  return group ? `${group}/v1` : 'v1';
};

export const isRbac = (resource: StoredResource): resource is RbacResource => KINDS[resource].group === RBAC_GROUP;

/** The resource that stores objects of `kind` (kinds are unique across the table). */
export function resourceOfKind(kind: string | undefined): StoredResource | undefined {
  return (Object.keys(KINDS) as StoredResource[]).find((r) => KINDS[r].kind === kind);
}

/** The fields a fieldSelector matches an object of `resource` by. */
export function selectableFields(resource: StoredResource, obj: KubeObj): Record<string, string> {
  return {
    'metadata.name': obj.metadata?.name ?? '',
    'metadata.namespace': obj.metadata?.namespace ?? '',
    ...kindOf(resource).extraFields?.(obj),
  };
}

/**
 * A body as kube decodes it into `resource`'s kind: what cannot be read is a 400 (kube's words: `Secret in version
 * "v1" cannot be handled as a Secret: ...`); then defaulting and conversion.
 */
export function decode(resource: StoredResource, obj: KubeObj): KubeObj {
  const info = kindOf(resource);
  const why = info.decodeError?.(obj);
  if (why) throw errors.badRequest(`${info.kind} in version "v1" cannot be handled as a ${info.kind}: ${why}`);
  return info.normalize ? info.normalize(obj) : obj;
}
