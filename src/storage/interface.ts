/**
 * The narrow storage interface every kind is kept through (after kube's pkg/storage/interfaces.go).
 * Objects go in and come out as plain JSON objects; `metadata.resourceVersion` is the etcd mod revision,
 * set on the way out and never stored.
 */
import type { SelectionAttributes } from '../apimachinery/selection.js';

export interface StoredObject {
  metadata: { resourceVersion?: string; selfLink?: string };
  [field: string]: unknown;
}

export type StorageErrorCode =
  | 'KeyNotFound'
  | 'KeyExists'
  | 'Unreachable'
  /** etcd refused the write as larger than its --max-request-bytes (1.5 MiB by default). */
  | 'TooLarge'
  /** The revision asked for is older than etcd's compacted revision. */
  | 'Compacted'
  /** The revision asked for is newer than etcd's current revision. */
  | 'FutureRevision'
  /** The stored value cannot be read or written by this server (encryption at rest: no key for it, or tampered). */
  | 'Internal'
  /** A create's claim (CreateOptions.claims) is held by another object that exists: ClaimTakenError names it. */
  | 'ClaimTaken'
  /** A write's Preconditions do not hold for the stored object (kube's ErrCodeInvalidObj): PreconditionFailedError. */
  | 'InvalidObj';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    readonly key: string,
    message: string,
    /** FutureRevision: the revision asked for, and etcd's current one. */
    readonly revisions?: { requested: number; current: number },
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

/**
 * The value of a claim: the object that holds it, by its key and uid. A claim is a key of its own that at most one
 * object holds at a time (e.g. the one VirtualClusterInstance that manages a virtual cluster): written in the
 * transaction that creates the object, deleted in the one that deletes it. A claim whose holder no longer exists
 * (no object at that key, or one of another uid: left by a crash, or by a server that did not keep claims) is taken
 * over by the next create that asks for it. Claims are bookkeeping, stored plain.
 */
export interface ClaimHolder {
  key: string;
  uid: string;
}

/** The claim `key` is held by `holder`, an object that exists. */
export class ClaimTakenError extends StorageError {
  constructor(
    key: string,
    readonly holder: ClaimHolder,
  ) {
    super('ClaimTaken', key, `claim ${key} is held by ${holder.key}`);
    this.name = 'ClaimTakenError';
  }
}

/**
 * What a write asks of the stored object before it changes it (kube's storage.Preconditions): checked by the storage
 * on each object it reads, the watch cache's copy first and, when that fails them, etcd's. An empty value asks nothing.
 */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** The stored object does not have the `precondition` asked for (`expected`): it has `actual`. */
export class PreconditionFailedError extends StorageError {
  constructor(
    key: string,
    readonly precondition: 'uid' | 'resourceVersion',
    readonly expected: string,
    readonly actual: string | undefined,
  ) {
    const name = precondition === 'uid' ? 'UID' : 'ResourceVersion';
    // kube's words (Preconditions.Check), which clients of an update see.
    super(
      'InvalidObj',
      key,
      `Precondition failed: ${name} in precondition: ${expected}, ${name} in object meta: ${actual}`,
    );
    this.name = 'PreconditionFailedError';
  }
}

export interface ListResult<T> {
  items: T[];
  /** The etcd key of each item, in the same order. */
  keys: string[];
  /** The revision the range was read at. */
  resourceVersion: string;
}

/** An object's JSON as served, and the revision that wrote it. */
export interface StoredText {
  json: string;
  resourceVersion: string;
  /** Read while the text was checked to be JSON: selectors and authorization's narrowing need no second decoding. */
  attributes: CachedAttributes;
}

/**
 * What the watch cache keeps beside each object's JSON: what selectors read, and what the access model reads
 * (access/model.ts `grantsText`), which narrows a list to what its caller may see.
 */
export interface CachedAttributes extends SelectionAttributes {
  readonly grants: string;
}

/**
 * What the watch cache keeps beside each object, read from it (kube's GetAttrsFunc): given by the registry, which
 * knows what selectors and the access model read of objects; storage reads nothing of them itself.
 */
export type AttributesOf = (obj: unknown) => CachedAttributes;

export interface PageOptions {
  /** The first key to read (inclusive); defaults to the prefix itself. */
  start?: string;
  /** At most this many objects; 0 or absent means all. */
  limit?: number;
  /** Read at this revision; absent means the current one. */
  revision?: string;
}

export interface Page<T> extends ListResult<T> {
  /** Whether keys remain after this page under the prefix. */
  more: boolean;
  /** How many keys there are from `start` to the end of the prefix, this page included. */
  count: number;
}

/** One change seen by a watch, in revision order. */
export interface WatchEvent<T> {
  type: 'put' | 'delete';
  key: string;
  revision: string;
  /**
   * The new state (put), or the last state before deletion with resourceVersion = the deletion's revision
   * (delete; absent when etcd could not give the previous value).
   */
  object?: T;
  /** The state before this change, if there was one. */
  previous?: T;
}

export interface WatchHandlers<T> {
  /** Events of one etcd revision or more, in order. */
  events(events: WatchEvent<T>[]): void;
  /** Everything up to `revision` has been delivered (etcd progress notifications). */
  progress(revision: string): void;
  /** The watch cannot go on from where it was (its revision was compacted, etcd canceled it, or a value could not be read): start over. */
  lost(): void;
}

export interface WatchHandle {
  close(): Promise<void>;
}

