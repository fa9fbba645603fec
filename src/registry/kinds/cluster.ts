/**
 * Cluster: a connected cluster needs the secret with its connection config, unless it is local or peered (a rule
 * of its CRD, x-kubernetes-validations, says so). Which Secret that is, whether the Cluster takes new virtual
 * clusters and whether it is the local one are the administrator's: only system:masters may set or change
 * spec.config.secretName, spec.config.secretNamespace, spec.config.key, spec.unusable and spec.local, on create as on
 * update.
 *
 * At most one Cluster is local (spec.local: the server's own host cluster). Every local Cluster holds the claim
 * `local`, written by storage in the transaction that creates it (registry/strategy.ts claims), so two concurrent
 * creates cannot both win; spec.local is therefore fixed at create (an update that would make a Cluster local, or
 * stop it being local, is 422: the claim could not follow it). Clusters stored before the claim existed hold none:
 * a list finds those, and answers the same 422 before any write. Both name the Cluster that is local.
 */
import { decoded } from '../../apimachinery/encoded.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { isConfigMapKey, isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { AdmitContext, ClaimHolderRef, Strategy } from '../strategy.js';
import type { AdminField } from '../../access/validation.js';
import { keepClusterIdentity } from './clusteridentity.js';
import { ownedKindStrategy } from './owned.js';

const spec = Path.root('spec');
const clusterGK = { group: GROUP_NAME, kind: 'Cluster' };
/** The claim every local Cluster holds. */
const LOCAL_CLAIM = 'local';

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

/** spec.config as stored (checked by the schema on every write). */
const configOf = (spec: Record<string, unknown>) =>
  (spec.config ?? {}) as { secretName?: string; secretNamespace?: string; key?: string };

/** The administrator's fields (see the top). */
const adminFields: AdminField[] = [
  { path: 'spec.config.secretName', value: (s) => configOf(s).secretName ?? '' },
  { path: 'spec.config.secretNamespace', value: (s) => configOf(s).secretNamespace ?? '' },
  { path: 'spec.config.key', value: (s) => configOf(s).key ?? '' },
  { path: 'spec.unusable', value: (s) => s.unusable === true },
  // The one local Cluster is the server's own host cluster: a tenant creating it would hold its claim.
  { path: 'spec.local', value: (s) => s.local === true },
];

export const isLocalCluster = (obj: KubeObject): boolean => obj.spec?.local === true;

/** The 422 for a second local Cluster, naming the one that is. */
function localTaken(obj: KubeObject, holder: ClaimHolderRef): errors.StatusError {
  return errors.invalid(clusterGK, obj.metadata.name ?? '', [
    fieldError.invalid(
      spec.child('local'),
      true,
      `Cluster ${JSON.stringify(holder.name)} is the local cluster already: at most one Cluster may be local (the server's own host cluster); connect this cluster through spec.config instead`,
    ),
  ]);
}

/** spec.local cannot change (see the top). */
function localFixed(obj: KubeObject, old: KubeObject): FieldError[] {
  if (isLocalCluster(obj) === isLocalCluster(old)) return [];
  return [
    fieldError.invalid(
      spec.child('local'),
      isLocalCluster(obj),
      'field is immutable: whether a Cluster is the local cluster is fixed at create; delete the Cluster and create it again',
    ),
  ];
}

/** A local Cluster stored before the claim existed (see the top). */
async function admitCluster(obj: KubeObject, _caller: unknown, { stores }: AdmitContext): Promise<void> {
  if (!isLocalCluster(obj)) return;
  const clusters = stores(GROUP_NAME, 'v1', 'clusters');
  if (!clusters) return;
  const found = (await clusters.list(undefined, { predicate: { matches: isLocalCluster, empty: false } })).items[0];
  if (found) throw localTaken(obj, { name: decoded(found).metadata.name ?? '' });
}

const owned = ownedKindStrategy('clusters', validateSpec, { hostRbac: true, adminFields });

export const clusterStrategy: Strategy = {
  ...owned,
  validateUpdate: (obj, old) => [...owned.validate!(obj), ...localFixed(obj, old)],
  admitCreate: admitCluster,
  // The physical cluster it was first connected to (clusteridentity.ts): no status write moves it.
  prepareForStatusUpdate: keepClusterIdentity,
  claims: {
    of: (obj) => (isLocalCluster(obj) ? [LOCAL_CLAIM] : []),
    taken: (obj, holder) => localTaken(obj, holder),
  },
};
