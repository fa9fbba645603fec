/**
 * One kind of the host cluster over its REST paths, as plain JSON: list by label (across all namespaces for a
 * namespaced kind), get, create, replace, delete (only the object read, by uid) and a watch by label. The controllers
 * that keep objects in the host (the access sync's RBAC, the ProjectSecrets' Secrets) write through this.
 */
import { HostClusterError, type HostCluster } from './cluster.js';

export interface HostResourceKind<K extends string = string> {
  /** `v1`, or `<group>/<version>`. */
  apiVersion: string;
  kind: K;
  /** The resource of its paths (`secrets`, `roles`, ...). */
  plural: string;
}

/** A type, not an interface, so that a kind's own type (HostInformer's objects are indexable) can extend it. */
export type HostResourceObject<K extends string = string> = {
  apiVersion: string;
  kind: K;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
};

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class HostResource<T extends HostResourceObject> {
  private readonly base: string;

  constructor(
    private readonly host: HostCluster,
    private readonly type: HostResourceKind<T['kind']>,
  ) {
    this.base = type.apiVersion.includes('/') ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  }

  async list(labelSelector: string): Promise<{ items: T[]; resourceVersion: string }> {
    const list = await this.host.request<{ items?: T[]; metadata?: { resourceVersion?: string } }>(
      `list ${this.type.plural}`,
      'GET',
      this.collection(),
      { query: { labelSelector } },
    );
    return {
      items: (list?.items ?? []).map((o) => this.typed(o)),
      resourceVersion: list?.metadata?.resourceVersion ?? '',
    };
  }

  /** The object of that name, or undefined when there is none. */
  async get(namespace: string | undefined, name: string): Promise<T | undefined> {
    try {
      return this.typed(
        await this.host.request<T>(`get ${this.describe(namespace, name)}`, 'GET', this.item(namespace, name)),
      );
    } catch (err) {
      if (err instanceof HostClusterError && err.code === 404) return undefined;
      throw err;
    }
  }

  async create(obj: T): Promise<T> {
    const { namespace, name } = obj.metadata;
    return this.typed(
      await this.host.request<T>(`create ${this.describe(namespace, name)}`, 'POST', this.collection(namespace), {
        body: obj,
      }),
    );
  }

  /** A PUT; the object's resourceVersion, when it has one, makes it conditional on nothing having changed since. */
  async replace(obj: T): Promise<T> {
    const { namespace, name } = obj.metadata;
    return this.typed(
      await this.host.request<T>(`replace ${this.describe(namespace, name)}`, 'PUT', this.item(namespace, name), {
        body: obj,
      }),
    );
  }

  /** Deletes (only the object with that uid, when given: never another one made under the name since); one already gone is fine. */
  async delete(namespace: string | undefined, name: string, uid?: string): Promise<void> {
    try {
      await this.host.request(`delete ${this.describe(namespace, name)}`, 'DELETE', this.item(namespace, name), {
        body: uid ? { preconditions: { uid } } : undefined,
      });
    } catch (err) {
      if (!(err instanceof HostClusterError && err.code === 404)) throw err;
    }
  }

  /** Watches every object with the labels, from `resourceVersion`; `done` is called once when it ends. */
  async watch(
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: WatchEventType, obj: T) => void,
    done: (err?: unknown) => void,
  ): Promise<{ stop(): void }> {
    let ended = false;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      done(err);
    };
    const watch = await this.host.watch(
      `watch ${this.type.plural}`,
      this.collection(),
      { labelSelector, resourceVersion, allowWatchBookmarks: 'true' },
      ({ type, object }) => {
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
          onEvent(type, this.typed(object as unknown as T));
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

  /** The collection in `namespace`, or across all namespaces (cluster-scoped kinds: the only one). */
  private collection(namespace?: string): string {
    return `${this.base}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${this.type.plural}`;
  }

  private item(namespace: string | undefined, name: string): string {
    return `${this.collection(namespace)}/${encodeURIComponent(name)}`;
  }

  private describe(namespace: string | undefined, name: string): string {
    return `${this.type.plural} ${namespace ? `${namespace}/` : ''}${name}`;
  }

  /** Items of a typed list carry no kind or apiVersion. */
  private typed(obj: T): T {
    return { ...obj, apiVersion: this.type.apiVersion, kind: this.type.kind };
  }
}
