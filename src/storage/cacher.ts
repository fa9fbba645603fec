/**
 * The watch cache (after kube's storage/cacher): one etcd watch on a prefix keeps an in-memory copy of every
 * object under it and a bounded history of recent events. Lists and watches are served from it, so clients
 * never each hold an etcd watch, and a consistent read costs one small etcd request instead of a full range.
 * Objects are held as their JSON text (see apimachinery/encoded.ts): about a third of the heap a parsed object
 * takes, and what lists and watches send anyway.
 */
import { Backoff } from '../apimachinery/backoff.js';
import { EncodedObject } from '../apimachinery/encoded.js';
import { withRevision } from './codec.js';
import { keyAfter } from './etcd.js';
import type { AttributesOf, CachedAttributes, Storage, StoredObject, WatchEvent, WatchHandle } from './interface.js';

/**
 * One object in the cache: its JSON, the revision that wrote it (for proving the cache current), and what selectors
 * read of it (so that a list or watch with a selector decodes only the objects it selects).
 */
export class CachedObject<T extends StoredObject> extends EncodedObject<T> implements CachedAttributes {
  readonly labels?: Readonly<Record<string, string>>;
  readonly name: string;
  readonly namespace: string;
  readonly grants: string;

  constructor(
    json: string,
    readonly resourceVersion: string,
    attributes: CachedAttributes,
  ) {
    super(json);
    this.labels = attributes.labels;
    this.name = attributes.name;
    this.namespace = attributes.namespace;
    this.grants = attributes.grants;
  }

  static of<T extends StoredObject>(obj: T, attributesOf: AttributesOf): CachedObject<T> {
    return new CachedObject<T>(JSON.stringify(obj), obj.metadata.resourceVersion ?? '', attributesOf(obj));
  }
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change, holding its states encoded; `object` and `previous` decode them on use. */
export class CacheEvent<T extends StoredObject> {
  constructor(
    readonly type: EventType,
    readonly key: string,
    readonly revision: number,
    /** The new state, or for DELETED the last state with the deletion's revision. */
    readonly encoded: CachedObject<T>,
    /** The state before this event (absent for ADDED). */
    readonly encodedPrevious?: CachedObject<T>,
  ) {}

  get object(): T {
    return this.encoded.object;
  }

  get previous(): T | undefined {
    return this.encodedPrevious?.object;
  }
}

/** The revision asked for is older than the oldest event the cache remembers. */
export class TooOldResourceVersion extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`too old resource version: ${requested} (${oldest})`);
  }
}

/** The cache did not reach the revision asked for in time. */
export class TooLargeResourceVersion extends Error {
  constructor(
    readonly requested: number,
    readonly current: number,
  ) {
    super(`Too large resource version: ${requested}, current: ${current}`);
  }
}

export interface CacheWatcher<T extends StoredObject> {
  /** Called synchronously with each batch of events under the watcher's prefix, in revision order. */
  deliver(events: CacheEvent<T>[]): void;
  /** The cache can no longer serve this watcher (it started over after a compaction, or is stopping). */
  terminate(): void;
}

export interface WatchCacheOptions {
  /** Events remembered for watches that resume from a resourceVersion. */
  historySize?: number;
  /** At most this many bytes of JSON in those events (the objects they hold that the cache no longer does). */
  historyBytes?: number;
  /**
   * A prefix of the cache's own whose revisions the cache hears (the server's whole etcd prefix): a consistent read
   * then finds the cache at etcd's revision after the server's other writes (leader lease renewals, signing keys)
   * instead of comparing the revision of every key it holds with etcd's.
   */
  revisionsUnder?: string;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** Objects per etcd range while (re)filling the cache: only one page is ever decoded at a time. */
const FILL_PAGE = 1000;

export class WatchCache<T extends StoredObject> {
  private readonly objects = new Map<string, CachedObject<T>>();
  /** The keys of `objects` in order, kept between lists until a key comes or goes. */
  private sortedKeys?: string[];
  /** The last snapshot, while the cache has not changed (see snapshot). */
  private lastSnapshot?: { prefix: string; revision: number; keys: string[]; items: readonly CachedObject<T>[] };
  /**
   * Recent events, oldest first, from `historyStart` on; the slots before it are forgotten and emptied, and cut off
   * together once they are half the array (shifting the whole array for every event cost up to a millisecond per
   * write on a large heap while the GC marked it).
   */
  private history: (CacheEvent<T> | undefined)[] = [];
  private historyStart = 0;
  /** The JSON characters of the states the history holds. */
  private historyBytesHeld = 0;
  /** Everything up to this revision is reflected in `objects` (events, progress, or a proven comparison). */
  private revision = 0;
  /** The revision of the last event applied; events at or below it are repeats after a reconnect. */
  private lastEvent = 0;
  /** Watches may resume from any revision at or after this one. */
  private oldest = 0;
  /** Each watcher's key prefix and the revision it started after. */
  private readonly watchers = new Map<CacheWatcher<T>, { prefix: string; after: number }>();
  private waiters: { revision: number; wake: () => void }[] = [];
  private handle?: WatchHandle;
  private stopped = false;
  /** A read of etcd's revision not yet sent, which callers arriving now may share. */
  private nextRevisionRead?: Promise<string>;
  /** The background catch-up currentNow started, while it runs. */
  private catchingUp?: Promise<number>;
  /** Listing again after the etcd watch was lost: the cache's contents and history are not to be trusted. */
  private restarting = false;
  private readonly historySize: number;
  private readonly historyBytes: number;
  private readonly revisionsUnder?: string;
  private readonly log: NonNullable<WatchCacheOptions['log']>;

