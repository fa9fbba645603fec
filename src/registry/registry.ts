/** All served resources, each with its generic store, found by group, version and plural name (or apiVersion and kind). */
import type { Admission } from '../apimachinery/admission.js';
import type { KindRef, KubeObject } from '../apimachinery/types.js';
import { grantsText } from '../access/model.js';
import { selectionAttributes } from '../apimachinery/selection.js';
import { CachedStorage } from '../storage/cachedstorage.js';
import { WatchCache } from '../storage/cacher.js';
import type { CachedAttributes, Storage } from '../storage/interface.js';
import type { ResourceDefinition } from './definitions.js';
import { strategies } from '../kinds/index.js';
import type { OwnerDeletionCheck } from './ownerpermission.js';
import { Store } from './store.js';
import * as errors from '../apimachinery/status.js';
import type { ConnectCluster } from './strategy.js';
import { noKindSettings, type KindSettings } from './kindsettings.js';

/**
 * What the stores ask outside the registry, given at construction. Each is called per request, never while the
 * registry is made, so the server may make these parts after it (the authorizers and the Cluster connections read
 * the registry) as long as it does before it serves.
 */
export interface RegistryDependencies {
  /** Whether a client may delete an owner its write names (kube's admission initializer hands on the authorizer). */
  ownerDeletion?: () => OwnerDeletionCheck | undefined;
  /** The admission chain of every write; none without a host cluster. */
  admission?: () => Admission | undefined;
  /** How the kinds' rules and the actions reach a Cluster; without it no Cluster is connected. */
  connectCluster?: ConnectCluster;
  /** The settings the kinds' rules depend on (kindsettings.ts); without them no view shows anything, no limit holds. */
  settings?: KindSettings;
}

/** A registry on its own (as in unit tests) connects to no clusters. */
const notConnected: ConnectCluster = (name) =>
  Promise.reject(
    errors.serviceUnavailable(`Cluster ${JSON.stringify(name)} is not connected: this server connects to no clusters`),
  );

export class Registry {
  private readonly stores = new Map<string, Store>();
  private readonly byKind = new Map<string, Store>();
  /**
   * One watch cache per API group: a single etcd watch feeds every resource of the group. Each store reads it through
   * its CachedStorage; the registry starts and stops them, and what reads a whole group (the access keys'
   * authenticator, the metrics) takes them from here.
   */
  readonly caches = new Map<string, WatchCache<KubeObject>>();

  constructor(
    readonly definitions: ResourceDefinition[],
    storage: Storage,
    etcdPrefix: string,
    log?: (msg: string, fields?: Record<string, unknown>) => void,
    private readonly dependencies: RegistryDependencies = {},
  ) {
    refuseStrategiesWithoutDefinition(definitions);
    for (const def of definitions) {
      if (!this.caches.has(def.group))
        this.caches.set(
          def.group,
          new WatchCache(storage, `${etcdPrefix}/${def.group}/`, cachedAttributes, {
            log,
            revisionsUnder: `${etcdPrefix}/`,
          }),
        );
      const kind = strategies[def.kind] ?? {};
      const store = new Store(
        def,
        kind.withSettings?.(dependencies.settings ?? noKindSettings) ?? kind,
        new CachedStorage(def, storage, this.caches.get(def.group)!),
        etcdPrefix,
        {
          stores: (kind) => this.store(kind),
          ownerDeletion: () => dependencies.ownerDeletion?.(),
          admission: () => dependencies.admission?.(),
          connectCluster: (name) => this.connectCluster(name),
          settings: dependencies.settings,
        },
      );
      this.stores.set(`${def.group}/${def.version}/${def.plural}`, store);
      this.byKind.set(`${def.apiVersion}/${def.kind}`, store);
    }
  }

  /** The connection of an Initialized Cluster; else a 503 naming its reason. */
  connectCluster(name: string): ReturnType<ConnectCluster> {
    return (this.dependencies.connectCluster ?? notConnected)(name);
  }

  /** The admission chain in force, for writes that are not a store's (actions). */
  get admissionChain(): Admission | undefined {
    return this.dependencies.admission?.();
  }

  /** Fills the caches; the server serves only after this. */
  async start(): Promise<void> {
    await Promise.all([...this.caches.values()].map((c) => c.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.caches.values()].map((c) => c.stop()));
  }

  /**
   * The store of a kind this server serves, typed by its objects: `store(ProjectSecret)`. Throws when it serves no
   * such kind, which only a mistake in the code can cause: the callers ask for their stores at start.
   */
  store<O extends KubeObject>(kind: KindRef<O>): Store<O> {
    const store = this.lookupKind(kind.apiVersion, kind.kind);
    if (!store) throw new Error(`this server serves no ${kind.kind} (${kind.apiVersion}): no CRD in crds/ defines it`);
    return store as Store<O>;
  }

  /** The store of a resource named by a request's URL (group, version and plural), as kube's REST storage map. */
  lookup(group: string, version: string, resource: string): Store | undefined {
    return this.stores.get(`${group}/${version}/${resource}`);
  }

  /** The store of the kind an object or a reference names by apiVersion ("group/version") and kind, as kube's RESTMapper. */
  lookupKind(apiVersion: string, kind: string): Store | undefined {
    return this.byKind.get(`${apiVersion}/${kind}`);
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

/**
 * A strategy whose kind no CRD defines is a mistake (a misspelt or renamed kind) that would serve the real kind
 * without its rules: the server does not start, naming it.
 */
function refuseStrategiesWithoutDefinition(definitions: readonly ResourceDefinition[]): void {
  const defined = new Set(definitions.map((d) => d.kind));
  const unknown = Object.keys(strategies).filter((kind) => !defined.has(kind));
  if (!unknown.length) return;
  const named = unknown.map((k) => JSON.stringify(k)).join(', ');
  throw new Error(
    `src/kinds/index.ts has a strategy for the ${unknown.length > 1 ? 'kinds' : 'kind'} ${named}, which no CRD in crds/ defines (the CRDs define ${[...defined].sort().join(', ')}): ` +
      'a strategy must be keyed by the kind its CRD names (spec.names.kind), or the kind would be served without its rules',
  );
}

/** What the watch cache keeps beside each object (kube's GetAttrsFunc): what selectors read, and its grants. */
export function cachedAttributes(obj: unknown): CachedAttributes {
  return { ...selectionAttributes(obj), grants: grantsText(obj) };
}
