/**
 * Fills the data of every ProjectSecret that names a SharedSecret in `spec.sharedSecretRef` from that SharedSecret,
 * and keeps it following (kinds/projectsecret/strategy.ts says what clients may write):
 *
 * - the data is the SharedSecret's, only the keys the reference lists (none listed: all), written to the
 *   ProjectSecret's `spec.data` as a server write; the condition `Synced` says how it went. Keys the reference lists
 *   that the SharedSecret no longer has are left out (`KeysNotFound`), the others are copied;
 * - a change of a SharedSecret's spec or its deletion reaches the ProjectSecrets naming it at once (watched), and so does the access
 *   sync catching up with a change of its access list (its `AccessSynced` condition moving); every
 *   `resyncIntervalMs` every ProjectSecret is reconciled again, which repairs what a missed event or a restart left,
 *   and notices a grant that ended in the host's RBAC (which nothing here watches);
 * - the data is kept only while whoever set the reference (`status.referencedBy`, recorded by the server) and the
 *   ProjectSecret's owner may both `get` the SharedSecret, asked of the same authorizers as a GET of it (owner and
 *   access lists, host RBAC), the writer as authentication had given them and the owner as access/model.ts
 *   ownerIdentity says: otherwise the data is removed (`WriterCannotGet`, `OwnerCannotGet`). One stored before
 *   writers were recorded holds none (`WriterUnknown`) until someone who may get the SharedSecret writes it. A SharedSecret that does not exist, or is being deleted, leaves no data
 *   (`SourceNotFound`), and the sync resumes when one of that name appears;
 * - each SharedSecret that some ProjectSecret names gets the condition `ProjectSecrets`: how many name it and how many
 *   hold its data now. It is added when the first one names it and stays (with 0) once none does;
 * - conditions move their lastTransitionTime only when their status does, and are written only when they change. They
 *   and the log name objects, owners and keys, never values.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import type { Authorizer } from '../apimachinery/authorizer.js';
import type { KubeObject } from '../apimachinery/types.js';
import { ownerIdentity } from '../access/model.js';
import type { UserInfo } from '../apimachinery/user.js';
import {
  getSharedSecret,
  referenceWriter,
  sharedSecretRef,
  type SharedSecretRef,
} from '../kinds/projectsecret/reference.js';
import { SYNCED } from '../kinds/projectsecret/conditions.js';
import { PROJECT_SECRETS } from '../kinds/sharedsecret/strategy.js';
import { asUserInfo } from '../registry/recordeduser.js';
import type { Registry } from '../registry/registry.js';
import type { Store } from '../registry/store.js';
import {
  conditionOf,
  dropCondition,
  setCondition,
  StaleObject,
  writeIfSame,
  writeStatus,
  type Outcome,
} from './conditions.js';
import { watchStore } from './storewatch.js';
import { WorkQueue, type WorkQueueMetrics } from './workqueue.js';
import { runQueueController } from './runner.js';
import { ProjectSecret } from '../kinds/projectsecret/types.js';
import { SharedSecret } from '../kinds/sharedsecret/types.js';

const FIELD_MANAGER = 'projectsecret-sync';
const ACCESS_SYNCED = 'AccessSynced';

export interface ProjectSecretSyncOptions {
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How often every ProjectSecret and SharedSecret is reconciled again (ms). */
  resyncIntervalMs?: number;
  /** How many objects are reconciled at once. */
  workers?: number;
  workQueueMetrics?: WorkQueueMetrics;
}

/** What the watch last showed of a ProjectSecret. */
interface TrackedProjectSecret {
  uid: string;
  generation: number;
  /** The SharedSecret it names, as "namespace/name". */
  source?: string;
  /** Its Synced condition is True. */
  synced: boolean;
  /** Who set its reference (status.referencedBy), as JSON: recorded by a write that may change nothing else. */
  writer: string;
}

/** What the watch last showed of a SharedSecret: what, when it changes, its ProjectSecrets must be looked at for. */
interface TrackedSharedSecret {
  uid: string;
  generation: number;
  deleting: boolean;
  accessSynced: string;
  /** It has the ProjectSecrets condition (some ProjectSecret named it once): its count is kept up to date. */
  counted: boolean;
}

