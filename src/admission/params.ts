/**
 * The params of a ValidatingAdmissionPolicy binding, read from the host cluster: the paramKind's resource found
 * through the host's discovery (kept a minute), then the object paramRef names, or those its selector selects, in
 * paramRef's namespace, else the request's (for a namespaced kind), as kube's policy dispatcher resolves them.
 */
import type { HostCluster } from '../host/cluster.js';
import { HostClusterError } from '../host/cluster.js';
import type { ParamKind, ParamRef } from './policy.js';
import { labelSelectorOf } from './webhookmatch.js';

const DISCOVERY_TTL_MS = 60_000;

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

export function hostParams(host: HostCluster) {
  const discovered = new Map<string, { at: number; resources: ApiResource[] }>();
  const resourceOf = async (kind: ParamKind): Promise<{ base: string; resource: ApiResource }> => {
    const apiVersion = kind.apiVersion ?? '';
    const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    let known = discovered.get(base);
    if (!known || Date.now() - known.at > DISCOVERY_TTL_MS) {
      const list = await host.request<{ resources?: ApiResource[] }>(`discover ${apiVersion}`, 'GET', base);
      discovered.set(base, (known = { at: Date.now(), resources: list.resources ?? [] }));
    }
    const resource = known.resources.find((r) => r.kind === kind.kind && !r.name.includes('/'));
    if (!resource) throw new Error(`paramKind kind \`${kind.kind}.${apiVersion}\` not known`);
    return { base, resource };
  };

  return async (kind: ParamKind, ref: ParamRef, requestNamespace: string): Promise<unknown[]> => {
    const { base, resource } = await resourceOf(kind);
    let namespace = '';
    if (resource.namespaced) {
      namespace = ref.namespace || requestNamespace;
      if (!namespace)
        throw new Error('cannot use namespaced paramRef in policy binding that matches cluster-scoped resources');
    }
    const collection = `${base}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${resource.name}`;
    if (ref.name) {
      try {
        return [await host.request(`get param ${ref.name}`, 'GET', `${collection}/${encodeURIComponent(ref.name)}`)];
      } catch (err) {
        if (err instanceof HostClusterError && err.code === 404) return [];
        throw err;
      }
    }
    const selector = labelSelectorOf(ref.selector ?? {}, 'paramRef.selector');
    const list = await host.request<{ items?: { metadata?: { labels?: Record<string, string> } }[] }>(
      `list params ${resource.name}`,
      'GET',
      collection,
    );
    return (list.items ?? []).filter((o) => selector.matches(o.metadata?.labels ?? {}));
  };
}
