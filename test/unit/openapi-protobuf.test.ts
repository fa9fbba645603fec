/**
 * The OpenAPI documents in protobuf (gnostic's openapi_v2/openapi_v3 Document, as kube-openapi serves them):
 * the .proto files are upstream's, the served JSON documents encode into messages that decode with
 * protobufjs back to the same documents, the parts kubectl reads sit where it reads them, and what gnostic
 * refuses is refused here too, naming the place.
 */
import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import protobuf from 'protobufjs';
import { buildOpenAPIV2, buildOpenAPIV3 } from '../../src/apimachinery/openapi/documents.js';
import {
  openAPIV2Document,
  openAPIV3Document,
  openAPIV2Protobuf,
  openAPIV3Protobuf,
} from '../../src/apimachinery/openapi/protobuf.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { repoRoot } from '../support/tools.js';

const GROUP = 'management.platform.sh';
const defs = loadDefinitions();
const PROTO_DIR = join(repoRoot, 'src', 'apimachinery', 'openapi', 'proto');

/** The git blob id of a text, as `git hash-object` (and GitHub's tree listings) give it. */
const gitBlobId = (text: string) => {
  const bytes = Buffer.from(text, 'utf8');
  return createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${bytes.length}\0`), bytes]))
    .digest('hex');
};

/** A decoded message as plain data, with the .proto field names. */
const plain = (type: protobuf.Type, bytes: Buffer) =>
  type.toObject(type.decode(bytes), { longs: Number, oneofs: false, defaults: false }) as Record<string, any>;

/**
 * A decoded message read back into the JSON document it was made from: the inverse of gnostic's reading (Named
 * pairs and extensions become keys, Any its YAML's value, `_ref` `$ref`, a oneof its one form).
 */
function backToJson(value: any, type: protobuf.Type): any {
  switch (type.name) {
    case 'Any':
      return yaml.load(value.yaml);
    case 'TypeItem':
      return value.value.length === 1 ? value.value[0] : value.value;
    case 'StringArray':
      return value.value ?? [];
    case 'ItemsItem': {
      const [field] = type.fieldsArray;
      return backToJson(value[field.name][0], field.resolvedType as protobuf.Type);
    }
  }
  const out: Record<string, any> = {};
  for (const field of type.fieldsArray) {
    if (value[field.name] === undefined) continue;
    const v = value[field.name];
    const sub = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const read = (x: any) => (sub ? backToJson(x, sub) : x);
    if (type.oneofs?.oneof) return read(v);
    const pairType = sub?.name.startsWith('Named') ? sub : undefined;
    if (field.repeated && pairType) {
      const valueType = pairType.fields.value.resolvedType;
      for (const pair of v) {
        out[pair.name] = valueType instanceof protobuf.Type ? backToJson(pair.value, valueType) : pair.value;
      }
    } else {
      const name = field.name === '_ref' ? '$ref' : field.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
      out[name] = field.repeated ? v.map(read) : read(v);
    }
  }
  return out;
}

describe('the .proto texts', () => {
  test("are gnostic-models' own: each file in proto/ is upstream's blob", () => {
    // github.com/google/gnostic-models at a84a29ee8efac8d764f8dd251aa316fcaa61c60c: `git ls-tree` blob ids.
    const upstream = {
      'OpenAPIv2.proto': '49adafcc8e2b925e06bef9c3a372b3af7b2debf6',
      'OpenAPIv3.proto': 'af4b6254bc97980c2213477d9e2630d75225caeb',
    };
    for (const [file, blob] of Object.entries(upstream))
      expect(gitBlobId(readFileSync(join(PROTO_DIR, file), 'utf8'))).toBe(blob);
  });
});

describe('/openapi/v2 in protobuf', () => {
  const doc = buildOpenAPIV2(defs);
  const json = JSON.parse(JSON.stringify(doc));
  const decoded = plain(openAPIV2Document(), openAPIV2Protobuf(json));

  test('decodes with protobufjs back to the JSON document', () => {
    expect(backToJson(decoded, openAPIV2Document())).toEqual(json);
  });

  test('definitions are Named pairs in the order of the document, each schema where kubectl reads it', () => {
    const names = decoded.definitions.additional_properties.map((p: any) => p.name);
    expect(names).toEqual(Object.keys(json.definitions));
    const cluster = decoded.definitions.additional_properties.find(
      (p: any) => p.name === 'sh.platform.management.v1.Cluster',
    ).value;
    expect(cluster.type).toEqual({ value: ['object'] });
    // Extensions are NamedAny with the value as YAML (kube-openapi's proto models read them with yaml.Unmarshal).
    const gvk = cluster.vendor_extension.find((e: any) => e.name === 'x-kubernetes-group-version-kind');
    expect(yaml.load(gvk.value.yaml)).toEqual([{ group: GROUP, kind: 'Cluster', version: 'v1' }]);
    const props = cluster.properties.additional_properties;
    expect(props.map((p: any) => p.name)).toEqual(
      Object.keys(json.definitions['sh.platform.management.v1.Cluster'].properties),
    );
    expect(props.find((p: any) => p.name === 'metadata').value._ref).toBe(
      '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
    );
    const meta = decoded.definitions.additional_properties.find(
      (p: any) => p.name === 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
    ).value.properties.additional_properties;
    const labels = meta.find((p: any) => p.name === 'labels').value;
    expect(labels.additional_properties.schema.type).toEqual({ value: ['string'] });
    const finalizers = meta.find((p: any) => p.name === 'finalizers').value;
    expect(finalizers.items.schema[0].type).toEqual({ value: ['string'] });
  });

  test('parameters take the form their `in` says, responses are by code', () => {
    const path = decoded.paths.path.find((p: any) => p.name === `/apis/${GROUP}/v1/clusters`).value;
    const params = path.post.parameters.map((p: any) => p.parameter);
    const body = params.find((p: any) => p.body_parameter).body_parameter;
    expect(body).toMatchObject({ in: 'body', name: 'body', required: true });
    expect(body.schema._ref).toBe('#/definitions/sh.platform.management.v1.Cluster');
    const query = params.map((p: any) => p.non_body_parameter?.query_parameter_sub_schema).filter(Boolean);
    expect(query.map((q: any) => q.name)).toContain('fieldValidation');
    expect(path.post.responses.response_code.map((r: any) => r.name)).toEqual(
      Object.keys(json.paths[`/apis/${GROUP}/v1/clusters`].post.responses),
    );
  });

  test('what gnostic refuses is refused, saying where and why', () => {
    const withSchema = (schema: any) => ({ ...json, definitions: { ...json.definitions, Broken: schema } });
    expect(() => openAPIV2Protobuf(withSchema({ type: 'object', nullable: true }))).toThrow(
      '#/definitions/Broken/nullable: Schema has no field "nullable"',
    );
    expect(() => openAPIV2Protobuf(withSchema({ type: 'object', maxLength: 1.5 }))).toThrow(
      '#/definitions/Broken/maxLength: 1.5 is not of type int64',
    );
    expect(() => openAPIV2Protobuf({ ...json, swagger: '3.0' })).toThrow('#/swagger: "3.0" is not one of 2.0');
    const { info, ...noInfo } = json;
    expect(info).toBeDefined();
    expect(() => openAPIV2Protobuf(noInfo)).toThrow('#: Document is missing required info');
    const cookie = {
      ...json,
      paths: { '/x': { get: { parameters: [{ in: 'cookie', name: 'c', type: 'string' }], responses: {} } } },
    };
    expect(() => openAPIV2Protobuf(cookie)).toThrow('#/paths/~1x/get/parameters/0: not a valid ParametersItem');
    expect(() => openAPIV2Protobuf({ ...json, paths: { x: {} } })).toThrow('#/paths/x: Paths has no field "x"');
  });
});

describe('/openapi/v3 documents in protobuf', () => {
  const doc = buildOpenAPIV3(defs, GROUP, 'v1');
  const json = JSON.parse(JSON.stringify(doc));
  const decoded = plain(openAPIV3Document(), openAPIV3Protobuf(json));

  test('decode with protobufjs back to the JSON document', () => {
    expect(backToJson(decoded, openAPIV3Document())).toEqual(json);
  });

  test("a default is read by its type, as gnostic's DefaultType; another value leaves it empty", () => {
    const withDefaults = (defaults: unknown[]) => ({
      ...json,
      components: {
        ...json.components,
        schemas: {
          ...json.components.schemas,
          D: { type: 'object', properties: Object.fromEntries(defaults.map((d, i) => [`p${i}`, { default: d }])) },
        },
      },
    });
    const read = plain(openAPIV3Document(), openAPIV3Protobuf(withDefaults([5, 1.5, true, '5', { a: 1 }])));
    const d = read.components.schemas.additional_properties.find((p: any) => p.name === 'D').value.schema;
    expect(d.properties.additional_properties.map((p: any) => p.value.schema.default)).toEqual([
      { number: 5 },
      { number: 1.5 },
      { boolean: true },
      { string: '5' },
      {},
    ]);
  });

  test('a $ref alone is a Reference, a reference with siblings (allOf) a Schema', () => {
    const schemas = decoded.components.schemas.additional_properties;
    const cluster = schemas.find((p: any) => p.name === 'sh.platform.management.v1.Cluster').value.schema;
    expect(cluster.type).toBe('object');
    const meta = cluster.properties.additional_properties.find((p: any) => p.name === 'metadata').value;
    const jsonMeta = json.components.schemas['sh.platform.management.v1.Cluster'].properties.metadata;
    if (jsonMeta.$ref) expect(meta.reference._ref).toBe(jsonMeta.$ref);
    else expect(meta.schema.all_of[0].reference._ref).toBe(jsonMeta.allOf[0].$ref);
    const ops = decoded.paths.path.find((p: any) => p.name === `/apis/${GROUP}/v1/clusters`).value;
    const media = ops.post.request_body.request_body.content.additional_properties;
    expect(media.map((m: any) => m.name)).toEqual(
      Object.keys(json.paths[`/apis/${GROUP}/v1/clusters`].post.requestBody.content),
    );
  });
});
