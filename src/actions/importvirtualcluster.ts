/**
 * ProjectImportVirtualCluster: `POST .../projects/<project>/importvirtualcluster` makes a VirtualClusterInstance in
 * the project's namespace `p-<project>` for a virtual cluster already running on a connected cluster.
 *
 * owner, importName, upgradeToPro and skipHelmDeploy are taken at the top level or inside sourceVirtualCluster
 * (the spec does not fix where); set in both places they must agree. The instance is named importName, else the
 * virtual cluster's own name; it is owned as asked, else by the caller (outside system:masters only the caller or a
 * team of the caller's may be asked for); its ownerReference to the Project makes deleting the project delete it
 * (the garbage collector). The checks of where it points are kinds/virtualclusterinstance/placement.ts's, shared with creates: the
 * Cluster sourceVirtualCluster.cluster must be connected (Initialized; else 503 with its reason), whoever imports,
 * the importer must have the virtual cluster already (get on its connection Secret in that cluster), and the
 * instance's claim on it (the physical cluster, namespace and name) makes one import win when several race.
 *
 * An import is of a virtual cluster that runs, so the import itself checks, for system:masters too, that its
 * connection Secret is there (a permission to get a Secret says nothing of whether it exists): read through the
 * Cluster's connection with the server's credential for it, after the caller's checks, so that a caller who may not
 * have the virtual cluster learns nothing of it; 422 on sourceVirtualCluster.name when it is not there, 503 when the
 * cluster does not say. A plain create of an instance is not checked so: upstream, creating one is asking the
 * platform to deploy it, so it need not run yet.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { StructuralSchema } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../apimachinery/validation.js';
import { ownerGivenAway, validateOwner } from '../access/validation.js';
import type { Owner } from '../access/model.js';
import { ClusterNotReadyError, type ClusterConnections } from '../clusters/connections.js';
import type { ClusterConnection } from '../clusters/connector.js';
import { HostClusterError } from '../host/cluster.js';
import { virtualClusterExists } from '../clusters/virtualcluster.js';
import { silentLogger, type Logger } from '../log.js';
import { projectNamespace } from '../kinds/project/namespace.js';
import {
  checkCallerHasVirtualCluster,
  checkNotImported,
  clusterErrors,
  connectionSecretName,
  type VirtualClusterRef,
} from '../kinds/virtualclusterinstance/placement.js';
import type { Registry } from '../registry/registry.js';
import { answer, requestSchema, type Action, type ActionCall } from './action.js';
import { Cluster } from '../kinds/cluster/types.js';
import { Project } from '../kinds/project/types.js';
import { VirtualClusterInstance } from '../kinds/virtualclusterinstance/types.js';

const VERSION = 'v1';
const KIND = 'ProjectImportVirtualCluster';
const gk = { group: GROUP_NAME, kind: KIND };

const owner: StructuralSchema = { type: 'object', properties: { user: { type: 'string' }, team: { type: 'string' } } };
/** The fields that may sit at the top level or inside sourceVirtualCluster. */
const placed: Record<'owner' | 'importName' | 'upgradeToPro' | 'skipHelmDeploy', StructuralSchema> = {
  owner,
  importName: { type: 'string' },
  upgradeToPro: { type: 'boolean' },
  skipHelmDeploy: { type: 'boolean' },
};
type Placed = keyof typeof placed;
/** The placed fields as the request schema has checked them. */
interface PlacedFields {
  owner?: Owner;
  importName?: string;
  upgradeToPro?: boolean;
  skipHelmDeploy?: boolean;
}

const schema = requestSchema({
  sourceVirtualCluster: {
    type: 'object',
    properties: { name: { type: 'string' }, namespace: { type: 'string' }, cluster: { type: 'string' }, ...placed },
  },
  ...placed,
});

interface Source {
  name?: string;
  namespace?: string;
  cluster?: string;
}

