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
import type { AdminField } from '../../access/validation.js';
import type { Strategy } from '../../registry/strategy.js';
import { ownedKindStrategy } from '../owned.js';
import { clusterAdmission } from './admission.js';
import { keepServerStatus } from '../../registry/serverstatus.js';
import { clusterReadView, lastCheckTimeField } from './freshness.js';
import { identityFields } from './identity.js';
import { LOCAL_CLAIM, isLocalCluster, localTaken } from './local.js';
import { localFixed, validateSpec } from './validation.js';

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

const owned = ownedKindStrategy('clusters', validateSpec, { hostRbac: true, adminFields });

export const clusterStrategy: Strategy = {
  ...owned,
  validateUpdate: (obj, old) => [...owned.validate!(obj), ...localFixed(obj, old)],
  admission: clusterAdmission,
  // The physical cluster it was first connected to (identity.ts) and when it was last checked (freshness.ts): no
  // client's status write moves them.
  prepareForStatusUpdate: keepServerStatus([...identityFields, lastCheckTimeField]),
  // Read as overdue once its checks have stopped for too long (freshness.ts).
  readView: clusterReadView,
  claims: {
    of: (obj) => (isLocalCluster(obj) ? [LOCAL_CLAIM] : []),
    taken: (obj, holder) => localTaken(obj, holder),
  },
};
