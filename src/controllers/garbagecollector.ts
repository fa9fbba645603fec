/**
 * The garbage collector (after kube's pkg/controller/garbagecollector): a client of the registry that watches
 * every resource, keeps an index of objects by uid and of dependents by owner uid, and
 *
 * - deletes an object whose ownerReferences all point to owners that do not exist (looked up as kube's collector
 *   does: by the reference's kind, the dependent's namespace and the name, and absent unless the object found
 *   has the reference's uid; see ownerlookup.ts), in the background and with a precondition on the object's uid;
 * - for an owner being deleted with the `orphan` finalizer, removes the ownerReferences to it (by kind, name and
 *   uid) from its dependents, then the finalizer;
 * - for an owner being deleted with the `foregroundDeletion` finalizer, deletes its dependents first (in the
 *   foreground themselves when they have dependents), waits until those with `blockOwnerDeletion` are gone,
 *   then removes the finalizer. Only references to it by kind, name and uid make a dependent: one that merely
 *   carries its uid points to no owner, so it is collected as such and never holds the deletion.
 *
 * Every decision is taken on a fresh read from storage, never on the index alone, so a stale index can delay
 * work but not cause a wrong deletion. It holds no state of its own: after a restart or a leader change it
 * rebuilds everything from lists (the watches' initial events) and carries on.
 */
import { decoded } from '../apimachinery/encoded.js';
import type { KubeObject, OwnerReference } from '../apimachinery/types.js';
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../apimachinery/objectmeta.js';
import { isStatusError } from '../apimachinery/status.js';
import { findOwner, refersTo } from '../registry/ownerlookup.js';
import type { Registry } from '../registry/registry.js';
import type { PropagationPolicy } from '../registry/propagation.js';
import type { DeleteOptions, Store } from '../registry/store.js';
import { watchStore } from './storewatch.js';
import { runQueueController } from './runner.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { tracer } from '../tracing.js';

const FINALIZER_ORPHAN = FINALIZER_ORPHAN_DEPENDENTS;
const FINALIZER_FOREGROUND = FINALIZER_DELETE_DEPENDENTS;

export interface GarbageCollectorOptions {
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How often every known object is checked again, as a safety net for missed events (ms). */
  resyncIntervalMs?: number;
  /** Delay before an item that failed (e.g. etcd unreachable) is tried again (ms, doubled up to 30 s). */
  retryDelayMs?: number;
  /** Metrics of its work queue ("garbage-collector"). */
  workQueueMetrics?: WorkQueueMetrics;
}

/** What the index knows of one object. */
interface Node {
  uid: string;
  store: Store;
  namespace?: string;
  name: string;
  owners: OwnerReference[];
  deleting: boolean;
  finalizers: string[];
}

export class GarbageCollector {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly stores: Store[];

  /** Objects by uid. */
  private readonly nodes = new Map<string, Node>();
  /** Owner uid → uids of objects referring to it (the owner may not exist). */
  private readonly dependents = new Map<string, Set<string>>();

  private readonly queue: WorkQueue;

  constructor(
    private readonly registry: Registry,
    opts: GarbageCollectorOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 60_000;
    this.queue = new WorkQueue({
      baseDelayMs: opts.retryDelayMs ?? 500,
      maxDelayMs: 30_000,
      name: 'garbage-collector',
      metrics: opts.workQueueMetrics,
    });
    this.stores = registry.definitions
      .map((d) => registry.lookup(d.group, d.version, d.plural))
      .filter((s): s is Store => !!s);
  }

