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

/** The condition the ProjectSecret sync keeps on a SharedSecret that ProjectSecrets name (controllers/projectsecretsync.ts). */
export const PROJECT_SECRETS = 'ProjectSecrets';

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
  { printerColumns: [keysColumn], warningsOnDelete: projectSecretsFed },
);

/** A SharedSecret that feeds ProjectSecrets is not deleted silently: the client is told what follows. */
function projectSecretsFed(obj: KubeObject): string[] {
  const conditions = Array.isArray(obj.status?.conditions) ? obj.status.conditions : [];
  const fed = conditions.find((c: { type?: unknown }) => c?.type === PROJECT_SECRETS);
  if (fed?.status !== 'True' || typeof fed.message !== 'string') return [];
  return [
    `SharedSecret ${obj.metadata.namespace}/${obj.metadata.name}: ${fed.message}; they report SourceNotFound until a SharedSecret of this name exists again`,
  ];
}
