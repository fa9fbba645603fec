import { describe, expect, test } from '@jest/globals';
import { compileSchema, prune, type StructuralSchema } from '../../src/apimachinery/schema.js';
import { errorString } from '../../src/apimachinery/field.js';
import { loadDefinitions } from '../../src/registry/definitions.js';

const schema: StructuralSchema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        local: { type: 'boolean' },
        data: { type: 'object', additionalProperties: { type: 'string', format: 'byte' } },
        access: {
          type: 'array',
          items: { type: 'object', properties: { verbs: { type: 'array', items: { type: 'string' } } } },
        },
        note: { type: 'string', nullable: true },
      },
    },
    status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
  },
};

describe('prune', () => {
  test('drops unknown fields at every depth and reports their paths', () => {
    const obj: any = { spec: { local: true, bogus: 1, access: [{ verbs: ['get'], extra: 'x' }] }, top: 1 };
    expect(prune(obj, schema, '')).toEqual(['.spec.bogus', '.spec.access[0].extra', '.top']);
    expect(obj).toEqual({ spec: { local: true, access: [{ verbs: ['get'] }] } });
  });

  test('keeps map entries and fields under x-kubernetes-preserve-unknown-fields', () => {
    const obj: any = { spec: { data: { a: 'eA==' } }, status: { anything: { goes: true } } };
    expect(prune(obj, schema, '')).toEqual([]);
    expect(obj.status.anything.goes).toBe(true);
  });

  test('drops nulls unless the field is nullable', () => {
    const obj: any = { spec: { local: null, note: null } };
    prune(obj, schema, '');
    expect(obj.spec).toEqual({ note: null });
  });
});

describe('compileSchema', () => {
  const validate = compileSchema(schema);

  test('accepts a valid object', () => {
    expect(validate({ spec: { local: false, data: { k: 'aGVsbG8=' } } })).toEqual([]);
  });

  test('names the field and the expected type for a wrong type', () => {
    const [err] = validate({ spec: { local: 'yes' } });
    expect(err.type).toBe('FieldValueTypeInvalid');
    expect(errorString(err)).toBe(
      'spec.local: Invalid value: "string": spec.local in body must be of type boolean: "string"',
    );
  });

  test('reports a bad base64 value at the map key', () => {
    const [err] = validate({ spec: { data: { 'my.key': 'not base64!' } } });
    expect(err.field).toBe('spec.data[my.key]');
    expect(errorString(err)).toBe(
      'spec.data[my.key]: Invalid value: "string": spec.data[my.key] in body must be of type byte: a base64 string (RFC 4648, padded), e.g. "aGVsbG8=" for "hello"',
    );
  });

  test('base64 needs RFC 4648 padding', () => {
    expect(validate({ spec: { data: { k: 'aGVsbG8' } } })).toHaveLength(1);
    expect(validate({ spec: { data: { k: '' } } })).toEqual([]);
  });

  test('reports one error per bad field', () => {
    expect(validate({ spec: { local: 1, access: [{ verbs: 'get' }] } }).map((e) => e.field)).toEqual([
      'spec.local',
      'spec.access[0].verbs',
    ]);
  });
});

describe('the CRDs in crds/', () => {
  const defs = loadDefinitions();

  test('describe SharedSecret (namespaced) and Cluster (cluster-scoped) with a status subresource', () => {
    const byKind = Object.fromEntries(defs.map((d) => [d.kind, d]));
    expect(byKind.SharedSecret).toMatchObject({
      plural: 'sharedsecrets',
      namespaced: true,
      hasStatus: true,
      group: 'management.platform.sh',
      version: 'v1',
    });
    expect(byKind.Cluster).toMatchObject({ plural: 'clusters', namespaced: false, hasStatus: true });
  });

  test('have schemas that compile', () => {
    for (const def of defs) expect(() => compileSchema(def.schema)).not.toThrow();
  });
});
