/**
 * How the delivery reaches a target outside the host, and whose permission each write there rests on (asked again
 * before every delivery, so that revocation ends the copy):
 *
 * - the targets' writer (status.targetedBy) still may use the target here (kinds/projectsecret/targetaccess.ts), and
 *   may create Secrets in its namespace there, asked of that cluster with a SubjectAccessReview as they would be
 *   seen there: a connected cluster sees them as themselves (as an import's review does), a virtual cluster as its
 *   kube configs name them (their name, their groups but `system:` ones, and system:authenticated). system:masters
 *   are not asked about;
 * - a virtual cluster is reached as its kube configs are: through the Cluster its instance names, still the physical
 *   cluster the instance was created on, and only while the instance's importer passes what the import checked
 *   (placement.ts: importerLostCluster, holdsVirtualCluster), with the connection Secret `vc-<name>` there; a
 *   connection made from it is kept while that Secret stays at its resourceVersion;
 * - a connected Cluster through its connection (clusters/connections.ts: Initialized, not overdue, the recorded
 *   physical cluster).
 *
 * Failures are TargetErrors: a phase, one CamelCase reason and a message naming the target and what to do, never a
 * cluster's own words (which go to the log) nor where a connection points. `revoked` ones mean the server may no
 * longer keep a copy there; `retry` ones are tried again with a backoff.
 */
import type { Authorizer } from '../../apimachinery/authorizer.js';
import { isStatusError } from '../../apimachinery/status.js';
import { isMaster, type UserInfo } from '../../apimachinery/user.js';
import { ClusterNotReadyError, untilReady, type ClusterConnections } from '../../clusters/connections.js';
import type { ClusterConnection } from '../../clusters/connector.js';
import {
  VirtualClusterConnectionError,
  connectVirtualCluster,
  type VirtualCluster,
} from '../../clusters/virtualcluster.js';
import { HostClusterError, type HostCluster } from '../../host/cluster.js';
import { ServerAllowList } from '../../host/serverallowlist.js';
import { targetKey, type DeliveryTarget } from '../../kinds/projectsecret/delivery.js';
import { targetsWriter } from '../../kinds/projectsecret/reference.js';
import { targetRefused } from '../../kinds/projectsecret/targetaccess.js';
import type { ProjectSecret } from '../../kinds/projectsecret/types.js';
import { Project } from '../../kinds/project/types.js';
import {
  holdsVirtualCluster,
  importerLostCluster,
  instanceClusterUid,
  instanceImporter,
  instanceRef,
} from '../../kinds/virtualclusterinstance/placement.js';
import { VirtualClusterInstance } from '../../kinds/virtualclusterinstance/types.js';
import { asUserInfo } from '../../registry/recordeduser.js';
import type { Registry } from '../../registry/registry.js';
import type { Store } from '../../registry/store.js';
import type { AuthorizeOther } from '../../registry/strategy.js';
import type { MadeVia } from '../deliveryrecords.js';

/** Why a target is not delivered now. */
export class TargetError extends Error {
  constructor(
    readonly phase: 'Failed' | 'Pending',
    readonly reason: string,
    message: string,
    readonly opts: { retry?: boolean; revoked?: boolean; detail?: string } = {},
  ) {
    super(message);
    this.name = 'TargetError';
  }
}

/** A target reached: its API, how to reach it again (for the records), and which API it is (for its watch). */
export interface Reached {
  api: HostCluster;
  via: MadeVia;
  /** `cluster/<name>` or `virtualCluster/<cluster>/<namespace>/<name>`: one watch of Secrets per API. */
  apiKey: string;
}

export interface TargetReachOptions {
  /** --virtual-cluster-allowed-servers. */
  allowedServers?: readonly string[];
}

export const viaKey = (via: MadeVia): string =>
  via.virtualCluster
    ? `virtualCluster/${via.cluster}/${via.namespace}/${via.virtualCluster}`
    : `cluster/${via.cluster}`;

export class TargetReach {
  private readonly projects: Store<Project>;
  private readonly instances: Store<VirtualClusterInstance>;
  private readonly servers: ServerAllowList;
  /** Virtual cluster connections, by apiKey, kept while their Secret stays as read. */
  private readonly kept = new Map<string, VirtualCluster>();

