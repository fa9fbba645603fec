/**
 * The four RBAC kinds of the host cluster through client-node: list by label, get, create, replace, delete, and a watch
 * by label. The typed client has one method per kind and verb; the table below keeps the rest of the code kind-free.
 */
import {
  RbacAuthorizationV1Api,
  Watch,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1Role,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { RBAC_API_VERSION, type RbacKind, type RbacObject } from '../access/rbac.js';
import { HostClusterError, type HostCluster } from './cluster.js';

export const RBAC_KINDS: RbacKind[] = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];

const PLURAL: Record<RbacKind, string> = {
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
};

type Api = RbacAuthorizationV1Api;
interface Ops {
  list(api: Api, labelSelector: string): Promise<{ items: unknown[]; metadata?: { resourceVersion?: string } }>;
  get(api: Api, namespace: string, name: string): Promise<unknown>;
  create(api: Api, obj: RbacObject): Promise<unknown>;
  replace(api: Api, obj: RbacObject): Promise<unknown>;
  delete(api: Api, namespace: string, name: string, uid?: string): Promise<unknown>;
}

const OPS: Record<RbacKind, Ops> = {
  Role: {
    list: (api, labelSelector) => api.listRoleForAllNamespaces({ labelSelector }),
    get: (api, namespace, name) => api.readNamespacedRole({ name, namespace }),
    create: (api, o) => api.createNamespacedRole({ namespace: o.metadata.namespace!, body: o as unknown as V1Role }),
    replace: (api, o) =>
      api.replaceNamespacedRole({
        name: o.metadata.name,
        namespace: o.metadata.namespace!,
        body: o as unknown as V1Role,
      }),
    delete: (api, namespace, name, uid) => api.deleteNamespacedRole({ name, namespace, body: preconditions(uid) }),
  },
  RoleBinding: {
    list: (api, labelSelector) => api.listRoleBindingForAllNamespaces({ labelSelector }),
    get: (api, namespace, name) => api.readNamespacedRoleBinding({ name, namespace }),
    create: (api, o) =>
      api.createNamespacedRoleBinding({ namespace: o.metadata.namespace!, body: o as unknown as V1RoleBinding }),
    replace: (api, o) =>
      api.replaceNamespacedRoleBinding({
        name: o.metadata.name,
        namespace: o.metadata.namespace!,
        body: o as unknown as V1RoleBinding,
      }),
    delete: (api, namespace, name, uid) =>
      api.deleteNamespacedRoleBinding({ name, namespace, body: preconditions(uid) }),
  },
  ClusterRole: {
    list: (api, labelSelector) => api.listClusterRole({ labelSelector }),
    get: (api, _namespace, name) => api.readClusterRole({ name }),
    create: (api, o) => api.createClusterRole({ body: o as unknown as V1ClusterRole }),
    replace: (api, o) => api.replaceClusterRole({ name: o.metadata.name, body: o as unknown as V1ClusterRole }),
    delete: (api, _namespace, name, uid) => api.deleteClusterRole({ name, body: preconditions(uid) }),
  },
  ClusterRoleBinding: {
    list: (api, labelSelector) => api.listClusterRoleBinding({ labelSelector }),
    get: (api, _namespace, name) => api.readClusterRoleBinding({ name }),
    create: (api, o) => api.createClusterRoleBinding({ body: o as unknown as V1ClusterRoleBinding }),
    replace: (api, o) =>
      api.replaceClusterRoleBinding({ name: o.metadata.name, body: o as unknown as V1ClusterRoleBinding }),
    delete: (api, _namespace, name, uid) => api.deleteClusterRoleBinding({ name, body: preconditions(uid) }),
  },
};

/** A delete of exactly the object read (its uid), never of another one made under the same name since. */
const preconditions = (uid: string | undefined) => (uid ? { preconditions: { uid } } : undefined);

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class HostRbac {
  constructor(private readonly host: HostCluster) {}

  private get api(): Api {
    return this.host.api(RbacAuthorizationV1Api);
  }

  async list(kind: RbacKind, labelSelector: string): Promise<{ items: RbacObject[]; resourceVersion: string }> {
    const list = await this.host.call(`list ${PLURAL[kind]}`, () => OPS[kind].list(this.api, labelSelector));
    // client-node decodes into its own classes; plain JSON compares and copies simply.
    const items = (JSON.parse(JSON.stringify(list.items)) as RbacObject[]).map((o) => ({
      ...o,
      apiVersion: RBAC_API_VERSION,
      kind,
    }));
    return { items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  /** The object of that name, or undefined when there is none. */
  async get(kind: RbacKind, namespace: string | undefined, name: string): Promise<RbacObject | undefined> {
    try {
      return plain(
        await this.host.call(`get ${PLURAL[kind]} ${namespace ? `${namespace}/` : ''}${name}`, () =>
          OPS[kind].get(this.api, namespace ?? '', name),
        ),
        kind,
      );
    } catch (err) {
      if (err instanceof HostClusterError && err.code === 404) return undefined;
      throw err;
    }
  }

  async create(obj: RbacObject): Promise<RbacObject> {
    return plain(await this.host.call(`create ${describe(obj)}`, () => OPS[obj.kind].create(this.api, obj)), obj.kind);
  }

  async replace(obj: RbacObject): Promise<RbacObject> {
    return plain(
      await this.host.call(`replace ${describe(obj)}`, () => OPS[obj.kind].replace(this.api, obj)),
      obj.kind,
    );
  }

  /** Deletes (only the object with that uid, when given); one already gone is fine. */
  async delete(kind: RbacKind, namespace: string | undefined, name: string, uid?: string): Promise<void> {
    try {
      await this.host.call(`delete ${PLURAL[kind]} ${namespace ? `${namespace}/` : ''}${name}`, () =>
        OPS[kind].delete(this.api, namespace ?? '', name, uid),
      );
    } catch (err) {
      if (!(err instanceof HostClusterError && err.code === 404)) throw err;
    }
  }

  /** Watches every object of `kind` with the labels, from `resourceVersion`; `done` is called once when it ends. */
  async watch(
    kind: RbacKind,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: WatchEventType, obj: RbacObject) => void,
    done: (err?: unknown) => void,
  ): Promise<{ stop(): void }> {
    let ended = false;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      done(err);
    };
    const controller = await new Watch(this.host.kubeConfig).watch(
      `/apis/${RBAC_API_VERSION}/${PLURAL[kind]}`,
      { labelSelector, resourceVersion, allowWatchBookmarks: true },
      (type, obj) => {
        if (type === 'ERROR')
          return end(new HostClusterError(`watch ${PLURAL[kind]}: ${obj?.message ?? 'error event'}`, obj?.code));
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
          onEvent(type, { ...obj, apiVersion: RBAC_API_VERSION, kind });
      },
      (err) => end(err),
    );
    return {
      stop: () => {
        ended = true;
        controller.abort();
      },
    };
  }
}

function plain(obj: unknown, kind: RbacKind): RbacObject {
  return { ...(JSON.parse(JSON.stringify(obj)) as RbacObject), apiVersion: RBAC_API_VERSION, kind };
}

function describe(obj: RbacObject): string {
  return `${PLURAL[obj.kind]} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
}
