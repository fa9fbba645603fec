/**
 * VirtualClusterInstance: where it runs (a Cluster, a namespace there, a virtual cluster name), an optional https
 * ingress endpoint. Where it runs is fixed at create (kube config certificates are signed by that virtual cluster):
 * checked against the Cluster, the project, the caller's hold on the virtual cluster and other instances, and held
 * as a claim while the instance exists (virtualclusterplacement.ts), then immutable (a rule of its CRD). The
 * physical cluster it was created on is recorded by the server in status.clusterUID, which no write changes, and its
 * creator in status.importedBy, which only the server changes.
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { Strategy } from '../strategy.js';
import { ownedKindStrategy } from './owned.js';
import { admitVirtualClusterInstance, keepCreateRecords, virtualClusterClaims } from './virtualclusterplacement.js';

const spec = Path.root('spec');

const validateSpec = (obj: KubeObject): FieldError[] => {
  const s = obj.spec ?? {};
  const errs: FieldError[] = [];
  const ref = spec.child('clusterRef');
  const r = s.clusterRef ?? {};
  if (!r.cluster) errs.push(fieldError.required(ref.child('cluster'), 'the Cluster the virtual cluster runs in'));
  else
    for (const msg of isDNS1123Subdomain(r.cluster))
      errs.push(fieldError.invalid(ref.child('cluster'), r.cluster, msg));
  if (r.namespace)
    for (const msg of isDNS1123Label(r.namespace))
      errs.push(fieldError.invalid(ref.child('namespace'), r.namespace, msg));
  if (r.virtualCluster)
    for (const msg of isDNS1123Label(r.virtualCluster))
      errs.push(fieldError.invalid(ref.child('virtualCluster'), r.virtualCluster, msg));
  if (s.ingressEndpoint !== undefined) {
    const problem = ingressProblem(s.ingressEndpoint);
    if (problem) errs.push(fieldError.invalid(spec.child('ingressEndpoint'), s.ingressEndpoint, problem));
  }
  return errs;
};

// clusterRef is immutable as a whole, by a transition rule of the CRD (self == oldSelf): every instance has one from
// its create (cluster is required), so there is no unset state to fill in later, and filling in a namespace or name
// would point it elsewhere just the same.
export const virtualClusterInstanceStrategy: Strategy = {
  ...ownedKindStrategy('virtualclusterinstances', validateSpec),
  admitCreate: admitVirtualClusterInstance,
  prepareForStatusUpdate: keepCreateRecords,
  claims: virtualClusterClaims,
};

function ingressProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an https URL such as https://vc.example.com';
  }
  if (url.protocol !== 'https:') return 'must be an https URL such as https://vc.example.com';
  if (url.username || url.password || url.search || url.hash)
    return 'must name only the scheme, host, port and path (no credentials, query or fragment)';
  return undefined;
}
