/**
 * Actions: what the API serves by code rather than by the generic store, like kube's connecters and create-only
 * REST (serviceaccounts/token): a subresource of an object (`projects/importvirtualcluster`,
 * `virtualclusterinstances/kubeconfig`) or a kind of its own that is never stored (`directclusterendpointtokens`).
 * Each takes a request object of its kind and answers one.
 */
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import { compileSchema, type StructuralSchema, type SchemaValidator } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { isPlainObject, type GroupKind, type KubeObject, type ObjectMeta } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import { checkTypeMeta, dropUnknownFields } from '../registry/decoding.js';
import type { FieldPath } from '../registry/hiddenfields.js';
import type { AuthorizeOther } from '../registry/strategy.js';

export type ActionVerb = 'get' | 'create';

export interface ActionCall {
  verb: ActionVerb;
  /** The object the subresource belongs to ('' for a kind of its own). */
  namespace?: string;
  name: string;
  /** The request object: the decoded body of a create, undefined for a get. */
  object?: KubeObject<unknown, unknown>;
  query: URLSearchParams;
  user: UserInfo;
  /** Whether the caller may also do something else, asked of the authorizers that allowed the request. */
  authorize: AuthorizeOther;
  /** Filled by the action; sent back as `Warning: 299` headers. */
  warnings: string[];
}

export interface Action {
  group: string;
  version: string;
  /** The resource of the path. */
  resource: string;
  /** '' for a kind of its own. */
  subresource: string;
  /** The kind of the request and answer objects. */
  kind: string;
  /** Whether `resource` is namespaced. */
  namespaced: boolean;
  /**
   * For a subresource of a namespaced kind: also served at the path without a namespace, the namespace then
   * found from the object's name (the spec shows `{api}/virtualclusterinstances/<name>/kubeconfig`).
   */
  anyNamespace?: boolean;
  verbs: readonly ActionVerb[];
  /** Whether a create may have no body at all (then it asks with every default); otherwise the body names its kind. */
  emptyBody?: boolean;
  /**
   * Whether the request object tells nothing (a SelfSubjectReview): its body is not read, in whatever encoding it
   * comes (kubectl sends kube's own kinds as protobuf), and the action is given an empty one.
   */
  ignoresBody?: boolean;
  /** The request object's schema (apiVersion, kind and metadata are checked for every action). */
  schema: StructuralSchema;
  /** Parts of the request that restrict what its answer grants (Strategy.restrictingFields). */
  restrictingFields?: readonly FieldPath[];
  /**
   * Checks of the request object as decoded, before admission and the audit log see it: a body refused here (e.g. a
   * key value the action does not take) goes no further.
   */
  validate?(object: KubeObject): void;
  serve(call: ActionCall): Promise<KubeObject>;
}

/** A request kind's schema: apiVersion, kind and metadata, and the kind's own `fields`. */
export function requestSchema(fields: Record<string, StructuralSchema>): StructuralSchema {
  return {
    type: 'object',
    properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, ...fields },
  };
}

const validators = new WeakMap<Action, SchemaValidator>();

/**
 * The request object of a create, checked as the generic store checks objects: apiVersion and kind when given,
 * unknown fields dropped (refused with fieldValidation=Strict, warned about with Warn; always refused inside the
 * action's restricting fields), types per the schema.
 */
export function decodeRequest(
  action: Action,
  body: Record<string, unknown>,
  fieldValidation: 'Ignore' | 'Strict' | 'Warn',
  warnings: string[],
): KubeObject {
  const gk: GroupKind = { group: action.group, kind: action.kind };
  const obj = structuredClone(body) as KubeObject;
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  if (!isPlainObject(obj.metadata))
    throw errors.invalid(gk, '', [fieldError.typeInvalid(Path.root('metadata'), obj.metadata, 'must be an object')]);
  const type = {
    apiVersion: `${action.group}/${action.version}`,
    version: action.version,
    kind: action.kind,
    groupKind: gk,
  };
  checkTypeMeta(obj, type);
  const restricting = action.restrictingFields && { paths: action.restrictingFields };
  dropUnknownFields(obj, action.schema, type, { fieldValidation, warnings }, restricting);

  if (!validators.has(action)) validators.set(action, compileSchema(action.schema));
  const { metadata: _metadata, ...rest } = obj;
  const errs: FieldError[] = validators.get(action)!(rest);
  if (errs.length) throw errors.invalid(gk, String(obj.metadata.name ?? ''), errs);
  return obj;
}

/** The answer object's frame: apiVersion, kind and the request's metadata with a creation time. */
export function answer(action: Action, metadata: ObjectMeta, body: Record<string, unknown>): KubeObject {
  return {
    apiVersion: `${action.group}/${action.version}`,
    kind: action.kind,
    metadata: { ...metadata, creationTimestamp: nowRFC3339() },
    ...body,
  };
}