export function importVirtualClusterAction(
  registry: Registry,
  clusters: ClusterConnections,
  log: Logger = silentLogger,
): Action {
  const action: Action = {
    group: GROUP_NAME,
    version: VERSION,
    resource: 'projects',
    subresource: 'importvirtualcluster',
    kind: KIND,
    namespaced: false,
    verbs: ['create'],
    schema,
    async serve(call: ActionCall): Promise<KubeObject> {
      const request = call.object!;
      const project = await registry.store(Project).get(undefined, call.name);
      const { source, fields, ownerAt } = readRequest(request);
      const givenAway = ownerGivenAway(fields.owner, call.user, ownerAt);
      if (givenAway)
        throw errors.forbidden(
          { group: GROUP_NAME, resource: 'projects' },
          call.name,
          `User ${JSON.stringify(call.user.name)} cannot import a virtual cluster for someone else: ${givenAway}`,
        );
      const name = fields.importName ?? source.name!;
      const namespace = projectNamespace(call.name);
      const caller = { user: call.user, authorize: call.authorize };
      await checkImportable(registry, clusters, log, project, source, call, caller);
      const instance = importedInstance(project, name, namespace, source, fields, call.user);
      const created = await registry.store(VirtualClusterInstance).create(namespace, instance, caller);
      return answer(
        action,
        { name: call.name },
        {
          sourceVirtualCluster: source,
          owner: created.spec?.owner,
          importName: name,
          upgradeToPro: created.spec?.upgradeToPro,
          skipHelmDeploy: created.spec?.skipHelmDeploy,
          status: { virtualClusterInstance: { namespace, name, uid: created.metadata.uid } },
        },
      );
    },
  };
  return action;
}

/**
 * What must hold before the import, in this order: the source's Cluster is one the project's virtual clusters may
 * be on (422) and connected (503), the caller has the virtual cluster there (403), it runs there (422), and no
 * instance manages it yet (409).
 */
async function checkImportable(
  registry: Registry,
  clusters: ClusterConnections,
  log: Logger,
  project: Project,
  source: Source,
  call: ActionCall,
  caller: Pick<ActionCall, 'user' | 'authorize'>,
): Promise<void> {
  const clusterErrs = await clusterErrors(
    registry.store(Cluster),
    project,
    source.cluster!,
    Path.root('sourceVirtualCluster').child('cluster'),
    caller,
  );
  if (clusterErrs.length) throw errors.invalid(gk, '', clusterErrs);
  const ref: VirtualClusterRef = {
    cluster: source.cluster!,
    namespace: source.namespace,
    virtualCluster: source.name!,
  };
  const cluster = await connection(clusters, ref.cluster);
  await checkCallerHasVirtualCluster(cluster, ref, caller, {
    gr: { group: GROUP_NAME, resource: 'projects' },
    name: call.name,
  });
  await checkExists(cluster, ref, log);
  ref.clusterUid = cluster.kubeSystemUid;
  await checkNotImported(registry.store(VirtualClusterInstance), ref, {
    gr: { group: GROUP_NAME, resource: 'projects/importvirtualcluster' },
    name: source.name!,
    user: call.user,
  });
}

/** The VirtualClusterInstance of the import, owned by its project. */
function importedInstance(
  project: Project,
  name: string,
  namespace: string,
  source: Source,
  fields: PlacedFields,
  user: ActionCall['user'],
): KubeObject {
  return {
    apiVersion: `${GROUP_NAME}/${VERSION}`,
    kind: 'VirtualClusterInstance',
    metadata: {
      name,
      namespace,
      ownerReferences: [
        {
          apiVersion: project.apiVersion!,
          kind: project.kind!,
          name: project.metadata.name!,
          uid: project.metadata.uid!,
        },
      ],
    },
    spec: {
      owner: fields.owner ?? { user: user.name },
      clusterRef: { cluster: source.cluster, namespace: source.namespace, virtualCluster: source.name },
      upgradeToPro: fields.upgradeToPro ?? false,
      skipHelmDeploy: fields.skipHelmDeploy ?? false,
    },
  };
}

/** The connection of an Initialized Cluster; else the 503 naming its reason. */
async function connection(clusters: ClusterConnections, name: string): Promise<ClusterConnection> {
  try {
    return await clusters.connection(name);
  } catch (err) {
    throw err instanceof ClusterNotReadyError ? err.toStatus() : err;
  }
}

/**
 * 422 on sourceVirtualCluster.name when the virtual cluster does not run where the source says (see the top); 503
 * when its cluster does not say, the detail (which may quote the cluster, or name this server's identity there)
 * logged.
 */
