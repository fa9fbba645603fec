/**
 * Reads of one resource: get, list and watch, with kube's resourceVersion semantics. The policy of where a read is
 * served lives here, in storage, as in kube's cacher delegator (storage/cacher/delegator.go): lists and watches come
 * from the watch cache; pages, exact revisions and continue tokens from etcd (the cache only has the present). The
 * store reads through CachedStorage (cachedstorage.ts), which asks this.
 */
import { decodeContinue, encodeContinue } from '../apimachinery/continue.js';
import * as errors from '../apimachinery/status.js';
import type { ObjectList } from '../apimachinery/encoded.js';
import type { GroupResource, KubeList, KubeObject } from '../apimachinery/types.js';
import {
  TooLargeResourceVersion,
  TooOldResourceVersion,
  type CacheEvent,
  type CachedObject,
  type EventType,
  type WatchCache,
} from './cacher.js';
import { eachInTurns, type BulkJob } from './bulkturns.js';
import { keyAfter } from './etcd.js';
import { interpretStorageError } from './errors.js';
import type { CachedAttributes, Storage } from './interface.js';
import { turnMemo } from './turnmemo.js';

/** How long a read waits for the cache to reach a resourceVersion it was asked for (kube: 3 s). */
const FRESHNESS_TIMEOUT_MS = 3000;
/** Objects per etcd range when a list reads etcd without a limit. */
const ETCD_PAGE = 1000;

/** Which objects a list or watch wants (label and field selectors). */
export interface Predicate {
  matches(obj: KubeObject): boolean;
  /**
   * Set when the predicate reads nothing but labels, selectable fields and what the access model reads: the same
   * answer as `matches`, from what the watch cache keeps beside each object's JSON, without decoding it.
   */
  matchesAttributes?(attributes: CachedAttributes): boolean;
  /** True when every object matches. */
  empty: boolean;
  /**
   * Names what the predicate matches when that depends on nothing but its selectors: watchers whose predicates
   * have equal keys filter each event once between them. Unset for predicates that depend on the caller.
   */
  key?: string;
}

export interface ListOptions {
  predicate?: Predicate;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  /**
   * The bulk job a large list's filtering takes its turns in (bulkturns.ts). A caller that then writes the answer in
   * turns passes the job it writes in, so that the list keeps its place from the first object filtered to the last
   * byte sent.
   */
  bulk?: BulkJob;
}

export interface WatchOptions {
  predicate?: Predicate;
  resourceVersion?: string;
  /**
   * true (watch-list): the current objects first, then a bookmark marking their end; false: only changes;
   * unset: the current objects first when no resourceVersion (or "0") is given, as a plain watch does.
   */
  sendInitialEvents?: boolean;
}

export interface WatchSink {
  event(type: EventType, object: KubeObject): void;
  /** Initial events are over (watch-list); `revision` is the snapshot they came from. */
  initialEventsEnd(revision: number): void;
  /** The cache can no longer serve this watch; the client should watch again. */
  end(): void;
}

export interface RunningWatch {
  stop(): void;
  /** The revision everything sent so far reflects (for bookmarks). */
  revision(): number;
}

/** What the reader knows of the resource it reads: how its lists are typed, and how errors name it. */
export interface ReadResource {
  apiVersion: string;
  listKind: string;
  groupResource: GroupResource;
}

const everything: Predicate = { matches: () => true, empty: true };

export class ResourceReader {
  constructor(
    private readonly def: ReadResource,
    private readonly storage: Storage,
    private readonly cache: WatchCache<KubeObject>,
  ) {}

  /**
   * One object: `resourceVersion` unset is a consistent read, "0" the cache as it is, N the cache once it has
   * reached N. A consistent read is etcd's, as kube's GET without resourceVersion, unless the cache already holds
   * etcd's current revision: never waiting for it to catch up, as a list does, since under a flood of writes it
   * lags, and one tenant's GET would wait for every other tenant's writes to reach the cache.
   */
  async get(key: string, resourceVersion?: string): Promise<KubeObject | undefined> {
    if (!resourceVersion)
      return (await this.cache.currentNow()) ? this.cache.get(key)?.object : this.storage.get<KubeObject>(key);
    const rv = parseResourceVersion(resourceVersion);
    if (rv > 0) await this.fresh(rv);
    return this.cache.get(key)?.object;
  }

