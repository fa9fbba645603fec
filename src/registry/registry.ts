/** All served resources, each with its generic store, found by group, version and plural name. */
import type { KubeObject } from '../apimachinery/types.js';
import { WatchCache } from '../storage/cacher.js';
import type { Storage } from '../storage/interface.js';
import type { ResourceDefinition } from './definitions.js';
import { strategies } from './kinds/index.js';
import type { OwnerDeletionCheck } from './ownerpermission.js';
import { Store } from './store.js';

export class Registry {
  private readonly stores = new Map<string, Store>();
  /** One watch cache per API group: a single etcd watch feeds every resource of the group. */
  readonly caches = new Map<string, WatchCache<KubeObject>>();
  private ownerDeletion?: OwnerDeletionCheck;

  constructor(
    readonly definitions: ResourceDefinition[],
    storage: Storage,
    etcdPrefix: string,
    log?: (msg: string, fields?: Record<string, unknown>) => void,
  ) {
    for (const def of definitions) {
      if (!this.caches.has(def.group)) this.caches.set(def.group, new WatchCache(storage, `${etcdPrefix}/${def.group}/`, { log }));
      const store = new Store(def, strategies[def.kind] ?? {}, storage, this.caches.get(def.group)!, etcdPrefix, (g, v, r) => this.lookup(g, v, r), () => this.ownerDeletion);
      this.stores.set(`${def.group}/${def.version}/${def.plural}`, store);
    }
  }

  /**
   * How the stores ask whether a client may delete an owner its write names: set once at start, before serving, as
   * soon as the authorizers exist (they read this registry), as kube's admission initializer hands the authorizer on.
   */
  useOwnerDeletionCheck(check: OwnerDeletionCheck): void {
    this.ownerDeletion = check;
  }

  /** Fills the caches; the server serves only after this. */
  async start(): Promise<void> {
    await Promise.all([...this.caches.values()].map((c) => c.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.caches.values()].map((c) => c.stop()));
  }

  lookup(group: string, version: string, resource: string): Store | undefined {
    return this.stores.get(`${group}/${version}/${resource}`);
  }

  /** The served groups and, for each, its versions (one today). */
  groups(): { name: string; versions: string[] }[] {
    const byGroup = new Map<string, Set<string>>();
    for (const def of this.definitions) {
      if (!byGroup.has(def.group)) byGroup.set(def.group, new Set());
      byGroup.get(def.group)!.add(def.version);
    }
    return [...byGroup].map(([name, versions]) => ({ name, versions: [...versions] }));
  }
}
