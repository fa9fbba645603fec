/**
 * Structural OpenAPI v3 schemas (as in a CRD's openAPIV3Schema): pruning of unknown fields, and validation with
 * ajv whose errors are turned into field errors worded like apiextensions-apiserver's. On update, errors in values
 * the update left as they were are dropped, as kube's CRD validation ratcheting does (see `ratchets`).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { jsonEqual } from './equality.js';
import { fieldError, type FieldError } from './field.js';
import { isPlainObject } from './types.js';

export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  format?: string;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema | boolean;
  items?: StructuralSchema;
  required?: string[];
  enum?: unknown[];
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  [keyword: string]: unknown;
}

// ajv-formats' default export differs between its CommonJS and ESM shapes.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
  formats?: string[],
) => Ajv;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The `date-time` format as validation checks it (ajv-formats', kept by newAjv below). */
let dateTimeCheck: ((value: string) => boolean) | undefined;

/**
 * Whether `value` passes validation as `format: date-time`: what a status field only the server writes must be to
 * count as written well (registry/serverstatus.ts), so that no text validation lets through is stored as a client
 * wrote it.
 */
export function isDateTime(value: unknown): boolean {
  dateTimeCheck ??= (() => {
    const format = newAjv().formats['date-time'] as { validate: (v: string) => boolean } | ((v: string) => boolean);
    return typeof format === 'function' ? format : format.validate;
  })();
  return typeof value === 'string' && dateTimeCheck(value);
}

function newAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true, verbose: true });
  addFormats(ajv, ['date-time', 'date', 'uri', 'email', 'uuid', 'hostname', 'ipv4', 'ipv6']);
  ajv.addFormat('byte', BASE64);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('double', { type: 'number', validate: () => true });
  ajv.addFormat('float', { type: 'number', validate: () => true });
  return ajv;
}

/** OpenAPI's `nullable` is not JSON Schema: widen the type where a schema allows null. */
function toJsonSchema(schema: StructuralSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'nullable' || k.startsWith('x-kubernetes-')) continue;
    if (k === 'properties' && isPlainObject(v)) {
      out.properties = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, toJsonSchema(s as StructuralSchema)]));
    } else if ((k === 'items' || k === 'additionalProperties') && isPlainObject(v)) {
      out[k] = toJsonSchema(v as StructuralSchema);
    } else {
      out[k] = v;
    }
  }
  if (schema.nullable && schema.type) out.type = [schema.type, 'null'];
  return out;
}

/**
 * The schema of the field `key` the schema defines, if it does. Only its own properties count: a `__proto__` key
 * (JSON.parse and js-yaml make it an own field like any other) would otherwise find Object.prototype and pass as known.
 */
export function propertySchema(schema: StructuralSchema | undefined, key: string): StructuralSchema | undefined {
  return schema?.properties && Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
}

/**
 * Removes, in place, fields the schema does not know (kube's default field handling) and nulls in fields that
 * are not nullable. Returns the paths of the unknown fields, for strict and warning field validation.
 */
export function prune(value: unknown, schema: StructuralSchema, path: string): string[] {
  const unknown: string[] = [];
  walk(value, schema, path, unknown);
  return unknown;
}

function walk(value: unknown, schema: StructuralSchema, path: string, unknown: string[]): void {
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((item, i) => walk(item, schema.items!, `${path}[${i}]`, unknown));
    return;
  }
  if (!isPlainObject(value)) return;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    const property = propertySchema(schema, key);
    const child = property ?? (isPlainObject(schema.additionalProperties) ? schema.additionalProperties : undefined);
    const childPath = property ? `${path}.${key}` : `${path}[${key}]`;
    if (!child) {
      if (!preserve && schema.additionalProperties !== true) {
        unknown.push(`${path}.${key}`);
        delete value[key];
      }
      continue;
    }
    if (value[key] === null && !child.nullable) {
      delete value[key];
      continue;
    }
    walk(value[key], child, childPath, unknown);
  }
}

/** Checks `value`; on update `old` is the value before, whose unchanged parts may keep their errors (ratcheting). */
export type SchemaValidator = (value: unknown, old?: unknown) => FieldError[];

/** The compilations of validators not yet used, for compileWaitingSchemas. */
const waitingCompilations = new Set<() => void>();

/**
 * Compiles a validator; `root` is the field path of the value it checks ("" for a whole object). Compiled on first
 * use, or by compileWaitingSchemas: compiling every kind's schema took seconds of a start on a busy machine.
 */
export function compileSchema(schema: StructuralSchema, root = ''): SchemaValidator {
  let validate: ValidateFunction | undefined;
  const compile = () => {
    waitingCompilations.delete(compile);
    return (validate ??= newAjv().compile(toJsonSchema(schema)));
  };
  waitingCompilations.add(compile);
  return (value, old) => {
    const check = compile();
    if (check(value)) return [];
    const unchanged = old === undefined ? () => false : ratchets(value, old, schema);
    return (check.errors ?? []).filter((e) => !unchanged(e.instancePath)).map((e) => toFieldError(e, schema, root));
  };
}

/**
 * Compiles the validators made so far and not yet used, one a turn of the event loop (each takes 10-30 ms), so that
 * the first write of each kind after a start does not wait for its schema. Resolves with how many it compiled.
 */
export async function compileWaitingSchemas(): Promise<number> {
  let compiled = 0;
  for (const compile of waitingCompilations) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!waitingCompilations.has(compile)) continue;
    compile();
    compiled++;
  }
  return compiled;
}