export interface UpdateOptions<T> {
  /** Checked on each object read, before tryUpdate: PreconditionFailedError when they do not hold. */
  preconditions?: Preconditions;
  /**
   * Asked about the result of each tryUpdate: when true the key is deleted (compare-and-swap on the same
   * revision) instead of written, e.g. when an update removes the last finalizer of an object being deleted.
   */
  deleteInstead?: (updated: T) => boolean;
  /**
   * Run tryUpdate on the stored object and answer with its result, writing and deleting nothing (`dryRun=All`, as
   * kube's dry-run storage does it): `deleted` says whether the key would have been deleted.
   */
  dryRun?: boolean;
  /**
   * The object as the watch cache holds it (kube's cachedExistingObject; CachedStorage gives it): tried first instead
   * of reading etcd. A cache that is behind costs a retry, never a lost update: the compare-and-swap fails and answers
   * with the current object, and preconditions that fail, a tryUpdate that throws, or one that finds nothing to write,
   * run again on a fresh read before that counts.
   */
  cached?: T;
  /** The claims of the stored object (see ClaimHolder): those it holds are deleted with it when deleteInstead says so. */
  claims?: (current: T) => string[];
}

export interface CreateOptions {
  /** Answer as if the object had been stored, without a resourceVersion, writing nothing; KeyExists still holds. */
  dryRun?: boolean;
  /**
   * Keys the object claims (see ClaimHolder), written with it in one transaction naming its key and
   * `metadata.uid`: ClaimTakenError when an object that exists holds one (a dry run checks the same).
   */
  claims?: string[];
}

export interface DeleteOptions<T> {
  /** Checked on each object read: PreconditionFailedError when they do not hold. */
  preconditions?: Preconditions;
  /** The claims of the stored object (see ClaimHolder): those it holds are deleted with it. */
  claims?: (current: T) => string[];
}

export interface UpdateResult<T> {
  object: T;
  /** False when nothing was written (the update changed nothing, or a dry run), so the resourceVersion stayed. */
  written: boolean;
  deleted: boolean;
}

/** A value kept whole under a key of its own, not an object (the token signing keys' document). */
export interface StoredValue {
  /** The plain value. */
  value: string;
  /** The key's mod revision. */
  revision: string;
  /** An encryption key or provider that no longer writes wrote it: to be written again. */
  stale: boolean;
}

export interface Storage {
  /** Stores a new object; StorageError KeyExists when the key is taken, ClaimTakenError when a claim is. */
  create<T extends StoredObject>(key: string, obj: T, opts?: CreateOptions): Promise<T>;

  get<T extends StoredObject>(key: string): Promise<T | undefined>;

  /** Every object under `prefix` (which must end with '/'), read at one revision. */
  list<T extends StoredObject>(prefix: string): Promise<ListResult<T>>;

  /**
   * Reads the object, passes a fresh copy to `tryUpdate`, and writes the result only if the key still has the
   * revision that was read; on a lost race it re-reads and runs `tryUpdate` again. The loop lives only here.
   * A result that encodes exactly as the stored bytes is not written. StorageError KeyNotFound if absent.
   */
  guaranteedUpdate<T extends StoredObject>(
    key: string,
    tryUpdate: (current: T) => Promise<T> | T,
    opts?: UpdateOptions<T>,
  ): Promise<UpdateResult<T>>;

  /**
   * Deletes the object if its preconditions hold (on each fresh read), compare-and-swap on the read revision.
   * Returns the last stored state with the deletion's revision as resourceVersion.
   */
  delete<T extends StoredObject>(key: string, opts?: DeleteOptions<T>): Promise<T>;

  /** One page of the objects under `prefix`, optionally at an older revision; StorageError Compacted if it is gone. */
  listPage<T extends StoredObject>(prefix: string, opts: PageOptions): Promise<Page<T>>;

  /**
   * listPage with each object as its JSON text, as served (with its resourceVersion), not decoded, and its
   * attributes read while it is (the watch cache's fill).
   */
  listPageText(prefix: string, opts: PageOptions, attributesOf: AttributesOf): Promise<Page<StoredText>>;

  /** The mod revision of every key under `prefix` at `revision`, without reading values. */
  keyRevisions(prefix: string, revision: string): Promise<Map<string, string>>;

  /**
   * The revision that created what is now at `key` (etcd's create_revision), undefined when nothing is: a key deleted
   * and created again has a new one, so it orders an object's creation against other revisions.
   */
  createRevision(key: string): Promise<string | undefined>;

  /** The store's current revision. */
  currentRevision(): Promise<string>;

  /**
   * Watches every change under `prefix` after `afterRevision`. Reconnects by itself after etcd restarts or
   * network failures, resuming after the last delivered revision, so nothing is lost or repeated.
   * `revisionsUnder` (a prefix of `prefix`) widens what is watched: changes there outside `prefix` are not read, only
   * reported as progress, so the watcher hears every revision that its neighbours' writes make.
   */
  watch<T extends StoredObject>(
    prefix: string,
    afterRevision: string,
    handlers: WatchHandlers<T>,
    opts?: { revisionsUnder?: string },
  ): Promise<WatchHandle>;

  /** Drops history before `revision`. */
  compact(revision: string): Promise<void>;

  /** Resolves when storage answers; rejects with the reason otherwise. */
  check(): Promise<void>;

  close(): Promise<void>;
}
