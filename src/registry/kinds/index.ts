/** The strategy of each kind, by kind name; a kind without one gets only the generic rules. */
import type { Strategy } from '../strategy.js';
import { clusterStrategy } from './cluster.js';
import { ownedAccessKeyStrategy } from './ownedaccesskey.js';
import { projectStrategy } from './project.js';
import { projectSecretStrategy } from './projectsecret.js';
import { sharedSecretStrategy } from './sharedsecret.js';
import { virtualClusterInstanceStrategy } from './virtualclusterinstance.js';

export const strategies: Record<string, Strategy> = {
  SharedSecret: sharedSecretStrategy,
  Cluster: clusterStrategy,
  OwnedAccessKey: ownedAccessKeyStrategy,
  Project: projectStrategy,
  ProjectSecret: projectSecretStrategy,
  VirtualClusterInstance: virtualClusterInstanceStrategy,
};