  constructor(
    private readonly storage: Storage,
    readonly prefix: string,
    /** What it keeps beside each object for selectors and the access model. */
    private readonly attributesOf: AttributesOf,
    opts: WatchCacheOptions = {},
  ) {
    this.historySize = opts.historySize ?? 10_000;
    this.historyBytes = opts.historyBytes ?? 16 * 1024 * 1024;
    this.revisionsUnder = opts.revisionsUnder;
    this.log = opts.log ?? (() => {});
  }

  /** Lists everything under the prefix and starts following changes from there. */
  async start(): Promise<void> {
    const { objects, resourceVersion } = await this.fill();
    this.objects.clear();
    for (const [key, obj] of objects) this.objects.set(key, obj);
    this.sortedKeys = undefined;
    this.revision = this.oldest = this.lastEvent = Number(resourceVersion);
    this.history = [];
    this.historyStart = 0;
    this.historyBytesHeld = 0;
    const handle = (this.handle = await this.storage.watch<T>(
      this.prefix,
      resourceVersion,
      {
        events: (events) => this.apply(events),
        progress: (revision) => this.advance(Number(revision)),
        lost: () => void this.restart(),
      },
      { revisionsUnder: this.revisionsUnder },
    ));
    // Stopped while listing again: the watch just made is nobody's to close.
    if (this.stopped) await handle.close();
    this.wakeWaiters();
  }

