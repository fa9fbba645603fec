/**
 * Where a new VirtualClusterInstance may point. Its clusterRef decides which virtual cluster signs the kube configs
 * it hands out, so the import action and a create by anyone but system:masters make the same checks: the caller
 * may `get` the Cluster (its owner, an access entry, or RBAC grants it), the Cluster exists, is usable and is not
 * being deleted, the project allows it, the Cluster is connected (Initialized; else 503 with its reason), the caller
 * has the virtual cluster already (checkCallerHasVirtualCluster, asked of that cluster), and no other instance
 * already manages that virtual cluster. (clusterRef cannot change afterwards: strategy.ts.)
 *
 * "That virtual cluster" is the one the server reaches: the Secret `vc-<virtual cluster>` in clusterRef.namespace
 * of the physical cluster that clusterRef.cluster connects to (actions/virtualclusterkubeconfig.ts). A physical cluster is named
 * by the uid of its kube-system Namespace, not by the Cluster: the same cluster may be registered again under
 * another name (a second Cluster for it is Failed/ClusterUID and never Initialized, but one deleted and created
 * again is), and the same namespace and name on two clusters are two virtual clusters. So the server records, at
 * create, the uid of the cluster it reached in status.clusterUID (status is the server's; a status write keeps it
 * as stored), and every instance, system:masters' too, holds the claim `<uid>/<namespace>/<name>`, kept by storage
 * beside the instance and written in the transaction that creates it, so that concurrent imports and creates
 * cannot both win (virtualClusterClaims). A kube config is issued only while the Cluster still reaches that uid.
 *
 * Who created it is recorded too, in status.importedBy (every client's status write keeps it as stored; the server
 * refreshes it when the importer asks for a kube config): its kube configs rest on that user's hold of the virtual
 * cluster, asked again each time one is issued (actions/virtualclusterkubeconfig.ts), so that the importer's losing the virtual
 * cluster ends what others were given through the instance; and so does their losing the Cluster in this server (they
 * may no longer get it, or the project no longer allows it: importerLostCluster).
 *
 * An instance without status.clusterUID is unbound: stored before clusters were connected (when every virtual
 * cluster was in the one host cluster, whatever Cluster it named), or created by system:masters while its Cluster
 * was not connected. It holds the claim `<namespace>/<name>` as before, and is taken to be that virtual cluster on
 * every cluster: the list check (checkNotImported), which also finds instances stored before claims existed,
 * refuses it beside any other instance of the same namespace and name, before any write. An instance without
 * clusterRef.namespace reaches no virtual cluster (no kube config can be made for it): it claims none and needs no
 * review.
 */
import { decoded } from '../../apimachinery/encoded.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { GroupResource, KubeObject } from '../../apimachinery/types.js';
import { isMaster, type UserInfo } from '../../apimachinery/user.js';
import { isRecordedUser, recordedUser, type RecordedUser } from '../../registry/recordeduser.js';
import { isString, keepServerStatus } from '../../registry/serverstatus.js';
import { HEALTH_FIELDS, healthTyped } from './health.js';
import type {
  Caller,
  ClaimHolderRef,
  Claims,
  ConnectedCluster,
  ReadStore,
  StoredObjects,
} from '../../registry/strategy.js';
import { allowedClusters, allowsCluster } from '../project/allowedclusters.js';
import { namespaceProject } from '../project/namespace.js';
import type { Cluster } from '../cluster/types.js';
import type { Project } from '../project/types.js';
import type { VirtualClusterInstance } from './types.js';

const VERSION = 'v1';
export const instanceGK = { group: GROUP_NAME, kind: 'VirtualClusterInstance' };
export const instanceGR = { group: GROUP_NAME, resource: 'virtualclusterinstances' };

/** A virtual cluster on a connected cluster: an instance's spec.clusterRef, or an import's sourceVirtualCluster. */
export interface VirtualClusterRef {
  cluster: string;
  /** Its namespace in that cluster. */
  namespace?: string;
  /** Its name there (an instance's clusterRef.virtualCluster, else the instance's own name). */
  virtualCluster: string;
  /** The kube-system uid of the physical cluster it is on; undefined for an unbound instance (see the top). */
  clusterUid?: string;
}

/** The Secret that holds a virtual cluster's connection in its host namespace, by vcluster's convention. */
export const connectionSecretName = (virtualCluster: string) => `vc-${virtualCluster}`;

/** The physical cluster an instance was created on (see the top); undefined when it is unbound. */
export function instanceClusterUid(obj: VirtualClusterInstance): string | undefined {
  const uid = obj.status?.clusterUID;
  return typeof uid === 'string' && uid ? uid : undefined;
}

/** The virtual cluster an instance points at. */
export function instanceRef(obj: VirtualClusterInstance): VirtualClusterRef {
  const r = obj.spec?.clusterRef ?? {};
  return {
    // Both set on every stored instance: clusterRef.cluster is required (validation.ts), and so is a name.
    cluster: r.cluster!,
    namespace: r.namespace,
    virtualCluster: r.virtualCluster || obj.metadata.name!,
    clusterUid: instanceClusterUid(obj),
  };
}

