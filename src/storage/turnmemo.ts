/**
 * A Map that lasts for the current turn of the event loop. A fan-out hands the same events to many watchers
 * synchronously; what it derives from them once (a filter's answer, an encoded line) is kept here for the others and
 * dropped before the next turn, so nothing cached outlives the dispatch that needed it (as kube's cacher keeps an
 * event's serializations only while dispatching it).
 */
export function turnMemo<K, V>(): () => Map<K, V> {
  let current: Map<K, V> | undefined;
  return () => {
    if (!current) {
      const map = (current = new Map<K, V>());
      setImmediate(() => {
        if (current === map) current = undefined;
      });
    }
    return current;
  };
}
