/**
 * The OpenAPI documents in protobuf, as kube-openapi serves them (handler.ToProtoBinary, handler3.ToV3ProtoBinary):
 * the JSON document read into gnostic's openapi_v2.Document (or openapi_v3.Document) the way gnostic's
 * ParseDocument reads it, then encoded. The reading follows the message definitions: a JSON key is the field of the
 * same name in camelCase (`$ref` is `_ref`), `x-` keys are the vendor extensions, an object that is a map is a list
 * of Named pairs in the document's order, a value of type Any is its YAML, and a oneof takes the last of its forms
 * that reads without error. What gnostic refuses (an unknown key, a missing required key, a value out of its enum)
 * is refused here too, naming the place, as kube would fail to serve such a document.
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import type protobuf from 'protobufjs';
import { lazyRequire } from '../../lazyrequire.js';

type Message = Record<string, unknown>;

/** What gnostic's generated readers check beyond the message definitions: required keys and enum values. */
interface Checks {
  required: Record<string, string[]>;
  enums: Record<string, Record<string, string[]>>;
  /** Messages with fixed fields that take their other keys, when these match, as Named pairs in `field`. */
  patterned: Record<string, { field: string; pattern: RegExp }>;
}

// Loaded on the first protobuf request: kubectl asks for it, most clients never do.
const loadProtobuf = lazyRequire<typeof protobuf>('protobufjs');

const COLLECTION_FORMATS = ['csv', 'ssv', 'tsv', 'pipes'];
const PARAMETER_TYPES = ['string', 'number', 'boolean', 'integer', 'array'];
const SCHEMES = ['http', 'https', 'ws', 'wss'];

