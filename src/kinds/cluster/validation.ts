/** What a Cluster's schema cannot say of its spec: names that must be valid where they are used, spec.local fixed. */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isConfigMapKey, isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import { isLocalCluster } from './local.js';
import type { Cluster } from './types.js';

const spec = Path.root('spec');

export const validateSpec = (obj: Cluster): FieldError[] => {
  const s = obj.spec ?? {};
  const errs: FieldError[] = [];
  const config = spec.child('config');
  // That spec.config.secretName is required unless spec.local or spec.networkPeer is a rule of the CRD (CEL).
  if (s.config?.secretName) {
    for (const msg of isDNS1123Subdomain(s.config.secretName))
      errs.push(fieldError.invalid(config.child('secretName'), s.config.secretName, msg));
  }
  if (s.config?.secretNamespace) {
    for (const msg of isDNS1123Label(s.config.secretNamespace))
      errs.push(fieldError.invalid(config.child('secretNamespace'), s.config.secretNamespace, msg));
  }
  if (s.config?.key) {
    for (const msg of isConfigMapKey(s.config.key))
      errs.push(fieldError.invalid(config.child('key'), s.config.key, msg));
  }
  if (s.managementNamespace) {
    for (const msg of isDNS1123Label(s.managementNamespace))
      errs.push(fieldError.invalid(spec.child('managementNamespace'), s.managementNamespace, msg));
  }
  return errs;
};

/** spec.local cannot change (strategy.ts). */
export function localFixed(obj: Cluster, old: Cluster): FieldError[] {
  if (isLocalCluster(obj) === isLocalCluster(old)) return [];
  return [
    fieldError.invalid(
      spec.child('local'),
      isLocalCluster(obj),
      'field is immutable: whether a Cluster is the local cluster is fixed at create; delete the Cluster and create it again',
    ),
  ];
}
