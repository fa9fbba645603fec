/**
 * Objects kept as their JSON text. The watch cache holds every object this way: a parsed object costs several
 * times its JSON on the heap, and lists and watches send the text anyway. Only a reader that must look inside (a
 * selector, authorization, a table, a controller) decodes it, one object at a time, and the decoded object is
 * shared, frozen, while anyone still holds it.
 */
import type { KubeList, KubeObject } from './types.js';

/** The JSON each decoded object came from, so that sending it again costs no encoding. */
const sourceJson = new WeakMap<object, string>();

export class EncodedObject<T extends object = KubeObject> {
  private decodedRef?: WeakRef<T>;

  constructor(readonly json: string) {}

  /**
   * The object (frozen: everyone holding it shares it), decoded again only once nobody holds the last one: for one
   * object many read at once (a watch event, a GET). V8 keeps every object a WeakRef was made for or read through
   * alive until the current task ends, so a loop over many objects uses decode() instead.
   */
  get object(): T {
    let obj = this.decodedRef?.deref();
    if (!obj) {
      obj = deepFreeze(this.decode());
      sourceJson.set(obj, this.json);
      this.decodedRef = new WeakRef(obj);
    }
    return obj;
  }

  /**
   * A decoding of its own, remembered by nobody and shared with nobody (so neither frozen nor tied to the JSON: its
   * reader may change it): garbage as soon as its reader is done with it.
   */
  decode(): T {
    return JSON.parse(this.json) as T;
  }
}

/** An item of a list as served: an object, or one still in its JSON form (from the watch cache). */
export type ListItem<T extends object = KubeObject> = T | EncodedObject<T>;

/** A list item as an object (decoded on its own: lists are read in loops, see EncodedObject.object). */
export function decoded<T extends object>(item: ListItem<T>): T {
  return item instanceof EncodedObject ? item.decode() : item;
}

/** The JSON of a value: the text an encoded or decoded-from-text object came from, else freshly encoded. */
export function toJson(value: unknown): string {
  if (value instanceof EncodedObject) return value.json;
  if (typeof value === 'object' && value !== null) {
    const json = sourceJson.get(value);
    if (json !== undefined) return json;
  }
  return JSON.stringify(value);
}

/**
 * Shared objects are read by every list and watcher without copies; freezing them makes an accidental write by one
 * of them throw instead of silently changing what everyone else sees (and their JSON stale).
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A list as the watch cache serves it: its items may still be in their JSON form. */
export interface ObjectList extends Omit<KubeList, 'items'> {
  items: ListItem[];
}
