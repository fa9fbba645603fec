/**
 * Keeps each ProjectSecret as a native `v1` Secret of the same name in its project namespace in the host cluster, for
 * workloads to mount (kinds/projectsecret/strategy.ts is the kind; projectsecretsync.ts fills a synced one's data):
 *
 * - the Secret (type Opaque) holds the ProjectSecret's `spec.data`, labelled as made by this server for that very
 *   ProjectSecret (managed-by, source-uid) and annotated with its source and the SharedSecret it is synced from. It has
 *   no ownerReferences: nothing in the host that a tenant could point elsewhere decides its life; this controller does;
 * - **the server writes and deletes only the Secret it made**: the uid of every Secret it creates is recorded in its
 *   own storage (deliveryrecords.ts, which no client reads or writes), and only the Secret with that uid, at the
 *   ProjectSecret's own namespace and name, is replaced (at the resourceVersion read; one made immutable by hand is
 *   deleted, by uid, and created again) or deleted. Labels are believed only at the ProjectSecret's own place, and
 *   only while its create is on its way (an answer lost) or, once, for what earlier versions delivered (see
 *   deliveryrecords.ts): any other Secret of that name (made by hand, for another object, or labelled to look like
 *   this server's) is never touched, and the condition `SecretDelivered` says so (`NameTaken`);
 * - the record outlives the ProjectSecret: once it is gone (deleted, whenever and however, while the server or the
 *   host was away included) its Secret is deleted by the recorded uid, when the store's watch has listed every
 *   ProjectSecret (an unknown one would look deleted) and at every resync;
 * - changes of the host's Secrets with this server's label are watched as metadata only and kept nowhere
 *   (host/changes.ts): one at a ProjectSecret's name sends it to be reconciled, so a Secret edited or deleted by hand
 *   is put back at once; others cost nothing. What the server last wrote is remembered per ProjectSecret (its uid and
 *   resourceVersion), so a reconcile asks the host nothing while the watch shows no change. Every `resyncIntervalMs`
 *   everything is reconciled again; host failures are retried per object with a backoff;
 * - the condition and the log name namespaces, names and how many keys, never values; the host's own words go to
 *   the log only.
 */
import { GROUP_NAME } from '../apimachinery/group.js';
import { decoded } from '../apimachinery/encoded.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { MANAGED_BY, MANAGED_BY_LABEL, SOURCE_ANNOTATION, SOURCE_UID_LABEL } from '../access/rbac.js';
import { watchHostChanges, type ObjectMetadata } from '../host/changes.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';
import { HostResource } from '../host/resource.js';
import { SECRET_DELIVERED } from '../kinds/projectsecret/conditions.js';
import {
  ALL_INSTANCES,
  HOST,
  MAX_DELIVERIES,
  deliveryType,
  isJsonValue,
  jsonKey,
  missingKeys,
  namedTargets,
  targetKey,
  type DeliveryTarget,
} from '../kinds/projectsecret/delivery.js';
import { sharedSecretRef, targetsWriter } from '../kinds/projectsecret/reference.js';
import type { ProjectSecretStatusTarget } from '../kinds/projectsecret/types.js';
import { ClusterNotReadyError } from '../clusters/connections.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { setCondition, writeStatus, type Outcome } from './conditions.js';
import type { DeliveryRecords } from './deliveryrecords.js';
import { SecretPlacer, type HostSecret, type Placed } from './delivery/placer.js';
import { TargetError, viaKey, type TargetReach } from './delivery/reach.js';
import { SecretWatches } from './delivery/secretwatches.js';
import { runQueueController } from './runner.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { ProjectSecret } from '../kinds/projectsecret/types.js';
import { Project } from '../kinds/project/types.js';
import { Cluster } from '../kinds/cluster/types.js';
import type { KubeObject } from '../apimachinery/types.js';
import { VirtualClusterInstance } from '../kinds/virtualclusterinstance/types.js';

export type { HostSecret } from './delivery/placer.js';

/** On a delivered Secret of a synced ProjectSecret: the SharedSecret its data comes from, as namespace/name. */
export const SHARED_SECRET_ANNOTATION = `${GROUP_NAME}/shared-secret`;
const FIELD_MANAGER = 'projectsecret-delivery';
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
const SECRETS = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets' } as const;
/** How many targets of one ProjectSecret are delivered at once (workers × this in all). */
export const TARGETS_AT_ONCE = 8;

/** The targets outside the host: their records, and how they are reached. */
export interface DeliveryTargets {
  records: DeliveryRecords;
  reach: TargetReach;
}

