/**
 * The paths of the OpenAPI documents: one operation per endpoint the server has, as kube-apiserver's endpoint
 * installer and apiextensions' builder describe them (operation ids, descriptions, parameters, request and response
 * bodies), each tagged with x-kubernetes-group-version-kind and x-kubernetes-action, rendered for v2 or v3.
 *
 * kubectl reads two things here: no PATCH advertises strategic merge patch, so kubectl apply uses JSON merge patch;
 * every PATCH declares `fieldValidation`, so kubectl trusts server-side field validation (cli-runtime's query param
 * verifier).
 */
import { APPLY_PATCH_TYPE, JSON_PATCH_TYPE, JSON_TYPE, MERGE_PATCH_TYPE, YAML_TYPE } from '../mediatypes.js';
import { ACTION_EXTENSION, GVK_EXTENSION, ref, type Json } from './common.js';
import { schemaName, type KindSource, type StoredKind } from './kinds.js';
import { DELETE_OPTIONS, PATCH, STATUS } from './metav1.js';

/** The endpoints of an action (the actions' Action is one): a kind of its own, or a subresource of a kind. */
export interface ServedAction extends KindSource {
  /** The resource of the path. */
  resource: string;
  /** '' for a kind of its own. */
  subresource: string;
  namespaced: boolean;
  /** A namespaced subresource also served without the namespace. */
  anyNamespace?: boolean;
  verbs: readonly ('get' | 'create')[];
}

/** The PATCH bodies the server takes, as for CRDs: never strategic merge patch (kubectl would then use it). */
export const PATCH_CONTENT_TYPES = [JSON_PATCH_TYPE, MERGE_PATCH_TYPE, APPLY_PATCH_TYPE];
const OBJECT_CONTENT_TYPES = [JSON_TYPE, YAML_TYPE];

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

interface Param {
  name: string;
  in: 'query' | 'path';
  type: 'string' | 'boolean' | 'integer';
  description: string;
}

const query = (name: string, type: Param['type'], description: string): Param => ({
  name,
  in: 'query',
  type,
  description,
});

const PRETTY = query(
  'pretty',
  'string',
  "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
);
const DRY_RUN = query(
  'dryRun',
  'string',
  'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed',
);
const FIELD_MANAGER = query(
  'fieldManager',
  'string',
  'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.',
);
const PATCH_FIELD_MANAGER = query(
  'fieldManager',
  'string',
  `${FIELD_MANAGER.description} This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).`,
);
const FIELD_VALIDATION = query(
  'fieldValidation',
  'string',
  'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.',
);
const FORCE = query(
  'force',
  'boolean',
  'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.',
);
const RESOURCE_VERSION_DOC =
  'resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset';

/** metav1.ListOptions, as kube publishes it for every list. */
const LIST_PARAMS: Param[] = [
  query(
    'allowWatchBookmarks',
    'boolean',
    'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server\'s discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.',
  ),
  query(
    'continue',
    'string',
    'The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the "next key".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.',
  ),
  query(
    'fieldSelector',
    'string',
    'A selector to restrict the list of returned objects by their fields. Defaults to everything.',
  ),
  query(
    'labelSelector',
    'string',
    'A selector to restrict the list of returned objects by their labels. Defaults to everything.',
  ),
  query(
    'limit',
    'integer',
    'limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.',
  ),
  query('resourceVersion', 'string', RESOURCE_VERSION_DOC),
  query(
    'resourceVersionMatch',
    'string',
    'resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset',
  ),
  query(
    'sendInitialEvents',
    'boolean',
    '`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic "Bookmark" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `"k8s.io/initial-events-end": "true"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.',
  ),
  query(
    'timeoutSeconds',
    'integer',
    'Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.',
  ),
  query(
    'watch',
    'boolean',
    'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.',
  ),
];
const DELETE_PARAMS: Param[] = [
  DRY_RUN,
  query(
    'gracePeriodSeconds',
    'integer',
    'The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.',
  ),
  query(
    'orphanDependents',
    'boolean',
    'Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from the object\'s finalizers list. Either this field or PropagationPolicy may be set, but not both.',
  ),
  query(
    'propagationPolicy',
    'string',
    "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
  ),
];

