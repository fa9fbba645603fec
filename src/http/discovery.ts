/** Legacy discovery documents (/api, /apis, /apis/<g>, /apis/<g>/<v>) built from the resource definitions. */
import type { ResourceDefinition } from '../registry/definitions.js';
import type { Registry } from '../registry/registry.js';

/** The verbs the generic store serves for a resource, and for its status subresource. */
const RESOURCE_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

export function apiVersions(serverAddress: string): object {
  return { kind: 'APIVersions', versions: [], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
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

export function apiResourceList(registry: Registry, group: string, version: string): object | undefined {
  const defs = registry.definitions.filter((d) => d.group === group && d.version === version);
  if (!defs.length) return undefined;
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${group}/${version}`, resources: defs.flatMap(resourceEntries) };
}

function resourceEntries(def: ResourceDefinition): object[] {
  const main = {
    name: def.plural,
    singularName: def.singular,
    namespaced: def.namespaced,
    kind: def.kind,
    verbs: RESOURCE_VERBS,
    ...(def.shortNames.length ? { shortNames: def.shortNames } : {}),
    ...(def.categories.length ? { categories: def.categories } : {}),
  };
  if (!def.hasStatus) return [main];
  return [main, { name: `${def.plural}/status`, singularName: '', namespaced: def.namespaced, kind: def.kind, verbs: STATUS_VERBS }];
}