export interface ProjectSecretDeliveryOptions {
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How often every ProjectSecret is compared with its Secrets again (ms). */
  resyncIntervalMs?: number;
  /** How many ProjectSecrets are reconciled at once. */
  workers?: number;
  workQueueMetrics?: WorkQueueMetrics;
  /** Virtual clusters and connected clusters; without, only the host is delivered to. */
  targets?: DeliveryTargets;
}

/** Where a ProjectSecret is, and so where its host Secret is; what of it sends it to be reconciled. */
interface Known {
  namespace: string;
  name: string;
  /** generation, deletion and whose the targets are: a status write of the server's own changes none of them. */
  version: string;
  /** It names targets outside the host. */
  remote: boolean;
}

/** A line of status.targets. */
type Line = ProjectSecretStatusTarget & { phase: 'Delivered' | 'Failed' | 'Pending' };

/** What one target's delivery came to: its line, and a failure to retry with a backoff. */
interface Delivered {
  line: Line;
  /** Written by a request just now. */
  wrote?: boolean;
  retry?: Error;
}

const placeKey = ({ namespace, name }: { namespace?: string; name: string }) => `${namespace}/${name}`;

export class ProjectSecretDelivery {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly projectSecrets: Store<ProjectSecret>;
  private readonly instances: Store<VirtualClusterInstance>;
  private readonly projects: Store<Project>;
  private readonly clusters: Store<Cluster>;
  /** What the watches last showed of each instance, Project and Cluster that copies may rest on. */
  private readonly dependencies = new Map<string, string>();
  private readonly secrets: HostResource<HostSecret>;
  private readonly host: SecretPlacer;
  private readonly remote?: SecretPlacer;
  /** Queued by ProjectSecret uid. */
  private readonly queue: WorkQueue;
  /** The ProjectSecrets the watch shows, by uid; `at` finds them by place. */
  private readonly known = new Map<string, Known>();
  private readonly at = new Map<string, string>();
  /** Where each copy outside the host is (by record id), and the ids by `apiKey namespace/name`. */
  private readonly placed = new Map<string, { apiKey: string; place: string }>();
  private readonly placedAt = new Map<string, Set<string>>();
  private watches?: SecretWatches;
  /** The work on each ProjectSecret under way (its items run one at a time). */
  private readonly busy = new Map<string, Promise<void>>();
  /** Whether the store's watch has listed every ProjectSecret: before, one not known may just not be seen yet. */
  private listed = false;
  /** Until the records have taken over what earlier versions delivered: the ProjectSecrets not looked at yet. */
  private migrating?: Set<string>;

