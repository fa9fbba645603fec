/** The host cluster, and where the connections tenants write may point. */
import { isIP } from 'node:net';
import { isDNS1123Subdomain } from '../apimachinery/validation.js';
import { FlagError, type Options } from './flag.js';
import { list, optionalSeconds } from './values.js';

export interface HostConfig {
  /** The host cluster (TokenReview, SubjectAccessReview, RBAC); unset: in-cluster config when in a pod. */
  kubeconfig?: string;
  /**
   * Where virtual cluster connections (stored data) may point: address ranges, addresses and DNS names; empty: any
   * address but the link-local ones (host/serverallowlist.ts).
   */
  virtualClusterAllowedServers: string[];
  /** The longest client certificate (seconds) a kube config gets outside system:masters; 0 for no limit. */
  kubeConfigMaxCertificateTtlSeconds: number;
}

export const hostOptions: Options<HostConfig> = {
  concern: 'host',
  flags: [
    {
      name: 'kubeconfig',
      arg: 'file',
      help: 'Kubeconfig of the host cluster, asked to review bearer tokens (TokenReview) and to authorize requests (SubjectAccessReview), and holding RBAC. Default: the in-cluster configuration when running in a pod, else no host cluster.',
      apply: (c, v) => (c.kubeconfig = v),
    },
    {
      name: 'virtual-cluster-allowed-servers',
      arg: 'servers',
      default: '',
      help: "Where a virtual cluster's connection (the Secret vc-<name>, which tenants may write) may point, comma-separated: address ranges (10.0.0.0/8, fd00::/8), addresses, and DNS names (svc.cluster.local allows that name and every name under it). The addresses a name resolves to are checked as each connection is made. Link-local addresses (169.254.0.0/16, fe80::/10, where cloud metadata services answer) and fd00:ec2::254 are refused unless a listed range lies inside them. Default: any other address.",
      apply: (c, v) => (c.virtualClusterAllowedServers = allowedServers('virtual-cluster-allowed-servers', v)),
    },
    {
      name: 'kubeconfig-max-certificate-ttl',
      arg: 'duration',
      default: '168h',
      help: "The longest life of the client certificate in a virtual cluster's kube config asked for by anyone outside system:masters: a longer spec.certificateTTL becomes this (the answer warns), and 0 (the virtual cluster's own signing duration, often a year) is refused with 422. At least 10m; 0s for no limit ({default}).",
      apply: (c, v) =>
        (c.kubeConfigMaxCertificateTtlSeconds = optionalSeconds('kubeconfig-max-certificate-ttl', v, 600_000)),
    },
  ],
};

/** Address ranges (CIDR), addresses and DNS names, lowercased; anything else is refused by name. */
function allowedServers(flag: string, value: string): string[] {
  return list(value).map((entry) => {
    const [address, prefix, ...rest] = entry.split('/');
    const version = isIP(address);
    const max = version === 4 ? 32 : 128;
    if (version && !rest.length && (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= max)))
      return entry.toLowerCase();
    const name = entry.toLowerCase().replace(/\.$/, '');
    if (!entry.includes('/') && !isIP(name) && isDNS1123Subdomain(name).length === 0) return name;
    throw new FlagError(
      `--${flag} takes address ranges (10.0.0.0/8), addresses (10.1.2.3) and DNS names (svc.cluster.local, which allows every name under it), comma-separated (got ${JSON.stringify(entry)})`,
    );
  });
}
