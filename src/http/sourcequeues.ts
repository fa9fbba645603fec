/**
 * Queues by source (connectionSource), taken in turn: the source an item is taken from goes behind every other
 * source waiting, so that a client with many items waiting holds back another's by one turn, not by all it has.
 * Within a source, first come first served. The handshake turns (handshaketurns.ts) and the connections waiting
 * for their share (connections.ts) both wait in these.
 */
export class SourceQueues<T> {
  /** A Map keeps insertion order: its first source is the next in turn. */
  private readonly queues = new Map<string, T[]>();
  private count = 0;

  /** How many items wait, in all. */
  get size(): number {
    return this.count;
  }

  /** How many items of `source` wait. */
  lengthOf(source: string): number {
    return this.queues.get(source)?.length ?? 0;
  }

  push(source: string, item: T): void {
    const queue = this.queues.get(source);
    if (queue) queue.push(item);
    else this.queues.set(source, [item]);
    this.count++;
  }

  /** The sources with items waiting, next in turn first. */
  sources(): IterableIterator<string> {
    return this.queues.keys();
  }

  /** The oldest item of `source` (by default the source next in turn); the source goes behind every other. */
  take(source: string | undefined = this.queues.keys().next().value): T | undefined {
    const queue = source === undefined ? undefined : this.queues.get(source);
    if (!queue) return undefined;
    const item = queue.shift()!;
    this.queues.delete(source!);
    if (queue.length) this.queues.set(source!, queue);
    this.count--;
    return item;
  }

  /** The source with the most items waiting (the first in turn of those), if any wait. */
  longest(): string | undefined {
    let longest: [string, T[]] | undefined;
    for (const entry of this.queues) if (!longest || entry[1].length > longest[1].length) longest = entry;
    return longest?.[0];
  }

  /** The newest item of `source`, taken out (a full queue gives it up for a newcomer of a source with fewer). */
  takeNewest(source: string): T | undefined {
    const queue = this.queues.get(source);
    if (!queue) return undefined;
    const item = queue.pop()!;
    if (!queue.length) this.queues.delete(source);
    this.count--;
    return item;
  }

  /** Takes `item` out of `source`'s queue (it closed while it waited); false when it was not there. */
  remove(source: string, item: T): boolean {
    const queue = this.queues.get(source);
    const at = queue?.indexOf(item) ?? -1;
    if (at < 0) return false;
    queue!.splice(at, 1);
    if (!queue!.length) this.queues.delete(source);
    this.count--;
    return true;
  }
}
