/**
 * The four RBAC kinds of the host cluster: list by label, get, create, replace, delete, and a watch by label, as
 * plain JSON over the host's REST paths (namespaced kinds listed across all namespaces).
 */
import { RBAC_API_VERSION, type RbacKind, type RbacObject } from '../access/rbac.js';
import { HostClusterError, type HostCluster } from './cluster.js';

export const RBAC_KINDS: RbacKind[] = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];

const PLURAL: Record<RbacKind, string> = {
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
};

const BASE = `/apis/${RBAC_API_VERSION}`;

/** The collection of `kind` in `namespace` (all namespaces, or cluster-scoped, when none). */
const collection = (kind: RbacKind, namespace?: string) =>
  `${BASE}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${PLURAL[kind]}`;
const item = (kind: RbacKind, namespace: string | undefined, name: string) =>
  `${collection(kind, namespace)}/${encodeURIComponent(name)}`;

/** A delete of exactly the object read (its uid), never of another one made under the same name since. */
const preconditions = (uid: string | undefined) => (uid ? { preconditions: { uid } } : undefined);

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class HostRbac {
  constructor(private readonly host: HostCluster) {}

  async list(kind: RbacKind, labelSelector: string): Promise<{ items: RbacObject[]; resourceVersion: string }> {
    const list = await this.host.request<{ items?: RbacObject[]; metadata?: { resourceVersion?: string } }>(
      `list ${PLURAL[kind]}`,
      'GET',
      collection(kind),
      { query: { labelSelector } },
    );
    const items = (list?.items ?? []).map((o) => plain(o, kind));
    return { items, resourceVersion: list?.metadata?.resourceVersion ?? '' };
  }

  /** The object of that name, or undefined when there is none. */
  async get(kind: RbacKind, namespace: string | undefined, name: string): Promise<RbacObject | undefined> {
    try {
      return plain(
        await this.host.request<RbacObject>(
          `get ${PLURAL[kind]} ${namespace ? `${namespace}/` : ''}${name}`,
          'GET',
          item(kind, namespace, name),
        ),
        kind,
      );
    } catch (err) {
      if (err instanceof HostClusterError && err.code === 404) return undefined;
      throw err;
    }
  }

  async create(obj: RbacObject): Promise<RbacObject> {
    return plain(
      await this.host.request<RbacObject>(
        `create ${describe(obj)}`,
        'POST',
        collection(obj.kind, obj.metadata.namespace),
        { body: obj },
      ),
      obj.kind,
    );
  }

  async replace(obj: RbacObject): Promise<RbacObject> {
    return plain(
      await this.host.request<RbacObject>(
        `replace ${describe(obj)}`,
        'PUT',
        item(obj.kind, obj.metadata.namespace, obj.metadata.name),
        { body: obj },
      ),
      obj.kind,
    );
  }

  /** Deletes (only the object with that uid, when given); one already gone is fine. */
  async delete(kind: RbacKind, namespace: string | undefined, name: string, uid?: string): Promise<void> {
    try {
      await this.host.request(
        `delete ${PLURAL[kind]} ${namespace ? `${namespace}/` : ''}${name}`,
        'DELETE',
        item(kind, namespace, name),
        { body: preconditions(uid) },
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
    const watch = await this.host.watch(
      `watch ${PLURAL[kind]}`,
      collection(kind),
      { labelSelector, resourceVersion, allowWatchBookmarks: 'true' },
      ({ type, object }) => {
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
          onEvent(type, { ...(object as unknown as RbacObject), apiVersion: RBAC_API_VERSION, kind });
      },
      (err) => end(err),
    );
    return {
      stop: () => {
        ended = true;
        watch.stop();
      },
    };
  }
}

function plain(obj: RbacObject, kind: RbacKind): RbacObject {
  return { ...obj, apiVersion: RBAC_API_VERSION, kind };
}

function describe(obj: RbacObject): string {
  return `${PLURAL[obj.kind]} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
}
