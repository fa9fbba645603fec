/**
 * Clusters the server connects to, for tests of work on them (imports, kube configs): a host stand-in becomes a
 * Cluster through a config Secret in the management host (the server's --kubeconfig), or is the management host
 * itself (a local Cluster). The server must run the health checks (clusterHealthIntervalMs > 0) with
 * clusterSecretNamespace CLUSTER_SECRETS; each helper waits on the status the server writes, never on time.
 */
import { expect } from '@jest/globals';
import { API_VERSION, CLUSTERS_PATH, clusterPath } from './fixtures.js';
import type { HostClusterStandIn } from './hostcluster.js';
import type { HttpClient } from './http.js';
import { waitFor } from './wait.js';

/** The namespace of the management host where the config Secrets are (the server's --cluster-secret-namespace). */
export const CLUSTER_SECRETS = 'platform';
/** How often the server checks its Clusters in these tests. */
export const HEALTH_INTERVAL_MS = 1000;

/** Waits until the Cluster's status.phase is `phase` (and its reason `reason`, when given); returns the status. */
export function clusterPhase(
  admin: HttpClient,
  name: string,
  phase: string,
  reason?: string,
): Promise<Record<string, any>> {
  return waitFor(
    `Cluster ${name} to be ${phase || '""'}${reason ? `/${reason}` : ''}`,
    async () => {
      const s = (await admin.get(clusterPath(name))).body.status ?? {};
      return (s.phase ?? '') === phase && (reason === undefined || s.reason === reason) && s;
    },
    30_000,
  );
}

/**
 * Creates the Cluster `name` connected to `cluster` through the Secret `name` in the management host `mgmt` (or
 * `spec.local` when `cluster` is `mgmt`), with `spec` added, and waits until it is Initialized.
 */
export async function connectCluster(
  admin: HttpClient,
  mgmt: HostClusterStandIn,
  name: string,
  cluster: HostClusterStandIn,
  spec: Record<string, unknown> = {},
): Promise<void> {
  let connection: Record<string, unknown> = { local: true };
  if (cluster !== mgmt) {
    mgmt.addNamespace(CLUSTER_SECRETS);
    mgmt.addSecret(CLUSTER_SECRETS, name, { config: cluster.kubeconfigText() });
    connection = { config: { secretName: name } };
  }
  const res = await admin.post(CLUSTERS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: { name },
    spec: { ...connection, ...spec },
  });
  expect(res.status).toBe(201);
  await clusterPhase(admin, name, 'Initialized');
}
