/**
 * VirtualClusterInstance's admission plugin: where a new instance points is checked against the Cluster, the project,
 * the caller's hold of the virtual cluster and the other instances (placement.ts), and recorded in its status.
 */
import * as errors from '../../apimachinery/status.js';
import { isMaster } from '../../apimachinery/user.js';
import { Path } from '../../apimachinery/field.js';
import { recordUser } from '../../registry/recordeduser.js';
import type { AdmitContext, Caller, KindAdmission } from '../../registry/strategy.js';
import { Cluster } from '../cluster/types.js';
import { projectOfNamespace } from '../project/namespace.js';
import { Project } from '../project/types.js';
import {
  checkCallerHasVirtualCluster,
  checkNotImported,
  clusterErrors,
  instanceGK,
  instanceGR,
  instanceRef,
} from './placement.js';
import { VirtualClusterInstance } from './types.js';

/**
 * VirtualClusterInstance's admitCreate: a create by anyone but system:masters (or the server itself) passes the
 * import's checks, in the project whose namespace p-<project> it is created in (that its owner is its creator or a
 * team of the creator's is the rule of every owned kind: kinds/owned.ts). Every instance with a namespace is then bound to
 * the physical cluster its Cluster reaches (status.clusterUID; see the top) and checked against the other
 * instances; system:masters' is stored unbound when its Cluster is not connected.
 */
async function admitVirtualClusterInstance(
  obj: VirtualClusterInstance,
  caller: Caller,
  { store, connectCluster }: AdmitContext,
): Promise<void> {
  const { user } = caller;
  const trusted = !user || isMaster(user);
  const name = obj.metadata.name ?? '';
  const ref = instanceRef(obj);
  if (!trusted) {
    const project = await projectOfNamespace(store(Project), obj.metadata.namespace ?? '', instanceGK, name);
    const errs = await clusterErrors(
      store(Cluster),
      project,
      ref.cluster,
      Path.root('spec').child('clusterRef').child('cluster'),
      caller,
    );
    if (errs.length) throw errors.invalid(instanceGK, name, errs);
  }
  if (!ref.namespace) return;
  const cluster = await connectCluster(ref.cluster).catch((err) => {
    if (trusted && errors.isStatusError(err, 'ServiceUnavailable')) return undefined;
    throw err;
  });
  if (cluster) {
    await checkCallerHasVirtualCluster(cluster, ref, caller, { gr: instanceGR, name });
    ref.clusterUid = cluster.kubeSystemUid;
  }
  await checkNotImported(store(VirtualClusterInstance), ref, { gr: instanceGR, name, user });
  if (ref.clusterUid) obj.status = { ...obj.status, clusterUID: ref.clusterUid };
  if (user) obj.status = { ...obj.status, importedBy: recordUser(user) };
}

export const virtualClusterInstanceAdmission: KindAdmission<VirtualClusterInstance> = {
  admitCreate: admitVirtualClusterInstance,
};
