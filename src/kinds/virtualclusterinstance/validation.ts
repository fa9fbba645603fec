/** What a VirtualClusterInstance's schema cannot say: names valid where they are used, an https ingress endpoint. */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { VirtualClusterInstance } from './types.js';

const spec = Path.root('spec');

export const validateSpec = (obj: VirtualClusterInstance): FieldError[] => {
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
