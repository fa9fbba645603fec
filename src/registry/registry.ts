/** All served resources, each with its generic store, found by group, version and plural name (or apiVersion and kind). */
import type { Admission } from '../apimachinery/admission.js';
import type { KubeObject } from '../apimachinery/types.js';
import { WatchCache } from '../storage/cacher.js';
import type { Storage } from '../storage/interface.js';
import type { ResourceDefinition } from './definitions.js';
import { strategies } from '../kinds/index.js';
import type { OwnerDeletionCheck } from './ownerpermission.js';
import { Store } from './store.js';
import * as errors from '../apimachinery/status.js';
import type { ConnectCluster } from './strategy.js';

export class Registry {
  private readonly stores = new Map<string, Store>();
  private readonly byKind = new Map<string, Store>();
  /** One watch cache per API group: a single etcd watch feeds every resource of the group. */
  readonly caches = new Map<string, WatchCache<KubeObject>>();
  private ownerDeletion?: OwnerDeletionCheck;
  private admission?: Admission;
  /** Until the server sets it (a registry on its own, as in unit tests): no Cluster is connected. */
  private connect: ConnectCluster = (name) =>
    Promise.reject(
      errors.serviceUnavailable(
        `Cluster ${JSON.stringify(name)} is not connected: this server connects to no clusters`,
      ),
    );

  constructor(
    readonly definitions: ResourceDefinition[],
    storage: Storage,
    etcdPrefix: string,
    log?: (msg: string, fields?: Record<string, unknown>) => void,
  ) {
    refuseStrategiesWithoutDefinition(definitions);
    for (const def of definitions) {
      if (!this.caches.has(def.group))
        this.caches.set(
          def.group,
          new WatchCache(storage, `${etcdPrefix}/${def.group}/`, { log, revisionsUnder: `${etcdPrefix}/` }),
        );
      const store = new Store(
        def,
        strategies[def.kind] ?? {},
        storage,
        this.caches.get(def.group)!,
        etcdPrefix,
        (g, v, r) => this.lookup(g, v, r),
        () => this.ownerDeletion,
        () => this.admission,
        (name) => this.connect(name),
      );
      this.stores.set(`${def.group}/${def.version}/${def.plural}`, store);
      this.byKind.set(`${def.apiVersion}/${def.kind}`, store);
    }
  }

  /**
   * How the stores ask whether a client may delete an owner its write names: set once at start, before serving, as
   * soon as the authorizers exist (they read this registry), as kube's admission initializer hands the authorizer on.
   */
  useOwnerDeletionCheck(check: OwnerDeletionCheck): void {
    this.ownerDeletion = check;
  }

  /** The admission chain of every write (set once at start, before serving; none without a host cluster). */
  useAdmission(admission: Admission): void {
    this.admission = admission;
  }

  /** How the kinds' rules and the actions reach a Cluster (set once at start, before serving). */
  useClusterConnections(connect: ConnectCluster): void {
    this.connect = connect;
  }

  /** The connection of an Initialized Cluster; else a 503 naming its reason. */
  connectCluster(name: string): ReturnType<ConnectCluster> {
    return this.connect(name);
  }

  /** The admission chain in force, for writes that are not a store's (actions). */
  get admissionChain(): Admission | undefined {
    return this.admission;
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
    `src/registry/kinds has a strategy for the ${unknown.length > 1 ? 'kinds' : 'kind'} ${named}, which no CRD in crds/ defines (the CRDs define ${[...defined].sort().join(', ')}): ` +
      'a strategy must be keyed by the kind its CRD names (spec.names.kind), or the kind would be served without its rules',
  );
}
