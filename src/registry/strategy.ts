/**
 * What a kind adds to the generic store: rules its schema cannot say. Everything else (metadata, names,
 * resourceVersion, generation, status handling) is the store's, the same for every kind.
 */
import type { FieldError } from '../apimachinery/field.js';
import type { KubeObject } from '../apimachinery/types.js';

export interface Strategy {
  /** Extra validation of a new object; runs after its schema and metadata validated cleanly. */
  validate?(obj: KubeObject): FieldError[];
  /** Extra validation of an update; defaults to `validate` of the new object. */
  validateUpdate?(obj: KubeObject, old: KubeObject): FieldError[];
}
