/**
 * What turns a decoded body into an object of a kind, for the generic store and for actions alike: apiVersion and
 * kind, and kube's field validation (pruning unknown fields; Strict refuses them, Warn warns, Ignore is silent).
 */
import { fieldError } from '../apimachinery/field.js';
import { objectMetaSchema } from '../apimachinery/metaschema.js';
import { propertySchema, prune, type StructuralSchema } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject, type GroupKind, type KubeObject } from '../apimachinery/types.js';
import { jsonEqual } from '../apimachinery/equality.js';
import { goQuote } from '../apimachinery/golang/strconv.js';
import type { FieldPath } from './hiddenfields.js';

export interface TypeMeta {
  apiVersion: string;
  version: string;
  kind: string;
  groupKind: GroupKind;
}

export interface FieldValidationOptions {
  fieldValidation?: 'Ignore' | 'Warn' | 'Strict';
  /** Paths of keys the JSON body held twice. */
  duplicateFields?: string[];
  /** Filled with warnings for the client (`Warning: 299` headers). */
  warnings?: string[];
}

/**
 * A body a client sent to be an object (a create, an update, an action's request) names its apiVersion and kind, as
 * kube requires of custom resources (its unstructured decoding): without a kind it is 400 with kube's message (which
 * quotes nothing of the body), without an apiVersion 400 as any other apiVersion.
 */
export function requireTypeMeta(obj: Record<string, unknown>, type: Pick<TypeMeta, 'apiVersion'>): void {
  if (obj.kind === undefined || obj.kind === null || obj.kind === '')
    throw errors.badRequest("Object 'Kind' is missing in 'object has no kind field '");
  if (obj.apiVersion === undefined || obj.apiVersion === null || obj.apiVersion === '')
    throw errors.badRequest(
      `the API version in the data () does not match the expected API version (${type.apiVersion})`,
    );
}

/**
 * apiVersion and kind of an object the server holds (a client's body passed requireTypeMeta; a patch's result, a
 * mutating webhook's or the server's own object may lack them): taken from the path when absent; when given they
 * must match.
 */
export function checkTypeMeta(obj: KubeObject, type: TypeMeta): void {
  if (!isPlainObject(obj.metadata)) obj.metadata = {};
  if (obj.apiVersion !== undefined && obj.apiVersion !== type.apiVersion) {
    throw errors.badRequest(
      `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${type.apiVersion})`,
    );
  }
  if (obj.kind !== undefined && obj.kind !== type.kind) {
    const name = typeof obj.metadata.name === 'string' ? obj.metadata.name : '';
    throw errors.invalid(type.groupKind, name, [fieldError.invalid('kind', obj.kind, `must be ${type.kind}`)]);
  }
  obj.apiVersion = type.apiVersion;
  obj.kind = type.kind;
}

/**
 * The parts of a kind that restrict access (an access key's scope, an object's access list): there an unknown or
 * duplicate field is refused whatever fieldValidation says, since dropping it would make a grant wider than its author
 * asked, and a stored value is never pruned.
 */
export interface RestrictingFields {
  paths: readonly FieldPath[];
  /** The stored object of an update: a restricting part left as stored is kept as it is, unknown fields and all. */
  old?: KubeObject;
}

/**
 * Drops fields the schema does not know (kube's pruning; metadata by ObjectMeta's schema) and, per
 * fieldValidation, refuses the request with kube's strict decoding error or warns about each unknown or duplicate field.
 * Unknown or duplicate fields inside `restricting` parts are refused whatever fieldValidation says (422 naming them).
 */