const PROJECT_SECRET = 'ProjectSecret ';
const SHARED_SECRET = 'SharedSecret ';
const keyOf = (obj: KubeObject) => `${obj.metadata.namespace}/${obj.metadata.name}`;
const refKey = (ref: SharedSecretRef) => `${ref.namespace}/${ref.name}`;
const split = (key: string) => {
  const at = key.indexOf('/');
  return { namespace: key.slice(0, at), name: key.slice(at + 1) };
};

export class ProjectSecretSync {
  private readonly log: (msg: string, fields?: Record<string, unknown>) => void;
  private readonly resyncMs: number;
  private readonly workers: number;
  private readonly projectSecrets: Store<ProjectSecret>;
  private readonly sharedSecrets: Store<SharedSecret>;
  private readonly queue: WorkQueue;
  /** By "namespace/name". */
  private readonly tracked = new Map<string, TrackedProjectSecret>();
  private readonly sources = new Map<string, TrackedSharedSecret>();

  constructor(
    registry: Registry,
    private readonly authorizer: Authorizer,
    opts: ProjectSecretSyncOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.resyncMs = opts.resyncIntervalMs ?? 5 * 60_000;
    this.workers = opts.workers ?? 4;
    this.projectSecrets = registry.store(ProjectSecret);
    this.sharedSecrets = registry.store(SharedSecret);
    this.queue = new WorkQueue({
      baseDelayMs: 500,
      maxDelayMs: 60_000,
      name: 'projectsecret-sync',
      metrics: opts.workQueueMetrics,
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const log = (msg: string, fields?: Record<string, unknown>) => this.log(`projectsecret sync: ${msg}`, fields);
    const watches = [
      watchStore(this.projectSecrets, signal, {
        upsert: (obj) => this.upsertProjectSecret(obj),
        remove: (obj) => this.removeProjectSecret(keyOf(obj)),
        resynced: (seen) => {
          for (const [key, t] of this.tracked) if (!seen.has(t.uid)) this.removeProjectSecret(key);
        },
        log,
      }),
      watchStore(this.sharedSecrets, signal, {
        upsert: (obj) => this.upsertSharedSecret(obj),
        remove: (obj) => this.removeSharedSecret(keyOf(obj)),
        resynced: (seen) => {
          for (const [key, s] of this.sources) if (!seen.has(s.uid)) this.removeSharedSecret(key);
        },
        log,
      }),
    ];
    await runQueueController(
      {
        what: 'projectsecret sync',
        log: this.log,
        watches,
        queue: this.queue,
        workers: this.workers,
        resyncMs: this.resyncMs,
        resync: () => this.enqueueAll(),
        started: () => ({ projectSecrets: this.tracked.size }),
        handle: (item) =>
          item.startsWith(PROJECT_SECRET)
            ? this.syncProjectSecret(item.slice(PROJECT_SECRET.length))
            : this.countProjectSecrets(item.slice(SHARED_SECRET.length)),
        // Storage or the authorizers failing: tried again later, never in a tight loop.
        failed: (item, err, delayMs) =>
          this.log('projectsecret sync: will retry', {
            object: item,
            error: String((err as Error).message ?? err),
            delayMs,
          }),
      },
      signal,
    );
  }

  // ---- what the watches show ----

  /** A new ProjectSecret, or a change of its spec or of who set its reference, is reconciled; a change of what it names or holds is counted. */
  private upsertProjectSecret(obj: ProjectSecret): void {
    const key = keyOf(obj);
    const ref = sharedSecretRef(obj);
    const next: TrackedProjectSecret = {
      uid: obj.metadata.uid!,
      generation: obj.metadata.generation ?? 0,
      source: ref ? refKey(ref) : undefined,
      synced: conditionOf(obj, SYNCED)?.status === 'True',
      writer: JSON.stringify(referenceWriter(obj) ?? null),
    };
    const before = this.tracked.get(key);
    this.tracked.set(key, next);
    if (!before || before.uid !== next.uid || before.generation !== next.generation || before.writer !== next.writer)
      this.queue.add(PROJECT_SECRET + key);
    if (before?.source !== next.source || before?.synced !== next.synced) {
      if (before?.source) this.queue.add(SHARED_SECRET + before.source);
      if (next.source) this.queue.add(SHARED_SECRET + next.source);
    }
  }

  private removeProjectSecret(key: string): void {
    const gone = this.tracked.get(key);
    this.tracked.delete(key);
    if (gone?.source) this.queue.add(SHARED_SECRET + gone.source);
  }

  /**
   * A SharedSecret's spec changing (data, owner, access), or the access sync's host RBAC catching up with it, sends
   * the ProjectSecrets naming it to be reconciled; a status write of its own (this controller's count) does not.
   */
  private upsertSharedSecret(obj: SharedSecret): void {
    const key = keyOf(obj);
    const next: TrackedSharedSecret = {
      uid: obj.metadata.uid!,
      generation: obj.metadata.generation ?? 0,
      deleting: !!obj.metadata.deletionTimestamp,
      accessSynced: JSON.stringify(conditionOf(obj, ACCESS_SYNCED) ?? null),
      counted: !!conditionOf(obj, PROJECT_SECRETS),
    };
    const before = this.sources.get(key);
    this.sources.set(key, next);
    if (before && jsonEqual(before, next)) return;
    const named = this.enqueueDependents(key);
    // A SharedSecret nothing names and nothing counted has no count to write: not read again for it (most are such).
    if ((!before || before.uid !== next.uid) && (named || next.counted)) this.queue.add(SHARED_SECRET + key);
  }

  private removeSharedSecret(key: string): void {
    this.sources.delete(key);
    this.enqueueDependents(key);
  }

  /** Queues the ProjectSecrets naming `source`; whether there were any. */
  private enqueueDependents(source: string): boolean {
    let any = false;
    for (const [key, t] of this.tracked)
      if (t.source === source) {
        this.queue.add(PROJECT_SECRET + key);
        any = true;
      }
    return any;
  }

  private enqueueAll(): void {
    for (const key of this.tracked.keys()) this.queue.add(PROJECT_SECRET + key);
    const named = new Set([...this.tracked.values()].map((t) => t.source));
    for (const [key, source] of this.sources) if (source.counted || named.has(key)) this.queue.add(SHARED_SECRET + key);
  }

  // ---- one ProjectSecret ----

  private async syncProjectSecret(key: string): Promise<void> {
    const { namespace, name } = split(key);
    const obj = await this.projectSecrets.find(namespace, name);
    if (!obj || obj.metadata.deletionTimestamp) return;
    const ref = sharedSecretRef(obj);
    if (!ref) {
      // The reference was removed: what data there is now is the client's, and nothing is synced.
      if (conditionOf(obj, SYNCED))
        await writeStatus(this.projectSecrets, obj, (o) => dropCondition(o, SYNCED), FIELD_MANAGER);
      return;
    }
    const { data, outcome } = await this.desired(obj, ref);
    let current = obj;
    if (!jsonEqual(obj.spec?.data ?? {}, data)) {
      const written = await this.writeData(obj, ref, data);
      if (!written) return; // changed meanwhile: its own event brings it back
      current = written;
      this.log('projectsecret sync: wrote the data of a ProjectSecret', {
        namespace,
        name,
        source: refKey(ref),
        keys: Object.keys(data).length,
        reason: outcome.reason,
      });
    }
    await writeStatus(this.projectSecrets, current, (o) => setCondition(o, SYNCED, outcome, current), FIELD_MANAGER);
  }

  /** The data the ProjectSecret should hold now, and why. */
  private async desired(
    obj: ProjectSecret,
    ref: SharedSecretRef,
  ): Promise<{ data: Record<string, string>; outcome: Outcome }> {
    const named = `SharedSecret ${refKey(ref)}`;
    const source = await this.sharedSecrets.find(ref.namespace, ref.name);
    // One being deleted (waiting on its finalizers) is gone already as far as its copies are concerned.
    if (!source || source.metadata.deletionTimestamp)
      return {
        data: {},
        outcome: {
          status: 'False',
          reason: 'SourceNotFound',
          message: `${named} does not exist: this ProjectSecret holds no synced data until it does`,
        },
      };
    const writer = referenceWriter(obj);
    if (!writer)
      return {
        data: {},
        outcome: {
          status: 'False',
          reason: 'WriterUnknown',
          message: `nobody is recorded as having set spec.sharedSecretRef (status.referencedBy; it was stored by an earlier version), so no data of ${named} is kept: a write of this ProjectSecret by someone who may get ${named} records them`,
        },
      };
    if (!(await this.mayGet(asUserInfo(writer), ref)))
      return {
        data: {},
        outcome: {
          status: 'False',
          reason: 'WriterCannotGet',
          message: `the user who set spec.sharedSecretRef (${JSON.stringify(writer.username)}, status.referencedBy) may not get ${named}, so its data was removed from this ProjectSecret; it comes back once they may get it again, or when someone who may sets the reference again`,
        },
      };
    const owner = obj.spec?.owner;
    if (!(await this.mayGet(ownerIdentity(owner), ref)))
      return {
        data: {},
        outcome: {
          status: 'False',
          reason: 'OwnerCannotGet',
          message: `the owner (${describeOwner(owner)}) may not get ${named}, so its data was removed from this ProjectSecret; it comes back once the owner may get it again (an access entry on the SharedSecret, or RBAC)`,
        },
      };
    const have = (source.spec?.data ?? {}) as Record<string, string>;
    const wanted = ref.keys?.length ? ref.keys : Object.keys(have);
    const data = Object.fromEntries(wanted.filter((k) => k in have).map((k) => [k, have[k]]));
    const missing = wanted.filter((k) => !(k in have));
    if (missing.length)
      return {
        data,
        outcome: {
          status: 'False',
          reason: 'KeysNotFound',
          message: `${named} has no key ${missing.map((k) => JSON.stringify(k)).join(', ')} of those spec.sharedSecretRef.keys lists; the ${Object.keys(data).length} other key(s) are synced`,
        },
      };
    return {
      data,
      outcome: {
        status: 'True',
        reason: 'Synced',
        message: `${Object.keys(data).length} key(s) synced from ${named}`,
      },
    };
  }

  /** The same question as a GET of the SharedSecret by `user` (none: nobody, who may not). */
  private async mayGet(user: UserInfo | undefined, ref: SharedSecretRef): Promise<boolean> {
    if (!user) return false;
    const decision = await this.authorizer.authorize({ user, ...getSharedSecret(ref) });
    return decision.decision === 'allow';
  }

  /** Writes `data` as the server, unless the object is another one now or names another SharedSecret. */
  private writeData(
    read: ProjectSecret,
    ref: SharedSecretRef,
    data: Record<string, string>,
  ): Promise<ProjectSecret | undefined> {
    return writeIfSame(
      this.projectSecrets,
      read,
      (obj) => {
        if (!jsonEqual(sharedSecretRef(obj), ref)) throw new StaleObject();
        if (Object.keys(data).length) obj.spec = { ...obj.spec, data };
        else if (obj.spec) delete obj.spec.data;
      },
      FIELD_MANAGER,
    );
  }

  // ---- one SharedSecret ----

  private async countProjectSecrets(key: string): Promise<void> {
    const { namespace, name } = split(key);
    const source = await this.sharedSecrets.find(namespace, name);
    if (!source || source.metadata.deletionTimestamp) return;
    let naming = 0;
    let holding = 0;
    for (const t of this.tracked.values()) {
      if (t.source !== key) continue;
      naming++;
      if (t.synced) holding++;
    }
    // A SharedSecret nothing ever named gets no condition.
    if (!naming && !conditionOf(source, PROJECT_SECRETS)) return;
    const outcome: Outcome = naming
      ? {
          status: 'True',
          reason: 'Referenced',
          message: `${naming} ProjectSecret(s) name this SharedSecret in spec.sharedSecretRef, ${holding} of them hold its data now; deleting it removes the data from them`,
        }
      : { status: 'False', reason: 'NotReferenced', message: 'no ProjectSecret names this SharedSecret' };
    await writeStatus(
      this.sharedSecrets,
      source,
      (o) => setCondition(o, PROJECT_SECRETS, outcome, source),
      FIELD_MANAGER,
    );
  }
}

function describeOwner(owner: { user?: string; team?: string } | undefined): string {
  if (owner?.user) return `user ${JSON.stringify(owner.user)}`;
  if (owner?.team) return `team ${JSON.stringify(owner.team)}`;
  return 'none';
}