  /** Items from the cache stay in their JSON form; the predicate decodes one object at a time. */
  async list(prefix: string, opts: ListOptions): Promise<ObjectList> {
    const rv = opts.resourceVersion;
    const exact =
      opts.resourceVersionMatch === 'Exact' || (!!rv && rv !== '0' && !!opts.limit && !opts.resourceVersionMatch);
    if (opts.continue || exact || (!rv && opts.limit)) return this.listFromEtcd(prefix, opts, exact);

    let revision: number;
    if (!rv) {
      try {
        revision = await this.cache.ensureConsistent();
      } catch (err) {
        // The cache could not be shown to be current: read etcd, which always is.
        if (err instanceof TooLargeResourceVersion) return this.listFromEtcd(prefix, opts, false);
        throw err;
      }
    } else {
      revision = parseResourceVersion(rv);
      if (revision > 0) await this.fresh(revision);
    }
    const snap = this.cache.snapshot(prefix);
    const match = opts.predicate ?? everything;
    const items = match.empty
      ? snap.items.slice()
      : await filterInTurns(snap.items, (o) => selects(match, o, () => o.decode()), opts.bulk);
    return { ...this.listOf([], String(Math.max(revision, snap.revision))), items };
  }

  /** Pages straight from etcd: the first at the current (or exact) revision, the rest at the token's. */
  private async listFromEtcd(prefix: string, opts: ListOptions, exact: boolean): Promise<KubeList> {
    let start = prefix;
    let revision: string | undefined;
    if (opts.continue) {
      const token = decodeContinue(opts.continue);
      start = prefix + token.start;
      if (token.revision > 0) revision = String(token.revision);
    } else if (exact) {
      revision = String(parseResourceVersion(opts.resourceVersion ?? ''));
    }
    const limit = opts.limit ?? 0;
    const match = opts.predicate ?? everything;
    const items: KubeObject[] = [];
    let lastKey: string | undefined;
    let more: boolean;
    let remaining: number | undefined;
    try {
      for (;;) {
        const want = limit ? Math.max(limit - items.length, match.empty ? 0 : 100) : ETCD_PAGE;
        const page = await this.storage.listPage<KubeObject>(prefix, { start, limit: want, revision });
        revision ??= page.resourceVersion;
        let used = 0;
        for (const [i, obj] of page.items.entries()) {
          if (limit && items.length === limit) break;
          used++;
          lastKey = page.keys[i];
          if (match.matches(obj)) items.push(obj);
        }
        more = used < page.items.length || page.more;
        if (match.empty) remaining = page.count - used;
        if (!more || (limit && items.length === limit)) break;
        start = keyAfter(lastKey!);
      }
    } catch (err) {
      throw interpretStorageError(err, {
        groupResource: this.def.groupResource,
        name: '',
        operation: 'list',
        continueFrom: opts.continue ? start.slice(prefix.length) : undefined,
      });
    }
    const list = this.listOf(items, revision!);
    if (limit && more && lastKey) {
      list.metadata.continue = encodeContinue(Number(revision), keyAfter(lastKey).slice(prefix.length));
      if (remaining !== undefined && remaining > 0) list.metadata.remainingItemCount = remaining;
    }
    return list;
  }

  /**
   * Starts a watch under `prefix`. Everything that can fail with an HTTP error happens before the first event;
   * a revision older than the cache's history is thrown as 410 Expired, which the caller sends as an ERROR event.
   */
  async watch(prefix: string, opts: WatchOptions, sink: WatchSink): Promise<RunningWatch> {
    const rv = opts.resourceVersion;
    let from: number;
    if (!rv) from = await this.consistentRevision();
    else {
      from = parseResourceVersion(rv);
      if (from > this.cache.currentRevision) await this.beyondCache(from);
    }
    const match = opts.predicate ?? everything;
    const initial = opts.sendInitialEvents ?? (!rv || rv === '0');

    // From here to the registration, synchronous: the snapshot and the registration see the same cache state.
    const snap = initial ? this.cache.snapshot(prefix) : undefined;
    const start = snap ? Math.max(from, snap.revision) : from;
    const send = (events: CacheEvent<KubeObject>[]) => {
      for (const e of events) {
        if (match.empty) {
          sink.event(e.type, e.object);
          continue;
        }
        const out = match.key === undefined ? filterEvent(e, match) : filterShared(e, match, match.key);
        if (out) sink.event(out.type, out.object);
      }
    };
    // Changes that arrive while the current objects are still being sent wait for them, in order.
    let held: CacheEvent<KubeObject>[] | undefined = snap ? [] : undefined;
    let ended = false;
    let stop: () => void;
    try {
      stop = this.cache.watch(prefix, start, {
        deliver: (events) => (held ? held.push(...events) : send(events)),
        terminate: () => {
          ended = true;
          sink.end();
        },
      });
    } catch (err) {
      if (err instanceof TooOldResourceVersion) throw expired(err.message);
      throw err;
    }
    if (snap) {
      // A slice per bulk turn, other requests served in between: 100,000 objects decode in about a second.
      await eachInTurns(
        snap.items,
        (cached) => {
          let obj: KubeObject | undefined;
          if (match.empty || selects(match, cached, () => (obj = cached.decode())))
            sink.event('ADDED', obj ?? cached.decode());
        },
        { stop: () => ended },
      );
      if (!ended && opts.sendInitialEvents) sink.initialEventsEnd(start);
      const pending = held!;
      held = undefined;
      if (!ended) send(pending);
    }
    return { stop, revision: () => this.cache.currentRevision };
  }

