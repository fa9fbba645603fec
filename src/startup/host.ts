/** The host step: the host cluster, and the client CAs. */
import { startClientCertificateAuthorities } from '../auth/clientcas.js';
import type { Config } from '../config.js';
import { HostCluster } from '../host/cluster.js';
import type { Logger } from '../log.js';
import type { Cleanups } from './cleanups.js';

/** The host cluster (none without a kubeconfig outside a pod) and the client CAs, some read from it. */
export async function startHost(config: Config, log: Logger, cleanups: Cleanups) {
  const cluster = HostCluster.load({ kubeconfig: config.kubeconfig });
  const clientCas = await startClientCertificateAuthorities(config, cluster, log);
  cleanups.add('stopping the client CA reloads', async () => clientCas.stop());
  if (!cluster)
    log.info(
      'no host cluster configured: TokenReview, SubjectAccessReview, the access sync to host RBAC and connected Clusters (local, or through a config Secret) are off, and with them imports of virtual clusters and their kube configs',
    );
  return { cluster, clientCas };
}