  /** Runs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await runQueueController(
      {
        what: 'garbage collector',
        log: this.log,
        watches: this.stores.map((store) => this.watchLoop(store, signal)),
        synced: async () => this.enqueueAll(),
        queue: this.queue,
        workers: 1,
        resyncMs: this.resyncMs,
        resync: () => this.enqueueAll(),
        startedWord: 'synced',
        started: () => ({ objects: this.nodes.size }),
        handle: (uid) => this.turn(uid, signal),
        failed: (_uid, err, delayMs) => {
          const { node, failure } = err as TurnFailed;
          this.log('garbage collector: will retry', {
            resource: node.store.def.plural,
            name: node.name,
            namespace: node.namespace,
            error: String(failure),
            delayMs,
          });
        },
      },
      signal,
    );
  }

  // ---- the index, fed by watches ----

  private watchLoop(store: Store, signal: AbortSignal): { synced: Promise<void>; done: Promise<void> } {
    return watchStore(store, signal, {
      upsert: (obj) => this.upsert(store, obj),
      remove: (obj) => this.remove(obj),
      // Objects of this resource the index still has but the fresh list did not: deleted while unwatched.
      resynced: (seen) => {
        for (const node of [...this.nodes.values()]) {
          if (node.store === store && !seen.has(node.uid)) this.removeUid(node.uid);
        }
      },
      log: (msg, fields) => this.log(`garbage collector: ${msg}`, fields),
    });
  }

  private upsert(store: Store, obj: KubeObject): void {
    const meta = obj.metadata;
    if (!meta.uid || !meta.name) return;
    const old = this.nodes.get(meta.uid);
    const node: Node = {
      uid: meta.uid,
      store,
      namespace: meta.namespace,
      name: meta.name,
      owners: (meta.ownerReferences ?? []).filter((r) => r && typeof r.uid === 'string'),
      deleting: !!meta.deletionTimestamp,
      finalizers: [...(meta.finalizers ?? [])],
    };
    this.nodes.set(node.uid, node);
    const before = new Set((old?.owners ?? []).map((r) => r.uid));
    const after = new Set(node.owners.map((r) => r.uid));
    for (const uid of before) {
      if (after.has(uid)) continue;
      this.dependents.get(uid)?.delete(node.uid);
      if (!this.dependents.get(uid)?.size) this.dependents.delete(uid);
      // An owner waiting for its dependents may be free now.
      this.enqueue(uid);
    }
    for (const uid of after) {
      if (!this.dependents.has(uid)) this.dependents.set(uid, new Set());
      this.dependents.get(uid)!.add(node.uid);
    }
    // A blockOwnerDeletion change can free a waiting owner too.
    for (const r of node.owners) if (this.nodes.get(r.uid)?.deleting) this.enqueue(r.uid);
    // An object with no owner, not being deleted, has nothing to collect: its turn would read it for nothing.
    if (hasWork(node)) this.enqueue(node.uid);
  }

  private remove(obj: KubeObject): void {
    if (obj.metadata.uid) this.removeUid(obj.metadata.uid);
  }

  private removeUid(uid: string): void {
    const node = this.nodes.get(uid);
    if (!node) return;
    this.nodes.delete(uid);
    for (const r of node.owners) {
      this.dependents.get(r.uid)?.delete(uid);
      if (!this.dependents.get(r.uid)?.size) this.dependents.delete(r.uid);
      // Owners in foreground deletion wait for this one.
      this.enqueue(r.uid);
    }
    // Its dependents may have no owner left.
    for (const dep of this.dependents.get(uid) ?? []) this.enqueue(dep);
  }

  // ---- the work queue ----

  private enqueue(uid: string): void {
    if (!this.nodes.has(uid) && !this.dependents.has(uid)) return;
    this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const [uid, node] of this.nodes) if (hasWork(node)) this.enqueue(uid);
  }

  /** One object's turn, on the node the index had when it began. */
  private async turn(uid: string, signal: AbortSignal): Promise<void> {
    const node = this.nodes.get(uid);
    if (!node) return;
    try {
      await this.traced(node);
    } catch (err) {
      // A failure while stopping is the stop's: neither retried nor logged.
      if (signal.aborted) return;
      // The retry's log line names this node, which the index may have dropped by then.
      throw new TurnFailed(node, err);
    }
  }

  /** Each object's turn is a trace of its own (sampled at the configured rate), linked to the write that caused it. */
  private traced(node: Node): Promise<void> {
    const attributes = { resource: node.store.def.plural, namespace: node.namespace, name: node.name };
    const links = tracer().writeLinks(node.store.key(node.namespace, node.name));
    return tracer().inRootSpan('Garbage collect', attributes, links, () => this.process(node));
  }

  // ---- decisions, each on a fresh read ----

