/**
 * What clients see of a kind's objects besides what is stored: something derived at read time from the stored object
 * and the time (a Cluster or a VirtualClusterInstance whose health checks stopped reads as not known to be ready,
 * whether or not anything still writes it: kinds/overdue.ts). A kind declares it (Strategy.readView); the store
 * shows it wherever it leaves hidden fields out: GET, LIST, WATCH events (so Tables too) and the answers of writes,
 * the resourceVersion as stored. What patches, applies and admission act on is the stored object (without hidden
 * fields): the derived part is no one's to change, and a client that writes back what it read does not store it
 * (`underive`).
 *
 * A view costs nothing until it applies: when it starts to apply is asked once per stored object (remembered by
 * object, so a list of encoded objects is decoded once per revision, not per read), and until then every read is the
 * stored object itself, with no copy.
 */
import { EncodedObject, type ListItem } from '../apimachinery/encoded.js';
import type { KubeObject } from '../apimachinery/types.js';

export interface ReadView<O extends KubeObject = KubeObject> {
  /**
   * From when (ms since the epoch) clients see more of `obj` than is stored; undefined when they never do. A function
   * of the stored object alone (it is asked once per object and remembered).
   */
  derivedFrom(obj: O): number | undefined;
  /** What clients see of `obj` at `now`, not before derivedFrom(obj): a copy that shares what it leaves as stored. */
  derive(obj: O, now: number): O;
  /**
   * Takes out of `written` (a new object to store, the caller's own copy) what derive put in what it was read as,
   * putting back what `stored` has there.
   */
  underive(written: O, stored: O): void;
}

/** A kind's view as one store applies it: remembering, per stored object, from when it applies. */
export class StoreView {
  /** By stored object, or by the encoded object of a list item. */
  private readonly from = new WeakMap<object, number | undefined>();

  constructor(
    private readonly view: ReadView,
    private readonly now: () => number,
  ) {}

  /** What clients see of `obj` now: `obj` itself until the view applies. */
  of(obj: KubeObject): KubeObject {
    return this.applies(obj, () => obj) ? this.view.derive(obj, this.now()) : obj;
  }

  /** The same for a list item: one still encoded stays so (and is sent as it is) until the view applies. */
  ofItem(item: ListItem): ListItem {
    if (!(item instanceof EncodedObject)) return this.of(item);
    let obj: KubeObject | undefined;
    const decode = () => (obj ??= item.decode());
    return this.applies(item, decode) ? this.view.derive(decode(), this.now()) : item;
  }

  underive(written: KubeObject, stored: KubeObject): void {
    this.view.underive(written, stored);
  }

  private applies(key: object, obj: () => KubeObject): boolean {
    let from: number | undefined;
    if (this.from.has(key)) from = this.from.get(key);
    else this.from.set(key, (from = this.view.derivedFrom(obj())));
    return from !== undefined && this.now() >= from;
  }
}
