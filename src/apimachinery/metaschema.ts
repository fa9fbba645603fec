/**
 * The shape of metav1.ObjectMeta as a structural schema: custom resources keep only these metadata fields
 * (kube decodes metadata into ObjectMeta, dropping the rest) and a wrongly typed one is a field error.
 *
 * Derived from ObjectMeta's OpenAPI definition (openapi/metav1.ts, the one description of it), as decoding into
 * the Go type sees it: references inlined, documentation and patch strategies left out, no required fields (Go's
 * decoder enforces types, not presence), and an object that declares neither properties nor additionalProperties
 * (FieldsV1) keeps any fields.
 */
import { META_V1_DEFINITIONS, OBJECT_META } from './openapi/metav1.js';
import type { StructuralSchema } from './schema.js';
import { isPlainObject } from './types.js';

/** What decoding reads of a definition; the rest (description, required, patch strategies, GVKs) it ignores. */
const DECODED_KEYWORDS = new Set([
  'type',
  'format',
  'nullable',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
]);

/** The structural schema of a meta/v1 definition (or of one of its properties), as Go's decoding sees it. */
export function decodedSchema(definition: Record<string, unknown>): StructuralSchema {
  const { $ref, ...siblings } = definition;
  if (typeof $ref === 'string') return decodedSchema({ ...META_V1_DEFINITIONS[$ref], ...siblings });
  const out: StructuralSchema = {};
  for (const [k, v] of Object.entries(definition)) if (DECODED_KEYWORDS.has(k)) out[k] = v;
  if (isPlainObject(definition.properties)) {
    out.properties = Object.fromEntries(
      Object.entries(definition.properties).map(([k, v]) => [k, decodedSchema(v as Record<string, unknown>)]),
    );
  }
  if (isPlainObject(definition.items)) out.items = decodedSchema(definition.items);
  if (isPlainObject(definition.additionalProperties))
    out.additionalProperties = decodedSchema(definition.additionalProperties);
  if (out.type === 'object' && !out.properties && out.additionalProperties === undefined)
    out['x-kubernetes-preserve-unknown-fields'] = true;
  return out;
}

export const objectMetaSchema: StructuralSchema = decodedSchema(META_V1_DEFINITIONS[OBJECT_META]);
