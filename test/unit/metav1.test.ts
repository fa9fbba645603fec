/**
 * ObjectMeta is described once, as data (src/apimachinery/openapi/metav1.ts). What follows from it stays in step:
 * the TypeScript interfaces (which cannot be derived from data, so this test holds them to it), the schema metadata
 * is decoded and validated with, and structured-merge-diff's type of `metadata` (how apply merges it).
 */
import { describe, expect, test } from '@jest/globals';
import {
  OBJECT_META as OBJECT_META_TYPE,
  type ListType,
  type MapType,
} from '../../src/apimachinery/managedfields/typeinfo.js';
import { decodedSchema, objectMetaSchema } from '../../src/apimachinery/metaschema.js';
import { META, META_V1_DEFINITIONS } from '../../src/apimachinery/openapi/metav1.js';
import type { StructuralSchema } from '../../src/apimachinery/schema.js';
import type { ListMeta, ManagedFieldsEntry, ObjectMeta, OwnerReference } from '../../src/apimachinery/types.js';

/** The JSON type of a TypeScript field type (integers are the only numbers in meta/v1). */
type JsonType<T> = T extends string
  ? 'string'
  : T extends number
    ? 'integer'
    : T extends boolean
      ? 'boolean'
      : T extends readonly unknown[]
        ? 'array'
        : 'object';
/** Every field of T with its JSON type: a literal of this type must name each field, and no other. */
type FieldTypes<T> = { [K in keyof Required<T>]: JsonType<NonNullable<T[K]>> };
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

const OBJECT_META_FIELDS: FieldTypes<ObjectMeta> = {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  selfLink: 'string',
  uid: 'string',
  resourceVersion: 'string',
  generation: 'integer',
  creationTimestamp: 'string',
  deletionTimestamp: 'string',
  deletionGracePeriodSeconds: 'integer',
  labels: 'object',
  annotations: 'object',
  ownerReferences: 'array',
  finalizers: 'array',
  managedFields: 'array',
};
const OWNER_REFERENCE_FIELDS: FieldTypes<OwnerReference> = {
  apiVersion: 'string',
  kind: 'string',
  name: 'string',
  uid: 'string',
  controller: 'boolean',
  blockOwnerDeletion: 'boolean',
};
const OWNER_REFERENCE_REQUIRED: Record<RequiredKeys<OwnerReference>, true> = {
  apiVersion: true,
  kind: true,
  name: true,
  uid: true,
};
const MANAGED_FIELDS_ENTRY_FIELDS: FieldTypes<ManagedFieldsEntry> = {
  manager: 'string',
  operation: 'string',
  apiVersion: 'string',
  time: 'string',
  fieldsType: 'string',
  fieldsV1: 'object',
  subresource: 'string',
};
const LIST_META_FIELDS: FieldTypes<ListMeta> = {
  selfLink: 'string',
  resourceVersion: 'string',
  continue: 'string',
  remainingItemCount: 'integer',
};

function fieldTypes(s: StructuralSchema): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(s.properties ?? {}).map(([name, field]) => [name, field.type]));
}

describe('the TypeScript interfaces follow the meta/v1 definitions', () => {
  test.each([
    ['ObjectMeta', OBJECT_META_FIELDS],
    ['OwnerReference', OWNER_REFERENCE_FIELDS],
    ['ManagedFieldsEntry', MANAGED_FIELDS_ENTRY_FIELDS],
    ['ListMeta', LIST_META_FIELDS],
  ])('%s: the same fields, of the same JSON types', (name, fields) => {
    expect(fieldTypes(decodedSchema(META_V1_DEFINITIONS[`${META}.${name}`]))).toEqual(fields);
  });

  test("OwnerReference's required fields are the interface's non-optional ones", () => {
    expect([...META_V1_DEFINITIONS[`${META}.OwnerReference`].required].sort()).toEqual(
      Object.keys(OWNER_REFERENCE_REQUIRED).sort(),
    );
  });
});

describe('metadata is decoded by the schema derived from ObjectMeta', () => {
  test('the fields and types kube decodes; timestamps RFC 3339, creation and deletion time may be null', () => {
    const p = objectMetaSchema.properties!;
    expect(Object.keys(p).sort()).toEqual(Object.keys(OBJECT_META_FIELDS).sort());
    expect(p.creationTimestamp).toEqual({ type: 'string', format: 'date-time', nullable: true });
    expect(p.deletionTimestamp).toEqual({ type: 'string', format: 'date-time', nullable: true });
    expect(p.generation).toEqual({ type: 'integer', format: 'int64' });
    expect(p.labels).toEqual({ type: 'object', additionalProperties: { type: 'string' } });
    expect(p.ownerReferences.items!.properties!.controller).toEqual({ type: 'boolean' });
    const entry = p.managedFields.items!.properties!;
    expect(entry.time).toEqual({ type: 'string', format: 'date-time' });
    // FieldsV1 is an object of any fields.
    expect(entry.fieldsV1).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  });

  test('documentation, required fields and patch strategies are not part of decoding', () => {
    const text = JSON.stringify(objectMetaSchema);
    for (const word of ['description', 'required', 'x-kubernetes-patch', '$ref', 'allOf'])
      expect(text).not.toContain(word);
  });
});

describe("structured-merge-diff's type of metadata follows ObjectMeta's list and map types", () => {
  const field = (name: string) => OBJECT_META_TYPE.fields.get(name)!;

  test('ownerReferences merge by uid, each reference whole; finalizers are a set; managedFields are replaced whole', () => {
    const owners = field('ownerReferences') as ListType;
    expect(owners).toMatchObject({ kind: 'list', atomic: false, keys: ['uid'] });
    expect(owners.item).toMatchObject({ kind: 'map', atomic: true });
    expect(field('finalizers')).toMatchObject({
      kind: 'list',
      atomic: false,
      keys: [],
      item: { kind: 'scalar', scalar: 'string' },
    });
    expect(field('managedFields')).toMatchObject({ kind: 'list', atomic: true });
  });

  test('labels and annotations are maps merged key by key; the rest scalars', () => {
    for (const name of ['labels', 'annotations'])
      expect(field(name)).toMatchObject({ kind: 'map', atomic: false, element: { kind: 'scalar', scalar: 'string' } });
    expect(field('generation')).toEqual({ kind: 'scalar', scalar: 'numeric' });
    expect(field('creationTimestamp')).toEqual({ kind: 'scalar', scalar: 'string' });
    expect((OBJECT_META_TYPE as MapType).element).toBeUndefined();
  });
});
