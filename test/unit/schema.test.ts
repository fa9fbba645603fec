import { describe, expect, test } from '@jest/globals';
import { compileSchema, compileWaitingSchemas, prune, type StructuralSchema } from '../../src/apimachinery/schema.js';
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

  test('a "__proto__" key (JSON.parse makes it an own field) is unknown like any other, whatever its value', () => {
    const obj: any = JSON.parse('{"spec":{"local":true,"__proto__":{"local":false}},"__proto__":null}');
    expect(prune(obj, schema, '')).toEqual(['.spec.__proto__', '.__proto__']);
    expect(Object.keys(obj)).toEqual(['spec']);
    expect(Object.keys(obj.spec)).toEqual(['local']);
  });

  test("fields named as Object.prototype's members are unknown like any other", () => {
    const obj: any = { spec: { local: true, constructor: 'x', toString: { a: 1 }, hasOwnProperty: null } };
    expect(prune(obj, schema, '')).toEqual(['.spec.constructor', '.spec.toString', '.spec.hasOwnProperty']);
    expect(Object.keys(obj.spec)).toEqual(['local']);
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

describe("ratcheting on update (kube 1.33's CRD validation ratcheting)", () => {
  const limited: StructuralSchema = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          name: { type: 'string', maxLength: 3 },
          access: {
            type: 'array',
            maxItems: 2,
            items: { type: 'object', properties: { users: { type: 'array', maxItems: 1, items: { type: 'string' } } } },
          },
          ports: {
            type: 'array',
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['port'],
            items: {
              type: 'object',
              properties: { port: { type: 'integer' }, name: { type: 'string', maxLength: 3 } },
            },
          },
        },
      },
    },
  };
  const validate = compileSchema(limited);
  const fields = (value: unknown, old?: unknown) => validate(value, old).map(errorString);
  const three = [{ users: ['a'] }, { users: ['b'] }, { users: ['c'] }];

  test('a list over its maxItems may stay as it was while the rest changes, silently (kube gives no warning)', () => {
    const old = { spec: { name: 'ok', access: three } };
    expect(fields({ spec: { name: 'new', access: structuredClone(three) } }, old)).toEqual([]);
    expect(fields({ spec: { access: three } })).toEqual(['spec.access: Too many: 3: must have at most 2 items']);
  });

  test('any change to such a list must bring it within the limit: shorter but still too long is refused', () => {
    const old = { spec: { access: [...three, { users: ['d'] }] } };
    expect(fields({ spec: { access: three } }, old)).toEqual(['spec.access: Too many: 3: must have at most 2 items']);
    expect(fields({ spec: { access: three.slice(0, 2) } }, old)).toEqual([]);
  });

  test("an item's error ratchets with its list unchanged; items of a plain list are not paired, so a change elsewhere in it ends that", () => {
    const old = { spec: { access: [{ users: ['a', 'b'] }, { users: ['c'] }] } };
    expect(fields({ spec: { name: 'x', access: [{ users: ['a', 'b'] }, { users: ['c'] }] } }, old)).toEqual([]);
    expect(fields({ spec: { access: [{ users: ['a', 'b'] }, { users: ['d'] }] } }, old)).toEqual([
      'spec.access[0].users: Too many: 2: must have at most 1 items',
    ]);
  });

  test('items of a list-type map are paired by their keys, whatever their order', () => {
    const old = {
      spec: {
        ports: [
          { port: 80, name: 'toolong' },
          { port: 443, name: 'tls' },
        ],
      },
    };
    const reordered = {
      spec: {
        ports: [
          { port: 8443, name: 'new' },
          { port: 80, name: 'toolong' },
        ],
      },
    };
    expect(fields(reordered, old)).toEqual([]);
    const renamed = { spec: { ports: [{ port: 80, name: 'longer' }] } };
    expect(fields(renamed, old)).toEqual(['spec.ports[0].name: Too long: may not be more than 3 bytes']);
  });

  test('a value that was not there before is checked', () => {
    expect(fields({ spec: { name: 'toolong' } }, { spec: {} })).toEqual([
      'spec.name: Too long: may not be more than 3 bytes',
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

  test('have schemas that compile', async () => {
    await compileWaitingSchemas();
    for (const def of defs) compileSchema(def.schema);
    // Validators compile at their first use; these are compiled here, each once.
    expect(await compileWaitingSchemas()).toBe(defs.length);
  });
});

describe('validators compiled in the background', () => {
  test('those not yet used compile, each once, and then check as they would have at their first use', async () => {
    await compileWaitingSchemas();
    const schema: StructuralSchema = { type: 'object', properties: { replicas: { type: 'integer', minimum: 0 } } };
    const waiting = compileSchema(schema);
    const used = compileSchema(schema);
    expect(used({ replicas: 1 })).toEqual([]);
    expect(await compileWaitingSchemas()).toBe(1);
    expect(await compileWaitingSchemas()).toBe(0);
    expect(waiting({ replicas: -1 }).map(errorString)).toEqual([
      'replicas: Invalid value: -1: replicas in body should be greater than or equal to 0',
    ]);
  });
});
