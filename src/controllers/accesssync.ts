/**
 * Keeps the host cluster's RBAC in step with the owner and access lists of the kinds whose strategy declares host
 * RBAC (`hostRbac` of ownedKindStrategy in src/kinds/: SharedSecret, ProjectSecret and Cluster today;
 * src/access/rbac.ts says what each object asks for):
 *
 * - objects that ask for RBAC carry the finalizer `management.platform.sh/access-cleanup`, added before anything is
 *   created in the host, so a deletion always waits until their Roles and bindings are gone;
 * - a reconcile writes what is missing or differs and deletes generated objects no entry asks for any more (those
 *   of earlier versions' one pair per entry, `...-access-<index>`, among them, once their successors exist), then
 *   records the `AccessSynced` condition in the status. Each write reads the host's object of that name first: none
 *   is created (POST); one labelled as made by this server for this very source is replaced at the resourceVersion
 *   read; any other (made by hand, or for another source) is never touched, and the condition says so;
 * - what one object may have in the host is bounded (rbac.ts: a pair per distinct set of verbs and subresources,
 *   within the CRDs' limits); an object stored before the limits that asks for more gets its owner's pair only,
 *   everything else generated for it is deleted, and the condition (`AccessListTooLarge`) and the log say why;
 * - the condition tells tenants what failed and on which generated object; the host's own words (which may name
 *   this server's identity and groups) go to the log only;
 * - generated objects are watched in the host (by label), so one changed or deleted by hand is put back at once;
 *   the label is no proof (anyone who may make a Role can label it), so the lists before each watch are read a
 *   bounded page at a time and only the objects at names generated for their source are kept; and of those only
 *   where they are, the source they name and a digest of their content, never the objects: the label and the
 *   annotation name any source, one that does not exist among them, and the rules are anyone's to make large;
 *   every `resyncIntervalMs` all objects are reconciled again and generated objects whose source is gone are swept;
 * - host failures are retried per object with an exponential backoff (never a tight loop); once the host answers
 *   again, everything waiting is retried at once.
 */
import { createHash } from 'node:crypto';
import { Backoff } from '../apimachinery/backoff.js';
import { canonicalJson, jsonEqual } from '../apimachinery/equality.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import { isStatusError } from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import {
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  LABEL_VALUE_MAX_LENGTH,
} from '../apimachinery/validation.js';
import {
  desiredRbac,
  isGeneratedName,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SOURCE_ANNOTATION,
  sourceLabelKeys,
  SOURCE_UID_LABEL,
  type RbacKind,
  type RbacObject,
} from '../access/rbac.js';
import { HostClusterError } from '../host/cluster.js';
import { RBAC_KINDS, type HostRbac } from '../host/rbac.js';
import { untilWatchEnds } from '../host/watchend.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import { runQueueController } from './runner.js';
import { sleep } from '../apimachinery/sleep.js';
import { setCondition, type Outcome } from './conditions.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { tracer } from '../tracing.js';

export const ACCESS_CLEANUP_FINALIZER = `${GROUP_NAME}/access-cleanup`;
export const ACCESS_SYNCED = 'AccessSynced';
const FIELD_MANAGER = 'access-sync';
/** Longest wait between two attempts to list and watch the host's RBAC while it fails. */
const HOST_PROBE_MAX_MS = 5_000;
/** Longest wait before a failed object is tried again; a returning host retries all of them at once anyway. */
const RETRY_MAX_MS = 5 * 60_000;

export interface AccessSyncOptions {
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How often every object is reconciled again and orphans are swept (ms). */
  resyncIntervalMs?: number;
  /** How many objects are reconciled at once. */
  workers?: number;
  /** First retry delay of a failed object (ms; doubled up to 5 min). */
  retryDelayMs?: number;
  /** Metrics of its work queue ("access-sync"). */
  workQueueMetrics?: WorkQueueMetrics;
}

interface Source {
  store: Store;
  namespace?: string;
  name: string;
}

/** Where a host object is: enough to name it and to delete it (only that one, by uid). */
type ObjectRef = Pick<RbacObject, 'kind'> & { metadata: Pick<RbacObject['metadata'], 'name' | 'namespace' | 'uid'> };