  constructor(
    registry: Registry,
    private readonly hostCluster: HostCluster,
    private readonly records: DeliveryRecords,
    private readonly opts: ProjectSecretDeliveryOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.projectSecrets = registry.store(ProjectSecret);
    this.instances = registry.store(VirtualClusterInstance);
    this.projects = registry.store(Project);
    this.clusters = registry.store(Cluster);
    this.secrets = new HostResource<HostSecret>(hostCluster, SECRETS);
    // A change seen while a copy was being written, not its echo: that place is reconciled again.
    this.host = new SecretPlacer(records, (uid) => this.queue.add(uid));
    if (opts.targets) this.remote = new SecretPlacer(opts.targets.records, (id) => this.queue.add(targetItem(id)));
    this.queue = new WorkQueue({
      baseDelayMs: 1000,
      maxDelayMs: 60_000,
      name: 'projectsecret-delivery',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const log = (msg: string, fields?: Record<string, unknown>) => this.log(`projectsecret delivery: ${msg}`, fields);
    await this.records.load();
    if (this.opts.targets) {
      await this.opts.targets.records.load();
      // Nothing outside the host was delivered before records existed: no label there is ever believed.
      await this.opts.targets.records.markMigrated();
    }
    this.watches = new SecretWatches(
      {
        changed: (apiKey, meta) => this.remoteChanged(apiKey, meta),
        restarted: (apiKey) => {
          for (const [id, p] of this.placed)
            if (p.apiKey === apiKey) {
              this.remote?.markStale([id]);
              this.queue.add(id.split('/')[0]);
            }
        },
        log,
      },
      signal,
    );
    const hostWatch = watchHostChanges(
      this.hostCluster,
      {
        what: 'secrets',
        path: '/api/v1/secrets',
        labelSelector: SELECTOR,
        changed: (_type, meta) => this.hostChanged(meta),
        restarted: () => {
          this.host.markStale(this.known.keys());
          this.enqueueAll();
        },
        log,
      },
      signal,
    );
    const watches = [
      watchStore(this.projectSecrets, signal, {
        upsert: (obj) => this.upsert(obj),
        remove: (obj) => this.forget(obj.metadata.uid!),
        resynced: (seen) => {
          for (const uid of this.known.keys()) if (!seen.has(uid)) this.forget(uid);
        },
        log,
      }),
      // An instance coming or going in a namespace changes where '*' reaches, and may be what a target waits for;
      // its importer and placement are what its copies rest on. Its health checks' status writes change neither.
      watchStore(this.instances, signal, {
        upsert: (obj) => this.dependencyChanged('instance', obj, [obj.status?.importedBy, obj.status?.clusterUID]),
        remove: (obj) => this.dependencyGone('instance', obj),
        resynced: () => this.enqueueRemote(),
        log,
      }),
      // A project's allowed clusters decide which Clusters its secrets may reach.
      watchStore(this.projects, signal, {
        upsert: (obj) => this.dependencyChanged('project', obj, []),
        remove: (obj) => this.dependencyGone('project', obj),
        resynced: () => this.enqueueRemote(),
        log,
      }),
      // A Cluster's access entries decide who may deliver to it (its status, written by every check, does not).
      watchStore(this.clusters, signal, {
        upsert: (obj) => this.dependencyChanged('cluster', obj, []),
        remove: (obj) => this.dependencyGone('cluster', obj),
        resynced: () => this.enqueueRemote(),
        log,
      }),
    ];
    try {
      await runQueueController(
        {
          what: 'projectsecret delivery',
          log: this.log,
          watches,
          loops: [hostWatch],
          synced: async () => {
            this.listed = true;
            if (!this.records.migrated) this.migrating = new Set(this.known.keys());
            await this.migrated();
            this.enqueueAll();
          },
          queue: this.queue,
          workers: this.workers,
          resyncMs: this.resyncMs,
          resync: () => this.enqueueAll(),
          started: () => ({ projectSecrets: this.known.size }),
          handle: (item) => this.handle(item),
          failed: (item, err, delayMs) => {
            const { uid, target } = splitItem(item);
            this.log('projectsecret delivery: will retry', {
              ...(this.known.get(uid) ?? this.records.get(uid)),
              ...(target ? { target } : {}),
              error: String((err as Error).message ?? err),
              delayMs,
            });
          },
        },
        signal,
      );
    } finally {
      await this.watches.stop();
    }
  }

  // ---- what the watches show ----

  private upsert(obj: ProjectSecret): void {
    const uid = obj.metadata.uid!;
    const next: Known = {
      namespace: obj.metadata.namespace!,
      name: obj.metadata.name!,
      version: JSON.stringify([
        obj.metadata.generation ?? 0,
        obj.metadata.deletionTimestamp ?? '',
        targetsWriter(obj) ?? null,
      ]),
      remote: namedTargets(obj).some((t) => t.kind !== 'host'),
    };
    const before = this.known.get(uid);
    this.known.set(uid, next);
    this.at.set(placeKey(next), uid);
    // The echo of this controller's own status write changes nothing it delivers.
    if (!before || before.version !== next.version) this.queue.add(uid);
  }

  /** A labelled Secret changed in the host: only one at a ProjectSecret's place matters, and not the server's echo. */
  private hostChanged(meta: ObjectMetadata): void {
    const uid = this.at.get(placeKey(meta));
    if (uid && this.host.changed(uid, meta)) this.queue.add(uid);
  }

  /**
   * A labelled Secret changed outside the host: the targets with a copy at its place, unless the echo. Only that
   * target is delivered again: what a cluster's watch shows (a tenant's virtual cluster, say, whatever it sends)
   * costs the ProjectSecret's other targets nothing.
   */
  private remoteChanged(apiKey: string, meta: ObjectMetadata): void {
    for (const id of this.placedAt.get(`${apiKey} ${placeKey(meta)}`) ?? [])
      if (this.remote?.changed(id, meta)) this.queue.add(targetItem(id));
  }

  /** A ProjectSecret no longer stored: its reconcile deletes what was made for it. */
  private forget(uid: string): void {
    const place = this.known.get(uid);
    this.known.delete(uid);
    if (place && this.at.get(placeKey(place)) === uid) this.at.delete(placeKey(place));
    this.host.forget(uid);
    this.queue.add(uid);
  }

  /**
   * An instance, Project or Cluster changed what the copies outside the host rest on (its spec, its deletion, or the
   * `also` fields of its status): the ProjectSecrets that may reach through it are reconciled.
   */
  private dependencyChanged(kind: string, obj: KubeObject, also: unknown[]): void {
    const key = `${kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    const version = JSON.stringify([
      obj.metadata.uid,
      obj.metadata.generation ?? 0,
      obj.metadata.deletionTimestamp ?? '',
      ...also,
    ]);
    if (this.dependencies.get(key) === version) return;
    this.dependencies.set(key, version);
    this.enqueueFor(kind, obj);
  }

  private dependencyGone(kind: string, obj: KubeObject): void {
    this.dependencies.delete(`${kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
    this.enqueueFor(kind, obj);
  }

  private enqueueFor(kind: string, obj: KubeObject): void {
    if (kind === 'instance') this.enqueueRemote(obj.metadata.namespace);
    else if (kind === 'project') this.enqueueRemote(`p-${obj.metadata.name}`);
    else this.enqueueRemote();
  }

  /** The ProjectSecrets with targets outside the host (of `namespace` only, when given). */
  private enqueueRemote(namespace?: string): void {
    for (const [uid, k] of this.known) if (k.remote && (!namespace || k.namespace === namespace)) this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const uid of this.known.keys()) this.queue.add(uid);
    // What was made for ProjectSecrets not known (any more): deleted by their reconcile.
    for (const uid of this.records.uids()) if (!this.known.has(uid)) this.queue.add(uid);
    for (const id of this.opts.targets?.records.uids() ?? []) {
      const uid = id.split('/')[0];
      if (!this.known.has(uid)) this.queue.add(uid);
    }
  }

  // ---- one ProjectSecret ----

  /**
   * One queue item: a ProjectSecret's uid (all its targets), or `uid|target`, one target that failed, retried with its
   * own backoff so that the others are not asked again meanwhile. The items of one ProjectSecret run one at a time.
   */
  private async handle(item: string): Promise<void> {
    const { uid, target } = splitItem(item);
    const before = this.busy.get(uid) ?? Promise.resolve();
    const run = before.then(() => (target ? this.retryTarget(uid, target) : this.reconcile(uid)));
    const settled = run.catch(() => {});
    this.busy.set(uid, settled);
    try {
      await run;
    } finally {
      if (this.busy.get(uid) === settled) this.busy.delete(uid);
    }
  }

  private async reconcile(uid: string): Promise<void> {
    await this.records.save(uid);
    for (const id of this.remoteIds(uid)) await this.opts.targets!.records.save(id);
    const live = await this.live(uid);
    if (!live) {
      // Only once every ProjectSecret has been listed, and when it is still not known: it may be back under a new event.
      if (!this.listed || this.known.get(uid)) return;
      await this.removeHost(uid, 'deleted the Secret of a ProjectSecret that is gone');
      const failed = await this.removeRemote(uid, new Set());
      if (failed.length) throw failed[0].error;
      return this.migrated(uid);
    }
    const { targets, left } = await this.targetsOf(live);
    const problem = dataProblem(live);
    const results: Delivered[] = [];
    if (targets.some((t) => t.kind === 'host')) results.push(await this.deliverHost(uid, live, problem));
    else await this.removeHost(uid, 'deleted the Secret of a ProjectSecret no longer delivered to the host');
    const remote = targets.filter((t) => t.kind !== 'host');
    results.push(...(await inPool(remote, TARGETS_AT_ONCE, (t) => this.deliverRemote(uid, live, t, problem))));
    const dropped = await this.removeRemote(uid, new Set(remote.map(targetKey)));
    await this.writeLines(live, left, results);
    await this.migrated(uid);
    // Each target that failed is tried again after its own backoff (it has just been tried: at once would be twice).
    for (const r of results) if (r.retry) this.queue.retry(`${uid}|${r.line.target}`);
    for (const d of dropped) this.queue.retry(`${uid}|${d.target}`);
  }

  /** Delivers to one target again (or removes its copy, if it is no longer one), writing its line only. */
  private async retryTarget(uid: string, key: string): Promise<void> {
    const live = await this.live(uid);
    if (!live) return this.queue.add(uid);
    const { targets, left } = await this.targetsOf(live);
    const target = targets.find((t) => targetKey(t) === key);
    if (!target) {
      if (key === HOST)
        return this.removeHost(uid, 'deleted the Secret of a ProjectSecret no longer delivered to the host');
      const failed = await this.removeCopy(`${uid}/${key}`);
      if (failed) throw failed;
      return;
    }
    const problem = dataProblem(live);
    const result =
      target.kind === 'host'
        ? await this.deliverHost(uid, live, problem)
        : await this.deliverRemote(uid, live, target, problem);
    const results = targets.flatMap((t): Delivered[] => {
      if (targetKey(t) === key) return [result];
      const line = (live.status?.targets ?? []).find((l) => l.target === targetKey(t));
      return line ? [{ line: line as Line }] : [];
    });
    await this.writeLines(live, left, results);
    if (result.retry) throw result.retry;
  }

  /** The ProjectSecret of `uid` as stored now, unless it is gone or going. */
  private async live(uid: string): Promise<ProjectSecret | undefined> {
    const place = this.known.get(uid);
    const read = place ? await this.projectSecrets.find(place.namespace, place.name) : undefined;
    return read && read.metadata.uid === uid && !read.metadata.deletionTimestamp ? read : undefined;
  }

  /** Writes status.targets and the SecretDelivered condition summarising them. */
  private async writeLines(live: ProjectSecret, left: number, results: Delivered[]): Promise<void> {
    const previous = new Map((live.status?.targets ?? []).map((l) => [l.target, l]));
    const lines = results.map(({ line, wrote }) => stamped(line, previous.get(line.target), wrote));
    await writeStatus(
      this.projectSecrets,
      live,
      (o) => {
        o.status = { ...o.status, targets: lines };
        setCondition(o, SECRET_DELIVERED, summary(lines, left), live);
      },
      FIELD_MANAGER,
    );
  }

  /** The places the ProjectSecret is delivered to, '*' as the instances of its namespace, at most MAX_DELIVERIES. */
  private async targetsOf(obj: ProjectSecret): Promise<{ targets: DeliveryTarget[]; left: number }> {
    const named = namedTargets(obj);
    let instances: string[] = [];
    if (named.some((t) => t.kind === 'virtualCluster' && t.name === ALL_INSTANCES)) {
      const { items } = await this.instances.list(obj.metadata.namespace);
      instances = items.map((i) => decoded(i).metadata.name!).sort();
    }
    const seen = new Map<string, DeliveryTarget>();
    for (const t of named) {
      const each =
        t.kind === 'virtualCluster' && t.name === ALL_INSTANCES ? instances.map((name) => ({ ...t, name })) : [t];
      for (const e of each) seen.set(targetKey(e), e);
    }
    const all = [...seen.values()];
    return { targets: all.slice(0, MAX_DELIVERIES), left: Math.max(0, all.length - MAX_DELIVERIES) };
  }

  /** `uid` has been looked at: once every ProjectSecret known at the start has been, the records have taken over. */
  private async migrated(uid?: string): Promise<void> {
    if (!this.migrating) return;
    if (uid) this.migrating.delete(uid);
    if (this.migrating.size) return;
    await this.records.markMigrated();
    this.migrating = undefined;
    this.log("projectsecret delivery: the Secrets of earlier versions are recorded as the server's");
  }

  private async removeHost(uid: string, what: string): Promise<void> {
    const made = await this.host.remove(uid, this.secrets);
    if (made) this.log(`projectsecret delivery: ${what}`, { namespace: made.namespace, name: made.name });
  }

  /** The ids of the copies of `uid` outside the host. */
  private remoteIds(uid: string): string[] {
    return this.opts.targets?.records.idsOf(uid) ?? [];
  }

  /** Removes the copies of `uid` outside the host but those of `keep` (target keys); those that failed, to retry. */
  private async removeRemote(uid: string, keep: ReadonlySet<string>): Promise<{ target: string; error: Error }[]> {
    const failed: { target: string; error: Error }[] = [];
    for (const id of this.remoteIds(uid)) {
      const target = id.slice(uid.length + 1);
      if (keep.has(target)) continue;
      const error = await this.removeCopy(id);
      if (error) failed.push({ target, error });
    }
    return failed;
  }

  /** Removes the copy recorded under `id`, reached as it was made; a failure to retry, if any. */
  private async removeCopy(id: string): Promise<Error | undefined> {
    const records = this.opts.targets!.records;
    const made = records.get(id);
    if (!made) return undefined;
    this.unplace(id);
    const target = id.slice(id.indexOf('/') + 1);
    if (!made.via) {
      await records.delete(id);
      return undefined;
    }
    try {
      const api = await this.opts.targets!.reach.reachVia(made.via);
      await this.remote!.remove(id, new HostResource<HostSecret>(api, SECRETS));
      this.log('projectsecret delivery: deleted a Secret no longer delivered', {
        target,
        namespace: made.namespace,
        name: made.name,
      });
      return undefined;
    } catch (err) {
      // A Cluster that is gone cannot be reached again: what is there is no longer this server's to find.
      const gone = err instanceof TargetError && err.reason === 'ClusterNotReady' && /\(NotFound\)/.test(err.message);
      if (gone) {
        await records.delete(id);
        this.log('projectsecret delivery: a Secret outside the host cannot be deleted, its Cluster is gone', {
          target,
          namespace: made.namespace,
          name: made.name,
        });
        return undefined;
      }
      if (err instanceof TargetError || err instanceof HostClusterError || err instanceof ClusterNotReadyError)
        return new Error(`deleting the copy at ${target}: ${err.message}`);
      throw err;
    }
  }

  /**
   * A copy of the target `key` made through another API than the one the target reaches now (its instance deleted and
   * made again, under that name, for another virtual cluster, while the old copy could not be removed): its record is
   * kept under an id of its own (`<key>@<api>@<uid>`), no target's, so that it is removed as a dropped target's copy is,
   * retried until it is, while the target is delivered anew.
   */
  private async setAside(uid: string, key: string, apiKey: string): Promise<void> {
    const records = this.opts.targets!.records;
    const id = `${uid}/${key}`;
    const made = records.get(id);
    if (!made?.via || viaKey(made.via) === apiKey) return;
    const aside = `${key}@${viaKey(made.via)}@${made.uid}`;
    await records.set(`${uid}/${aside}`, made);
    await records.delete(id);
    this.unplace(id);
    this.remote?.forget(id);
    this.queue.add(`${uid}|${aside}`);
  }

  private place(id: string, apiKey: string, namespace: string, name: string): void {
    const place = `${apiKey} ${namespace}/${name}`;
    const before = this.placed.get(id);
    if (before?.place === place) return;
    this.unplace(id);
    this.placed.set(id, { apiKey, place });
    let ids = this.placedAt.get(place);
    if (!ids) this.placedAt.set(place, (ids = new Set()));
    ids.add(id);
  }

  private unplace(id: string): void {
    const before = this.placed.get(id);
    if (!before) return;
    this.placed.delete(id);
    const ids = this.placedAt.get(before.place);
    ids?.delete(id);
    if (ids && !ids.size) this.placedAt.delete(before.place);
    this.watches?.keep(new Set([...this.placed.values()].map((p) => p.apiKey)));
  }

  /**
   * Makes the host's Secret what the ProjectSecret says, when the name is this server's to use: there is none, or
   * the one there is the one recorded as made by the server.
   */
  private async deliverHost(uid: string, obj: ProjectSecret, problem: Outcome | undefined): Promise<Delivered> {
    const want = desiredSecret(obj);
    const { namespace, name } = want.metadata;
    const where = `Secret ${namespace}/${name} in the host cluster`;
    if (problem) {
      await this.removeHost(uid, 'deleted a Secret whose ProjectSecret has not the data its type needs');
      return { line: lineOf(HOST, 'Pending', problem) };
    }
    let placed: Placed;
    try {
      placed = await this.host.put(uid, this.secrets, want);
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      return { line: lineOf(HOST, 'Failed', failure(err)), retry: withoutData(err, obj) };
    }
    if (placed.kind === 'nameTaken')
      return {
        line: lineOf(HOST, 'Failed', {
          status: 'False',
          reason: 'NameTaken',
          message: `the host cluster has a ${where} that this server did not make for this ProjectSecret; it is left alone, and this ProjectSecret is not delivered until it is deleted or the ProjectSecret renamed`,
        }),
      };
    if (placed.wrote)
      this.log('projectsecret delivery: wrote a Secret', {
        namespace,
        name,
        keys: Object.keys(want.data ?? {}).length,
      });
    return {
      line: lineOf(HOST, 'Delivered', {
        status: 'True',
        reason: 'Delivered',
        message: `kept as ${where} (${Object.keys(want.data ?? {}).length} key(s)), for workloads to mount`,
      }),
      wrote: placed.wrote,
    };
  }

  /** Delivers to one target outside the host, after every check (delivery/reach.ts); its line. */
  private async deliverRemote(
    uid: string,
    obj: ProjectSecret,
    target: DeliveryTarget,
    problem: Outcome | undefined,
  ): Promise<Delivered> {
    const key = targetKey(target);
    const id = `${uid}/${key}`;
    if (!this.opts.targets)
      return {
        line: lineOf(key, 'Failed', {
          status: 'False',
          reason: 'NotSupported',
          message: 'this server delivers to the host cluster only',
        }),
      };
    if (problem) {
      const failed = await this.removeCopy(id);
      return { line: lineOf(key, 'Pending', problem), retry: failed };
    }
    const want = desiredSecret(obj, target.namespace);
    try {
      const reached = await this.opts.targets.reach.reach(obj, target);
      await this.setAside(uid, key, reached.apiKey);
      this.watches?.ensure(reached.apiKey, reached.api);
      this.place(id, reached.apiKey, target.namespace, want.metadata.name);
      const secrets = new HostResource<HostSecret>(reached.api, SECRETS);
      const placed = await this.remote!.put(id, secrets, want, {
        trusted: this.watches?.trusted(reached.apiKey) ?? false,
        via: reached.via,
      });
      if (placed.kind === 'nameTaken')
        return {
          line: lineOf(key, 'Failed', {
            status: 'False',
            reason: 'NameTaken',
            message: `${key} has a Secret ${target.namespace}/${want.metadata.name} that this server did not make for this ProjectSecret; it is left alone, and nothing is delivered there until it is deleted or the ProjectSecret renamed`,
          }),
        };
      if (placed.wrote)
        this.log('projectsecret delivery: wrote a Secret', {
          target: key,
          namespace: target.namespace,
          name: want.metadata.name,
          keys: Object.keys(want.data ?? {}).length,
        });
      return {
        line: lineOf(key, 'Delivered', {
          status: 'True',
          reason: 'Delivered',
          message: `kept as Secret ${target.namespace}/${want.metadata.name} in ${key} (${Object.keys(want.data ?? {}).length} key(s))`,
        }),
        wrote: placed.wrote,
      };
    } catch (err) {
      if (err instanceof TargetError) {
        if (err.opts.detail)
          this.log('projectsecret delivery: a target is not reached', { target: key, error: err.opts.detail });
        const failed = err.opts.revoked ? await this.removeCopy(id) : undefined;
        const outcome: Outcome = { status: 'False', reason: err.reason, message: err.message };
        return {
          line: lineOf(key, err.phase, outcome),
          retry: err.opts.retry ? new Error(`${key}: ${err.message}`) : failed,
        };
      }
      if (!(err instanceof HostClusterError)) throw err;
      const safe = withoutData(err, obj);
      this.log('projectsecret delivery: a target refused the Secret', { target: key, error: safe.message });
      return { line: lineOf(key, 'Failed', targetFailure(key, target, err)), retry: safe };
    }
  }
}

/** The queue item delivering the one target of a record id (`uid/target`) again. */
const targetItem = (id: string): string => id.replace('/', '|');

/** A queue item: a ProjectSecret's uid, and the one target to retry, if any. */
function splitItem(item: string): { uid: string; target?: string } {
  const at = item.indexOf('|');
  return at < 0 ? { uid: item } : { uid: item.slice(0, at), target: item.slice(at + 1) };
}

/** The Secret a ProjectSecret stands for, in its own namespace of the host or in `namespace` of another cluster. */
export function desiredSecret(obj: ProjectSecret, namespace = obj.metadata.namespace): HostSecret & { type: string } {
  const { name, uid } = obj.metadata;
  const ref = sharedSecretRef(obj);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: name!,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [SOURCE_UID_LABEL]: uid! },
      annotations: {
        [SOURCE_ANNOTATION]: `ProjectSecret ${obj.metadata.namespace}/${name}`,
        ...(ref ? { [SHARED_SECRET_ANNOTATION]: `${ref.namespace}/${ref.name}` } : {}),
      },
    },
    type: deliveryType(obj),
    data: { ...obj.spec?.data },
  };
}