  /** Everything under the prefix at one revision, read a page at a time so that at most one page is ever decoded. */
  private async fill(): Promise<{ objects: Map<string, CachedObject<T>>; resourceVersion: string }> {
    const objects = new Map<string, CachedObject<T>>();
    let start: string | undefined;
    let revision: string | undefined;
    for (;;) {
      const page = await this.storage.listPageText(
        this.prefix,
        { start, limit: FILL_PAGE, revision },
        this.attributesOf,
      );
      revision ??= page.resourceVersion;
      page.items.forEach((text, i) =>
        objects.set(page.keys[i], new CachedObject<T>(text.json, text.resourceVersion, text.attributes)),
      );
      if (!page.more || !page.keys.length) return { objects, resourceVersion: revision };
      start = keyAfter(page.keys[page.keys.length - 1]);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.handle?.close();
    for (const watcher of [...this.watchers.keys()]) this.removeWatcher(watcher, true);
  }

  get currentRevision(): number {
    return this.revision;
  }

  get oldestRevision(): number {
    return this.oldest;
  }

  get(key: string): CachedObject<T> | undefined {
    return this.objects.get(key);
  }

  /**
   * The objects under `prefix`, in key order, and the revision they reflect. The array is shared, frozen, by every
   * caller until the cache changes: lists let in together (API Priority and Fairness dispatching a whole queue, all
   * of them waking on one read of etcd's revision) took one copy of 10,000 objects each, in one go.
   */
  snapshot(prefix: string): { items: readonly CachedObject<T>[]; revision: number } {
    this.sortedKeys ??= [...this.objects.keys()].sort();
    const last = this.lastSnapshot;
    if (last?.prefix === prefix && last.revision === this.revision && last.keys === this.sortedKeys)
      return { items: last.items, revision: this.revision };
    const items = Object.freeze(this.sortedKeys.filter((k) => k.startsWith(prefix)).map((k) => this.objects.get(k)!));
    this.lastSnapshot = { prefix, revision: this.revision, keys: this.sortedKeys, items };
    return { items, revision: this.revision };
  }

  /** Resolves once the cache reflects `revision`; TooLargeResourceVersion after `timeoutMs`. */
  waitUntilFresh(revision: number, timeoutMs: number): Promise<void> {
    if (this.revision >= revision) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        revision,
        wake: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new TooLargeResourceVersion(revision, this.revision));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Makes sure the cache reflects every write etcd acknowledged before this call (a consistent read), and
   * returns the revision the cache may report. Etcd's revision also moves for keys outside the prefix, which
   * this cache never hears about; when waiting does not get there, comparing the keys' revisions at etcd's
   * revision with the cache proves the cache holds that state. Throws TooLargeResourceVersion if it cannot.
   */
  async ensureConsistent(timeoutMs = 3000): Promise<number> {
    const target = Number(await this.etcdRevision());
    const deadline = Date.now() + timeoutMs;
    // How long to wait for events before comparing revisions again: short at first, as events usually come at once.
    const waits = new Backoff({ initialMs: 20, maxMs: 500 });
    for (;;) {
      if (this.revision >= target) return this.revision;
      await this.waitUntilFresh(target, waits.next()).catch(() => undefined);
      if (this.revision >= target) return this.revision;
      if (this.matches(await this.storage.keyRevisions(this.prefix, String(target)))) {
        this.advance(target);
        return target;
      }
      if (Date.now() > deadline) throw new TooLargeResourceVersion(target, this.revision);
    }
  }

  /**
   * Whether the cache already reflects every write etcd acknowledged before this call, found without waiting (one
   * small etcd request, shared as ensureConsistent's). When it does not, one catch-up (ensureConsistent) runs in the
   * background, so that the next reads find it current once the writes stop.
   */
  async currentNow(): Promise<boolean> {
    const target = Number(await this.etcdRevision());
    if (this.revision >= target) return true;
    this.catchingUp ??= this.ensureConsistent()
      .catch(() => 0)
      .finally(() => (this.catchingUp = undefined));
    return false;
  }

  /**
   * etcd's current revision, read after this call began. Calls that arrive before a read is sent share it, so
   * many concurrent consistent reads cost one small etcd request.
   */
  private etcdRevision(): Promise<string> {
    if (!this.nextRevisionRead) {
      this.nextRevisionRead = new Promise<string>((resolve, reject) => {
        setImmediate(() => {
          this.nextRevisionRead = undefined; // later callers need a read sent after they arrived
          this.storage.currentRevision().then(resolve, reject);
        });
      });
    }
    return this.nextRevisionRead;
  }

  /**
   * Follows events under `prefix` after `fromRevision`: first those still in history (replayed synchronously),
   * then live ones. TooOldResourceVersion if history no longer reaches back that far.
   */
  watch(prefix: string, fromRevision: number, watcher: CacheWatcher<T>): () => void {
    // While re-listing, no revision can be followed yet: the client lists again, as after any 410.
    if (fromRevision < this.oldest || this.restarting) throw new TooOldResourceVersion(fromRevision, this.oldest);
    const replay = this.held().filter((e) => e.revision > fromRevision && e.key.startsWith(prefix));
    if (replay.length) watcher.deliver(replay);
    this.watchers.set(watcher, { prefix, after: fromRevision });
    return () => this.removeWatcher(watcher, false);
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /**
   * What the cache holds, by the first key segment after its prefix (the resource): objects, the JSON characters
   * of their current states, and those of the states in the history (an object's newest is shared with its current
   * state: only the older ones cost more).
   */
  sizes(): Map<string, { objects: number; bytes: number; historyBytes: number }> {
    const sizes = new Map<string, { objects: number; bytes: number; historyBytes: number }>();
    const of = (key: string) => {
      const resource = key.slice(this.prefix.length).split('/', 1)[0];
      let size = sizes.get(resource);
      if (!size) sizes.set(resource, (size = { objects: 0, bytes: 0, historyBytes: 0 }));
      return size;
    };
    for (const [key, obj] of this.objects) {
      const size = of(key);
      size.objects++;
      size.bytes += obj.json.length;
    }
    for (const e of this.held()) of(e.key).historyBytes += e.encoded.json.length;
    return sizes;
  }

  private removeWatcher(watcher: CacheWatcher<T>, terminate: boolean): void {
    if (!this.watchers.delete(watcher)) return;
    if (terminate) watcher.terminate();
  }

  private apply(raw: WatchEvent<T>[]): void {
    const events: CacheEvent<T>[] = [];
    for (const e of raw) {
      const revision = Number(e.revision);
      if (revision <= this.lastEvent) continue; // a repeat after reconnecting
      this.lastEvent = revision;
      const previous = this.objects.get(e.key);
      if (e.type === 'put') {
        if (!previous) this.sortedKeys = undefined;
        const object = CachedObject.of(e.object!, this.attributesOf);
        this.objects.set(e.key, object);
        events.push(new CacheEvent(previous ? 'MODIFIED' : 'ADDED', e.key, revision, object, previous));
      } else {
        if (previous) this.sortedKeys = undefined;
        this.objects.delete(e.key);
        const last = e.object ?? (previous && withRevision(previous.decode(), e.revision));
        if (last)
          events.push(new CacheEvent('DELETED', e.key, revision, CachedObject.of(last, this.attributesOf), previous));
      }
    }
    if (!events.length) return;
    this.remember(events);
    this.advance(events[events.length - 1].revision);
    // Watchers of one prefix share one filtered list (the same array and events), so what they derive from it can
    // be shared too. A watcher may end during its delivery (a slow client); iterating a Map allows that.
    const byPrefix = new Map<string, CacheEvent<T>[]>();
    for (const [watcher, { prefix, after }] of this.watchers) {
      let mine = byPrefix.get(prefix);
      if (!mine) byPrefix.set(prefix, (mine = events.filter((e) => e.key.startsWith(prefix))));
      // A watcher that started after a revision proven by comparison skips older events still in flight.
      if (mine.length && mine[0].revision <= after) mine = mine.filter((e) => e.revision > after);
      if (mine.length) watcher.deliver(mine);
    }
  }

  /**
   * Adds events to the history and forgets the oldest beyond its bounds. An event's bytes count the state it
   * brought; the state before it is the previous event's, or was in the cache when it came.
   */
  private remember(events: CacheEvent<T>[]): void {
    for (const e of events) {
      this.history.push(e);
      this.historyBytesHeld += e.encoded.json.length;
    }
    const history = this.history;
    let start = this.historyStart;
    while (
      start < history.length - 1 &&
      (history.length - start > this.historySize || this.historyBytesHeld > this.historyBytes)
    ) {
      this.historyBytesHeld -= history[start]!.encoded.json.length;
      this.oldest = history[start]!.revision;
      history[start++] = undefined;
    }
    if (start * 2 > history.length) {
      this.history = history.slice(start);
      start = 0;
    }
    this.historyStart = start;
  }

  /** The events the history holds, oldest first. */
  private held(): CacheEvent<T>[] {
    return this.history.slice(this.historyStart) as CacheEvent<T>[];
  }

  private advance(revision: number): void {
    if (revision <= this.revision) return;
    this.revision = revision;
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    const ready = this.waiters.filter((w) => w.revision <= this.revision);
    if (!ready.length) return;
    this.waiters = this.waiters.filter((w) => w.revision > this.revision);
    for (const w of ready) w.wake();
  }

  /** Whether etcd's keys and revisions (at some revision) are exactly what the cache holds. */
  private matches(keys: Map<string, string>): boolean {
    if (keys.size !== this.objects.size) return false;
    for (const [key, revision] of keys) {
      if (this.objects.get(key)?.resourceVersion !== revision) return false;
    }
    return true;
  }

  /**
   * The etcd watch could not go on (its revision was compacted while it was away, or etcd canceled it): list
   * again and start over.
   * Watchers are ended; clients re-watch, get 410 for their old revision, and list again, as with kube.
   */
  private async restart(): Promise<void> {
    if (this.stopped || this.restarting) return;
    this.restarting = true;
    this.log(
      'watch cache: the etcd watch was lost (history compacted under it, or a value could not be read); listing again',
      { prefix: this.prefix },
    );
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    for (const watcher of [...this.watchers.keys()]) this.removeWatcher(watcher, true);
    const backoff = new Backoff({ initialMs: 100, maxMs: 5000 });
    while (!this.stopped) {
      try {
        await this.start();
        this.restarting = false;
        return;
      } catch (err) {
        this.log('watch cache: listing again failed; retrying', { prefix: this.prefix, error: String(err) });
        await new Promise((r) => setTimeout(r, backoff.next()));
      }
    }
  }
}
