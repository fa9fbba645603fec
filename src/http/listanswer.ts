/**
 * A list answer in its parts, so that its elements are made and written a slice at a time (responses.ts writeList):
 * making them all at once (a Table's rows, each item's PartialObjectMetadata) holds the one thread for as long as
 * 10,000 of them take, and every other request with it.
 */

export interface ListAnswer {
  /** The answer with its elements left out: an empty array at `key`, in its place among the fields. */
  frame: Record<string, unknown>;
  /** Where the elements go: `items`, or a Table's `rows`. */
  key: string;
  /** What the elements are made from: the list's items, maybe still in their JSON form. */
  sources: readonly unknown[];
  /** Makes one element (a Table's row, an item's metadata; the item itself for a plain list). */
  element(source: unknown): unknown;
}

/** The whole answer as one object: for the audit, and answers written at once. */
export function wholeList(answer: ListAnswer): Record<string, unknown> {
  return { ...answer.frame, [answer.key]: answer.sources.map((s) => answer.element(s)) };
}