const V2_CHECKS: Checks = {
  required: {
    ApiKeySecurity: ['in', 'name', 'type'],
    BasicAuthenticationSecurity: ['type'],
    BodyParameter: ['in', 'name', 'schema'],
    Document: ['info', 'paths', 'swagger'],
    ExternalDocs: ['url'],
    FileSchema: ['type'],
    Header: ['type'],
    Info: ['title', 'version'],
    JsonReference: ['$ref'],
    License: ['name'],
    // NonBodyParameter's own required keys are dropped by gnostic as soon as one of its forms reads.
    Oauth2AccessCodeSecurity: ['authorizationUrl', 'flow', 'tokenUrl', 'type'],
    Oauth2ApplicationSecurity: ['flow', 'tokenUrl', 'type'],
    Oauth2ImplicitSecurity: ['authorizationUrl', 'flow', 'type'],
    Oauth2PasswordSecurity: ['flow', 'tokenUrl', 'type'],
    Operation: ['responses'],
    PathParameterSubSchema: ['required'],
    Response: ['description'],
    Tag: ['name'],
  },
  enums: {
    ApiKeySecurity: { type: ['apiKey'], in: ['header', 'query'] },
    BasicAuthenticationSecurity: { type: ['basic'] },
    BodyParameter: { in: ['body'] },
    Document: { swagger: ['2.0'], schemes: SCHEMES },
    FileSchema: { type: ['file'] },
    FormDataParameterSubSchema: {
      in: ['formData'],
      type: [...PARAMETER_TYPES, 'file'],
      collectionFormat: [...COLLECTION_FORMATS, 'multi'],
    },
    Header: { type: PARAMETER_TYPES, collectionFormat: COLLECTION_FORMATS },
    HeaderParameterSubSchema: { in: ['header'], type: PARAMETER_TYPES, collectionFormat: COLLECTION_FORMATS },
    Oauth2AccessCodeSecurity: { type: ['oauth2'], flow: ['accessCode'] },
    Oauth2ApplicationSecurity: { type: ['oauth2'], flow: ['application'] },
    Oauth2ImplicitSecurity: { type: ['oauth2'], flow: ['implicit'] },
    Oauth2PasswordSecurity: { type: ['oauth2'], flow: ['password'] },
    Operation: { schemes: SCHEMES },
    PathParameterSubSchema: { in: ['path'], type: PARAMETER_TYPES, collectionFormat: COLLECTION_FORMATS },
    PrimitivesItems: { type: PARAMETER_TYPES, collectionFormat: COLLECTION_FORMATS },
    QueryParameterSubSchema: {
      in: ['query'],
      type: PARAMETER_TYPES,
      collectionFormat: [...COLLECTION_FORMATS, 'multi'],
    },
  },
  patterned: {
    Paths: { field: 'path', pattern: /^\// },
    Responses: { field: 'response_code', pattern: /^([0-9]{3})$|^(default)$/ },
  },
};

const V3_CHECKS: Checks = {
  required: {
    Discriminator: ['propertyName'],
    Document: ['info', 'openapi', 'paths'],
    ExternalDocs: ['url'],
    Info: ['title', 'version'],
    License: ['name'],
    Operation: ['responses'],
    Parameter: ['in', 'name'],
    Reference: ['$ref'],
    RequestBody: ['content'],
    Response: ['description'],
    SecurityScheme: ['type'],
    Server: ['url'],
    ServerVariable: ['default'],
    Tag: ['name'],
  },
  enums: {},
  patterned: {
    Callback: { field: 'path', pattern: /^/ },
    Paths: { field: 'path', pattern: /^\// },
    Responses: { field: 'response_or_reference', pattern: /^([0-9X]{3})$/ },
  },
};

/** The fields vendor extensions (`x-` keys) go to, in v2 and v3. */
const EXTENSION_FIELDS = ['vendor_extension', 'specification_extension'];

/**
 * A JSON value read into a scalar field as gnostic reads the YAML scalar (undefined: refused): a string field takes
 * a string, an integer (its digits) or null (empty), as compiler.StringForScalarNode does.
 */
const SCALARS: Record<string, (v: unknown) => unknown> = {
  string: (v) => (typeof v === 'string' ? v : Number.isInteger(v) ? String(v) : v === null ? '' : undefined),
  bool: (v) => (typeof v === 'boolean' ? v : undefined),
  double: (v) => (typeof v === 'number' ? v : undefined),
  int64: (v) => (Number.isInteger(v) ? v : undefined),
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A key as a JSON pointer writes it (errors name places as #/paths/~1apis~1.../get). */
const pointerToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** A field's name in the JSON document: `_ref` is `$ref`, the rest camelCase. */
function jsonName(field: protobuf.Field): string {
  if (field.name === '_ref') return '$ref';
  return field.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** As gnostic's compiler.Marshal writes a node: block-style YAML, long lines unfolded. */
function toYaml(value: unknown): string {
  return yaml.dump(value, { lineWidth: -1, noRefs: true });
}

class DocumentReader {
  constructor(private readonly checks: Checks) {}

  message(value: unknown, type: protobuf.Type, at: string): Message {
    switch (type.name) {
      case 'Any':
        return { yaml: toYaml(value) };
      case 'TypeItem':
        // A type is one name or a list of them.
        if (typeof value === 'string') return { value: [value] };
        return { value: this.strings(value, at) };
      case 'StringArray':
        return { value: this.strings(value, at) };
      case 'DefaultType':
        // v3's default is read by its YAML type alone; any other value leaves it empty, without error.
        if (typeof value === 'number') return { number: value };
        if (typeof value === 'boolean') return { boolean: value };
        if (typeof value === 'string') return { string: value };
        return {};
      case 'ItemsItem': {
        // gnostic reads only the single-schema form of items into its list.
        const [field] = type.fieldsArray;
        if (!isObject(value)) throw new Error(`${at}: items must be a schema object`);
        return { [field.name]: [this.value(value, field, at)] };
      }
    }
    const required = this.checks.required[type.name] ?? [];
    if (required.length) {
      const missing = required.filter((k) => !isObject(value) || !(k in value));
      if (missing.length) throw new Error(`${at}: ${type.name} is missing required ${missing.join(', ')}`);
    }
    const oneof = type.oneofs?.oneof;
    if (oneof) return this.oneOf(value, type, oneof, at);
    if (!isObject(value)) throw new Error(`${at}: ${type.name} must be an object`);
    const fields = type.fieldsArray;
    if (fields.length === 1 && fields[0].name === 'additional_properties' && fields[0].repeated) {
      return { additional_properties: this.named(value, fields[0], at) };
    }
    return this.fields(value, type, at);
  }

  /** A message with its own fields: each key read into its field, `x-` keys into the extensions. */
  private fields(value: Record<string, unknown>, type: protobuf.Type, at: string): Message {
    const byJsonName = new Map(type.fieldsArray.map((f) => [jsonName(f), f]));
    const extensions = type.fieldsArray.find((f) => EXTENSION_FIELDS.includes(f.name));
    const patterned = this.checks.patterned[type.name];
    const patternedField = patterned && type.fields[patterned.field];
    const enums = this.checks.enums[type.name] ?? {};
    const out: Message = {};
    const list = (field: string) => (out[field] ??= []) as unknown[];
    for (const [key, v] of Object.entries(value)) {
      const here = `${at}/${pointerToken(key)}`;
      const field = byJsonName.get(key);
      if (field && field !== extensions && field !== patternedField) {
        const allowed = enums[key];
        if (allowed) {
          for (const s of Array.isArray(v) ? v : [v]) {
            if (!allowed.includes(s as string)) {
              throw new Error(`${here}: ${JSON.stringify(s)} is not one of ${allowed.join(', ')}`);
            }
          }
        }
        out[field.name] = this.field(v, field, here);
      } else if (key.startsWith('x-') && extensions) {
        list(extensions.name).push({ name: key, value: { yaml: toYaml(v) } });
      } else if (patternedField && patterned.pattern.test(key)) {
        list(patternedField.name).push({ name: key, value: this.namedValue(v, patternedField, here) });
      } else {
        throw new Error(`${here}: ${type.name} has no field ${JSON.stringify(key)}`);
      }
    }
    return out;
  }

  /**
   * A oneof: like gnostic, every form is tried in order and the last one that reads is kept; a message form is
   * tried only on an object.
   */
  private oneOf(value: unknown, type: protobuf.Type, oneof: protobuf.OneOf, at: string): Message {
    let chosen: Message | undefined;
    const failures: string[] = [];
    for (const field of oneof.fieldsArray) {
      try {
        if (field.resolve().resolvedType instanceof loadProtobuf().Type && !isObject(value)) {
          throw new Error(`${at}: ${field.name} must be an object`);
        }
        chosen = { [field.name]: this.value(value, field, at) };
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    if (!chosen) throw new Error(`${at}: not a valid ${type.name} (${failures.join('; ')})`);
    return chosen;
  }

  /** A map's entries as Named pairs, in the document's order. */
  private named(value: Record<string, unknown>, list: protobuf.Field, at: string): Message[] {
    return Object.entries(value).map(([name, v]) => ({
      name,
      value: this.namedValue(v, list, `${at}/${pointerToken(name)}`),
    }));
  }

  private namedValue(value: unknown, list: protobuf.Field, at: string): unknown {
    const pair = list.resolve().resolvedType as protobuf.Type;
    return this.value(value, pair.fields.value, at);
  }

  private field(value: unknown, field: protobuf.Field, at: string): unknown {
    if (!field.repeated) return this.value(value, field, at);
    if (!Array.isArray(value)) throw new Error(`${at}: must be a list`);
    return value.map((item, i) => this.value(item, field, `${at}/${i}`));
  }

  private value(value: unknown, field: protobuf.Field, at: string): unknown {
    const type = field.resolve().resolvedType;
    if (type instanceof loadProtobuf().Type) return this.message(value, type, at);
    const scalar = SCALARS[field.type]?.(value);
    if (scalar === undefined) throw new Error(`${at}: ${JSON.stringify(value)} is not of type ${field.type}`);
    return scalar;
  }

  private strings(value: unknown, at: string): string[] {
    if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) {
      throw new Error(`${at}: must be a list of strings`);
    }
    return value;
  }
}

/**
 * A message type of one of gnostic's .proto files, read and parsed on first use. The files are
 * github.com/google/gnostic-models' openapiv2/OpenAPIv2.proto and openapiv3/OpenAPIv3.proto, unchanged (commit
 * a84a29ee8efac8d764f8dd251aa316fcaa61c60c, the module kube-openapi encodes with), in proto/ next to this module:
 * the build ships them beside the compiled code (scripts/copy-assets.mjs).
 */
function documentType(file: string, name: string): () => protobuf.Type {
  let type: protobuf.Type | undefined;
  return () => {
    if (type) return type;
    const pb = loadProtobuf();
    const root = new pb.Root();
    root.addJSON(pb.common.get('google/protobuf/any.proto')!.nested!);
    // The .proto field names (vendor_extension, not vendorExtension) are the names on the wire's descriptor.
    pb.parse(readFileSync(new URL(`./proto/${file}`, import.meta.url), 'utf8'), root, { keepCase: true });
    return (type = root.resolveAll().lookupType(name));
  };
}

/** gnostic's openapi_v2.Document and openapi_v3.Document messages. */
export const openAPIV2Document = documentType('OpenAPIv2.proto', 'openapi.v2.Document');
export const openAPIV3Document = documentType('OpenAPIv3.proto', 'openapi.v3.Document');

/** The Swagger 2.0 JSON document as openapi_v2.Document in protobuf (kube-openapi's ToProtoBinary). */
export function openAPIV2Protobuf(doc: unknown): Buffer {
  const type = openAPIV2Document();
  const message = new DocumentReader(V2_CHECKS).message(doc, type, '#');
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

/** An OpenAPI 3.0 JSON document as openapi_v3.Document in protobuf (kube-openapi's ToV3ProtoBinary). */
export function openAPIV3Protobuf(doc: unknown): Buffer {
  const type = openAPIV3Document();
  const message = new DocumentReader(V3_CHECKS).message(doc, type, '#');
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}
