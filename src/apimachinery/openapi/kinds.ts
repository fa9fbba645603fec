/**
 * The schema of each kind as the OpenAPI documents publish it, the way apiextensions-apiserver builds a CRD's
 * (controller/openapi/builder): its CRD openAPIV3Schema with TypeMeta and metadata pointing at ObjectMeta, made
 * structural for v2 (what kubectl's v2 validation can take) or unfolded for v3, plus the list kind; and the meta/v1
 * definitions rendered for either version.
 */
import type { StructuralSchema } from '../schema.js';
import { GVK_EXTENSION, childSchemas, gvkExtension, ref, visit, type Json } from './common.js';
import {
  LIST_META,
  LIST_METADATA_DESCRIPTION,
  META_V1_DEFINITIONS,
  OBJECT_META,
  OBJECT_METADATA_DESCRIPTION,
  CONVENTIONS,
  TYPE_META,
} from './metav1.js';

/** What a kind's schema is made from: a resource definition, or an action's request kind. */
export interface KindSource {
  group: string;
  version: string;
  kind: string;
  schema: StructuralSchema;
}

/** A kind the generic store serves, with its list (the registry's ResourceDefinition is one). */
export interface StoredKind extends KindSource {
  listKind: string;
  plural: string;
  namespaced: boolean;
  hasStatus: boolean;
}

/** apiextensions' definition name for a kind: the group reversed, then version and kind (util.ToRESTFriendlyName). */
export function schemaName(group: string, version: string, kind: string): string {
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

const INT_OR_STRING = [{ type: 'integer' }, { type: 'string' }];

function isIntOrStringAnyOf(anyOf: unknown): boolean {
  return JSON.stringify(anyOf) === JSON.stringify(INT_OR_STRING);
}

/** Structural.Unfold: x-kubernetes-int-or-string spelled out as anyOf integer/string. */
function unfold(schema: Json): void {
  visit(schema, (s) => {
    if (s['x-kubernetes-int-or-string'] !== true) return;
    if (isIntOrStringAnyOf(s.anyOf) || isIntOrStringAnyOf(s.allOf?.[0]?.anyOf)) return;
    if (s.anyOf === undefined) s.anyOf = structuredClone(INT_OR_STRING);
    else s.allOf = [{ anyOf: structuredClone(INT_OR_STRING) }, ...(s.allOf ?? [])];
  });
}

/** apiextensions' ToStructuralOpenAPIV2: drop what OpenAPI v2 (and kubectl's v2 validation) cannot take. */
function toStructuralV2(schema: Json): void {
  visit(schema, (s) => {
    delete s.allOf;
    delete s.oneOf;
    delete s.anyOf;
    delete s.not;
    if (s.nullable) {
      delete s.type;
      delete s.nullable;
      delete s.items;
      delete s.properties;
    }
    const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
    if (preserve) {
      delete s.items;
      delete s.properties;
    }
    if (s.items === undefined && s.type === 'array') delete s.type;
    if (preserve && s.type === 'object') delete s.type;
    if (Array.isArray(s.required) && s.properties) {
      s.required = s.required.filter((f: string) => !s.properties[f]?.nullable);
      if (s.required.length === 0) delete s.required;
    }
    if (s.additionalProperties?.nullable) delete s.required;
  });
}

/** handler.PruneDefaults: v2 documents carry no defaults. */
function pruneDefaults(schema: Json): void {
  visit(schema, (s) => {
    delete s.default;
  });
}

/** Embedded resources (x-kubernetes-embedded-resource) get apiVersion, kind and metadata, as the builder adds them. */
function addEmbeddedProperties(s: Json, v2: boolean): void {
  for (const child of childSchemas(s)) addEmbeddedProperties(child, v2);
  if (v2 && s['x-kubernetes-preserve-unknown-fields'] === true) return;
  if (s['x-kubernetes-embedded-resource'] !== true) return;
  s.properties = {
    ...s.properties,
    apiVersion: { ...TYPE_META.apiVersion },
    kind: { ...TYPE_META.kind },
    metadata: ref(OBJECT_META, v2, { description: OBJECT_METADATA_DESCRIPTION }),
  };
  const required = new Set<string>(s.required ?? []);
  s.required = [...(s.required ?? []), ...['kind', 'apiVersion'].filter((f) => !required.has(f))];
}

/** The schema of a kind: its CRD schema, with TypeMeta and ObjectMeta as kube-apiserver publishes them. */
export function kindSchema(def: KindSource, v2: boolean): Json {
  const gvk = gvkExtension(def.group, def.version, def.kind);
  const crd = structuredClone(def.schema) as StructuralSchema & Json;
  // kubectl's v2 validation would refuse every field of an object that keeps unknown fields: publish just "object".
  if (v2 && crd['x-kubernetes-preserve-unknown-fields'] === true) return { type: 'object', [GVK_EXTENSION]: gvk };
  if (v2) toStructuralV2(crd);
  else unfold(crd);
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = (crd.properties ?? {}) as Json;
  const schema: Json = {
    ...crd,
    properties: {
      apiVersion: { ...TYPE_META.apiVersion },
      kind: { ...TYPE_META.kind },
      metadata: ref(OBJECT_META, v2, { description: OBJECT_METADATA_DESCRIPTION }),
      ...rest,
    },
  };
  addEmbeddedProperties(schema, v2);
  if (v2) pruneDefaults(schema);
  schema[GVK_EXTENSION] = gvk;
  return schema;
}

/** The schema of a kind's list, as apiextensions' builder writes it: items of the kind, and ListMeta. */
export function listSchema(def: StoredKind, v2: boolean): Json {
  const item = schemaName(def.group, def.version, def.kind);
  return {
    description: `${def.listKind} is a list of ${def.kind}`,
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: { ...TYPE_META.apiVersion },
      items: { type: 'array', description: `List of ${def.plural}. More info: ${CONVENTIONS}`, items: ref(item, v2) },
      kind: { ...TYPE_META.kind },
      metadata: ref(LIST_META, v2, { description: LIST_METADATA_DESCRIPTION }),
    },
    [GVK_EXTENSION]: gvkExtension(def.group, def.version, def.listKind),
  };
}

/** The meta/v1 definitions for one OpenAPI version: references rendered, `nullable` left out (see metav1.ts). */
export function metaSchemas(v2: boolean): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(META_V1_DEFINITIONS).map(([name, definition]) => [
      name,
      publishMetaSchema(structuredClone(definition), v2),
    ]),
  );
}

function publishMetaSchema(definition: Json, v2: boolean): Json {
  const { $ref, nullable: _nullable, ...rest } = definition;
  if (typeof $ref === 'string') return ref($ref, v2, rest);
  const out: Json = { ...rest };
  if (out.properties)
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Json).map(([k, s]) => [k, publishMetaSchema(s, v2)]),
    );
  if (out.items) out.items = publishMetaSchema(out.items, v2);
  if (out.additionalProperties && typeof out.additionalProperties === 'object')
    out.additionalProperties = publishMetaSchema(out.additionalProperties, v2);
  return out;
}