export function dropUnknownFields(
  obj: KubeObject,
  schema: StructuralSchema,
  type: TypeMeta,
  opts: FieldValidationOptions,
  restricting?: RestrictingFields,
): void {
  // A restricting part the write leaves as stored is not pruned: what is stored there stays as it is.
  const kept = (restricting?.paths ?? []).filter(
    (path) =>
      restricting?.old &&
      valueAt(obj, path) !== undefined &&
      jsonEqual(valueAt(obj, path), valueAt(restricting.old, path)),
  );
  const detached = kept.map((path) => detach(obj, path));
  const { metadata: _m, ...body } = obj;
  const unknown = [...prune(obj.metadata, objectMetaSchema, 'metadata'), ...prune(body, schema, '')].map((p) =>
    p.replace(/^\./, ''),
  );
  // Own fields only: a pruned "__proto__" would still be `in` body, through Object.prototype.
  for (const k of Object.keys(obj)) if (k !== 'metadata' && !Object.hasOwn(body, k)) delete obj[k];
  kept.forEach((path, i) => attach(obj, path, detached[i]));

  const isRestricting = (p: string) => (restricting?.paths ?? []).some((path) => within(p, path));
  // A field inside a value of the wrong type (an object where a string belongs) is the type's error, reported by
  // validation: only fields of an object the schema describes are unknown fields.
  const inObject = (p: string) => schemaAround(schema, p)?.type === 'object';
  const refused = [
    ...(opts.duplicateFields ?? []).filter(isRestricting).map((p) => ({ p, what: 'duplicate field' })),
    ...unknown.filter((p) => isRestricting(p) && inObject(p)).map((p) => ({ p, what: 'unknown field' })),
  ];
  if (refused.length) {
    const name = typeof obj.metadata.name === 'string' ? obj.metadata.name : '';
    throw errors.invalid(
      type.groupKind,
      name,
      refused.map(({ p, what }) =>
        fieldError.forbidden(
          p,
          `${what}: this part of ${type.kind} restricts access, so fields it does not define are refused whatever fieldValidation says (${knownFields(schema, p)})`,
        ),
      ),
    );
  }
  const problems = [
    ...(opts.duplicateFields ?? []).map((p) => `duplicate field ${goQuote(p)}`),
    ...unknown.map((p) => `unknown field ${goQuote(p)}`),
  ];
  if (!problems.length || opts.fieldValidation === 'Ignore') return;
  if (opts.fieldValidation === 'Strict') {
    const { kind, version } = type;
    throw errors.badRequest(
      `${kind} in version ${goQuote(version)} cannot be handled as a ${kind}: strict decoding error: ${problems.join(', ')}`,
    );
  }
  opts.warnings?.push(...problems);
}

/** Whether the field path `p` (as `spec.access[0].verbs`) lies within `path`. */
function within(p: string, path: FieldPath): boolean {
  const prefix = path.join('.');
  return p === prefix || p.startsWith(`${prefix}.`) || p.startsWith(`${prefix}[`);
}

/** The schema of the value holding the field at path `p` (as `spec.access[0].verbs`). */
function schemaAround(schema: StructuralSchema, p: string): StructuralSchema | undefined {
  let at: StructuralSchema | undefined = schema;
  for (const step of p.split(/\.|(?=\[)/).slice(0, -1))
    at = step.startsWith('[') ? at?.items : propertySchema(at, step);
  return at;
}

/** The fields the schema defines where the unknown field `p` was found, for the message. */
function knownFields(schema: StructuralSchema, p: string): string {
  const names = Object.keys(schemaAround(schema, p)?.properties ?? {});
  return names.length ? `fields there: ${names.join(', ')}` : 'no fields are defined there';
}

function valueAt(obj: unknown, path: FieldPath): unknown {
  let at = obj;
  for (const key of path) {
    if (!isPlainObject(at) || !Object.hasOwn(at, key)) return undefined;
    at = at[key];
  }
  return at;
}

function detach(obj: KubeObject, path: FieldPath): unknown {
  const parent = valueAt(obj, path.slice(0, -1)) as Record<string, unknown>;
  const value = parent[path[path.length - 1]];
  delete parent[path[path.length - 1]];
  return value;
}

function attach(obj: KubeObject, path: FieldPath, value: unknown): void {
  (valueAt(obj, path.slice(0, -1)) as Record<string, unknown>)[path[path.length - 1]] = value;
}
