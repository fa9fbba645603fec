/**
 * The four RBAC kinds of the host cluster, each a HostResource (list by label a page at a time, get, create, replace,
 * delete, watch by label), chosen by kind.
 */
import { RBAC_API_VERSION, type RbacKind, type RbacObject } from '../access/rbac.js';
import type { HostCluster } from './cluster.js';
import { HostResource, type ListPage, type PageRequest, type WatchEventType } from './resource.js';

export type { WatchEventType } from './resource.js';

export const RBAC_KINDS: RbacKind[] = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];

const PLURAL: Record<RbacKind, string> = {
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
};

export class HostRbac {
  private readonly kinds: Record<RbacKind, HostResource<RbacObject>>;

  constructor(host: HostCluster) {
    this.kinds = Object.fromEntries(
      RBAC_KINDS.map((kind) => [
        kind,
        new HostResource<RbacObject>(host, { apiVersion: RBAC_API_VERSION, kind, plural: PLURAL[kind] }),
      ]),
    ) as Record<RbacKind, HostResource<RbacObject>>;
  }

  /** One page of the objects of `kind` with the labels (all of them when no limit is asked for). */
  list(kind: RbacKind, labelSelector: string, page?: PageRequest): Promise<ListPage<RbacObject>> {
    return this.kinds[kind].list(labelSelector, page);
  }

  /** Every object of `kind` with the labels, a bounded page at a time (HostResource.pages). */
  pages(kind: RbacKind, labelSelector: string): AsyncGenerator<ListPage<RbacObject>> {
    return this.kinds[kind].pages(labelSelector);
  }

  /** The object of that name, or undefined when there is none. */
  get(kind: RbacKind, namespace: string | undefined, name: string): Promise<RbacObject | undefined> {
    return this.kinds[kind].get(namespace, name);
  }

  create(obj: RbacObject): Promise<RbacObject> {
    return this.kinds[obj.kind].create(obj);
  }

  replace(obj: RbacObject): Promise<RbacObject> {
    return this.kinds[obj.kind].replace(obj);
  }

  /** Deletes (only the object with that uid, when given); one already gone is fine. */
  delete(kind: RbacKind, namespace: string | undefined, name: string, uid?: string): Promise<void> {
    return this.kinds[kind].delete(namespace, name, uid);
  }

  /** Watches every object of `kind` with the labels, from `resourceVersion`; `done` is called once when it ends. */
  watch(
    kind: RbacKind,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: WatchEventType, obj: RbacObject) => void,
    done: (err?: unknown) => void,
  ): Promise<{ stop(): void }> {
    return this.kinds[kind].watch(labelSelector, resourceVersion, onEvent, done);
  }
}