  constructor(
    registry: Registry,
    private readonly clusters: ClusterConnections,
    private readonly authorizer: Authorizer,
    opts: TargetReachOptions = {},
  ) {
    this.projects = registry.store(Project);
    this.instances = registry.store(VirtualClusterInstance);
    this.servers = new ServerAllowList(opts.allowedServers ?? [], '--virtual-cluster-allowed-servers');
  }

  /** The API of `target` for the ProjectSecret `obj`, once every check passed (see the top); else a TargetError. */
  async reach(obj: ProjectSecret, target: DeliveryTarget): Promise<Reached> {
    const namespace = obj.metadata.namespace!;
    const key = targetKey(target);
    const recorded = targetsWriter(obj);
    if (!recorded)
      throw new TargetError(
        'Failed',
        'WriterUnknown',
        `nobody is recorded as having set spec.delivery.targets (status.targetedBy), so nothing is delivered to ${key}: a write of the targets by someone who may use them records them`,
        { revoked: true },
      );
    const writer = asUserInfo(recorded);
    const caller = { user: writer, authorize: this.as(writer) };
    const refused = await targetRefused(target, namespace, caller, { projects: this.projects });
    if (refused)
      throw new TargetError(
        'Failed',
        'WriterCannotUse',
        `${refused}; the copy there was removed, and comes back once they may, or when someone who may sets the targets again`,
        { revoked: true },
      );
    if (target.kind === 'cluster') {
      const connection = await this.cluster(target.name, key);
      await this.mayCreateSecrets(connection.api, writer, target, `Cluster ${JSON.stringify(target.name)}`);
      return { api: connection.api, via: { cluster: target.name }, apiKey: viaKey({ cluster: target.name }) };
    }
    return this.virtualCluster(namespace, target, writer);
  }

  /** The API a record's Secret was made through, to delete it; no access is asked (the server removes its own). */
  async reachVia(via: MadeVia): Promise<HostCluster> {
    const connection = await this.cluster(via.cluster, viaKey(via));
    if (!via.virtualCluster) return connection.api;
    return (await this.connect(connection, via, viaKey(via))).api;
  }

  private async virtualCluster(namespace: string, target: DeliveryTarget, writer: UserInfo): Promise<Reached> {
    const key = targetKey(target);
    const instance = await this.instances.find(namespace, target.name);
    if (!instance || instance.metadata.deletionTimestamp)
      throw new TargetError(
        'Pending',
        'InstanceNotFound',
        `there is no VirtualClusterInstance ${namespace}/${target.name} (target ${key}); it is delivered once there is`,
        { revoked: true },
      );
    const importer = instanceImporter(instance);
    if (!importer)
      throw new TargetError(
        'Failed',
        'ImporterNotRecorded',
        `VirtualClusterInstance ${namespace}/${target.name} was stored before importers were recorded (status.importedBy), and what the server writes into its virtual cluster rests on its importer's hold of it; importing it again records them`,
        { revoked: true },
      );
    const importerUser = asUserInfo(importer);
    if (!isMaster(importerUser)) {
      const lost = await importerLostCluster(this.projects, instance, {
        user: importerUser,
        authorize: this.as(importerUser),
      });
      if (lost) throw importerLost(key, lost);
    }
    const ref = instanceRef(instance);
    if (!ref.namespace)
      throw new TargetError(
        'Failed',
        'NoConnection',
        `VirtualClusterInstance ${namespace}/${target.name} does not say where its virtual cluster runs (spec.clusterRef.namespace)`,
      );
    const connection = await this.cluster(ref.cluster, key);
    const uid = instanceClusterUid(instance);
    if (uid && uid !== connection.kubeSystemUid)
      throw new TargetError(
        'Failed',
        'ClusterChanged',
        `Cluster ${JSON.stringify(ref.cluster)} now connects to another physical cluster than the one VirtualClusterInstance ${namespace}/${target.name} was created on, so its virtual cluster is not there`,
        { retry: true },
      );
    if (!isMaster(importerUser)) {
      let holds: boolean;
      try {
        holds = await holdsVirtualCluster(connection, ref, importerUser, 'a delivery');
      } catch (err) {
        if (!isStatusError(err, 'ServiceUnavailable')) throw err;
        throw this.unavailable(key, `Cluster ${JSON.stringify(ref.cluster)}`, err);
      }
      if (!holds)
        throw importerLost(
          key,
          `the instance's importer (status.importedBy, User ${JSON.stringify(importer.username)}) may no longer get its virtual cluster's connection Secret`,
        );
    }
    const via: MadeVia = { cluster: ref.cluster, namespace: ref.namespace, virtualCluster: ref.virtualCluster };
    const apiKey = viaKey(via);
    const vc = await this.connect(connection, via, key);
    // As its kube configs name the writer: their name and groups, but system: ones (virtualclusterkubeconfig.ts).
    const seen: UserInfo = {
      name: writer.name,
      groups: [...writer.groups.filter((g) => !g.startsWith('system:')), 'system:authenticated'],
    };
    await this.mayCreateSecrets(
      vc.api,
      seen,
      target,
      `the virtual cluster of ${namespace}/${target.name}`,
      isMaster(writer),
    );
    return { api: vc.api, via, apiKey };
  }

