/**
 * Where a new VirtualClusterInstance may point. Its clusterRef decides which virtual cluster signs the kube configs
 * it hands out, so the import action and a create by anyone but system:masters make the same checks: the caller
 * may `get` the Cluster (its owner, an access entry, or RBAC grants it), the Cluster exists, is usable and is not
 * being deleted, the project allows it, and no other instance already manages that virtual cluster. (clusterRef
 * cannot change afterwards: virtualclusterinstance.ts.)
 *
 * "That virtual cluster" is what the server really reaches: kube configs are signed through the Secret
 * `vc-<virtual cluster>` in the namespace clusterRef.namespace of the one host cluster (actions/kubeconfig.ts),
 * whatever clusterRef.cluster says; so two instances with the same namespace and name are the same virtual
 * cluster even when they name different Clusters.
 */
import { decoded } from '../../apimachinery/encoded.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { GroupResource, KubeObject } from '../../apimachinery/types.js';
import { isMaster, type UserInfo } from '../../apimachinery/user.js';
import type { Caller, StoreLookup, StoredObjects } from '../strategy.js';
import { ownerGivenAway } from '../../access/validation.js';
import { ALL_CLUSTERS, allowedClusters, namespaceProject } from './project.js';

const VERSION = 'v1';
const instanceGK = { group: GROUP_NAME, kind: 'VirtualClusterInstance' };
const instanceGR = { group: GROUP_NAME, resource: 'virtualclusterinstances' };

/** A virtual cluster on a connected cluster: an instance's spec.clusterRef, or an import's sourceVirtualCluster. */
export interface VirtualClusterRef {
  cluster: string;
  /** Its namespace in that cluster. */
  namespace?: string;
  /** Its name there (an instance's clusterRef.virtualCluster, else the instance's own name). */
  virtualCluster: string;
}

/**
 * Why `project` may not have a virtual cluster on the Cluster `name` for this caller, as errors on the field `at`;
 * none if it may. Whether the caller may get the Cluster is asked first, so that one who may not learns nothing of it.
 */
export async function clusterErrors(
  clusters: StoredObjects,
  project: KubeObject,
  name: string,
  at: Path,
  caller: Caller,
): Promise<FieldError[]> {
  const refused = await clusterRefused(name, at, caller);
  if (refused) return [refused];
  const cluster = await getIfExists(clusters, name);
  if (!cluster) return [fieldError.notFound(at, name)];
  if (cluster.spec?.unusable === true)
    return [
      fieldError.forbidden(
        at,
        `Cluster ${JSON.stringify(name)} is marked unusable (spec.unusable: true) and accepts no new virtual clusters`,
      ),
    ];
  if (cluster.metadata.deletionTimestamp)
    return [fieldError.forbidden(at, `Cluster ${JSON.stringify(name)} is being deleted`)];
  const allowed = allowedClusters(project);
  if (allowed.includes(ALL_CLUSTERS) || allowed.includes(name)) return [];
  const project_ = JSON.stringify(project.metadata.name);
  return [
    fieldError.forbidden(
      at,
      allowed.length
        ? `project ${project_} allows only the clusters ${allowed.map((c) => JSON.stringify(c)).join(', ')}`
        : `project ${project_} allows no cluster: its spec.allowedClusters is empty (a member of system:masters may list the Cluster there, or {name: "*"} for every cluster)`,
    ),
  ];
}

/**
 * Outside system:masters (and the server's own writes), the caller must be allowed to get the Cluster; a caller
 * that brings no way to ask is refused.
 */
async function clusterRefused(name: string, at: Path, { user, authorize }: Caller): Promise<FieldError | undefined> {
  if (!user || isMaster(user)) return undefined;
  const attrs = {
    verb: 'get',
    isResourceRequest: true,
    path: `/apis/${GROUP_NAME}/${VERSION}/clusters/${name}`,
    apiGroup: GROUP_NAME,
    apiVersion: VERSION,
  };
  const decision = authorize
    ? await authorize({ ...attrs, namespace: '', resource: 'clusters', subresource: '', name })
    : { decision: 'deny' as const };
  if (decision.decision === 'allow') return undefined;
  return fieldError.forbidden(
    at,
    `User ${JSON.stringify(user.name)} cannot get Cluster ${JSON.stringify(name)}: a virtual cluster is imported only from a Cluster its importer may get (its owner, or an access entry granting get)`,
  );
}

