/** A list's JSON, with each item's JSON reused where it has one (the list object itself is new per request). */
import { toJson } from '../apimachinery/encoded.js';

export { toJson };

export function listJson(list: { items: unknown[] }): string {
  const { items, ...rest } = list;
  const head = JSON.stringify({ ...rest, items: [] }); // ends with "items":[]}
  return `${head.slice(0, -2)}${items.map(toJson).join(',')}]}`;
}