/**
 * The claim of the virtual cluster `ref` (see the top): `<uid>/<namespace>/<name>`, `<namespace>/<name>` when
 * unbound; undefined without a namespace (it reaches none).
 */
export function virtualClusterIdentity(ref: VirtualClusterRef): string | undefined {
  if (!ref.namespace) return undefined;
  return ref.clusterUid
    ? `${ref.clusterUid}/${ref.namespace}/${ref.virtualCluster}`
    : `${ref.namespace}/${ref.virtualCluster}`;
}

/** Whether `a` and `b` may be the same virtual cluster: the same namespace and name, on the same cluster or unbound. */
function sameVirtualCluster(a: VirtualClusterRef, b: VirtualClusterRef): boolean {
  if (!a.namespace || a.namespace !== b.namespace || a.virtualCluster !== b.virtualCluster) return false;
  return !a.clusterUid || !b.clusterUid || a.clusterUid === b.clusterUid;
}

/**
 * Why `project` may not have a virtual cluster on the Cluster `name` for this caller, as errors on the field `at`;
 * none if it may. Whether the caller may get the Cluster is asked first, so that one who may not learns nothing of it.
 */
export async function clusterErrors(
  clusters: ReadStore<Cluster>,
  project: Project,
  name: string,
  at: Path,
  caller: Caller,
): Promise<FieldError[]> {
  const refused = await clusterRefused(name, at, caller);
  if (refused) return [refused];
  const cluster = await clusters.find(undefined, name);
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
  if (allowsCluster(project, name)) return [];
  const allowed = allowedClusters(project);
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

/** Why the caller may not get the Cluster `name` (mayGetCluster), as an error on the field `at`; none if it may. */
async function clusterRefused(name: string, at: Path, caller: Caller): Promise<FieldError | undefined> {
  if (await mayGetCluster(name, caller)) return undefined;
  return fieldError.forbidden(
    at,
    `User ${JSON.stringify(caller.user!.name)} cannot get Cluster ${JSON.stringify(name)}: a virtual cluster is imported only from a Cluster its importer may get (its owner, or an access entry granting get)`,
  );
}

/**
 * Whether the caller may get the Cluster `name`, asked of this server's authorizers: always outside system:masters
 * (and the server's own writes); a caller that brings no way to ask may not.
 */
export async function mayGetCluster(name: string, { user, authorize }: Caller): Promise<boolean> {
  if (!user || isMaster(user)) return true;
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
  return decision.decision === 'allow';
}

/**
 * What of the import's checks in this server (clusterErrors) the instance's importer, asking as `importer`, no longer
 * passes: that they may get the instance's Cluster, and that its project (of its namespace p-<project>) allows that
 * Cluster; in words naming only what the instance names itself. Undefined while both hold. Asked again wherever the
 * server acts on the importer's hold (controllers/virtualclusterhealth.ts, actions/virtualclusterkubeconfig.ts), so
 * that losing either ends what the import started, as losing the virtual cluster does (holdsVirtualCluster). A
 * Cluster marked unusable or being deleted accepts no new virtual clusters, and keeps those it has: not asked here.
 */
export async function importerLostCluster(
  projects: ReadStore<Project>,
  obj: VirtualClusterInstance,
  importer: Caller,
): Promise<string | undefined> {
  const ref = instanceRef(obj);
  const cluster = JSON.stringify(ref.cluster);
  if (!(await mayGetCluster(ref.cluster, importer)))
    return `the instance's importer (status.importedBy, User ${JSON.stringify(importer.user?.name)}) may no longer get Cluster ${cluster}`;
  const name = namespaceProject(obj.metadata.namespace ?? '');
  const project = name ? await projects.find(undefined, name) : undefined;
  if (!project)
    return `the instance's namespace is no longer a Project's (there is no Project ${JSON.stringify(name ?? '')})`;
  if (!allowsCluster(project, ref.cluster))
    return `the instance's project ${JSON.stringify(name)} no longer allows Cluster ${cluster} (spec.allowedClusters)`;
  return undefined;
}

/**
 * Outside system:masters (and the server's own writes), importing a virtual cluster (or creating an instance of one)
 * needs proof that the caller has it already: that it may get the virtual cluster's connection Secret in its
 * namespace, the credential the server signs its kube configs with. Asked of `cluster`, the connected cluster the
 * virtual cluster runs in (see the top), with a SubjectAccessReview as the caller (name, uid, groups, extra). 403
 * when it may not; 503 when the cluster cannot answer. Asked before anything that would tell whether the virtual
 * cluster is imported, so that someone without it learns nothing of it.
 */
export async function checkCallerHasVirtualCluster(
  cluster: ConnectedCluster,
  ref: VirtualClusterRef,
  { user }: Caller,
  refused: { gr: GroupResource; name: string },
): Promise<void> {
  if (!user || isMaster(user) || !ref.namespace) return;
  if (await holdsVirtualCluster(cluster, ref, user, 'importing a virtual cluster')) return;
  throw errors.forbidden(
    refused.gr,
    refused.name,
    `User ${JSON.stringify(user.name)} cannot import virtual cluster ${ref.namespace}/${ref.virtualCluster}: it may not get its connection Secret ${connectionSecretWhere(ref)}, and a virtual cluster is imported only by someone who has it already`,
  );
}

/** The connection Secret of `ref`, for messages: `<namespace>/vc-<name> in Cluster "<cluster>"`. */
export const connectionSecretWhere = (ref: VirtualClusterRef): string =>
  `${ref.namespace}/${connectionSecretName(ref.virtualCluster)} in Cluster ${JSON.stringify(ref.cluster)}`;

/**
 * Whether `user` has the virtual cluster `ref`: may get its connection Secret in its namespace on `cluster`, asked
 * of that cluster with a SubjectAccessReview as `user` (name, uid, groups, extra). A 503 naming `needed` (what asks)
 * when the cluster cannot answer.
 */
export async function holdsVirtualCluster(
  cluster: ConnectedCluster,
  ref: VirtualClusterRef,
  user: UserInfo,
  needed: string,
): Promise<boolean> {
  const secret = connectionSecretName(ref.virtualCluster);
  let review;
  try {
    review = await cluster.api.subjectAccessReview({
      user,
      verb: 'get',
      isResourceRequest: true,
      path: `/api/v1/namespaces/${ref.namespace}/secrets/${secret}`,
      apiGroup: '',
      apiVersion: 'v1',
      namespace: ref.namespace ?? '',
      resource: 'secrets',
      subresource: '',
      name: secret,
    });
  } catch (err) {
    throw errors.serviceUnavailable(
      `Cluster ${JSON.stringify(ref.cluster)} cannot tell whether User ${JSON.stringify(user.name)} may get Secret ${ref.namespace}/${secret} (a SubjectAccessReview, which ${needed} needs): ${(err as Error).message}`,
    );
  }
  // As kube's webhook authorizer: an answer both allowing and denying is a deny.
  return review.allowed && !review.denied;
}

/**
 * One virtual cluster is managed by one instance: 409 when another already points at `ref`. The claims make this
 * hold under concurrency; this list finds instances stored before claims existed and unbound ones (see the top), and
 * answers before any write.
 */
export async function checkNotImported(
  instances: StoredObjects,
  ref: VirtualClusterRef,
  conflict: { gr: GroupResource; name: string; user: UserInfo | undefined },
): Promise<void> {
  if (!ref.namespace) return;
  const same = (o: KubeObject) => sameVirtualCluster(instanceRef(o), ref);
  const found = (await instances.list(undefined, { predicate: { matches: same, empty: false } })).items[0];
  if (!found) return;
  const { namespace, name = '' } = decoded(found).metadata;
  throw alreadyImported(conflict.gr, conflict.name, ref, { namespace, name }, conflict.user);
}

/**
 * The 409 for an import or create of a virtual cluster that `holder` manages. The holder is named to system:masters
 * only: others are not told of objects in projects they may not see (as kube says "provided port is already
 * allocated" without naming the Service holding it).
 */
function alreadyImported(
  gr: GroupResource,
  name: string,
  ref: VirtualClusterRef,
  holder: ClaimHolderRef,
  user: UserInfo | undefined,
): Error {
  const which = isMaster(user)
    ? ` as VirtualClusterInstance ${holder.namespace}/${holder.name}`
    : ' by another VirtualClusterInstance';
  return errors.conflict(
    gr,
    name,
    `virtual cluster ${ref.namespace}/${ref.virtualCluster} is already imported${which}`,
  );
}

/** VirtualClusterInstance's claims: the virtual cluster it manages (see the top). */
export const virtualClusterClaims: Claims = {
  of(obj) {
    const identity = virtualClusterIdentity(instanceRef(obj));
    return identity ? [identity] : [];
  },
  taken: (obj, holder, user) => alreadyImported(instanceGR, obj.metadata.name ?? '', instanceRef(obj), holder, user),
};

/** Who created the instance (imported the virtual cluster), as recorded at create; none before records existed. */
export const instanceImporter = (obj: VirtualClusterInstance): RecordedUser | undefined =>
  recordedUser(obj.status?.importedBy);

/**
 * VirtualClusterInstance's prepareForStatusUpdate: status.clusterUID stays as the create recorded it, since the
 * instance's claim (which storage deletes with it) was computed from it, and so does status.importedBy, on whose hold
 * of the virtual cluster its kube configs rest, for every writer but the server (actions/virtualclusterkubeconfig.ts refreshes it).
 * What the health check says (controllers/virtualclusterhealth.ts) is the server's too: a client writing Ready
 * would make a virtual cluster look checked when it is not.
 */
export const keepCreateRecords = keepServerStatus([
  { name: 'clusterUID', wellTyped: isString, serverWrites: 'never' },
  // Refreshed by the server when the importer asks for a kube config (actions/virtualclusterkubeconfig.ts).
  { name: 'importedBy', wellTyped: isRecordedUser, serverWrites: 'always' },
  ...HEALTH_FIELDS.map((name) => ({ name, wellTyped: healthTyped[name], serverWrites: 'always' as const })),
]);