/**
 * Why the data cannot be a Secret of its type now (synced data the SharedSecret no longer gives, or emptied as the
 * access it rests on ended): then every copy is removed, as kube holds no typed Secret without its keys. An empty
 * Opaque one is delivered empty, as always.
 */
function dataProblem(obj: ProjectSecret): Outcome | undefined {
  const type = deliveryType(obj);
  const data = (obj.spec?.data ?? {}) as Record<string, string>;
  const missing = missingKeys(type, Object.keys(data));
  if (missing.length)
    return {
      status: 'False',
      reason: Object.keys(data).length ? 'MissingKeys' : 'NoData',
      message: `a Secret of type ${type} needs the key ${missing.join(', ')}, which spec.data does not have${sharedSecretRef(obj) ? ' (see the Synced condition)' : ''}; its copies were removed, and come back once it does`,
    };
  const json = jsonKey(type);
  if (json && !isJsonValue(data[json]))
    return {
      status: 'False',
      reason: 'InvalidData',
      message: `the key ${json} of spec.data must be JSON for a Secret of type ${type}; its copies were removed, and come back once it is`,
    };
  return undefined;
}

/** A line for `target` from an outcome. */
function lineOf(target: string, phase: Line['phase'], outcome: Outcome): Line {
  return { target, phase, reason: outcome.reason, message: outcome.message };
}

