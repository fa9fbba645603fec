/**
 * The storage of one resource with the watch cache in front of etcd (after kube's cacher delegator,
 * storage/cacher/delegator.go): a Storage that decides per call whether the cache or etcd answers. Reads are served
 * where ResourceReader decides; writes go to etcd, an update starting from the cache's copy of the object.
 */
import type { ObjectList } from '../apimachinery/encoded.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { WatchCache } from './cacher.js';
import type {
  AttributesOf,
  CreateOptions,
  DeleteOptions,
  ListResult,
  Page,
  PageOptions,
  Storage,
  StoredObject,
  StoredText,
  UpdateOptions,
  UpdateResult,
  WatchHandle,
  WatchHandlers,
} from './interface.js';
import {
  ResourceReader,
  type ListOptions,
  type ReadResource,
  type RunningWatch,
  type WatchOptions,
  type WatchSink,
} from './reader.js';

export class CachedStorage implements Storage {
  private readonly reader: ResourceReader;

  constructor(
    resource: ReadResource,
    private readonly etcd: Storage,
    private readonly cache: WatchCache<KubeObject>,
  ) {
    this.reader = new ResourceReader(resource, etcd, cache);
  }

  /**
   * One object: `resourceVersion` unset is a consistent read (from the cache when it holds etcd's current revision),
   * "0" the cache as it is, N the cache once it has reached N (ResourceReader.get).
   */
  get<T extends StoredObject = KubeObject>(key: string, resourceVersion?: string): Promise<T | undefined> {
    return this.reader.get(key, resourceVersion) as Promise<T | undefined>;
  }

  /** A client's list, with its selectors, limit, continue token and resourceVersion (ResourceReader.list). */
  listObjects(prefix: string, opts: ListOptions): Promise<ObjectList> {
    return this.reader.list(prefix, opts);
  }

  /** A client's watch, served by the cache (ResourceReader.watch); `watch` is etcd's, which feeds the cache. */
  watchObjects(prefix: string, opts: WatchOptions, sink: WatchSink): Promise<RunningWatch> {
    return this.reader.watch(prefix, opts, sink);
  }

  /**
   * etcd's guaranteedUpdate, starting from the object as the cache holds it whatever the caller gave (as kube's
   * delegator): that saves reading etcd first, and the compare-and-swap still decides (see UpdateOptions.cached).
   */
  guaranteedUpdate<T extends StoredObject>(
    key: string,
    tryUpdate: (current: T) => Promise<T> | T,
    opts: UpdateOptions<T> = {},
  ): Promise<UpdateResult<T>> {
    const cached = this.cache.get(key)?.object as T | undefined;
    return this.etcd.guaranteedUpdate(key, tryUpdate, { ...opts, cached });
  }

  create<T extends StoredObject>(key: string, obj: T, opts?: CreateOptions): Promise<T> {
    return this.etcd.create(key, obj, opts);
  }

  delete<T extends StoredObject>(key: string, opts?: DeleteOptions<T>): Promise<T> {
    return this.etcd.delete(key, opts);
  }

  list<T extends StoredObject>(prefix: string): Promise<ListResult<T>> {
    return this.etcd.list(prefix);
  }

  listPage<T extends StoredObject>(prefix: string, opts: PageOptions): Promise<Page<T>> {
    return this.etcd.listPage(prefix, opts);
  }

  listPageText(prefix: string, opts: PageOptions, attributesOf: AttributesOf): Promise<Page<StoredText>> {
    return this.etcd.listPageText(prefix, opts, attributesOf);
  }

  keyRevisions(prefix: string, revision: string): Promise<Map<string, string>> {
    return this.etcd.keyRevisions(prefix, revision);
  }

  createRevision(key: string): Promise<string | undefined> {
    return this.etcd.createRevision(key);
  }

  currentRevision(): Promise<string> {
    return this.etcd.currentRevision();
  }

  watch<T extends StoredObject>(
    prefix: string,
    afterRevision: string,
    handlers: WatchHandlers<T>,
    opts?: { revisionsUnder?: string },
  ): Promise<WatchHandle> {
    return this.etcd.watch(prefix, afterRevision, handlers, opts);
  }

  compact(revision: string): Promise<void> {
    return this.etcd.compact(revision);
  }

  check(): Promise<void> {
    return this.etcd.check();
  }

  /** Closes nothing: etcd's storage is every resource's and the watch cache its group's, closed by their owners. */
  async close(): Promise<void> {}
}