/**
 * What is known of a host object generated for a source: where it is, the source its annotation names (for the
 * sweep) and a digest of what the sync sets on it (to skip writes of what is already there). Not the object: what
 * one costs here is the same few hundred bytes whatever its rules hold, for objects of a source that does not exist
 * (anyone may label and annotate an object for one) as for the server's own.
 */
interface KnownObject extends ObjectRef {
  /** The source annotation (sourceOf bounds it). */
  source: string;
  /** contentDigest of the object. */
  content: string;
}

const objectKey = (o: ObjectRef) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class AccessSync {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly stores: Store[];
  private readonly queue: WorkQueue;
  /** Our objects by uid. */
  private readonly sources = new Map<string, Source>();
  /** What the host has, by source uid (from the label), then by kind/namespace/name. */
  private readonly generated = new Map<string, Map<string, KnownObject>>();
  private hostFailing = false;
  private signal?: AbortSignal;

  constructor(
    registry: Registry,
    private readonly rbac: HostRbac,
    opts: AccessSyncOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.queue = new WorkQueue({
      baseDelayMs: opts.retryDelayMs ?? 1000,
      maxDelayMs: RETRY_MAX_MS,
      name: 'access-sync',
      metrics: opts.workQueueMetrics,
    });
    // The kinds whose strategy declares host RBAC (kinds/: ownedKindStrategy's hostRbac).
    this.stores = registry.definitions
      .map((d) => registry.lookup(d.group, d.version, d.plural))
      .filter((s): s is Store => !!s?.strategy.access?.hostRbac);
  }

  async run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    const watches = this.stores.map((store) =>
      watchStore(store, signal, {
        upsert: (obj) => this.upsertSource(store, obj),
        remove: (obj) => this.queue.add(obj.metadata.uid!),
        resynced: (seen) => {
          for (const [uid, src] of this.sources) if (src.store === store && !seen.has(uid)) this.dropSource(uid);
        },
        log: (msg, fields) => this.log(`access sync: ${msg}`, fields),
      }),
    );
    // Nothing is swept before every source is known (the runner waits for the watches): it would look deleted.
    await runQueueController(
      {
        what: 'access sync',
        log: this.log,
        watches,
        synced: async () => RBAC_KINDS.map((kind) => this.hostWatchLoop(kind, signal)),
        queue: this.queue,
        workers: this.workers,
        resyncMs: this.resyncMs,
        resync: () => this.enqueueAll(),
        started: () => ({ objects: this.sources.size }),
        handle: (uid) => this.traced(uid),
        failed: (uid, err, delayMs) => {
          if (hostUnavailable(err)) this.noteHostDown(err);
          const src = this.sources.get(uid);
          this.log('access sync: will retry', {
            kind: src?.store.def.kind,
            namespace: src?.namespace,
            name: src?.name,
            error: String((err as Error).message ?? err),
            delayMs,
          });
        },
      },
      signal,
    );
  }

  private upsertSource(store: Store, obj: KubeObject): void {
    const uid = obj.metadata.uid!;
    this.sources.set(uid, { store, namespace: obj.metadata.namespace, name: obj.metadata.name! });
    this.queue.add(uid);
  }

  private dropSource(uid: string): void {
    this.sources.delete(uid);
    this.queue.add(uid);
  }

  private enqueueAll(): void {
    for (const uid of this.sources.keys()) this.queue.add(uid);
    // Generated objects whose source is not known: swept by their reconcile.
    for (const uid of this.generated.keys()) this.queue.add(uid);
  }

  // ---- one object ----

  /** A reconcile is a trace of its own (sampled at the configured rate), linked to the write that caused it. */
  private traced(uid: string): Promise<void> {
    const src = this.sources.get(uid);
    const attributes = { kind: src?.store.def.kind, namespace: src?.namespace, name: src?.name };
    const links = src ? tracer().writeLinks(src.store.key(src.namespace, src.name)) : [];
    return tracer().inRootSpan('Sync access', attributes, links, () => this.reconcile(uid));
  }

  private async reconcile(uid: string): Promise<void> {
    const src = this.sources.get(uid);
    const obj = src ? await this.fresh(src, uid) : undefined;
    if (!src || !obj) return this.sweep(uid);
    const def = src.store.def;
    const finalizers = obj.metadata.finalizers ?? [];
    const hasFinalizer = finalizers.includes(ACCESS_CLEANUP_FINALIZER);

    if (obj.metadata.deletionTimestamp) {
      if (!hasFinalizer) return;
      await this.converge(uid, []);
      await this.setFinalizer(src, uid, false);
      this.log('access sync: removed the RBAC of a deleted object', {
        kind: def.kind,
        namespace: src.namespace,
        name: src.name,
      });
      return;
    }

    const { objects: desired, refused } = desiredRbac(def, obj);
    if (desired.length && !hasFinalizer) await this.setFinalizer(src, uid, true);
    try {
      await this.converge(uid, desired);
    } catch (err) {
      await this.setCondition(src, uid, obj, { status: 'False', ...failure(err) });
      throw err;
    }
    if (!desired.length && hasFinalizer) await this.setFinalizer(src, uid, false);
    if (refused) {
      // Nothing of the entries was written (what was there is gone); retrying would not help, a change of them will.
      this.log('access sync: the access entries of an object are not granted in the host cluster', {
        kind: def.kind,
        namespace: src.namespace,
        name: src.name,
        reason: refused.reason,
        why: refused.message,
      });
      await this.setCondition(src, uid, obj, { status: 'False', ...refused });
      return;
    }
    const roles = desired.filter((o) => !o.roleRef).length;
    const what = def.namespaced ? ['Role', 'RoleBinding'] : ['ClusterRole', 'ClusterRoleBinding'];
    const message = roles
      ? `${roles} ${what[0]}(s) and ${roles} ${what[1]}(s) in the host cluster grant the owner and access entries`
      : 'nothing to grant: no owner and no access entries';
    await this.setCondition(src, uid, obj, { status: 'True', reason: 'Synced', message });
  }

  /** Makes the host hold exactly `desired` for this source (never touching objects that are not its own). */
  private async converge(uid: string, desired: RbacObject[]): Promise<void> {
    const existing = this.generated.get(uid) ?? new Map<string, KnownObject>();
    const taken: RbacObject[] = [];
    // A binding to a role someone else holds would grant that role: it is not made, and one of ours is removed.
    const roleTaken = (want: RbacObject) =>
      !!want.roleRef && taken.some((t) => !t.roleRef && t.metadata.name === want.roleRef!.name);
    const wanted = new Set<string>();
    for (const want of desired) {
      if (roleTaken(want)) continue;
      wanted.add(objectKey(want));
      const known = existing.get(objectKey(want));
      if (known?.content === contentDigest(want)) continue;
      if (!(await this.write(uid, want))) taken.push(want);
    }
    for (const [key, have] of existing) {
      if (wanted.has(key)) continue;
      await hostStep('delete', have, () =>
        this.rbac.delete(have.kind, have.metadata.namespace, have.metadata.name, have.metadata.uid),
      );
      this.forgetObject(uid, key);
    }
    this.noteHostUp();
    if (taken.length) throw new NamesTaken(taken);
  }

  /**
   * Creates or replaces one generated object, after reading what the host has under its name: false (and nothing
   * written) when that is an object this server did not make for this source.
   */
  private async write(uid: string, want: RbacObject): Promise<boolean> {
    let have = await hostStep('read', want, () =>
      this.rbac.get(want.kind, want.metadata.namespace, want.metadata.name),
    );
    if (have && !madeFor(have, uid)) return false;
    // roleRef cannot change (kube answers 422): a binding pointing elsewhere is deleted first.
    if (have?.roleRef && !jsonEqual(have.roleRef, want.roleRef)) {
      const old = have;
      await hostStep('delete', old, () =>
        this.rbac.delete(old.kind, old.metadata.namespace, old.metadata.name, old.metadata.uid),
      );
      have = undefined;
    }
    const resourceVersion = have?.metadata.resourceVersion;
    const written = resourceVersion
      ? await hostStep('update', want, () =>
          this.rbac.replace({ ...want, metadata: { ...want.metadata, resourceVersion } }),
        )
      : await hostStep('create', want, () => this.rbac.create(want));
    this.remember(uid, written);
    return true;
  }

  /** Generated objects whose source is gone (or is another object now): deleted. */
  private async sweep(uid: string): Promise<void> {
    const existing = this.generated.get(uid);
    if (!existing?.size) return;
    // The annotation names the source: a fresh read makes sure it is really gone before anything is deleted.
    const first = [...existing.values()][0];
    if (await this.sourceStillExists(first.source, uid)) return;
    await this.converge(uid, []);
    this.log('access sync: swept RBAC whose source is gone', { source: first.source, objects: existing.size });
  }

  private async sourceStillExists(annotation: string, uid: string): Promise<boolean> {
    const source = this.sourceOf(annotation);
    return !!source && !!(await this.fresh(source, uid));
  }

  /**
   * The source a source annotation names (kind, namespace, name), if it is of a kind this sync serves and its
   * namespace and name could be an object's (what is kept of a host object is that small, whatever it says).
   */
  private sourceOf(annotation: string | undefined): Source | undefined {
    const match = /^(\S+) (?:([^/]+)\/)?(.+)$/.exec(annotation ?? '');
    if (!match) return undefined;
    const [, kind, namespace, name] = match;
    if ((namespace?.length ?? 0) > DNS1123_LABEL_MAX_LENGTH || name.length > DNS1123_SUBDOMAIN_MAX_LENGTH)
      return undefined;
    const store = this.stores.find((s) => s.def.kind === kind);
    return store && { store, namespace, name };
  }

  /**
   * Whether a host object labelled for the source `uid` is one this server makes for that source: of the source's
   * RBAC kinds, in its namespace, under a name generated for it (rbac.ts isGeneratedName). Only those are remembered,
   * and so replaced or deleted: anyone who may label an object could otherwise have the server delete it, and what
   * others label costs no memory here.
   */
  private generatedFor(obj: RbacObject, uid: string): boolean {
    const source = this.sourceOf(obj.metadata.annotations?.[SOURCE_ANNOTATION]);
    if (!source) return false;
    const { def } = source.store;
    const kinds = def.namespaced ? ['Role', 'RoleBinding'] : ['ClusterRole', 'ClusterRoleBinding'];
    if (
      !kinds.includes(obj.kind) ||
      (obj.metadata.namespace ?? undefined) !== (def.namespaced ? source.namespace : undefined)
    )
      return false;
    return isGeneratedName(def, { name: source.name, uid }, obj.metadata.name);
  }

  private async fresh(src: Source, uid: string): Promise<KubeObject | undefined> {
    try {
      const obj = await src.store.get(src.namespace, src.name);
      return obj.metadata.uid === uid ? obj : undefined;
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  private async setFinalizer(src: Source, uid: string, present: boolean): Promise<void> {
    await this.updateIfSame(src, uid, undefined, (obj) => {
      const rest = (obj.metadata.finalizers ?? []).filter((f) => f !== ACCESS_CLEANUP_FINALIZER);
      const next = present ? [...rest, ACCESS_CLEANUP_FINALIZER] : rest;
      if (next.length) obj.metadata.finalizers = next;
      else delete obj.metadata.finalizers;
      return obj;
    });
  }

  /** Sets the AccessSynced condition; its lastTransitionTime moves only when its status does. */
  private async setCondition(src: Source, uid: string, read: KubeObject, c: Outcome): Promise<void> {
    try {
      await this.updateIfSame(src, uid, 'status', (obj) => {
        setCondition(obj, ACCESS_SYNCED, c, read);
        return obj;
      });
    } catch (err) {
      // The condition is a report; failing to write it must not hide the reconcile's own outcome.
      this.log('access sync: could not write the condition', {
        kind: src.store.def.kind,
        namespace: src.namespace,
        name: src.name,
        error: String(err),
      });
    }
  }

  private async updateIfSame(
    src: Source,
    uid: string,
    subresource: 'status' | undefined,
    change: (obj: KubeObject) => KubeObject,
  ): Promise<void> {
    try {
      await src.store.update(
        src.namespace,
        src.name,
        {
          patch: (obj) => {
            if (obj.metadata.uid !== uid) throw new NotTheSameObject();
            return change(obj);
          },
        },
        subresource,
        { fieldManager: FIELD_MANAGER },
      );
    } catch (err) {
      if (err instanceof NotTheSameObject || isStatusError(err, 'NotFound')) return;
      throw err;
    }
  }

  // ---- the host's generated objects, by watch ----

  private async hostWatchLoop(kind: RbacKind, signal: AbortSignal): Promise<void> {
    const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
    // These four loops are what notices the host coming back, so they stay prompt: at most every 5 s.
    const backoff = new Backoff({ initialMs: 500, maxMs: HOST_PROBE_MAX_MS });
    while (!signal.aborted) {
      try {
        const resourceVersion = await this.relist(kind, selector);
        this.noteHostUp();
        backoff.reset();
        await untilWatchEnds(signal, (done) =>
          this.rbac.watch(kind, selector, resourceVersion, (type, obj) => this.hostEvent(type, obj), done),
        );
      } catch (err) {
        if (signal.aborted) return;
        // The list's continue token or the watch's resourceVersion expired (kube's 410): a fresh list, at once.
        if (err instanceof HostClusterError && err.code === 410) continue;
        this.noteHostDown(err);
        await sleep(backoff.next(), signal);
      }
    }
  }

  /**
   * Lists one kind a page at a time (host/resource.ts pages) and keeps of each page only the objects generated for
   * their source: whatever else carries the label goes with its page, so a list holds no more than a page of what
   * others labelled. What was known of the kind is then replaced; returned is the resourceVersion to watch from.
   */
  private async relist(kind: RbacKind, selector: string): Promise<string> {
    const ours: Array<[string, KnownObject]> = [];
    let resourceVersion = '';
    for await (const page of this.rbac.pages(kind, selector)) {
      resourceVersion ||= page.resourceVersion;
      for (const o of page.items) {
        const uid = this.sourceUidOf(o);
        if (uid) ours.push([uid, knownObject(o)]);
      }
    }
    this.replaceKind(kind, ours);
    return resourceVersion;
  }

  /** A fresh list of one kind replaces what was known of it; every source concerned is looked at again. */
  private replaceKind(kind: RbacKind, ours: Array<[string, KnownObject]>): void {
    for (const [uid, objs] of this.generated) {
      for (const [key, o] of objs) {
        if (o.kind === kind) {
          objs.delete(key);
          this.queue.add(uid);
        }
      }
      if (!objs.size) this.generated.delete(uid);
    }
    for (const [uid, o] of ours) {
      this.keep(uid, o);
      this.queue.add(uid);
    }
  }

  /** The uid of the source a host object was generated for (generatedFor), or undefined: not one of ours. */
  private sourceUidOf(obj: RbacObject): string | undefined {
    const uid = obj.metadata.labels?.[SOURCE_UID_LABEL];
    return uid && uid.length <= LABEL_VALUE_MAX_LENGTH && this.generatedFor(obj, uid) ? uid : undefined;
  }

  private hostEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: RbacObject): void {
    const uid = this.sourceUidOf(obj);
    if (!uid) return;
    if (type === 'DELETED') this.forgetObject(uid, objectKey(obj));
    else this.remember(uid, obj);
    this.queue.add(uid);
  }

  private remember(uid: string, obj: RbacObject): void {
    this.keep(uid, knownObject(obj));
  }

  private keep(uid: string, known: KnownObject): void {
    if (!this.generated.has(uid)) this.generated.set(uid, new Map());
    this.generated.get(uid)!.set(objectKey(known), known);
  }

  private forgetObject(uid: string, key: string): void {
    const objs = this.generated.get(uid);
    objs?.delete(key);
    if (objs && !objs.size) this.generated.delete(uid);
  }

  private noteHostUp(): void {
    if (!this.hostFailing) return;
    this.hostFailing = false;
    this.log('access sync: the host cluster answers again; retrying everything that waited');
    this.queue.retryAllNow();
    this.enqueueAll();
  }

  private noteHostDown(err: unknown): void {
    if (this.hostFailing) return;
    this.hostFailing = true;
    this.log('access sync: the host cluster does not answer; retrying with backoff', {
      error: String((err as Error)?.message ?? err),
    });
    void this.probeUntilUp();
  }

  /** One cheap request at a time tells when the host is back, instead of every waiting object trying. */
  private async probeUntilUp(): Promise<void> {
    const backoff = new Backoff({ initialMs: 500, maxMs: HOST_PROBE_MAX_MS });
    let wait = backoff.next();
    while (this.hostFailing && !this.signal?.aborted) {
      await sleep(wait, this.signal);
      try {
        // A label no source has: an answer of one object at most, whatever anyone labelled so.
        await this.rbac.list('ClusterRole', `${MANAGED_BY_LABEL}=${MANAGED_BY},${SOURCE_UID_LABEL}=probe`, {
          limit: 1,
        });
        this.noteHostUp();
      } catch {
        wait = backoff.next();
      }
    }
  }
}