/** The line with its lastDeliveryTime: now when just written or newly Delivered, else as it was. */
function stamped(line: Line, before: ProjectSecretStatusTarget | undefined, wrote = false): Line {
  const { lastDeliveryTime: _, ...rest } = line;
  const kept = before?.lastDeliveryTime;
  const fresh = line.phase === 'Delivered' && (wrote || before?.phase !== 'Delivered' || !kept);
  const time = fresh ? nowRFC3339() : kept;
  return time ? { ...rest, lastDeliveryTime: time } : rest;
}

/** The SecretDelivered condition from the lines: a lone line's own words, else how many are delivered. */
function summary(lines: Line[], left: number): Outcome {
  const more = left ? `; ${left} more target(s) are not delivered to: at most ${MAX_DELIVERIES} per ProjectSecret` : '';
  if (!lines.length)
    return { status: 'True', reason: 'NoTargets', message: `spec.delivery.targets is empty: no Secret is kept${more}` };
  const notDelivered = lines.filter((l) => l.phase !== 'Delivered');
  if (lines.length === 1 && !left) {
    const [l] = lines;
    return { status: l.phase === 'Delivered' ? 'True' : 'False', reason: l.reason!, message: l.message! };
  }
  if (!notDelivered.length && !left)
    return { status: 'True', reason: 'Delivered', message: `delivered to all ${lines.length} targets` };
  const named = notDelivered
    .slice(0, 5)
    .map((l) => `${l.target} (${l.reason})`)
    .join(', ');
  const others = notDelivered.length > 5 ? ` and ${notDelivered.length - 5} more` : '';
  return {
    status: 'False',
    reason: notDelivered.length < lines.length ? 'PartiallyDelivered' : 'NotDelivered',
    message: `${lines.length - notDelivered.length} of ${lines.length} targets delivered${notDelivered.length ? `; not: ${named}${others} (status.targets says why)` : ''}${more}`,
  };
}

