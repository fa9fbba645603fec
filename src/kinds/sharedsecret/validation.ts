/** What a SharedSecret's schema cannot say: its data's keys are Secret keys (a ProjectSecret's too). */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isConfigMapKey } from '../../apimachinery/validation.js';
import type { SharedSecret } from './types.js';

const spec = Path.root('spec');

/** The data's keys must be Secret keys (ProjectSecret holds its data to the same rules). */
export function secretDataErrors(obj: SharedSecret): FieldError[] {
  const errs: FieldError[] = [];
  for (const key of Object.keys(obj.spec?.data ?? {})) {
    for (const msg of isConfigMapKey(key)) errs.push(fieldError.invalid(spec.child('data').key(key), key, msg));
  }
  return errs;
}