/** What is kept of a host object generated for a source (its strings bounded by sourceUidOf's checks). */
function knownObject(o: RbacObject): KnownObject {
  const { name, namespace, uid } = o.metadata;
  return {
    kind: o.kind,
    metadata: { name, ...(namespace ? { namespace } : {}), ...(uid ? { uid } : {}) },
    source: o.metadata.annotations?.[SOURCE_ANNOTATION] ?? '',
    content: contentDigest(o),
  };
}

/**
 * A digest of what the sync sets on an object: its labels and annotation (ours only: others may add their own),
 * rules, roleRef and subjects. Two objects have the same digest exactly when they are equal in those (SHA-256 of
 * canonicalJson: a collision is out of reach).
 */
function contentDigest(o: RbacObject): string {
  const ours = (m: Record<string, string> | undefined, keys: string[]) =>
    Object.fromEntries(keys.map((k) => [k, m?.[k]]));
  const namespaced = o.kind === 'Role' || o.kind === 'RoleBinding';
  const content = [
    ours(o.metadata.labels, sourceLabelKeys(namespaced)),
    ours(o.metadata.annotations, [SOURCE_ANNOTATION]),
    normalRules(o.rules),
    o.roleRef ?? null,
    o.subjects ?? [],
  ];
  return createHash('sha256').update(canonicalJson(content)).digest('base64');
}