/**
 * kube's CRD validation ratcheting (on by default since 1.30, GA in 1.33): an update may keep a schema error in a
 * value it did not change. An error at a JSON pointer is dropped when the value there, or one above it, can be
 * paired with the old value at the same place and equals it. Pairs follow object properties and the items of
 * `x-kubernetes-list-type: map` lists by their keys; items of other lists are never paired (kube's default list
 * is atomic), so in such a list only the whole list ratchets: a list that is too long may stay as it is, but any
 * change to it must bring it within the limit. kube drops ratcheted schema errors without a warning, and so does
 * this (rules, cel/rules.ts, warn about theirs, as kube's do).
 */
function ratchets(value: unknown, old: unknown, schema: StructuralSchema): (pointer: string) => boolean {
  const memo = new Map<string, boolean>();
  return (pointer) => {
    const segments = pointer.split('/').slice(1);
    let at: StructuralSchema | undefined = schema;
    let v = value;
    let o = old;
    for (let i = 0; ; i++) {
      const prefix = segments.slice(0, i).join('/');
      let same = memo.get(prefix);
      if (same === undefined) memo.set(prefix, (same = jsonEqual(v, o)));
      if (same) return true;
      if (i === segments.length || !at) return false;
      const seg = segments[i].replace(/~1/g, '/').replace(/~0/g, '~');
      if (Array.isArray(v)) {
        const item: unknown = v[Number(seg)];
        o = listMapItem(at, o, item);
        v = item;
        at = at.items;
      } else if (isPlainObject(v) && isPlainObject(o) && Object.hasOwn(o, seg)) {
        v = v[seg];
        o = o[seg];
        at = propertySchema(at, seg) ?? (isPlainObject(at.additionalProperties) ? at.additionalProperties : undefined);
      } else return false;
      if (o === undefined) return false;
    }
  };
}

/** The old item with the same keys as `item`, in a list-type map; nothing for other lists (they are atomic). */
function listMapItem(schema: StructuralSchema, old: unknown, item: unknown): unknown {
  const keys = schema['x-kubernetes-list-map-keys'] as string[] | undefined;
  if (schema['x-kubernetes-list-type'] !== 'map' || !keys?.length || !Array.isArray(old) || !isPlainObject(item))
    return undefined;
  return old.find((o) => isPlainObject(o) && keys.every((k) => jsonEqual(o[k], item[k])));
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Turns ajv's JSON pointer into a field path, using the schema to tell properties (`.a`) from map keys (`[a]`). */
function fieldPath(pointer: string, schema: StructuralSchema, root: string): string {
  let path = root;
  let at: StructuralSchema | undefined = schema;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const property = propertySchema(at, seg);
    if (property) {
      path = path ? `${path}.${seg}` : seg;
      at = property;
    } else if (at?.items) {
      path = `${path}[${seg}]`;
      at = at.items;
    } else {
      path = `${path}[${seg}]`;
      at = isPlainObject(at?.additionalProperties) ? (at!.additionalProperties as StructuralSchema) : undefined;
    }
  }
  return path;
}

function toFieldError(e: ErrorObject, schema: StructuralSchema, root: string): FieldError {
  const path = fieldPath(e.instancePath, schema, root);
  const at = path || root || '<root>';
  const p = e.params as {
    missingProperty?: string;
    type?: string | string[];
    allowedValues?: unknown[];
    format?: string;
    pattern?: string;
    limit?: number;
  };
  switch (e.keyword) {
    case 'required': {
      const missing = path ? `${path}.${p.missingProperty}` : (p.missingProperty ?? '');
      return fieldError.required(missing);
    }
    case 'type':
      return fieldError.typeInvalid(
        at,
        jsonType(e.data),
        `${at} in body must be of type ${[p.type].flat().join(',')}: ${JSON.stringify(jsonType(e.data))}`,
      );
    case 'enum':
      return fieldError.notSupported(at, e.data, (p.allowedValues as unknown[]).map(String));
    case 'format':
      // kube says only "must be of type byte" and echoes the value; a byte field holds secret data, and someone who
      // pasted the plain text needs to hear that base64 is wanted, so name it and print the value's type instead.
      if (p.format === 'byte') {
        return fieldError.invalid(
          at,
          jsonType(e.data),
          `${at} in body must be of type byte: a base64 string (RFC 4648, padded), e.g. "aGVsbG8=" for "hello"`,
        );
      }
      return fieldError.invalid(at, e.data, `${at} in body must be of type ${p.format}: ${JSON.stringify(e.data)}`);
    case 'pattern':
      return fieldError.invalid(at, e.data, `${at} in body should match '${p.pattern}'`);
    case 'maxLength':
      return fieldError.tooLong(at, p.limit!);
    case 'minLength':
      return fieldError.invalid(at, e.data, `${at} in body should be at least ${p.limit} chars long`);
    case 'maxItems':
      return fieldError.tooMany(at, (e.data as unknown[]).length, p.limit!);
    case 'minItems':
      return fieldError.invalid(at, e.data, `${at} in body should have at least ${p.limit} items`);
    case 'minimum':
      return fieldError.invalid(at, e.data, `${at} in body should be greater than or equal to ${p.limit}`);
    case 'maximum':
      return fieldError.invalid(at, e.data, `${at} in body should be less than or equal to ${p.limit}`);
    default:
      return fieldError.invalid(at, e.data, `${at} in body ${e.message ?? 'is invalid'}`);
  }
}
