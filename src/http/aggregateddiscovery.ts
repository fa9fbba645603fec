/**
 * Aggregated discovery (apidiscovery.k8s.io APIGroupDiscoveryList): every group, version and resource of /apis (and
 * of /api, which has no core group here) in one document, so that kubectl and kube-apiserver's aggregator need one
 * request instead of one per group-version. Built from the legacy documents, as kube's
 * ConvertGroupVersionIntoToDiscovery builds it from the APIResourceList, so the two always say the same; served as
 * kube's aggregated handler serves it: hashed once, with the ETag, `Vary: Accept` and a 304 on a matching
 * If-None-Match, in the version the client asked for (v2 or v2beta1, the same content).
 */
import type { Request, Response } from 'express';
import yaml from 'js-yaml';
import type { ServedActions } from '../actions/served.js';
import type { Registry } from '../registry/registry.js';
import { apiResourceList, type APIResource } from './discovery.js';
import { DISCOVERY_GROUP, JSON_TYPE, YAML_TYPE, type AggregatedDiscoveryTarget } from './negotiation.js';
import { etagMatches, servedDocument } from './openapi.js';

/** metav1.GroupVersionKind; kube leaves group and version empty for a resource of the group-version it is listed in. */
interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface APISubresourceDiscovery {
  subresource: string;
  responseKind: GroupVersionKind;
  verbs: string[];
}

export interface APIResourceDiscovery {
  resource: string;
  responseKind: GroupVersionKind;
  scope: 'Namespaced' | 'Cluster';
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: APISubresourceDiscovery[];
}

export interface APIVersionDiscovery {
  version: string;
  resources?: APIResourceDiscovery[];
  /** Always Current here: this server serves its own resources (the aggregator marks what it fails to fetch Stale). */
  freshness: 'Current' | 'Stale';
}

export interface APIGroupDiscovery {
  metadata: { name: string };
  versions: APIVersionDiscovery[];
}

/**
 * A group-version's APIResourceList in the aggregated form: each resource with its subresources under it; a
 * subresource whose resource is not listed gets a parent of its own with no kind and no verbs (kube's
 * ConvertGroupVersionIntoToDiscovery).
 */
export function resourceDiscovery(list: APIResource[]): APIResourceDiscovery[] {
  const scope = (r: APIResource) => (r.namespaced ? 'Namespaced' : 'Cluster');
  const kindOf = (r: APIResource) => ({ group: '', version: '', kind: r.kind });
  const byName = new Map<string, APIResourceDiscovery>();
  for (const r of list.filter((r) => !r.name.includes('/'))) {
    byName.set(r.name, {
      resource: r.name,
      responseKind: kindOf(r),
      scope: scope(r),
      singularResource: r.singularName,
      verbs: r.verbs,
      ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
      ...(r.categories?.length ? { categories: r.categories } : {}),
    });
  }
  for (const r of list.filter((r) => r.name.includes('/'))) {
    const slash = r.name.indexOf('/');
    const [resource, subresource] = [r.name.slice(0, slash), r.name.slice(slash + 1)];
    let parent = byName.get(resource);
    if (!parent) {
      parent = {
        resource,
        responseKind: { group: '', version: '', kind: '' },
        scope: scope(r),
        singularResource: '',
        verbs: [],
      };
      byName.set(resource, parent);
    }
    if (parent.scope !== scope(r)) {
      throw new Error(`discovery: ${r.name} is ${scope(r)} but its resource ${resource} is ${parent.scope}`);
    }
    (parent.subresources ??= []).push({ subresource, responseKind: kindOf(r), verbs: r.verbs });
  }
  return [...byName.values()];
}

/** The groups of /apis in the legacy document's order, each version with its resources (preferred version first). */
export function apiGroupDiscoveries(registry: Registry, served: ServedActions): APIGroupDiscovery[] {
  return registry.groups().map((group) => ({
    metadata: { name: group.name },
    versions: group.versions.map((version) => {
      const resources = resourceDiscovery(apiResourceList(registry, served, group.name, version)?.resources ?? []);
      return { version, ...(resources.length ? { resources } : {}), freshness: 'Current' as const };
    }),
  }));
}

/** The document in one version of apidiscovery.k8s.io (v2 and v2beta1 have the same fields). */
export function apiGroupDiscoveryList(items: APIGroupDiscovery[], version: string): object {
  return { kind: 'APIGroupDiscoveryList', apiVersion: `${DISCOVERY_GROUP}/${version}`, metadata: {}, items };
}

/** The media type of an answer: the encoding with the group, version and kind it carries, as kube names it. */
export function discoveryContentType(target: AggregatedDiscoveryTarget): string {
  const type = target.encoding === 'yaml' ? YAML_TYPE : JSON_TYPE;
  return `${type};g=${DISCOVERY_GROUP};v=${target.version};as=APIGroupDiscoveryList`;
}

/** The aggregated documents of /apis and /api, built once (the resources and actions are fixed at start). */
export class AggregatedDiscovery {
  private readonly items: Map<string, APIGroupDiscovery[]>;
  /** By path: kube hashes the content once, so both versions of a document share the ETag (Vary: Accept tells them apart). */
  private readonly etags: Map<string, string>;

  constructor(registry: Registry, served: ServedActions) {
    // No core group here: /api lists nothing, as /api's APIVersions lists no version.
    this.items = new Map([
      ['/apis', apiGroupDiscoveries(registry, served)],
      ['/api', []],
    ]);
    this.etags = new Map([...this.items].map(([path, items]) => [path, servedDocument({ items }).etag]));
  }

  /** Serves /apis or /api in the negotiated version and encoding. */
  serve(req: Request, res: Response, path: '/api' | '/apis', target: AggregatedDiscoveryTarget): void {
    const etag = this.etags.get(path)!;
    res.setHeader('ETag', etag);
    res.setHeader('Vary', 'Accept');
    res.setHeader('Cache-Control', 'public');
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
    const doc = apiGroupDiscoveryList(this.items.get(path)!, target.version);
    const text = target.encoding === 'yaml' ? yaml.dump(doc, { noRefs: true, lineWidth: -1 }) : JSON.stringify(doc);
    const body = Buffer.from(text);
    res.status(200);
    res.setHeader('Content-Type', discoveryContentType(target));
    res.setHeader('Content-Length', String(body.length));
    res.end(body);
  }
}
