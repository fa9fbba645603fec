/**
 * Every kind this server serves, each with its handle (generated from its CRD) and its strategy: the one list of
 * kinds. A kind not listed here gets only the generic rules; the tests derive their lists of kinds from this one.
 */
import type { KindRef } from '../apimachinery/types.js';
import type { Strategy } from '../registry/strategy.js';
import { clusterStrategy } from './cluster/strategy.js';
import { Cluster } from './cluster/types.js';
import { ownedAccessKeyStrategy } from './ownedaccesskey/strategy.js';
import { OwnedAccessKey } from './ownedaccesskey/types.js';
import { projectStrategy } from './project/strategy.js';
import { Project } from './project/types.js';
import { projectSecretStrategy } from './projectsecret/strategy.js';
import { ProjectSecret } from './projectsecret/types.js';
import { sharedSecretStrategy } from './sharedsecret/strategy.js';
import { SharedSecret } from './sharedsecret/types.js';
import { virtualClusterInstanceStrategy } from './virtualclusterinstance/strategy.js';
import { VirtualClusterInstance } from './virtualclusterinstance/types.js';

/** A served kind: its handle and the rules its schema cannot say. */
export interface ServedKind {
  ref: KindRef;
  strategy: Strategy;
}

export const kinds: readonly ServedKind[] = [
  { ref: SharedSecret, strategy: sharedSecretStrategy },
  { ref: Cluster, strategy: clusterStrategy },
  { ref: OwnedAccessKey, strategy: ownedAccessKeyStrategy },
  { ref: Project, strategy: projectStrategy },
  { ref: ProjectSecret, strategy: projectSecretStrategy },
  { ref: VirtualClusterInstance, strategy: virtualClusterInstanceStrategy },
];

/** The strategy of each kind, by kind name. */
export const strategies: Record<string, Strategy> = Object.fromEntries(kinds.map((k) => [k.ref.kind, k.strategy]));
