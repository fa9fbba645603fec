/** A list's JSON, with each item's JSON reused where it has one (the list object itself is new per request). */
import { toJson } from '../apimachinery/encoded.js';

export { toJson };

export function listJson(list: { items: unknown[] }): string {
  return `${listHead(list)}${list.items.map(toJson).join(',')}]}`;
}

/** A list's JSON up to its first item: everything but the items, ending with `"items":[`. */
export function listHead(list: { items: unknown[] }): string {
  const { items: _, ...rest } = list;
  return JSON.stringify({ ...rest, items: [] }).slice(0, -2); // without the `]}` of the empty items
}
