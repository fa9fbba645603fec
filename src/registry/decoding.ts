/**
 * What turns a decoded body into an object of a kind, for the generic store and for actions alike: apiVersion and
 * kind, and kube's field validation (pruning unknown fields; Strict refuses them, Warn warns, Ignore is silent).
 */
import { fieldError } from '../apimachinery/field.js';
import { objectMetaSchema } from '../apimachinery/metaschema.js';
import { prune, type StructuralSchema } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject, type GroupKind, type KubeObject } from '../apimachinery/types.js';
import { goQuote } from '../apimachinery/golang/strconv.js';

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

/** apiVersion and kind may be left out (they are then taken from the path); when given they must match. */
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
 * Drops fields the schema does not know (kube's pruning; metadata by ObjectMeta's schema) and, per
 * fieldValidation, refuses the request with kube's strict decoding error or warns about each unknown or duplicate field.
 */
export function dropUnknownFields(
  obj: KubeObject,
  schema: StructuralSchema,
  type: TypeMeta,
  opts: FieldValidationOptions,
): void {
  const { metadata: _m, ...body } = obj;
  const unknown = [...prune(obj.metadata, objectMetaSchema, 'metadata'), ...prune(body, schema, '')].map((p) =>
    p.replace(/^\./, ''),
  );
  for (const k of Object.keys(obj)) if (k !== 'metadata' && !(k in body)) delete obj[k];
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