/**
 * One virtual cluster is managed by one instance: 409 when another already points at `ref`. The other instance
 * is named to system:masters only: others are not told of objects in projects they may not see (as kube says
 * "provided port is already allocated" without naming the Service holding it).
 */
export async function checkNotImported(
  instances: StoredObjects,
  ref: VirtualClusterRef,
  conflict: { gr: GroupResource; name: string; user: UserInfo | undefined },
): Promise<void> {
  // Not the Cluster: the one host cluster is reached whatever it says (see the top).
  const same = (o: KubeObject) => {
    const r = o.spec?.clusterRef ?? {};
    return r.namespace === ref.namespace && (r.virtualCluster || o.metadata.name) === ref.virtualCluster;
  };
  const found = (await instances.list(undefined, { predicate: { matches: same, empty: false } })).items[0];
  if (!found) return;
  const existing = decoded(found);
  const which = isMaster(conflict.user)
    ? ` as VirtualClusterInstance ${existing.metadata.namespace}/${existing.metadata.name}`
    : ' by another VirtualClusterInstance';
  throw errors.conflict(
    conflict.gr,
    conflict.name,
    `virtual cluster ${ref.namespace}/${ref.virtualCluster} is already imported${which}`,
  );
}

/**
 * VirtualClusterInstance's admitCreate: a create by anyone but system:masters (or the server itself) passes the
 * import's checks, in the project whose namespace p-<project> it is created in, and is owned by its creator or
 * a team of the creator's (src/access/validation.ts ownerGivenAway).
 */
export async function admitVirtualClusterInstance(obj: KubeObject, caller: Caller, stores: StoreLookup): Promise<void> {
  const { user } = caller;
  if (!user || isMaster(user)) return;
  const store = (resource: string) => stores(GROUP_NAME, VERSION, resource)!;
  const name = obj.metadata.name ?? '';
  const givenAway = ownerGivenAway(obj.spec.owner, user, Path.root('spec').child('owner'));
  if (givenAway)
    throw errors.forbidden(
      instanceGR,
      name,
      `User ${JSON.stringify(user.name)} cannot create this VirtualClusterInstance: ${givenAway}`,
    );
  const project = await projectOfNamespace(store('projects'), obj.metadata.namespace ?? '', name);
  const ref = obj.spec.clusterRef;
  const errs = await clusterErrors(
    store('clusters'),
    project,
    ref.cluster,
    Path.root('spec').child('clusterRef').child('cluster'),
    caller,
  );
  if (errs.length) throw errors.invalid(instanceGK, name, errs);
  await checkNotImported(
    store('virtualclusterinstances'),
    { cluster: ref.cluster, namespace: ref.namespace, virtualCluster: ref.virtualCluster || name },
    { gr: instanceGR, name, user },
  );
}

/** The Project whose namespace `namespace` is; 422 on metadata.namespace when there is none. */
async function projectOfNamespace(projects: StoredObjects, namespace: string, name: string): Promise<KubeObject> {
  const projectName = namespaceProject(namespace);
  const project = projectName ? await getIfExists(projects, projectName) : undefined;
  if (project) return project;
  const why = projectName ? `no Project ${JSON.stringify(projectName)} exists` : 'not the namespace of a Project';
  throw errors.invalid(instanceGK, name, [
    fieldError.invalid(
      Path.root('metadata').child('namespace'),
      namespace,
      `${why}: a VirtualClusterInstance is created in the namespace p-<project> of its Project`,
    ),
  ]);
}

/** A cluster-scoped object, or undefined when there is none of that name. */
async function getIfExists(store: StoredObjects, name: string): Promise<KubeObject | undefined> {
  return store.get(undefined, name).catch((err) => {
    if (errors.isStatusError(err, 'NotFound')) return undefined;
    throw err;
  });
}
