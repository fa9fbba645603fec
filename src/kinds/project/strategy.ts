/**
 * Project: owner and access like the other kinds; allowed clusters are named by valid, distinct Cluster names (or
 * `*`, every Cluster, as upstream's GitOps manifests write it), and only system:masters may set or change them, on
 * create as on update (they are the administrator's bound on where the project's virtual clusters come from; an
 * owner, an access entry granting update or a creator may not widen it). None listed (absent or empty) allows no Cluster: a bound nobody set is not "anywhere".
 */
import type { Strategy } from '../../registry/strategy.js';
import type { AdminField } from '../../access/validation.js';
import { ownedKindStrategy } from '../owned.js';
import { validateSpec } from './validation.js';

/** The administrator's fields (see the top); unset and empty both allow no Cluster. */
const adminFields: AdminField[] = [{ path: 'spec.allowedClusters', value: (s) => s.allowedClusters ?? [] }];

/** The allowed clusters narrow where the project's virtual clusters may come from. */
export const projectStrategy: Strategy = ownedKindStrategy('projects', validateSpec, {
  adminFields,
  restrictingFields: [['spec', 'allowedClusters']],
});