async function checkExists(cluster: ClusterConnection, ref: VirtualClusterRef, log: Logger): Promise<void> {
  const namespace = ref.namespace!;
  const secret = `${namespace}/${connectionSecretName(ref.virtualCluster)}`;
  const where = `namespace ${JSON.stringify(namespace)} of Cluster ${JSON.stringify(ref.cluster)}`;
  let exists: boolean;
  try {
    exists = await virtualClusterExists(cluster.api, namespace, ref.virtualCluster);
  } catch (err) {
    if (!(err instanceof HostClusterError)) throw err;
    log.warn('an import could not tell whether the virtual cluster exists', {
      cluster: ref.cluster,
      secret,
      error: err.message,
    });
    // A 403 is this server's credential there, which an administrator grants; anything else may pass.
    const then =
      err.code === 403
        ? `this server's credential for the Cluster may not get that Secret (for the local Cluster: the Helm chart's rbac.virtualClusterNamespaces)`
        : 'try again later';
    throw errors.serviceUnavailable(
      `Cluster ${JSON.stringify(ref.cluster)} did not say whether virtual cluster ${ref.virtualCluster} runs in its namespace ${JSON.stringify(namespace)} (reading its connection Secret ${secret}${err.code ? `: HTTP ${err.code}` : ''}); ${then} (the server's log has the details)`,
    );
  }
  if (exists) return;
  throw errors.invalid(gk, '', [
    {
      ...fieldError.notFound(Path.root('sourceVirtualCluster').child('name'), ref.virtualCluster),
      detail: `there is no virtual cluster ${JSON.stringify(ref.virtualCluster)} in ${where}: its connection Secret ${secret} does not exist there; import a virtual cluster that runs`,
    },
  ]);
}

/** The source and the placed fields from wherever they were given; 422 naming each field that is missing or wrong. */
function readRequest(request: KubeObject): { source: Source; fields: PlacedFields; ownerAt: Path } {
  const errs: FieldError[] = [];
  const at = Path.root('sourceVirtualCluster');
  const inner = (request.sourceVirtualCluster ?? {}) as Source & PlacedFields;
  if (request.sourceVirtualCluster === undefined)
    errs.push(fieldError.required(at, 'the virtual cluster to import: name, namespace and cluster'));
  const source: Source = { name: inner.name, namespace: inner.namespace, cluster: inner.cluster };
  const check = (field: keyof Source, rule: (v: string) => string[], what: string) => {
    const value = source[field];
    if (!value) errs.push(fieldError.required(at.child(field), what));
    else for (const msg of rule(value)) errs.push(fieldError.invalid(at.child(field), value, msg));
  };
  if (request.sourceVirtualCluster !== undefined) {
    check('name', isDNS1123Label, 'the name of the virtual cluster (its vcluster release)');
    check('namespace', isDNS1123Label, 'the namespace the virtual cluster runs in');
    check('cluster', isDNS1123Subdomain, 'the name of the Cluster the virtual cluster runs on');
  }

  const fields: PlacedFields = {};
  for (const field of Object.keys(placed) as Placed[]) {
    const top = request[field];
    const nested = inner[field];
    if (top !== undefined && nested !== undefined && !jsonEqual(top, nested)) {
      errs.push(
        fieldError.invalid(
          at.child(field),
          nested,
          `differs from ${field} at the top level; give it in one place or the same in both`,
        ),
      );
    }
    (fields as Record<Placed, unknown>)[field] = top ?? nested;
  }
  const ownerAt = request.owner !== undefined ? Path.root('owner') : at.child('owner');
  errs.push(...validateOwner(fields.owner, ownerAt));
  if (fields.owner && !fields.owner.user && !fields.owner.team)
    errs.push(fieldError.required(ownerAt.child('user'), 'an owner names a user or a team'));
  if (fields.importName !== undefined) {
    const nameAt = request.importName !== undefined ? Path.root('importName') : at.child('importName');
    for (const msg of isDNS1123Subdomain(fields.importName))
      errs.push(fieldError.invalid(nameAt, fields.importName, msg));
  }
  if (errs.length) throw errors.invalid(gk, '', errs);
  return { source, fields, ownerAt };
}
