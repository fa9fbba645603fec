/** The one local Cluster (the server's own host cluster): the claim it holds, and the 422 for a second one. */
import { Path, fieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { ClaimHolderRef } from '../../registry/strategy.js';
import type { Cluster } from './types.js';

const clusterGK = { group: GROUP_NAME, kind: 'Cluster' };
/** The claim every local Cluster holds. */
export const LOCAL_CLAIM = 'local';

export const isLocalCluster = (obj: Cluster): boolean => obj.spec?.local === true;

/** The 422 for a second local Cluster, naming the one that is. */
export function localTaken(obj: Cluster, holder: ClaimHolderRef): errors.StatusError {
  return errors.invalid(clusterGK, obj.metadata.name ?? '', [
    fieldError.invalid(
      Path.root('spec').child('local'),
      true,
      `Cluster ${JSON.stringify(holder.name)} is the local cluster already: at most one Cluster may be local (the server's own host cluster); connect this cluster through spec.config instead`,
    ),
  ]);
}