const NAMESPACE_PARAM: Param = {
  name: 'namespace',
  in: 'path',
  type: 'string',
  description: 'object name and auth scope, such as for teams and projects',
};
/** Of a create or a replace (PUT). */
const WRITE_PARAMS = [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const PATCH_PARAMS = [DRY_RUN, PATCH_FIELD_MANAGER, FIELD_VALIDATION, FORCE];
const PATCH_BODY = { schema: PATCH, contentTypes: PATCH_CONTENT_TYPES, required: true };

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

/** Each verb's x-kubernetes-action. */
const ACTIONS: Record<OperationVerb, string> = {
  list: 'list',
  create: 'post',
  read: 'get',
  replace: 'put',
  patch: 'patch',
  delete: 'delete',
  deletecollection: 'deletecollection',
};

/** One operation of `kind`'s (of its subresource `sub`, if any), named and described as the builder does. */
function kindOperation(
  kind: string,
  idPrefix: string,
  method: Operation['method'],
  verb: OperationVerb,
  sub: string,
  name: string,
  extra: Partial<Operation>,
): Operation {
  return {
    method,
    verb,
    action: ACTIONS[verb],
    operationId: verb + idPrefix + name,
    description: operationDescription(kind, verb, sub),
    params: [],
    responses: [],
    ...extra,
  };
}

function operationDescription(kind: string, verb: OperationVerb, sub: string): string {
  const subresource = sub ? ` ${sub} of` : '';
  if (verb === 'patch') return `partially update${subresource} the specified ${kind}`;
  if (verb === 'list') return `list${subresource} objects of kind ${kind}`;
  if (verb === 'read' || verb === 'replace') return `${verb}${subresource} the specified ${kind}`;
  if (verb === 'deletecollection') return `delete collection of ${kind}`;
  return `${verb}${subresource}${articleFor(kind)}${kind}`;
}

/** Every endpoint the generic store serves for one kind (routes of apiextensions' builder, minus the ones we lack). */
function resourcePaths(def: StoredKind): PathEntry[] {
  const kindName = schemaName(def.group, def.version, def.kind);
  const listName = schemaName(def.group, def.version, def.listKind);
  const gvk = { group: def.group, version: def.version, kind: def.kind };
  const base = `/apis/${def.group}/${def.version}`;
  const scope = def.namespaced ? 'Namespaced' : '';
  const idPrefix = operationIdPrefix(def.group, def.version);
  const nameParam: Param = { name: 'name', in: 'path', type: 'string', description: `name of the ${def.kind}` };

  const op = (method: Operation['method'], verb: OperationVerb, sub: string, name: string, extra: Partial<Operation>) =>
    kindOperation(def.kind, idPrefix, method, verb, sub, name, extra);
  const objectBody = { schema: kindName, contentTypes: OBJECT_CONTENT_TYPES, required: true };
  const suffix = (sub: string) => scope + def.kind + (sub ? sub[0].toUpperCase() + sub.slice(1) : '');

  const collection = def.namespaced ? `${base}/namespaces/{namespace}/${def.plural}` : `${base}/${def.plural}`;
  const scopeParams = def.namespaced ? [NAMESPACE_PARAM] : [];
  const paths: PathEntry[] = [];
  if (def.namespaced) {
    paths.push({
      path: `${base}/${def.plural}`,
      params: [PRETTY],
      gvk,
      operations: [
        op('get', 'list', '', `${def.kind}ForAllNamespaces`, { params: LIST_PARAMS, responses: [OK(listName)] }),
      ],
    });
  }
  paths.push({
    path: collection,
    params: [...scopeParams, PRETTY],
    gvk,
    operations: [
      op('get', 'list', '', suffix(''), { params: LIST_PARAMS, responses: [OK(listName)] }),
      op('post', 'create', '', suffix(''), {
        params: WRITE_PARAMS,
        body: objectBody,
        responses: [OK(kindName), CREATED(kindName), ACCEPTED(kindName)],
      }),
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
      op('put', 'replace', '', suffix(''), {
        params: WRITE_PARAMS,
        body: objectBody,
        responses: [OK(kindName), CREATED(kindName)],
      }),
      op('delete', 'delete', '', suffix(''), {
        params: DELETE_PARAMS,
        body: { schema: DELETE_OPTIONS, contentTypes: OBJECT_CONTENT_TYPES, required: false },
        responses: [OK(STATUS), ACCEPTED(STATUS)],
      }),
      op('patch', 'patch', '', suffix(''), {
        params: PATCH_PARAMS,
        body: PATCH_BODY,
        responses: [OK(kindName), CREATED(kindName)],
      }),
    ],
  });
  if (def.hasStatus) {
    paths.push({
      path: `${collection}/{name}/status`,
      params: [nameParam, ...scopeParams, PRETTY],
      gvk,
      operations: [
        op('get', 'read', 'status', suffix('status'), { responses: [OK(kindName)] }),
        op('put', 'replace', 'status', suffix('status'), {
          params: WRITE_PARAMS,
          body: objectBody,
          responses: [OK(kindName), CREATED(kindName)],
        }),
        op('patch', 'patch', 'status', suffix('status'), {
          params: PATCH_PARAMS,
          body: PATCH_BODY,
          responses: [OK(kindName), CREATED(kindName)],
        }),
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
 * as for kube's subresources with a kind of their own (pods/eviction); a subresource's operation ids and
 * descriptions name the parent's kind, as kube's installer does (createCoreV1NamespacedPodEviction, "create eviction
 * of a Pod"), its name parameter the request kind ("name of the Eviction").
 */
function actionPaths(action: ServedAction, kinds: StoredKind[]): PathEntry[] {
  const kindName = schemaName(action.group, action.version, action.kind);
  const gvk = { group: action.group, version: action.version, kind: action.kind };
  const base = `/apis/${action.group}/${action.version}`;
  const idPrefix = operationIdPrefix(action.group, action.version);
  const body = { schema: kindName, contentTypes: OBJECT_CONTENT_TYPES, required: true };
  const create = (id: string, description: string): Operation => ({
    method: 'post',
    verb: 'create',
    action: 'post',
    operationId: `create${idPrefix}${id}`,
    description,
    params: WRITE_PARAMS,
    body,
    responses: [OK(kindName), CREATED(kindName), ACCEPTED(kindName)],
  });
  if (!action.subresource) {
    const operations = [create(action.kind, `create${articleFor(action.kind)}${action.kind}`)];
    return [{ path: `${base}/${action.resource}`, params: [PRETTY], gvk, operations }];
  }
  const parent =
    kinds.find((k) => k.group === action.group && k.version === action.version && k.plural === action.resource)?.kind ??
    action.kind;
  const sub = action.subresource[0].toUpperCase() + action.subresource.slice(1);
  const nameParam: Param = { name: 'name', in: 'path', type: 'string', description: `name of the ${action.kind}` };
  const forms = action.namespaced
    ? [
        {
          path: `${base}/namespaces/{namespace}/${action.resource}/{name}/${action.subresource}`,
          scope: 'Namespaced',
          params: [nameParam, NAMESPACE_PARAM],
        },
      ]
    : [{ path: `${base}/${action.resource}/{name}/${action.subresource}`, scope: '', params: [nameParam] }];
  if (action.namespaced && action.anyNamespace)
    forms.push({
      path: `${base}/${action.resource}/{name}/${action.subresource}`,
      scope: 'AnyNamespace',
      params: [nameParam],
    });
  return forms.map(({ path, scope, params }) => {
    const id = `${scope}${parent}${sub}`;
    const operations: Operation[] = [];
    if (action.verbs.includes('get')) {
      operations.push({
        method: 'get',
        verb: 'read',
        action: 'get',
        operationId: `read${idPrefix}${id}`,
        description: `read ${action.subresource} of the specified ${parent}`,
        params: [],
        responses: [OK(kindName)],
      });
    }
    if (action.verbs.includes('create'))
      operations.push(create(id, `create ${action.subresource} of${articleFor(parent)}${parent}`));
    return { path, params: [...params, PRETTY], gvk, operations };
  });
}

function tagFor(group: string, version: string): string {
  return `${operationIdPart(group.replace(/\.k8s\.io$/, ''), false)}_${operationIdPart(version, false)}`;
}

function paramV3(p: Param): Json {
  return {
    name: p.name,
    in: p.in,
    description: p.description,
    ...(p.in === 'path' ? { required: true } : {}),
    schema: { type: p.type, uniqueItems: true },
  };
}

function paramV2(p: Param): Json {
  return {
    uniqueItems: true,
    type: p.type,
    description: p.description,
    name: p.name,
    in: p.in,
    ...(p.in === 'path' ? { required: true } : {}),
  };
}

function operationV3(o: Operation, entry: PathEntry, tag: string): Json {
  const out: Json = { tags: [tag], description: o.description, operationId: o.operationId };
  if (o.params.length) out.parameters = o.params.map(paramV3);
  if (o.body) {
    const schema = ref(o.body.schema, false);
    out.requestBody = {
      content: Object.fromEntries(o.body.contentTypes.map((t) => [t, { schema }])),
      ...(o.body.required ? { required: true } : {}),
    };
  }
  out.responses = {
    ...Object.fromEntries(
      o.responses.map((r) => [
        String(r.code),
        {
          description: r.description,
          content: Object.fromEntries(OBJECT_CONTENT_TYPES.map((t) => [t, { schema: ref(r.schema, false) }])),
        },
      ]),
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
  if (o.body)
    params.unshift({
      name: 'body',
      in: 'body',
      ...(o.body.required ? { required: true } : {}),
      schema: ref(o.body.schema, true),
    });
  if (params.length) out.parameters = params;
  out.responses = {
    ...Object.fromEntries(
      o.responses.map((r) => [String(r.code), { description: r.description, schema: ref(r.schema, true) }]),
    ),
    '401': { description: 'Unauthorized' },
  };
  out[ACTION_EXTENSION] = o.action;
  out[GVK_EXTENSION] = { ...entry.gvk };
  return out;
}

/** The path items of these kinds' endpoints, each operation and parameter rendered for one OpenAPI version. */
function pathItems(
  defs: StoredKind[],
  actions: ServedAction[],
  operation: (o: Operation, entry: PathEntry, tag: string) => Json,
  param: (p: Param) => Json,
): Json {
  const paths: Json = {};
  const entries = [...defs.flatMap(resourcePaths), ...actions.flatMap((a) => actionPaths(a, defs))];
  for (const entry of entries) {
    const tag = tagFor(entry.gvk.group, entry.gvk.version);
    const item: Json = {};
    for (const o of entry.operations) item[o.method] = operation(o, entry, tag);
    item.parameters = entry.params.map(param);
    paths[entry.path] = item;
  }
  return paths;
}

/** The path items of these kinds' and actions' endpoints, for OpenAPI v2 or v3. */
export function paths(kinds: StoredKind[], actions: ServedAction[], v2: boolean): Json {
  return v2 ? pathItems(kinds, actions, operationV2, paramV2) : pathItems(kinds, actions, operationV3, paramV3);
}
