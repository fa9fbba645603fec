/**
 * The narrow storage interface every kind is kept through (after kube's pkg/storage/interfaces.go).
 * Objects go in and come out as plain JSON objects; `metadata.resourceVersion` is the etcd mod revision,
 * set on the way out and never stored.
 */

export interface StoredObject {
  metadata: { resourceVersion?: string; selfLink?: string };
  [field: string]: unknown;
}

export type StorageErrorCode = 'KeyNotFound' | 'KeyExists' | 'Unreachable';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    readonly key: string,
    message: string,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

export interface ListResult<T> {
  items: T[];
  /** The revision the range was read at. */
  resourceVersion: string;
}

export interface UpdateOptions<T> {
  /**
   * Asked about the result of each tryUpdate: when true the key is deleted (compare-and-swap on the same
   * revision) instead of written, e.g. when an update removes the last finalizer of an object being deleted.
   */
  deleteInstead?: (updated: T) => boolean;
}

export interface UpdateResult<T> {
  object: T;
  /** False when the update changed nothing, so nothing was written and the resourceVersion stayed. */
  written: boolean;
  deleted: boolean;
}

export interface Storage {
  /** Stores a new object; StorageError KeyExists when the key is taken. */
  create<T extends StoredObject>(key: string, obj: T): Promise<T>;

  get<T extends StoredObject>(key: string): Promise<T | undefined>;

  /** Every object under `prefix` (which must end with '/'), read at one revision. */
  list<T extends StoredObject>(prefix: string): Promise<ListResult<T>>;

  /**
   * Reads the object, passes a fresh copy to `tryUpdate`, and writes the result only if the key still has the
   * revision that was read; on a lost race it re-reads and runs `tryUpdate` again. The loop lives only here.
   * A result that encodes exactly as the stored bytes is not written. StorageError KeyNotFound if absent.
   */
  guaranteedUpdate<T extends StoredObject>(key: string, tryUpdate: (current: T) => Promise<T> | T, opts?: UpdateOptions<T>): Promise<UpdateResult<T>>;

  /**
   * Deletes the object if `precondition` (run on each fresh read) does not throw, compare-and-swap on the read
   * revision. Returns the last stored state with the deletion's revision as resourceVersion.
   */
  delete<T extends StoredObject>(key: string, precondition?: (current: T) => void | Promise<void>): Promise<T>;

  /** Resolves when storage answers; rejects with the reason otherwise. */
  check(): Promise<void>;

  close(): Promise<void>;
}
