/** Legacy discovery documents (/api, /apis, /apis/<g>, /apis/<g>/<v>) built from the resource definitions and actions. */
import type { Action } from '../actions/action.js';
import type { ServedActions } from '../actions/served.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { Registry } from '../registry/registry.js';

/** The verbs the generic store serves for a resource, and for its status subresource. */
const RESOURCE_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: [],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(group: { name: string; versions: string[] }): object {
  const versions = group.versions.map((version) => ({ groupVersion: `${group.name}/${version}`, version }));
  return { name: group.name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(registry: Registry): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: registry.groups().map(apiGroup) };
}

export function apiGroupDocument(registry: Registry, name: string): object | undefined {
  const group = registry.groups().find((g) => g.name === name);
  return group && { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(group) };
}

/** One entry of an APIResourceList (metav1.APIResource): a subresource is named `<resource>/<subresource>`. */
export interface APIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

export interface APIResourceList {
  kind: 'APIResourceList';
  apiVersion: 'v1';
  groupVersion: string;
  resources: APIResource[];
}

export function apiResourceList(
  registry: Registry,
  served: ServedActions,
  group: string,
  version: string,
): APIResourceList | undefined {
  const defs = registry.definitions.filter((d) => d.group === group && d.version === version);
  if (!defs.length) return undefined;
  const actions = served.all.filter((a) => a.group === group && a.version === version).map(actionEntry);
  const resources = [...defs.flatMap(resourceEntries), ...actions].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${group}/${version}`, resources };
}

/** A subresource action is listed as `<resource>/<subresource>`; a kind of its own like any resource. */
function actionEntry(a: Action): APIResource {
  const verbs = [...a.verbs].sort();
  if (a.subresource)
    return { name: `${a.resource}/${a.subresource}`, singularName: '', namespaced: a.namespaced, kind: a.kind, verbs };
  return { name: a.resource, singularName: a.kind.toLowerCase(), namespaced: a.namespaced, kind: a.kind, verbs };
}

function resourceEntries(def: ResourceDefinition): APIResource[] {
  const main: APIResource = {
    name: def.plural,
    singularName: def.singular,
    namespaced: def.namespaced,
    kind: def.kind,
    verbs: RESOURCE_VERBS,
    ...(def.shortNames.length ? { shortNames: def.shortNames } : {}),
    ...(def.categories.length ? { categories: def.categories } : {}),
  };
  if (!def.hasStatus) return [main];
  return [
    main,
    { name: `${def.plural}/status`, singularName: '', namespaced: def.namespaced, kind: def.kind, verbs: STATUS_VERBS },
  ];
}