/** Rules as the host returns them may leave out empty lists. */
function normalRules(rules: RbacObject['rules']): unknown {
  return (rules ?? []).map((r) => ({
    apiGroups: r.apiGroups ?? [],
    resources: r.resources ?? [],
    resourceNames: r.resourceNames ?? [],
    verbs: r.verbs ?? [],
  }));
}

/** The host did not answer, or answered that it cannot (5xx, 429): worth waiting for, not a refusal. */
function hostUnavailable(err: unknown): boolean {
  return err instanceof HostClusterError && (err.code === undefined || err.code >= 500 || err.code === 429);
}

/** Whether the host's object was made by this server for the source `uid` (else it is someone else's). */
function madeFor(obj: RbacObject, uid: string): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels[MANAGED_BY_LABEL] === MANAGED_BY && labels[SOURCE_UID_LABEL] === uid;
}

const describeObject = (o: ObjectRef) =>
  `${o.kind} ${JSON.stringify(o.metadata.name)}${o.metadata.namespace ? ` in the namespace ${JSON.stringify(o.metadata.namespace)}` : ''}`;

/**
 * A host failure on one generated object. Its message is the host's full answer (for the log); `summary` is what
 * tenants read in the condition: what was done to which object and the HTTP status, without the host's words.
 */
class GeneratedObjectError extends HostClusterError {
  readonly summary: string;

