/**
 * Requests that stay in flight as long as a test wants: the kube config of a VirtualClusterInstance whose virtual
 * cluster (a second host stand-in) signs certificates only after a delay, or only once the test lets it. For in-flight limits, deadlines and
 * shutdown. The host is the server's --kubeconfig and the local Cluster eu-1, which the instance names.
 */
import { expect } from '@jest/globals';
import { connectCluster } from './connectedclusters.js';
import { API_VERSION } from './fixtures.js';
import { GROUP_PATH, type HttpClient } from './http.js';
import { startHostCluster, type HostClusterStandIn } from './hostcluster.js';
import { waitFor } from './wait.js';

const NAMESPACE = 'p-web';
const NAME = 'vc1';

export interface SlowVirtualCluster {
  /** The host cluster: give the server `--kubeconfig` = host.kubeconfigPath. */
  host: HostClusterStandIn;
  /** GET or POST here: answered once the virtual cluster has signed. */
  kubeconfigPath: string;
  /**
   * Makes the host the local Cluster eu-1 (waiting until the server has connected it: the server must run its health
   * checks) and the VirtualClusterInstance on it, owned by `owner`.
   */
  createInstance(admin: HttpClient, owner: string): Promise<void>;
  /** Forgets the requests seen so far; call before starting the one to wait for. */
  resetCounts(): void;
  /** Resolves once a kube config request has reached the virtual cluster (so it is in flight). */
  reached(): Promise<void>;
  /** Signing 'held': lets the kube config requests in flight be answered, and those sent later until hold(). */
  release(): void;
  /** Signing 'held': the kube config requests sent from now on wait for release() again. */
  hold(): void;
  stop(): Promise<void>;
}

/** `signing`: how long after approval the virtual cluster signs, or 'held' until release(). */
export async function startSlowVirtualCluster(signing: number | 'held'): Promise<SlowVirtualCluster> {
  const host = await startHostCluster();
  // The project's namespace, which the platform makes in the host cluster.
  host.addNamespace(NAMESPACE);
  const vcluster = await startHostCluster(
    signing === 'held' ? { csrSigningHeld: true } : { csrSigningDelayMs: signing },
  );
  host.addSecret(`vcluster-${NAME}`, `vc-${NAME}`, { config: vcluster.kubeconfigText() });
  const instances = `${GROUP_PATH}/namespaces/${NAMESPACE}/virtualclusterinstances`;
  return {
    host,
    kubeconfigPath: `${instances}/${NAME}/kubeconfig`,
    async createInstance(admin, owner) {
      await connectCluster(admin, host, 'eu-1', host);
      const vci = {
        apiVersion: API_VERSION,
        kind: 'VirtualClusterInstance',
        metadata: { name: NAME },
        spec: {
          owner: { user: owner },
          clusterRef: { cluster: 'eu-1', namespace: `vcluster-${NAME}` },
          ingressEndpoint: `https://${NAME}.example.com`,
        },
      };
      expect((await admin.post(instances, vci)).status).toBe(201);
    },
    resetCounts: () => vcluster.resetCounts(),
    release: () => vcluster.releaseCsrSigning(),
    hold: () => vcluster.holdCsrSigning(),
    async reached() {
      await waitFor(
        'the kube config request to reach the virtual cluster',
        () => vcluster.count('certificatesigningrequests', 'POST') > 0,
      );
    },
    async stop() {
      await host.stop();
      await vcluster.stop();
    },
  };
}