/**
 * The line of a target outside the host that refused or did not answer: its HTTP status only (the cluster's words
 * go to the log). A create answered 404 is the namespace missing there.
 */
function targetFailure(key: string, target: DeliveryTarget, err: HostClusterError): Outcome {
  if (err.code === undefined || err.code >= 500 || err.code === 429)
    return {
      status: 'False',
      reason: 'TargetUnavailable',
      message: `${key} did not answer; the Secret is written once it does`,
    };
  if (err.code === 404)
    return {
      status: 'False',
      reason: 'NamespaceNotFound',
      message: `${key} has no namespace ${target.namespace} (HTTP 404); the Secret is written once it has`,
    };
  return {
    status: 'False',
    reason: 'TargetRejected',
    message: `${key} refused to write the Secret (HTTP ${err.code}); the server's log says why, and it is tried again`,
  };
}

/** Runs `fn` on each item, at most `limit` at once, in order of the items' results. */
async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return results;
}

/**
 * The host's error, for the log, unless its message quotes the data (a webhook in the host may echo what it refused):
 * then without the message. Decoded values shorter than 4 characters are too common in any text to look for.
 */
function withoutData(err: HostClusterError, obj: ProjectSecret): HostClusterError {
  const values = Object.values(obj.spec?.data ?? {}).flatMap((b64) => {
    const plain = Buffer.from(b64, 'base64').toString('utf8');
    return plain.length >= 4 ? [b64, plain] : [b64];
  });
  if (!values.some((v) => v && err.message.includes(v))) return err;
  return new HostClusterError(
    `the host cluster answered HTTP ${err.code}; its message is left out, as it quotes the Secret's data`,
    err.code,
  );
}

/**
 * The condition for a host that failed: what a tenant can act on, without the host's own words. (A project namespace
 * missing in the host is a 404 here; while it is missing, the ProjectSecret's namespace refuses writes, this status
 * among them, as kube's NamespaceLifecycle does, so the log says it and the Secret follows once the namespace exists.)
 */
function failure(err: HostClusterError): Outcome {
  if (err.code === undefined || err.code >= 500 || err.code === 429)
    return {
      status: 'False',
      reason: 'HostUnavailable',
      message: 'the host cluster did not answer; the Secret is written once it does',
    };
  return {
    status: 'False',
    reason: 'HostRejected',
    message: `the host cluster refused to write the Secret (HTTP ${err.code}); the server's log says why, and it is tried again`,
  };
}