  /** The connection of the Cluster `name`, or a TargetError for `key` naming only its reason. */
  private async cluster(name: string, key: string): Promise<ClusterConnection> {
    try {
      return await this.clusters.connection(name);
    } catch (err) {
      if (!(err instanceof ClusterNotReadyError)) throw err;
      throw new TargetError(
        'Failed',
        'ClusterNotReady',
        `Cluster ${JSON.stringify(name)} (target ${key}) is not ready (${err.reason}); it is delivered ${untilReady(err.reason)}`,
        { retry: true, detail: err.message },
      );
    }
  }

  private async connect(connection: ClusterConnection, via: MadeVia, key: string): Promise<VirtualCluster> {
    const apiKey = viaKey(via);
    try {
      const vc = await connectVirtualCluster(
        connection.api,
        via.namespace!,
        via.virtualCluster!,
        this.servers,
        `Cluster ${JSON.stringify(via.cluster)}`,
        this.kept.get(apiKey),
      );
      if (vc.secretVersion) this.kept.set(apiKey, vc);
      return vc;
    } catch (err) {
      this.kept.delete(apiKey);
      if (err instanceof VirtualClusterConnectionError)
        throw new TargetError(
          err.problem === 'missing' ? 'Pending' : 'Failed',
          err.problem === 'missing' ? 'VirtualClusterNotRunning' : 'NoConnection',
          err.problem === 'missing'
            ? `the virtual cluster of target ${key} has no connection (is it running, or scaled to zero?); it is delivered once it has`
            : `the virtual cluster's connection of target ${key} is not usable (the server's log has the details)`,
          { retry: true, detail: err.message },
        );
      if (err instanceof HostClusterError) throw this.unavailable(key, `Cluster ${JSON.stringify(via.cluster)}`, err);
      throw err;
    }
  }

  /** Whether `user` may create Secrets in the target's namespace, asked of the cluster `api` (see the top). */
  private async mayCreateSecrets(
    api: HostCluster,
    user: UserInfo,
    target: DeliveryTarget,
    where: string,
    trusted = isMaster(user),
  ): Promise<void> {
    if (trusted) return;
    let review;
    try {
      review = await api.subjectAccessReview({
        user,
        verb: 'create',
        isResourceRequest: true,
        path: `/api/v1/namespaces/${target.namespace}/secrets`,
        apiGroup: '',
        apiVersion: 'v1',
        namespace: target.namespace,
        resource: 'secrets',
        subresource: '',
        name: '',
      });
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      throw this.unavailable(targetKey(target), where, err);
    }
    if (review.allowed && !review.denied) return;
    throw new TargetError(
      'Failed',
      'TargetForbidden',
      `${where} does not let User ${JSON.stringify(user.name)}, who set spec.delivery.targets, create Secrets in its namespace ${target.namespace} (target ${targetKey(target)}), so nothing is kept there; it is delivered once it does`,
      { revoked: true },
    );
  }

  private unavailable(key: string, where: string, err: Error): TargetError {
    return new TargetError(
      'Failed',
      'TargetUnavailable',
      `${where} did not answer (target ${key}); it is tried again`,
      {
        retry: true,
        detail: err.message,
      },
    );
  }

  /** Asks this server's authorizers as `user`, without the restriction of any credential (as the import asked). */
  private as(user: UserInfo): AuthorizeOther {
    return (attrs) => this.authorizer.authorize({ ...attrs, user });
  }
}

function importerLost(key: string, lost: string): TargetError {
  return new TargetError(
    'Failed',
    'ImporterLostAccess',
    `what the server writes into the virtual cluster of target ${key} rests on what its import checked, and ${lost}; the copy there was removed`,
    { revoked: true },
  );
}
