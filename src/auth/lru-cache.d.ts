/**
 * The types of lru-cache 5 (the version installed; it ships none): the few members the review cache uses.
 * A newer lru-cache brings its own and this file goes.
 */
declare module 'lru-cache' {
  export default class LRUCache<K, V> {
    constructor(options: { max: number });
    /** The value without making it the most recently used. */
    peek(key: K): V | undefined;
    /** Stores the value as the most recently used; the least recently used go past `max`. */
    set(key: K, value: V): boolean;
    del(key: K): void;
    has(key: K): boolean;
    forEach(fn: (value: V, key: K) => void): void;
    readonly itemCount: number;
  }
}
