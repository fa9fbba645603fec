/**
 * The structured-merge-diff view of a kind's schema: which nodes are scalars, atomic or granular maps and
 * structs, atomic lists, sets or associative lists with keys. Built from the CRD's structural schema the way
 * kube builds a CRD's type converter: lists are atomic unless x-kubernetes-list-type says set or map, maps
 * and structs are granular unless x-kubernetes-map-type is atomic, x-kubernetes-preserve-unknown-fields makes
 * unknown keys "deduced" (maps granular, lists atomic), and `metadata` is metav1.ObjectMeta.
 */
import { objectMetaSchema } from '../metaschema.js';
import type { StructuralSchema } from '../schema.js';
import { isPlainObject } from '../types.js';
import { keyPE, type PathElement } from './path.js';

export type ScalarKind = 'string' | 'numeric' | 'boolean' | 'untyped';

export interface ScalarType {
  readonly kind: 'scalar';
  readonly scalar: ScalarKind;
}

export interface ListType {
  readonly kind: 'list';
  readonly atomic: boolean;
  /** Key fields of an associative list; empty for a set (when not atomic). */
  readonly keys: readonly string[];
  /** Defaults of key fields, used when an item omits one. */
  readonly keyDefaults: ReadonlyMap<string, unknown>;
  readonly item: TypeNode;
}

export interface MapType {
  readonly kind: 'map';
  readonly atomic: boolean;
  /** Named fields (a struct's properties). */
  readonly fields: ReadonlyMap<string, TypeNode>;
  /** The type of any other key; undefined means other keys are not declared in the schema. */
  readonly element?: TypeNode;
}

/** A node typed by its value: maps are granular with deduced values, lists atomic, the rest scalars. */
export interface DeducedType {
  readonly kind: 'deduced';
}

export type TypeNode = ScalarType | ListType | MapType | DeducedType;
export type Atom = ScalarType | ListType | MapType;

export const DEDUCED: DeducedType = { kind: 'deduced' };
const UNTYPED: ScalarType = { kind: 'scalar', scalar: 'untyped' };
const STRING: ScalarType = { kind: 'scalar', scalar: 'string' };
const NUMERIC: ScalarType = { kind: 'scalar', scalar: 'numeric' };
const BOOLEAN: ScalarType = { kind: 'scalar', scalar: 'boolean' };
const NO_DEFAULTS: ReadonlyMap<string, unknown> = new Map();
const DEDUCED_MAP: MapType = { kind: 'map', atomic: false, fields: new Map(), element: DEDUCED };
const DEDUCED_LIST: ListType = { kind: 'list', atomic: true, keys: [], keyDefaults: NO_DEFAULTS, item: DEDUCED };

/**
 * metav1.ObjectMeta as kube's OpenAPI describes it to structured-merge-diff, compiled from the same schema metadata
 * is decoded with (../metaschema.ts, from ObjectMeta's one description): ownerReferences a map keyed by uid of
 * atomic items, finalizers a set, managedFields atomic, labels and annotations granular maps.
 */
export const OBJECT_META = compile(objectMetaSchema, false) as MapType;

const cache = new WeakMap<StructuralSchema, TypeNode>();

/** The type of a whole object of a kind: its schema with apiVersion, kind and ObjectMeta at the top. */
export function objectType(schema: StructuralSchema): TypeNode {
  const cached = cache.get(schema);
  if (cached) return cached;
  const t = compile(schema, true);
  cache.set(schema, t);
  return t;
}

function compile(s: StructuralSchema, embedded: boolean): TypeNode {
  if (s['x-kubernetes-int-or-string'] === true) return UNTYPED;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const type =
    s.type ?? (s.properties || s.additionalProperties !== undefined ? 'object' : s.items ? 'array' : undefined);
  switch (type) {
    case 'object': {
      const fields = new Map<string, TypeNode>();
      for (const [name, sub] of Object.entries(s.properties ?? {}))
        fields.set(name, compile(sub, sub['x-kubernetes-embedded-resource'] === true));
      if (embedded) {
        fields.set('apiVersion', STRING);
        fields.set('kind', STRING);
        fields.set('metadata', OBJECT_META);
      }
      let element: TypeNode | undefined;
      if (isPlainObject(s.additionalProperties)) element = compile(s.additionalProperties as StructuralSchema, false);
      else if (s.additionalProperties === true || preserve) element = DEDUCED;
      return { kind: 'map', atomic: s['x-kubernetes-map-type'] === 'atomic', fields, element };
    }
    case 'array': {
      const itemSchema = (s.items ?? {}) as StructuralSchema;
      const item = compile(itemSchema, itemSchema['x-kubernetes-embedded-resource'] === true);
      const listType = s['x-kubernetes-list-type'];
      if (listType === 'set') return { kind: 'list', atomic: false, keys: [], keyDefaults: NO_DEFAULTS, item };
      if (listType === 'map') {
        const keys = Array.isArray(s['x-kubernetes-list-map-keys'])
          ? (s['x-kubernetes-list-map-keys'] as string[])
          : [];
        const keyDefaults = new Map<string, unknown>();
        for (const k of keys) {
          const d = itemSchema.properties?.[k]?.default;
          if (d !== undefined) keyDefaults.set(k, d);
        }
        return { kind: 'list', atomic: false, keys, keyDefaults, item };
      }
      return { kind: 'list', atomic: true, keys: [], keyDefaults: NO_DEFAULTS, item };
    }
    case 'string':
      return STRING;
    case 'integer':
    case 'number':
      return NUMERIC;
    case 'boolean':
      return BOOLEAN;
    default:
      return DEDUCED;
  }
}

/** deduceAtom: the concrete shape of a node for a value (a deduced node takes the value's shape; null is a map). */
export function atomFor(t: TypeNode, v: unknown): Atom {
  if (t.kind !== 'deduced') return t;
  if (Array.isArray(v)) return DEDUCED_LIST;
  if (v === null || v === undefined || isPlainObject(v)) return DEDUCED_MAP;
  return UNTYPED;
}

/** The type of a map's key: its named field, else the element type, else undefined (not declared). */
export function fieldType(m: MapType, key: string): TypeNode | undefined {
  return m.fields.get(key) ?? m.element;
}

export function isNamedField(m: MapType, key: string): boolean {
  return m.fields.has(key);
}

/** listItemToPathElement: the key of an associative-list item, or its value in a set; throws the SMD message. */
export function listItemPE(list: ListType, index: number, item: unknown): PathElement {
  if (list.atomic) return { index };
  if (list.keys.length > 0) {
    if (item === null) throw new Error('associative list with keys may not have a null element');
    if (!isPlainObject(item)) throw new Error('associative list with keys may not have non-map elements');
    const fields: [string, unknown][] = [];
    for (const k of list.keys) {
      if (k in item && item[k] !== undefined) fields.push([k, item[k]]);
      else if (list.keyDefaults.has(k)) fields.push([k, list.keyDefaults.get(k)]);
      else
        throw new Error(
          `associative list with keys has an element that omits key field ${JSON.stringify(k)} (and doesn't have default value)`,
        );
    }
    return keyPE(fields);
  }
  if (isPlainObject(item)) throw new Error("associative list without keys has an element that's a map type");
  if (Array.isArray(item)) throw new Error('not supported: associative list with lists as elements');
  if (item === null) throw new Error("associative list without keys has an element that's an explicit null");
  return { value: item };
}
