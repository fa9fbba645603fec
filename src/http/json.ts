/**
 * JSON of the watch cache's shared objects, encoded once and reused by every list and every watcher (the cache
 * freezes its objects, so their JSON cannot go stale). Other objects are encoded each time.
 */
const encoded = new WeakMap<object, string>();

export function toJson(value: unknown): string {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return JSON.stringify(value);
  let json = encoded.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    encoded.set(value, json);
  }
  return json;
}

/** A list's JSON, with each item's JSON reused (the list object itself is new per request). */
export function listJson(list: { items: unknown[] }): string {
  const { items, ...rest } = list;
  const head = JSON.stringify({ ...rest, items: [] }); // ends with "items":[]}
  return `${head.slice(0, -2)}${items.map(toJson).join(',')}]}`;
}
