/**
 * What every part of the OpenAPI documents shares: references between schemas (written once by name, rendered
 * for v2 or v3), the walk over a schema's children, and the x-kubernetes-* extension names kubectl reads.
 */
// OpenAPI documents are JSON walked by key; the builders read them as loosely as the documents are written.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

export const GVK_EXTENSION = 'x-kubernetes-group-version-kind';
export const ACTION_EXTENSION = 'x-kubernetes-action';

/** A reference to a schema of this document; v3 wraps a reference that carries siblings in allOf, as kube does. */
export function ref(name: string, v2: boolean, siblings: Json = {}): Json {
  const pointer = v2 ? `#/definitions/${name}` : `#/components/schemas/${name}`;
  if (v2 || Object.keys(siblings).length === 0) return { $ref: pointer, ...siblings };
  return { allOf: [{ $ref: pointer }], ...siblings };
}

/** A schema's subschemas: its properties, items and additionalProperties. */
export function childSchemas(s: Json): Json[] {
  const out: Json[] = [];
  if (s.properties && typeof s.properties === 'object') out.push(...(Object.values(s.properties) as Json[]));
  if (s.items && typeof s.items === 'object' && !Array.isArray(s.items)) out.push(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(s.additionalProperties);
  return out;
}

/** Visits a schema top-down (after the structural Visitor): `fn` runs before the children are read. */
export function visit(s: Json, fn: (s: Json) => void): void {
  fn(s);
  for (const child of childSchemas(s)) visit(child, fn);
}

/** The x-kubernetes-group-version-kind value of a kind's schema. */
export function gvkExtension(group: string, version: string, kind: string): Json[] {
  return [{ group, kind, version }];
}
