/**
 * VirtualClusterInstance: where it runs (a Cluster, a namespace there, a virtual cluster name), an optional https
 * ingress endpoint. Where it runs is fixed at create (kube config certificates are signed by that virtual cluster):
 * checked against the Cluster, the project, the caller's hold on the virtual cluster and other instances, and held
 * as a claim while the instance exists (placement.ts), then immutable (a rule of its CRD). The
 * physical cluster it was created on is recorded by the server in status.clusterUID, which no write changes, and its
 * creator in status.importedBy, which only the server changes. Once its health checks have stopped for 3 intervals,
 * it reads as not known to be ready (freshness.ts).
 */
import type { Strategy } from '../../registry/strategy.js';
import { ownedKindStrategy } from '../owned.js';
import { virtualClusterInstanceAdmission } from './admission.js';
import { virtualClusterReadView } from './freshness.js';
import { keepCreateRecords, virtualClusterClaims } from './placement.js';
import { validateSpec } from './validation.js';

// clusterRef is immutable as a whole, by a transition rule of the CRD (self == oldSelf): every instance has one from
// its create (cluster is required), so there is no unset state to fill in later, and filling in a namespace or name
// would point it elsewhere just the same.
export const virtualClusterInstanceStrategy: Strategy = {
  ...ownedKindStrategy('virtualclusterinstances', validateSpec),
  admission: virtualClusterInstanceAdmission,
  prepareForStatusUpdate: keepCreateRecords,
  claims: virtualClusterClaims,
  // Read as not known to be ready once its checks have stopped for too long (freshness.ts).
  readView: virtualClusterReadView,
};