  private async process(node: Node): Promise<void> {
    const current = await this.fresh(node.store, node.namespace, node.name, node.uid);
    if (!current) return;
    const meta = current.metadata;
    if (meta.deletionTimestamp) {
      const finalizers = meta.finalizers ?? [];
      if (finalizers.includes(FINALIZER_ORPHAN)) await this.orphanDependents(node, current);
      else if (finalizers.includes(FINALIZER_FOREGROUND)) await this.deleteDependentsFirst(node, current);
      // Otherwise it is on its way out already: never deleted again.
      return;
    }
    const refs = meta.ownerReferences ?? [];
    if (!refs.length) return;

    const solid: OwnerReference[] = [];
    const dangling: OwnerReference[] = [];
    const waiting: OwnerReference[] = [];
    for (const ref of refs) {
      const owner = await findOwner(this.registry, ref, meta.namespace);
      if ('unresolvable' in owner) {
        // As kube's collector: an owner it cannot look up is neither there nor absent, so the object is left as it is.
        this.log('garbage collector: cannot look an owner up, leaving the object alone', {
          resource: node.store.def.plural,
          name: node.name,
          why: owner.unresolvable,
        });
        return;
      }
      if ('absent' in owner) dangling.push(ref);
      else if (
        owner.found.metadata.deletionTimestamp &&
        owner.found.metadata.finalizers?.includes(FINALIZER_FOREGROUND)
      )
        waiting.push(ref);
      else solid.push(ref);
    }

    if (solid.length) {
      if (!dangling.length && !waiting.length) return;
      // Still owned: drop the references to owners that are gone or waiting for their dependents (as kube does).
      const drop = new Set([...dangling, ...waiting].map((r) => r.uid));
      await this.patchIfSame(node, (obj) => {
        obj.metadata.ownerReferences = (obj.metadata.ownerReferences ?? []).filter((r) => !drop.has(r.uid));
        if (!obj.metadata.ownerReferences.length) delete obj.metadata.ownerReferences;
        return obj;
      });
      return;
    }

    const deps = waiting.length ? await this.findDependents(node, current) : [];
    if (deps.length) {
      // Part of a foreground deletion and an owner itself: its dependents go first. A dependent already waiting
      // for its own dependents means a cycle; then this object stops blocking its owners, as kube does.
      if (deps.some((d) => d.metadata.deletionTimestamp && d.metadata.finalizers?.includes(FINALIZER_FOREGROUND))) {
        await this.patchIfSame(node, (obj) => {
          for (const r of obj.metadata.ownerReferences ?? []) if (r.blockOwnerDeletion) r.blockOwnerDeletion = false;
          return obj;
        });
      }
      await this.deleteForeground(node);
      return;
    }

    const policy = meta.finalizers?.includes(FINALIZER_ORPHAN)
      ? 'Orphan'
      : meta.finalizers?.includes(FINALIZER_FOREGROUND)
        ? 'Foreground'
        : 'Background';
    this.log('garbage collector: deleting object whose owners are gone', {
      resource: node.store.def.plural,
      namespace: node.namespace,
      name: node.name,
      uid: node.uid,
      policy,
    });
    await this.deleteIfSame(node, policy);
  }

  /** Orphan: the dependents lose their references to the owner, then the owner loses the `orphan` finalizer. */
  private async orphanDependents(owner: Node, current: KubeObject): Promise<void> {
    for (const dep of await this.findDependents(owner, current)) {
      const depNode = this.nodeOf(dep);
      if (!depNode) continue;
      await this.patchIfSame(depNode, (obj) => {
        const refs = (obj.metadata.ownerReferences ?? []).filter(
          (r) => !refersTo(r, obj.metadata.namespace, current, owner.store),
        );
        if (refs.length) obj.metadata.ownerReferences = refs;
        else delete obj.metadata.ownerReferences;
        return obj;
      });
    }
    this.log('garbage collector: orphaned dependents', {
      resource: owner.store.def.plural,
      namespace: owner.namespace,
      name: owner.name,
    });
    await this.removeFinalizer(owner, FINALIZER_ORPHAN);
  }

  /** Foreground: dependents are deleted; once none blocking remains, the owner loses `foregroundDeletion`. */
  private async deleteDependentsFirst(owner: Node, current: KubeObject): Promise<void> {
    const deps = await this.findDependents(owner, current);
    for (const dep of deps) {
      const depNode = this.nodeOf(dep);
      // Each dependent decides for itself (it may have other owners); the owner counts as waiting for it.
      if (depNode && !dep.metadata.deletionTimestamp) this.enqueue(depNode.uid);
    }
    const blocking = deps.filter((d) =>
      (d.metadata.ownerReferences ?? []).some(
        (r) => r.blockOwnerDeletion === true && refersTo(r, d.metadata.namespace, current, owner.store),
      ),
    );
    if (blocking.length) return; // woken again when they are gone or stop blocking
    this.log('garbage collector: dependents deleted, finishing foreground deletion', {
      resource: owner.store.def.plural,
      namespace: owner.namespace,
      name: owner.name,
    });
    await this.removeFinalizer(owner, FINALIZER_FOREGROUND);
  }

