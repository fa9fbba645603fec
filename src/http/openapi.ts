/**
 * OpenAPI publishing (/openapi/v2, /openapi/v3, /openapi/v3/apis/<group>/<version>), built from the resource
 * definitions the way apiextensions-apiserver builds a CRD's documents (controller/openapi/builder): each kind's
 * schema is its CRD openAPIV3Schema with metadata pointing at ObjectMeta, plus the list kind, the meta types they
 * refer to and one operation per endpoint the server has, each tagged with x-kubernetes-group-version-kind and
 * x-kubernetes-action. The v3 root and the per group-version documents are shaped like kube-openapi's handler3.
 *
 * What clients read from them: `kubectl explain` finds a kind through its paths and schemas (v3); kubectl apply
 * uses JSON merge patch because no PATCH advertises strategic merge patch, and trusts server-side field
 * validation because every PATCH declares `fieldValidation` (v3, cli-runtime's query param verifier). The v2
 * document is what kube-aggregator fetches and merges into kube-apiserver's /openapi/v2.
 *
 * The documents depend only on the definitions, so they are built and hashed once.
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { requestContext } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import type { StructuralSchema } from '../apimachinery/schema.js';
import type { Action } from '../actions/action.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import { JSON_PATCH_TYPE, JSON_TYPE, MERGE_PATCH_TYPE, YAML_TYPE, parseMediaRanges } from './negotiation.js';

type Json = Record<string, any>;

export const OPENAPI_V2_PATH = '/openapi/v2';
export const OPENAPI_V3_PATH = '/openapi/v3';
export const APPLY_PATCH_TYPE = 'application/apply-patch+yaml';
/** kube-openapi's name for the v3 protobuf encoding; we serve JSON only. */
export const OPENAPI_V3_PROTOBUF_TYPE = 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf';

/** The PATCH bodies the server takes, as for CRDs: never strategic merge patch (kubectl would then use it). */
export const PATCH_CONTENT_TYPES = [JSON_PATCH_TYPE, MERGE_PATCH_TYPE, APPLY_PATCH_TYPE];
const OBJECT_CONTENT_TYPES = [JSON_TYPE, YAML_TYPE];

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const OBJECT_META = `${META}.ObjectMeta`;
const LIST_META = `${META}.ListMeta`;
const STATUS = `${META}.Status`;
const DELETE_OPTIONS = `${META}.DeleteOptions`;
const PATCH = `${META}.Patch`;

const GVK_EXTENSION = 'x-kubernetes-group-version-kind';
const ACTION_EXTENSION = 'x-kubernetes-action';
const CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md';

// ---------------------------------------------------------------------------------------------------------------
// Names

