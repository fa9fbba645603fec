/**
 * Cluster: a connected cluster needs the secret with its connection config, unless it is local or peered (a rule
 * of its CRD, x-kubernetes-validations, says so). Which Secret that is and whether the Cluster takes new virtual
 * clusters are the administrator's: only system:masters may change spec.config.secretName,
 * spec.config.secretNamespace and spec.unusable.
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { Strategy } from '../strategy.js';
import type { AdminField } from '../../access/validation.js';
import { ownedKindStrategy } from './owned.js';

const spec = Path.root('spec');

const validateSpec = (obj: KubeObject): FieldError[] => {
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
  if (s.managementNamespace) {
    for (const msg of isDNS1123Label(s.managementNamespace))
      errs.push(fieldError.invalid(spec.child('managementNamespace'), s.managementNamespace, msg));
  }
  return errs;
};

/** spec.config as stored (checked by the schema on every write). */
const configOf = (spec: Record<string, unknown>) =>
  (spec.config ?? {}) as { secretName?: string; secretNamespace?: string };

/** The administrator's fields (see the top). */
const adminFields: AdminField[] = [
  { path: 'spec.config.secretName', value: (s) => configOf(s).secretName ?? '' },
  { path: 'spec.config.secretNamespace', value: (s) => configOf(s).secretNamespace ?? '' },
  { path: 'spec.unusable', value: (s) => s.unusable === true },
];

export const clusterStrategy: Strategy = ownedKindStrategy('clusters', validateSpec, { hostRbac: true, adminFields });
