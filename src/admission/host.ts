/**
 * Admission as configured in the host cluster: the enabled plugins, fed by informers on the host (namespaces for
 * NamespaceLifecycle). Only with a host cluster; the informers run until stop().
 */
import type { HostCluster } from '../host/cluster.js';
import { HostInformer } from '../host/informer.js';
import { HostClusterError } from '../host/restclient.js';
import { AdmissionChain } from './chain.js';
import { NAMESPACE_LIFECYCLE, namespaceLifecycle, type Namespace, type NamespaceSource } from './namespacelifecycle.js';
import type { AdmissionPlugin } from './plugin.js';

export interface HostAdmission {
  chain: AdmissionChain;
  stop(): void;
}

export function startHostAdmission(
  host: HostCluster,
  enabled: string[],
  log: (msg: string, fields?: Record<string, unknown>) => void,
): HostAdmission {
  const running = new AbortController();
  const plugins: AdmissionPlugin[] = [];
  for (const name of enabled) {
    if (name === NAMESPACE_LIFECYCLE) plugins.push(namespaceLifecycle(hostNamespaces(host, running.signal, log)));
  }
  return { chain: new AdmissionChain(plugins), stop: () => running.abort() };
}

function hostNamespaces(
  host: HostCluster,
  signal: AbortSignal,
  log: (msg: string, fields?: Record<string, unknown>) => void,
): NamespaceSource {
  const informer = new HostInformer<Namespace>(host, { what: 'namespaces', path: '/api/v1/namespaces', log });
  void informer.run(signal);
  return {
    waitForSync: (timeoutMs) => informer.waitForSync(timeoutMs),
    cached: (name) => informer.get(name),
    live: async (name) => {
      try {
        return await host.request<Namespace>(
          `get namespace ${name}`,
          'GET',
          `/api/v1/namespaces/${encodeURIComponent(name)}`,
        );
      } catch (err) {
        if (err instanceof HostClusterError && err.code === 404) return undefined;
        throw err;
      }
    },
  };
}