/** apiextensions' definition name for a kind: the group reversed, then version and kind (util.ToRESTFriendlyName). */
export function schemaName(group: string, version: string, kind: string): string {
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

/** The key of a group-version in the v3 root, as kube-openapi's handler3 names it. */
export function groupVersionKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** kube-apiserver's endpoints/openapi.ToValidOperationID. */
function operationIdPart(s: string, capitalizeFirst: boolean): string {
  let out = '';
  let capitalize = capitalizeFirst;
  [...s].forEach((ch, i) => {
    if (/\p{L}|_/u.test(ch) || (i !== 0 && /\p{Nd}/u.test(ch))) {
      out += capitalize ? ch.toUpperCase() : ch;
      capitalize = false;
    } else {
      capitalize = true;
    }
  });
  return out;
}

/** endpoints.GetArticleForNoun: " a " / " an ", nothing for plurals. */
function articleFor(noun: string): string {
  if (!noun.endsWith('ss') && noun.endsWith('s')) return ' ';
  return 'aeiou'.includes(noun[0].toLowerCase()) ? ' an ' : ' a ';
}

// ---------------------------------------------------------------------------------------------------------------
// Schemas

/** A reference to a schema of this document; v3 wraps a reference that carries siblings in allOf, as kube does. */
function ref(name: string, v2: boolean, siblings: Json = {}): Json {
  const pointer = v2 ? `#/definitions/${name}` : `#/components/schemas/${name}`;
  if (v2 || Object.keys(siblings).length === 0) return { $ref: pointer, ...siblings };
  return { allOf: [{ $ref: pointer }], ...siblings };
}

const TYPE_META = {
  apiVersion: {
    type: 'string',
    description: `APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: ${CONVENTIONS}#resources`,
  },
  kind: {
    type: 'string',
    description: `Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: ${CONVENTIONS}#types-kinds`,
  },
};
const OBJECT_METADATA_DESCRIPTION = `Standard object's metadata. More info: ${CONVENTIONS}#metadata`;
const LIST_METADATA_DESCRIPTION = `Standard list metadata. More info: ${CONVENTIONS}#types-kinds`;

const INT_OR_STRING = [{ type: 'integer' }, { type: 'string' }];

function childSchemas(s: Json): Json[] {
  const out: Json[] = [];
  if (s.properties && typeof s.properties === 'object') out.push(...(Object.values(s.properties) as Json[]));
  if (s.items && typeof s.items === 'object' && !Array.isArray(s.items)) out.push(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(s.additionalProperties);
  return out;
}

/** Visits a structural schema top-down (after the structural Visitor): `fn` runs before the children are read. */
function visit(s: Json, fn: (s: Json) => void): void {
  fn(s);
  for (const child of childSchemas(s)) visit(child, fn);
}

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

function gvkExtension(group: string, version: string, kind: string): Json[] {
  return [{ group, kind, version }];
}

/** What a kind's schema is made from: a resource definition, or an action's request kind. */
type KindSource = Pick<ResourceDefinition, 'group' | 'version' | 'kind' | 'schema'>;

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

export function listSchema(def: ResourceDefinition, v2: boolean): Json {
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

/** The apimachinery meta/v1 types the kinds and operations refer to (same names and GVKs as kube-apiserver's). */
export function metaSchemas(v2: boolean): Record<string, Json> {
  const str = (description: string) => ({ type: 'string', description });
  const int64 = (description: string) => ({ type: 'integer', format: 'int64', description });
  const int32 = (description: string) => ({ type: 'integer', format: 'int32', description });
  const bool = (description: string) => ({ type: 'boolean', description });
  const strings = (description: string, listType = 'atomic') => ({ type: 'array', description, items: { type: 'string' }, 'x-kubernetes-list-type': listType });
  const time = (description: string) => ref(`${META}.Time`, v2, { description });
  return {
    [`${META}.DeleteOptions`]: {
      description: 'DeleteOptions may be provided when deleting an API object.',
      type: 'object',
      properties: {
        apiVersion: { ...TYPE_META.apiVersion },
        dryRun: strings('When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed'),
        gracePeriodSeconds: int64('The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.'),
        kind: { ...TYPE_META.kind },
        orphanDependents: bool("Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
        preconditions: ref(`${META}.Preconditions`, v2, { description: 'Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned.' }),
        propagationPolicy: str("Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
      },
      [GVK_EXTENSION]: gvkExtension('', 'v1', 'DeleteOptions'),
    },
    [`${META}.FieldsV1`]: {
      description: "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
      type: 'object',
    },
    [`${META}.ListMeta`]: {
      description: 'ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.',
      type: 'object',
      properties: {
        continue: str('continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects. Continuing a consistent list may not be possible if the server configuration has changed or more than a few minutes have passed. The resourceVersion field returned when using this continue value will be identical to the value in the first response, unless you have received this token from an error message.'),
        remainingItemCount: int64('remainingItemCount is the number of subsequent items in the list which are not included in this list response. If the list request contained label or field selectors, then the number of remaining items is unknown and the field will be left unset and omitted during serialization. If the list is complete (either because it is not chunking or because this is the last chunk), then there are no more remaining items and this field will be left unset and omitted during serialization.'),
        resourceVersion: str(`String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: ${CONVENTIONS}#concurrency-control-and-consistency`),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
      },
    },
    [`${META}.ManagedFieldsEntry`]: {
      description: 'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the version of this resource that this field set applies to. The format is "group/version" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted.'),
        fieldsType: str('FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: "FieldsV1"'),
        fieldsV1: ref(`${META}.FieldsV1`, v2, { description: 'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.' }),
        manager: str('Manager is an identifier of the workflow managing these fields.'),
        operation: str("Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'."),
        subresource: str('Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource.'),
        time: time('Time is the timestamp of when the ManagedFields entry was added. The timestamp will also be updated if a field is added, the manager changes any of the owned fields value or removes a field. The timestamp does not update when a field is removed from the entry because another manager took it over.'),
      },
    },
    [`${META}.ObjectMeta`]: {
      description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
      type: 'object',
      properties: {
        annotations: { type: 'object', additionalProperties: { type: 'string' }, description: 'Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations' },
        creationTimestamp: time(`CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: ${CONVENTIONS}#metadata`),
        deletionGracePeriodSeconds: int64('Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only.'),
        deletionTimestamp: time(`DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: ${CONVENTIONS}#metadata`),
        finalizers: {
          ...strings('Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order. Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list.', 'set'),
          'x-kubernetes-patch-strategy': 'merge',
        },
        generateName: str(`GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: ${CONVENTIONS}#idempotency`),
        generation: int64('A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.'),
        labels: { type: 'object', additionalProperties: { type: 'string' }, description: 'Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels' },
        managedFields: {
          type: 'array',
          description: "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set or understand this field. A workflow can be the user's name, a controller's name, or the name of a specific apply path like \"ci-cd\". The set of fields is always in the version that the workflow used when modifying the object.",
          items: ref(`${META}.ManagedFieldsEntry`, v2),
          'x-kubernetes-list-type': 'atomic',
        },
        name: str('Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names'),
        namespace: str('Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the "default" namespace, but "default" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces'),
        ownerReferences: {
          type: 'array',
          description: 'List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.',
          items: ref(`${META}.OwnerReference`, v2),
          'x-kubernetes-list-map-keys': ['uid'],
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-patch-merge-key': 'uid',
          'x-kubernetes-patch-strategy': 'merge',
        },
        resourceVersion: str(`An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: ${CONVENTIONS}#concurrency-control-and-consistency`),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
        uid: str('UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
      },
    },
    [`${META}.OwnerReference`]: {
      description: 'OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.',
      type: 'object',
      required: ['apiVersion', 'kind', 'name', 'uid'],
      properties: {
        apiVersion: str('API version of the referent.'),
        blockOwnerDeletion: bool('If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. See https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion for how the garbage collector interacts with this field and enforces the foreground deletion. Defaults to false. To set this field, a user needs "delete" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned.'),
        controller: bool('If true, this reference points to the managing controller.'),
        kind: str(`Kind of the referent. More info: ${CONVENTIONS}#types-kinds`),
        name: str('Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names'),
        uid: str('UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
      },
      'x-kubernetes-map-type': 'atomic',
    },
    [`${META}.Patch`]: {
      description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.',
      type: 'object',
    },
    [`${META}.Preconditions`]: {
      description: 'Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.',
      type: 'object',
      properties: {
        resourceVersion: str('Specifies the target ResourceVersion'),
        uid: str('Specifies the target UID.'),
      },
    },
    [`${META}.Status`]: {
      description: 'Status is a return value for calls that don\'t return other objects.',
      type: 'object',
      properties: {
        apiVersion: { ...TYPE_META.apiVersion },
        code: int32('Suggested HTTP return code for this status, 0 if not set.'),
        details: ref(`${META}.StatusDetails`, v2, { description: 'Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type.' }),
        kind: { ...TYPE_META.kind },
        message: str('A human-readable description of the status of this operation.'),
        metadata: ref(LIST_META, v2, { description: LIST_METADATA_DESCRIPTION }),
        reason: str('A machine-readable description of why this operation is in the "Failure" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it.'),
        status: str(`Status of the operation. One of: "Success" or "Failure". More info: ${CONVENTIONS}#spec-and-status`),
      },
      [GVK_EXTENSION]: gvkExtension('', 'v1', 'Status'),
    },
    [`${META}.StatusCause`]: {
      description: 'StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.',
      type: 'object',
      properties: {
        field: str('The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional.\n\nExamples:\n  "name" - the field "name" on the current resource\n  "items[0].name" - the field "name" on the first array entry in "items"'),
        message: str('A human-readable description of the cause of the error.  This field may be presented as-is to a reader.'),
        reason: str('A machine-readable description of the cause of the error. If this value is empty there is no information available.'),
      },
    },
    [`${META}.StatusDetails`]: {
      description: 'StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.',
      type: 'object',
      properties: {
        causes: { type: 'array', description: 'The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes.', items: ref(`${META}.StatusCause`, v2), 'x-kubernetes-list-type': 'atomic' },
        group: str('The group attribute of the resource associated with the status StatusReason.'),
        kind: str(`The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: ${CONVENTIONS}#types-kinds`),
        name: str('The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described).'),
        retryAfterSeconds: int32('If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action.'),
        uid: str('UID of the resource. (when there is a single resource which can be described). More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
      },
    },
    [`${META}.Time`]: {
      description: 'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.',
      type: 'string',
      format: 'date-time',
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Operations

interface Param {
  name: string;
  in: 'query' | 'path';
  type: 'string' | 'boolean' | 'integer';
  description: string;
}

const query = (name: string, type: Param['type'], description: string): Param => ({ name, in: 'query', type, description });

const PRETTY = query('pretty', 'string', "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).");
const DRY_RUN = query('dryRun', 'string', 'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed');
const FIELD_MANAGER = query('fieldManager', 'string', 'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.');
const PATCH_FIELD_MANAGER = query('fieldManager', 'string', `${FIELD_MANAGER.description} This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).`);
const FIELD_VALIDATION = query('fieldValidation', 'string', 'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.');
const FORCE = query('force', 'boolean', 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.');
const RESOURCE_VERSION_DOC = 'resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset';

/** metav1.ListOptions, as kube publishes it for every list. */
const LIST_PARAMS: Param[] = [
  query('allowWatchBookmarks', 'boolean', 'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server\'s discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.'),
  query('continue', 'string', 'The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the "next key".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.'),
  query('fieldSelector', 'string', 'A selector to restrict the list of returned objects by their fields. Defaults to everything.'),
  query('labelSelector', 'string', 'A selector to restrict the list of returned objects by their labels. Defaults to everything.'),
  query('limit', 'integer', 'limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.'),
  query('resourceVersion', 'string', RESOURCE_VERSION_DOC),
  query('resourceVersionMatch', 'string', 'resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset'),
  query('sendInitialEvents', 'boolean', '`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic "Bookmark" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `"k8s.io/initial-events-end": "true"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.'),
  query('timeoutSeconds', 'integer', 'Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.'),
  query('watch', 'boolean', 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.'),
];
const DELETE_PARAMS: Param[] = [
  DRY_RUN,
  query('gracePeriodSeconds', 'integer', 'The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.'),
  query('orphanDependents', 'boolean', 'Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from the object\'s finalizers list. Either this field or PropagationPolicy may be set, but not both.'),
  query('propagationPolicy', 'string', "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
];

/** The verbs of the builder's routes: its operation name prefix, x-kubernetes-action and options. */
type OperationVerb = 'list' | 'create' | 'read' | 'replace' | 'patch' | 'delete' | 'deletecollection';

interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  verb: OperationVerb;
  action: string;
  operationId: string;
  description: string;
  params: Param[];
  body?: { schema: string; contentTypes: string[]; required: boolean };
  responses: { code: number; description: string; schema: string }[];
}

interface PathEntry {
  path: string;
  params: Param[];
  gvk: { group: string; version: string; kind: string };
  operations: Operation[];
}

const OK = (schema: string) => ({ code: 200, description: 'OK', schema });
const CREATED = (schema: string) => ({ code: 201, description: 'Created', schema });
const ACCEPTED = (schema: string) => ({ code: 202, description: 'Accepted', schema });

/** Every endpoint the generic store serves for one kind (routes of apiextensions' builder, minus the ones we lack). */
function resourcePaths(def: ResourceDefinition): PathEntry[] {
  const kindName = schemaName(def.group, def.version, def.kind);
  const listName = schemaName(def.group, def.version, def.listKind);
  const gvk = { group: def.group, version: def.version, kind: def.kind };
  const base = `/apis/${def.group}/${def.version}`;
  const scope = def.namespaced ? 'Namespaced' : '';
  const idPrefix = operationIdPrefix(def.group, def.version);
  const nameParam: Param = { name: 'name', in: 'path', type: 'string', description: `name of the ${def.kind}` };
  const namespaceParam: Param = { name: 'namespace', in: 'path', type: 'string', description: 'object name and auth scope, such as for teams and projects' };

  const op = (method: Operation['method'], verb: OperationVerb, sub: string, name: string, extra: Partial<Operation>): Operation => {
    const subresource = sub ? ` ${sub} of` : '';
    let description: string;
    if (verb === 'patch') description = `partially update${subresource} the specified ${def.kind}`;
    else if (verb === 'list') description = `list${subresource} objects of kind ${def.kind}`;
    else if (verb === 'read' || verb === 'replace') description = `${verb}${subresource} the specified ${def.kind}`;
    else if (verb === 'deletecollection') description = `delete collection of ${def.kind}`;
    else description = `${verb}${subresource}${articleFor(def.kind)}${def.kind}`;
    const action = { list: 'list', create: 'post', read: 'get', replace: 'put', patch: 'patch', delete: 'delete', deletecollection: 'deletecollection' }[verb];
    return { method, verb, action, operationId: verb + idPrefix + name, description, params: [], responses: [], ...extra };
  };
  const objectBody = { schema: kindName, contentTypes: OBJECT_CONTENT_TYPES, required: true };
  const patchBody = { schema: PATCH, contentTypes: PATCH_CONTENT_TYPES, required: true };
  const writeParams = [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
  const patchParams = [DRY_RUN, PATCH_FIELD_MANAGER, FIELD_VALIDATION, FORCE];
  const suffix = (sub: string) => scope + def.kind + (sub ? sub[0].toUpperCase() + sub.slice(1) : '');

  const collection = def.namespaced ? `${base}/namespaces/{namespace}/${def.plural}` : `${base}/${def.plural}`;
  const scopeParams = def.namespaced ? [namespaceParam] : [];
  const paths: PathEntry[] = [];
  if (def.namespaced) {
    paths.push({
      path: `${base}/${def.plural}`,
      params: [PRETTY],
      gvk,
      operations: [op('get', 'list', '', `${def.kind}ForAllNamespaces`, { params: LIST_PARAMS, responses: [OK(listName)] })],
    });
  }
  paths.push({
    path: collection,
    params: [...scopeParams, PRETTY],
    gvk,
    operations: [
      op('get', 'list', '', suffix(''), { params: LIST_PARAMS, responses: [OK(listName)] }),
      op('post', 'create', '', suffix(''), { params: writeParams, body: objectBody, responses: [OK(kindName), CREATED(kindName), ACCEPTED(kindName)] }),
      op('delete', 'deletecollection', '', suffix(''), {
        params: [...DELETE_PARAMS, ...LIST_PARAMS.filter((p) => !DELETE_PARAMS.some((d) => d.name === p.name))],
        body: { schema: DELETE_OPTIONS, contentTypes: OBJECT_CONTENT_TYPES, required: false },
        responses: [OK(STATUS)],
      }),
    ],
  });
  paths.push({
    path: `${collection}/{name}`,
    params: [nameParam, ...scopeParams, PRETTY],
    gvk,
    operations: [
      op('get', 'read', '', suffix(''), { responses: [OK(kindName)] }),
      op('put', 'replace', '', suffix(''), { params: writeParams, body: objectBody, responses: [OK(kindName), CREATED(kindName)] }),
      op('delete', 'delete', '', suffix(''), {
        params: DELETE_PARAMS,
        body: { schema: DELETE_OPTIONS, contentTypes: OBJECT_CONTENT_TYPES, required: false },
        responses: [OK(STATUS), ACCEPTED(STATUS)],
      }),
      op('patch', 'patch', '', suffix(''), { params: patchParams, body: patchBody, responses: [OK(kindName), CREATED(kindName)] }),
    ],
  });
  if (def.hasStatus) {
    paths.push({
      path: `${collection}/{name}/status`,
      params: [nameParam, ...scopeParams, PRETTY],
      gvk,
      operations: [
        op('get', 'read', 'status', suffix('status'), { responses: [OK(kindName)] }),
        op('put', 'replace', 'status', suffix('status'), { params: writeParams, body: objectBody, responses: [OK(kindName), CREATED(kindName)] }),
        op('patch', 'patch', 'status', suffix('status'), { params: patchParams, body: patchBody, responses: [OK(kindName), CREATED(kindName)] }),
      ],
    });
  }
  return paths;
}

/** The group-version part of operation ids, e.g. "ManagementPlatformShV1". */
function operationIdPrefix(group: string, version: string): string {
  return operationIdPart(group.replace(/\.k8s\.io$/, ''), true) + operationIdPart(version, true);
}

/**
 * The endpoints of an action (src/actions): POST on the collection of a kind of its own; GET and/or POST on a
 * subresource, also without the namespace when the action allows it. Their request kind is the operations' GVK,
 * as for kube's subresources with a kind of their own (pods/eviction).
 */
function actionPaths(action: Action): PathEntry[] {
  const kindName = schemaName(action.group, action.version, action.kind);
  const gvk = { group: action.group, version: action.version, kind: action.kind };
  const base = `/apis/${action.group}/${action.version}`;
  const idPrefix = operationIdPrefix(action.group, action.version);
  const body = { schema: kindName, contentTypes: OBJECT_CONTENT_TYPES, required: true };
  const writeParams = [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
  const create = (id: string, description: string): Operation => ({
    method: 'post',
    verb: 'create',
    action: 'post',
    operationId: `create${idPrefix}${id}`,
    description,
    params: writeParams,
    body,
    responses: [OK(kindName), CREATED(kindName), ACCEPTED(kindName)],
  });
  if (!action.subresource) {
    const operations = [create(action.kind, `create${articleFor(action.kind)}${action.kind}`)];
    return [{ path: `${base}/${action.resource}`, params: [PRETTY], gvk, operations }];
  }
  const sub = action.subresource[0].toUpperCase() + action.subresource.slice(1);
  const nameParam: Param = { name: 'name', in: 'path', type: 'string', description: `name of the ${action.resource} object` };
  const namespaceParam: Param = { name: 'namespace', in: 'path', type: 'string', description: 'object name and auth scope, such as for teams and projects' };
  const forms = action.namespaced
    ? [{ path: `${base}/namespaces/{namespace}/${action.resource}/{name}/${action.subresource}`, scope: 'Namespaced', params: [nameParam, namespaceParam] }]
    : [{ path: `${base}/${action.resource}/{name}/${action.subresource}`, scope: '', params: [nameParam] }];
  if (action.namespaced && action.anyNamespace) forms.push({ path: `${base}/${action.resource}/{name}/${action.subresource}`, scope: 'AnyNamespace', params: [nameParam] });
  return forms.map(({ path, scope, params }) => {
    const id = `${scope}${action.kind}${sub}`;
    const operations: Operation[] = [];
    if (action.verbs.includes('get')) {
      operations.push({ method: 'get', verb: 'read', action: 'get', operationId: `read${idPrefix}${id}`, description: `read ${action.subresource} of the specified ${action.resource} object`, params: [], responses: [OK(kindName)] });
    }
    if (action.verbs.includes('create')) operations.push(create(id, `create ${action.subresource} of the specified ${action.resource} object`));
    return { path, params: [...params, PRETTY], gvk, operations };
  });
}

function tagFor(group: string, version: string): string {
  return `${operationIdPart(group.replace(/\.k8s\.io$/, ''), false)}_${operationIdPart(version, false)}`;
}

function paramV3(p: Param): Json {
  return { name: p.name, in: p.in, description: p.description, ...(p.in === 'path' ? { required: true } : {}), schema: { type: p.type, uniqueItems: true } };
}

function paramV2(p: Param): Json {
  return { uniqueItems: true, type: p.type, description: p.description, name: p.name, in: p.in, ...(p.in === 'path' ? { required: true } : {}) };
}

function operationV3(o: Operation, entry: PathEntry, tag: string): Json {
  const out: Json = { tags: [tag], description: o.description, operationId: o.operationId };
  if (o.params.length) out.parameters = o.params.map(paramV3);
  if (o.body) {
    const schema = ref(o.body.schema, false);
    out.requestBody = { content: Object.fromEntries(o.body.contentTypes.map((t) => [t, { schema }])), ...(o.body.required ? { required: true } : {}) };
  }
  out.responses = {
    ...Object.fromEntries(
      o.responses.map((r) => [String(r.code), { description: r.description, content: Object.fromEntries(OBJECT_CONTENT_TYPES.map((t) => [t, { schema: ref(r.schema, false) }])) }]),
    ),
    '401': { description: 'Unauthorized' },
  };
  out[ACTION_EXTENSION] = o.action;
  out[GVK_EXTENSION] = { ...entry.gvk };
  return out;
}

function operationV2(o: Operation, entry: PathEntry, tag: string): Json {
  const out: Json = {
    description: o.description,
    consumes: o.body?.contentTypes ?? OBJECT_CONTENT_TYPES,
    produces: OBJECT_CONTENT_TYPES,
    schemes: ['https'],
    tags: [tag],
    operationId: o.operationId,
  };
  const params = o.params.map(paramV2);
  if (o.body) params.unshift({ name: 'body', in: 'body', ...(o.body.required ? { required: true } : {}), schema: ref(o.body.schema, true) });
  if (params.length) out.parameters = params;
  out.responses = {
    ...Object.fromEntries(o.responses.map((r) => [String(r.code), { description: r.description, schema: ref(r.schema, true) }])),
    '401': { description: 'Unauthorized' },
  };
  out[ACTION_EXTENSION] = o.action;
  out[GVK_EXTENSION] = { ...entry.gvk };
  return out;
}

function definitionsFor(defs: ResourceDefinition[], actions: Action[], v2: boolean): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const def of defs) {
    out[schemaName(def.group, def.version, def.kind)] = kindSchema(def, v2);
    out[schemaName(def.group, def.version, def.listKind)] = listSchema(def, v2);
  }
  for (const action of actions) out[schemaName(action.group, action.version, action.kind)] = kindSchema(action, v2);
  Object.assign(out, metaSchemas(v2));
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const SECURITY_SCHEME = { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' };

/** The OpenAPI 3.0 document of one group-version (what /openapi/v3/apis/<group>/<version> serves). */
export function buildOpenAPIV3(defs: ResourceDefinition[], group: string, version: string, actions: Action[] = []): Json {
  const mine = defs.filter((d) => d.group === group && d.version === version);
  const myActions = actions.filter((a) => a.group === group && a.version === version);
  const paths = pathItems(mine, myActions, operationV3, paramV3);
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' },
    paths,
    components: { schemas: definitionsFor(mine, myActions, false), securitySchemes: { BearerToken: SECURITY_SCHEME } },
  };
}

/** The path items of these kinds' endpoints, each operation and parameter rendered for one OpenAPI version. */
function pathItems(
  defs: ResourceDefinition[],
  actions: Action[],
  operation: (o: Operation, entry: PathEntry, tag: string) => Json,
  param: (p: Param) => Json,
): Json {
  const paths: Json = {};
  const entries = [...defs.flatMap(resourcePaths), ...actions.flatMap(actionPaths)];
  for (const entry of entries) {
    const tag = tagFor(entry.gvk.group, entry.gvk.version);
    const item: Json = {};
    for (const o of entry.operations) item[o.method] = operation(o, entry, tag);
    item.parameters = entry.params.map(param);
    paths[entry.path] = item;
  }
  return paths;
}

/** The Swagger 2.0 document of everything served (what /openapi/v2 serves, and kube-aggregator merges). */
export function buildOpenAPIV2(defs: ResourceDefinition[], actions: Action[] = []): Json {
  const paths = pathItems(defs, actions, operationV2, paramV2);
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' },
    paths,
    definitions: definitionsFor(defs, actions, true),
    securityDefinitions: { BearerToken: SECURITY_SCHEME },
    security: [{ BearerToken: [] }],
  };
}

/** handler3's discovery document: each group-version and the URL of its document, with the document's hash. */
export function buildOpenAPIV3Root(hashes: Map<string, string>): Json {
  const paths: Json = {};
  for (const [key, hash] of [...hashes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    paths[key] = { serverRelativeURL: `${OPENAPI_V3_PATH}/${key}?${new URLSearchParams({ hash })}` };
  }
  return { paths };
}

// ---------------------------------------------------------------------------------------------------------------
// Serving

export interface ServedDocument {
  body: Buffer;
  /** Upper-case hex SHA-512 of the body, as kube-openapi computes it (the v3 root's `hash`). */
  hash: string;
  /** The ETag header value: the hash, quoted. */
  etag: string;
}

export function servedDocument(doc: unknown): ServedDocument {
  const body = Buffer.from(JSON.stringify(doc));
  const hash = createHash('sha512').update(body).digest('hex').toUpperCase();
  return { body, hash, etag: `"${hash}"` };
}

/** If-None-Match against an ETag (weak comparison, lists and `*`), as net/http's ServeContent decides a 304. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => {
    const c = candidate.trim();
    return c === '*' || (c !== '' && strip(c) === strip(etag));
  });
}

/** Whether an Accept header lets us answer JSON (absent means anything). */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return parseMediaRanges(accept).some((r) => r.type === JSON_TYPE || r.type === 'application/*' || r.type === '*/*');
}

export function isOpenAPIPath(path: string): boolean {
  return path === OPENAPI_V2_PATH || path === OPENAPI_V3_PATH || path.startsWith(`${OPENAPI_V3_PATH}/`);
}

/** The documents for a set of definitions, built once, and the handler that serves them. */
export class OpenAPIService {
  readonly v2: ServedDocument;
  readonly v3Root: ServedDocument;
  /** By root key, e.g. "apis/management.platform.sh/v1". */
  readonly v3: Map<string, ServedDocument>;

  constructor(definitions: ResourceDefinition[], actions: Action[] = []) {
    this.v2 = servedDocument(buildOpenAPIV2(definitions, actions));
    this.v3 = new Map();
    for (const { group, version } of definitions) {
      const key = groupVersionKey(group, version);
      if (!this.v3.has(key)) this.v3.set(key, servedDocument(buildOpenAPIV3(definitions, group, version, actions)));
    }
    this.v3Root = servedDocument(buildOpenAPIV3Root(new Map([...this.v3].map(([key, doc]) => [key, doc.hash]))));
  }

  /** Serves a GET or HEAD of an /openapi path (see isOpenAPIPath); errors are thrown as StatusErrors. */
  serve(req: Request, res: Response, path: string): void {
    if (path === OPENAPI_V3_PATH) {
      // handler3 answers its discovery document in JSON whatever the Accept header says.
      return this.write(req, res, this.v3Root, false);
    }
    if (path === OPENAPI_V2_PATH) {
      // The protobuf form (what client-go's OpenAPISchema asks for) is not served: 406, as kube-openapi does.
      if (!acceptsJson(req.headers.accept)) throw errors.notAcceptable([JSON_TYPE]);
      return this.write(req, res, this.v2, true);
    }
    const doc = this.v3.get(path.slice(OPENAPI_V3_PATH.length + 1));
    if (!doc) throw errors.notFoundPath();
    if (!acceptsJson(req.headers.accept)) throw errors.notAcceptable([JSON_TYPE]);
    // The `hash` in the URL only busts caches; a stale one still gets the current document.
    const hash = requestContext(req).query.get('hash');
    if (hash && hash === doc.hash) {
      res.setHeader('Cache-Control', 'public, immutable');
      res.setHeader('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
    }
    this.write(req, res, doc, true);
  }

  private write(req: Request, res: Response, doc: ServedDocument, varyAccept: boolean): void {
    if (varyAccept) res.setHeader('Vary', 'Accept');
    res.setHeader('ETag', doc.etag);
    if (etagMatches(req.headers['if-none-match'], doc.etag)) {
      res.status(304).end();
      return;
    }
    res.status(200);
    res.setHeader('Content-Type', JSON_TYPE);
    res.setHeader('Content-Length', String(doc.body.length));
    res.end(doc.body);
  }
}
