/**
 * SharedSecret: data keys must be valid Secret keys, because the data is synced into project Secrets
 * (values are checked as base64 by the schema's `format: byte`).
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { isConfigMapKey } from '../../apimachinery/validation.js';
import type { ComputedPrinterColumn, Strategy } from '../strategy.js';
import { ownedKindStrategy } from './owned.js';

const spec = Path.root('spec');

/** The data's keys must be Secret keys (ProjectSecret holds its data to the same rules). */
export function secretDataErrors(obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  for (const key of Object.keys(obj.spec?.data ?? {})) {
    for (const msg of isConfigMapKey(key)) errs.push(fieldError.invalid(spec.child('data').key(key), key, msg));
  }
  return errs;
}

/** The Table column counting the data's keys. */
export const keysColumn: ComputedPrinterColumn = {
  name: 'Keys',
  type: 'integer',
  description: 'The number of keys in the secret data.',
  cell: (obj: KubeObject) => {
    const data = obj.spec?.data;
    return data && typeof data === 'object' && !Array.isArray(data) ? Object.keys(data).length : 0;
  },
};

export const sharedSecretStrategy: Strategy = ownedKindStrategy(
  'sharedsecrets',
  secretDataErrors,
  { hostRbac: true },
  { printerColumns: [keysColumn] },
);