  constructor(action: string, obj: ObjectRef, cause: HostClusterError) {
    super(cause.message, cause.code);
    const answer =
      cause.code === undefined ? 'the host cluster did not answer' : `the host cluster answered HTTP ${cause.code}`;
    this.summary = `could not ${action} ${describeObject(obj)}: ${answer} (the server's log has the details)`;
  }
}

async function hostStep<T>(action: string, obj: ObjectRef, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof HostClusterError ? new GeneratedObjectError(action, obj, err) : err;
  }
}

/** Generated names that the host already uses for objects this server did not make for the source. */
class NamesTaken extends Error {
  constructor(readonly objects: RbacObject[]) {
    super(
      `the host cluster already has ${objects.map(describeObject).join(', ')}, not made by this server for this object; ` +
        'this server leaves such objects alone, and what they would grant is not in effect until they are removed or renamed',
    );
  }
}

/** The condition for a failed reconcile: short and free of the host's own words, which only the log gets. */
function failure(err: unknown): { reason: string; message: string } {
  const message = err instanceof GeneratedObjectError ? err.summary : undefined;
  if (hostUnavailable(err))
    return {
      reason: 'HostUnavailable',
      message:
        message ?? `the host cluster did not answer as expected (HTTP ${(err as HostClusterError).code ?? 'none'})`,
    };
  if (err instanceof HostClusterError)
    return { reason: 'HostRejected', message: message ?? `the host cluster refused a request (HTTP ${err.code})` };
  if (err instanceof NamesTaken) return { reason: 'NameTaken', message: err.message };
  return {
    reason: 'SyncFailed',
    message: "the access could not be synced to the host cluster (the server's log has the details)",
  };
}

class NotTheSameObject extends Error {}
