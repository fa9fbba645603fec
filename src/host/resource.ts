/**
 * One kind of the host cluster over its REST paths, as plain JSON: list by label (across all namespaces for a
 * namespaced kind) a page at a time, get, create, replace, delete (only the object read, by uid) and a watch by
 * label. The controllers that keep objects in the host (the access sync's RBAC, the ProjectSecrets' Secrets) write
 * through this.
 */
import { AnswerTooLargeError, HostClusterError, type HostCluster } from './cluster.js';

/**
 * The most objects of a page (client-go's pager asks for 500 too): ordinary objects (the access sync's Roles and
 * bindings are 1-2 kB of JSON) make a page of about 1 MB, a few MiB once parsed.
 */
export const PAGE_LIMIT = 500;
/**
 * The most bytes read of a page of more than one object: anyone who may label an object can make it large (kube
 * takes objects up to etcd's 1.5 MiB), and a page of 500 of those would be 750 MB. A page larger than this is cut
 * (nothing more read) and asked for again with half as many objects; one object alone is read whatever its size.
 */
export const PAGE_MAX_BYTES = 4 * 2 ** 20;

/** One page of a list: its objects, the list's resourceVersion, and where the next page starts (none: the last). */
export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export interface PageRequest {
  /** At most this many objects (kube's `limit`; none: all of them). */
  limit?: number;
  /** From where the page before ended (kube's `continue`). */
  continue?: string;
  /** An answer larger fails with an AnswerTooLargeError, nothing more read. */
  maxBytes?: number;
}

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

  /** One page of the objects with the labels (all of them when no limit is asked for). */
  async list(labelSelector: string, page: PageRequest = {}): Promise<ListPage<T>> {
    const list = await this.host.request<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
      `list ${this.type.plural}`,
      'GET',
      this.collection(),
      {
        query: { labelSelector, limit: page.limit?.toString(), continue: page.continue || undefined },
        maxResponseBytes: page.maxBytes,
      },
    );
    return {
      items: (list?.items ?? []).map((o) => this.typed(o)),
      resourceVersion: list?.metadata?.resourceVersion ?? '',
      ...(list?.metadata?.continue ? { continue: list.metadata.continue } : {}),
    };
  }

  /**
   * Every object with the labels, a page at a time (at most PAGE_LIMIT objects and PAGE_MAX_BYTES), so that a
   * caller keeping only some of them holds no more than a page at once. After a cut page the next ones are asked
   * for smaller, growing back twice as large with each page that fits. Every page has the first one's
   * resourceVersion (kube lists pages of one snapshot); a continue token that expired meanwhile fails the list with
   * kube's 410.
   */
  async *pages(labelSelector: string): AsyncGenerator<ListPage<T>> {
    let limit = PAGE_LIMIT;
    let from: string | undefined;
    for (;;) {
      let page: ListPage<T>;
      try {
        page = await this.list(labelSelector, {
          limit,
          continue: from,
          maxBytes: limit > 1 ? PAGE_MAX_BYTES : undefined,
        });
      } catch (err) {
        if (!(err instanceof AnswerTooLargeError) || limit === 1) throw err;
        limit = Math.floor(limit / 2);
        continue;
      }
      limit = Math.min(PAGE_LIMIT, limit * 2);
      yield page;
      if (!page.continue) return;
      from = page.continue;
    }
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
