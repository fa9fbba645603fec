/**
 * Who may have a ProjectSecret delivered where. The server writes a target's Secret with its own credential there
 * (the Cluster's config, or the virtual cluster's connection), because a tenant named the target: the copy rests on
 * whoever last set or changed spec.delivery.targets (status.targetedBy, recorded by the server), asked as them here,
 * at every write that changes the targets (admission.ts: 403 naming the target, nothing stored) and again before
 * every delivery (controllers/projectsecretdelivery.ts: the line Failed, the copy removed):
 *
 * - a connected Cluster: they may `get` it (as an import asks) and the project allows it (spec.allowedClusters);
 * - a virtual cluster: they may use the VirtualClusterInstance of this project, as one who may `create` its kube
 *   config (`virtualclusterinstances/kubeconfig`); `*` is every instance, each asked on its own;
 * - the host's project namespace, where the copy has always been: anyone who may write the ProjectSecret.
 *
 * The delivery asks the target cluster too, before each write, whether they may create Secrets in the namespace
 * there (controllers/delivery/reach.ts), by their name; so a writer whose name is a `system:` one (a host
 * ServiceAccount, a node) names no target outside the host, as no kube config is issued to them. system:masters are
 * not asked about, here or there.
 */
import { GROUP_NAME } from '../../apimachinery/group.js';
import { isMaster } from '../../apimachinery/user.js';
import type { Caller, ReadStore } from '../../registry/strategy.js';
import { allowsCluster } from '../project/allowedclusters.js';
import { namespaceProject } from '../project/namespace.js';
import type { Project } from '../project/types.js';
import { mayGetCluster } from '../virtualclusterinstance/placement.js';
import { ALL_INSTANCES, targetKey, type DeliveryTarget } from './delivery.js';

const VERSION = 'v1';
const SYSTEM_PREFIX = 'system:';

/** What the checks read. */
export interface TargetAccessStores {
  projects: ReadStore<Project>;
}

/**
 * Why `caller` may not have the ProjectSecret of `namespace` delivered to `target`, in words naming the target and
 * what would allow it; undefined when they may. A '*' target is asked of each instance by name (its own target).
 */
export async function targetRefused(
  target: DeliveryTarget,
  namespace: string,
  caller: Caller,
  { projects }: TargetAccessStores,
): Promise<string | undefined> {
  const who = `User ${JSON.stringify(caller.user?.name ?? '')}`;
  const key = targetKey(target);
  if (target.kind === 'host') return undefined;
  // The target cluster is asked about the writer by name: a Kubernetes identity (a host ServiceAccount, a node)
  // would be asked about as the one of that name there, someone else (as kube configs are not issued to them).
  if (caller.user && !isMaster(caller.user) && caller.user.name.startsWith(SYSTEM_PREFIX))
    return `${who} cannot name target ${key}: the target cluster would be asked what the identity of that name there may do, which is not this caller; delivery outside the host is for users, not Kubernetes' own ${SYSTEM_PREFIX} identities`;
  if (target.kind === 'cluster') {
    if (!(await mayGetCluster(target.name, caller)))
      return `${who} cannot get Cluster ${JSON.stringify(target.name)} (target ${key}): a Secret is delivered only to a Cluster its targets' writer may get (its owner, or an access entry granting get)`;
    const projectName = namespaceProject(namespace) ?? '';
    const project = await projects.find(undefined, projectName);
    if (!project) return `there is no Project ${JSON.stringify(projectName)} for namespace ${namespace}`;
    if (!allowsCluster(project, target.name))
      return `project ${JSON.stringify(projectName)} does not allow Cluster ${JSON.stringify(target.name)} (target ${key}; its spec.allowedClusters)`;
    return undefined;
  }
  if (target.name === ALL_INSTANCES) return undefined; // asked of each instance by name
  if (await mayUseInstance(namespace, target.name, caller)) return undefined;
  return `${who} cannot use VirtualClusterInstance ${namespace}/${target.name} (target ${key}): a Secret is delivered only to a virtual cluster its targets' writer may get a kube config of (create on virtualclusterinstances/kubeconfig)`;
}

/** Whether the caller may get a kube config of the instance: what using its virtual cluster is here. */
async function mayUseInstance(namespace: string, name: string, { user, authorize }: Caller): Promise<boolean> {
  if (!user || isMaster(user)) return true;
  if (!authorize) return false;
  const decision = await authorize({
    verb: 'create',
    isResourceRequest: true,
    path: `/apis/${GROUP_NAME}/${VERSION}/namespaces/${namespace}/virtualclusterinstances/${name}/kubeconfig`,
    apiGroup: GROUP_NAME,
    apiVersion: VERSION,
    namespace,
    resource: 'virtualclusterinstances',
    subresource: 'kubeconfig',
    name,
  });
  return decision.decision === 'allow';
}