  /** Deletes in the foreground: the store adds `foregroundDeletion`, so it stays until its own dependents are gone. */
  private async deleteForeground(node: Node): Promise<void> {
    this.log('garbage collector: deleting object in the foreground', {
      resource: node.store.def.plural,
      namespace: node.namespace,
      name: node.name,
      uid: node.uid,
    });
    await this.deleteIfSame(node, 'Foreground');
  }

  private async deleteIfSame(node: Node, policy: PropagationPolicy): Promise<void> {
    const opts: DeleteOptions = {
      preconditions: { uid: node.uid },
      propagationPolicy: policy,
      fieldManager: 'garbage-collector',
    };
    try {
      await node.store.delete(node.namespace, node.name, opts);
    } catch (err) {
      // Gone already, or recreated with another uid: nothing of ours to delete.
      if (isStatusError(err, 'NotFound') || isStatusError(err, 'Conflict')) return;
      throw err;
    }
  }

  private async removeFinalizer(node: Node, finalizer: string): Promise<void> {
    await this.patchIfSame(node, (obj) => {
      const f = (obj.metadata.finalizers ?? []).filter((x) => x !== finalizer);
      if (f.length) obj.metadata.finalizers = f;
      else delete obj.metadata.finalizers;
      return obj;
    });
  }

  /** Updates the object (re-run on conflicts) if it still is the same one (uid); gone is fine. */
  private async patchIfSame(node: Node, change: (obj: KubeObject) => KubeObject): Promise<void> {
    try {
      await node.store.update(
        node.namespace,
        node.name,
        {
          patch: (obj) => {
            if (obj.metadata.uid !== node.uid) throw new NotTheSameObject();
            return change(obj);
          },
        },
        undefined,
        { fieldManager: 'garbage-collector' },
      );
    } catch (err) {
      if (err instanceof NotTheSameObject || isStatusError(err, 'NotFound')) return;
      throw err;
    }
  }

  /** The object as stored now (read from etcd), if it still is the one with `uid`. */
  private async fresh(
    store: Store,
    namespace: string | undefined,
    name: string,
    uid: string,
  ): Promise<KubeObject | undefined> {
    try {
      const obj = await store.get(namespace, name);
      return obj.metadata.uid === uid ? obj : undefined;
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  /**
   * Every object with an ownerReference to `owner` (as `current`) by kind, name and uid, read now (consistent lists)
   * rather than from the index.
   */
  private async findDependents(owner: Node, current: KubeObject): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const store of this.stores) {
      // The predicate decodes one object at a time and keeps only dependents: never every object at once.
      const refersToOwner = (obj: KubeObject) =>
        (obj.metadata.ownerReferences ?? []).some((r) => refersTo(r, obj.metadata.namespace, current, owner.store));
      const list = await store.list(undefined, { predicate: { matches: refersToOwner, empty: false } });
      out.push(...list.items.map(decoded));
    }
    return out;
  }

  /** The index node of a freshly read object (created from it if the index has not seen it yet). */
  private nodeOf(obj: KubeObject): Node | undefined {
    const uid = obj.metadata.uid;
    if (!uid || !obj.metadata.name) return undefined;
    const known = this.nodes.get(uid);
    if (known) return known;
    const store = this.registry.lookupKind(obj.apiVersion ?? '', obj.kind ?? '');
    if (!store) return undefined;
    this.upsert(store, obj);
    return this.nodes.get(uid);
  }
}

class NotTheSameObject extends Error {}

/** What a failed turn throws: what went wrong, and the node it was on. */
class TurnFailed extends Error {
  constructor(
    readonly node: Node,
    readonly failure: unknown,
  ) {
    super(String(failure));
  }
}

/** Whether an object's turn may do anything: it has owners to check, or is being deleted (its dependents). */
function hasWork(node: Node): boolean {
  return node.owners.length > 0 || node.deleting;
}
