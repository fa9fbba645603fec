/** Cluster's admission plugin: a second local Cluster is refused, also beside one stored before claims existed. */
import { decoded } from '../../apimachinery/encoded.js';
import type { AdmitContext, KindAdmission } from '../../registry/strategy.js';
import { isLocalCluster, localTaken } from './local.js';
import { Cluster } from './types.js';

/** A local Cluster stored before the claim existed (see the top). */
async function admitCluster(obj: Cluster, _caller: unknown, { store }: AdmitContext): Promise<void> {
  if (!isLocalCluster(obj)) return;
  const found = (await store(Cluster).list(undefined, { predicate: { matches: isLocalCluster, empty: false } }))
    .items[0];
  if (found) throw localTaken(obj, { name: decoded(found).metadata.name ?? '' });
}

export const clusterAdmission: KindAdmission<Cluster> = { admitCreate: admitCluster };
