/** Clusters: how often their connections (and their virtual clusters) are checked, and where their config Secrets are. */
import { isDNS1123Label } from '../apimachinery/validation.js';
import { FlagError, type Options } from './flag.js';
import { bool, duration } from './values.js';

export interface ClustersConfig {
  /** How often every Cluster's connection is checked (and its Secret read again); 0: never (no status is written). */
  clusterHealthIntervalMs: number;
  /** How often every VirtualClusterInstance's virtual cluster is checked; 0: never (no health is written). */
  virtualClusterHealthIntervalMs: number;
  /** Where a Cluster's config Secret is looked for when its spec.config.secretNamespace is empty. */
  clusterSecretNamespace: string;
  /** Keep a copy of clusterSecretNamespace's Secrets by list and watch instead of reading each at every check. */
  watchClusterSecrets: boolean;
}

export const clustersOptions: Options<ClustersConfig> = {
  concern: 'clusters',
  flags: [
    {
      name: 'cluster-health-interval',
      arg: 'duration',
      default: '30s',
      help: "How often every Cluster is checked: its config Secret read again, then GET /version and the kube-system Namespace's uid on the cluster, each request bounded by the smaller of 5s and this; status.phase, reason, message and online say the outcome, and status.lastCheckTime when it was (a Cluster whose lastCheckTime is older than 3 intervals reads as Ready Unknown, reason CheckOverdue). A Cluster is also checked when it changes. 0: no checks, and no status is written ({default}).",
      apply: (c, v) => (c.clusterHealthIntervalMs = duration('cluster-health-interval', v)),
    },
    {
      name: 'virtual-cluster-health-interval',
      arg: 'duration',
      default: '30s',
      help: "How often every VirtualClusterInstance is checked through its Cluster: the importer's hold of the virtual cluster asked again, its connection Secret vc-<name> read, then GET /version on the virtual cluster, bounded by the smaller of 5s and this and by 1 MiB; status.phase (Ready, Failed, Pending), reason, message, online, kubernetesVersion and lastCheckTime say the outcome (an instance whose lastCheckTime is older than 3 intervals reads as phase Unknown, reason CheckOverdue, and gets no kube configs). An instance is also checked when its spec or its Cluster's status changes. Needs a host cluster. 0: no checks, and no health is written ({default}).",
      apply: (c, v) => (c.virtualClusterHealthIntervalMs = duration('virtual-cluster-health-interval', v)),
    },
    {
      name: 'cluster-secret-namespace',
      arg: 'namespace',
      default: 'default',
      help: "The namespace of the host cluster where a Cluster's config Secret is read when its spec.config.secretNamespace is empty: the namespace the server runs in (the Helm chart sets it to the release namespace; {default}).",
      apply: (c, v) => (c.clusterSecretNamespace = dns1123Label('cluster-secret-namespace', v)),
    },
    {
      name: 'watch-cluster-secrets',
      arg: 'bool',
      default: 'false',
      help: "Keep a copy of the Secrets of --cluster-secret-namespace, by list and watch, instead of reading each Cluster's config Secret there at every check (needs list and watch on Secrets in that namespace: the chart's rbac.watchClusterSecrets; where the host refuses the list, each is read by name, as without this). false: read by name ({default}).",
      apply: (c, v) => (c.watchClusterSecrets = bool('watch-cluster-secrets', v)),
    },
  ],
};

function dns1123Label(flag: string, value: string): string {
  const problems = isDNS1123Label(value);
  if (problems.length) throw new FlagError(`--${flag} must be a namespace name: ${problems.join('; ')}`);
  return value;
}