  private async consistentRevision(): Promise<number> {
    try {
      return await this.cache.ensureConsistent();
    } catch (err) {
      if (err instanceof TooLargeResourceVersion) throw tooLarge(err);
      throw err;
    }
  }

  /**
   * A watch from a resourceVersion the cache has not reached. When etcd has not reached it either, no write of this
   * store ever had it: it comes from the history of another store, as after a restore from a snapshot, whose
   * revisions continue from the snapshot's while clients hold later ones. Such a watch would silently skip the
   * changes between the two; it is 410 Gone, as kube's watchers get after a restore (etcdutl snapshot restore
   * --bump-revision --mark-compacted), and the client lists again. Otherwise the cache is behind etcd: wait for it.
   */
  private async beyondCache(revision: number): Promise<void> {
    const current = Number(await this.storage.currentRevision());
    if (revision > current)
      throw expired(
        `too large resource version: ${revision}, current: ${current}: the storage never reached it (it was ` +
          'restored from a snapshot?): list again',
      );
    await this.fresh(revision);
  }

  private async fresh(revision: number): Promise<void> {
    try {
      await this.cache.waitUntilFresh(revision, FRESHNESS_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof TooLargeResourceVersion) throw tooLarge(err);
      throw err;
    }
  }

  private listOf(items: KubeObject[], resourceVersion: string): KubeList {
    return { apiVersion: this.def.apiVersion, kind: this.def.listKind, metadata: { resourceVersion }, items };
  }
}

type Filtered = { type: EventType; object: KubeObject } | undefined;

/**
 * The items `keep` keeps. A large collection (one decode and check per object: a tenth of a second at 10,000) is
 * gone through in slices, one per bulk turn (bulkturns.ts), so that other requests are served in between.
 */
async function filterInTurns<T>(items: readonly T[], keep: (item: T) => boolean, job?: BulkJob): Promise<T[]> {
  const kept: T[] = [];
  await eachInTurns(items, (item) => keep(item) && kept.push(item), { job });
  return kept;
}

/** Whether the predicate selects a cached object: from its attributes when it can, else from `decode()`. */
function selects(match: Predicate, cached: CachedObject<KubeObject>, decode: () => KubeObject): boolean {
  return match.matchesAttributes ? match.matchesAttributes(cached) : match.matches(decode());
}

/**
 * filterEvent's answers during this turn of the event loop, by event and predicate key: the cache hands every
 * watcher of a prefix the same events in one turn, so each distinct selector filters each event once, and an object
 * leaving the selection is one DELETED object for all of them (encoded once).
 */
const filteredThisTurn = turnMemo<CacheEvent<KubeObject>, Map<string, Filtered>>();

function filterShared(e: CacheEvent<KubeObject>, match: Predicate, key: string): Filtered {
  const memo = filteredThisTurn();
  let byKey = memo.get(e);
  if (!byKey) memo.set(e, (byKey = new Map()));
  if (byKey.has(key)) return byKey.get(key);
  const out = filterEvent(e, match);
  byKey.set(key, out);
  return out;
}

/**
 * What a watcher with a selector sees: objects entering the selection are ADDED, leaving it DELETED (with their
 * last matching state at the event's revision). Objects are the cache's own (frozen), not copies.
 */
function filterEvent(e: CacheEvent<KubeObject>, match: Predicate): Filtered {
  const now = selects(match, e.encoded, () => e.object);
  if (e.type === 'DELETED') return now ? { type: 'DELETED', object: e.object } : undefined;
  const before = e.encodedPrevious ? selects(match, e.encodedPrevious, () => e.previous!) : false;
  if (now && before) return { type: 'MODIFIED', object: e.object };
  if (now) return { type: 'ADDED', object: e.object };
  if (before) {
    const last = { ...e.previous!, metadata: { ...e.previous!.metadata, resourceVersion: String(e.revision) } };
    return { type: 'DELETED', object: last };
  }
  return undefined;
}

export function parseResourceVersion(rv: string): number {
  if (!/^[0-9]+$/.test(rv)) throw errors.badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  return Number(rv);
}

function expired(message: string): errors.StatusError {
  return errors.expired(message);
}

function tooLarge(err: TooLargeResourceVersion): errors.StatusError {
  return errors.resourceVersionTooLarge(err.requested, err.current);
}
