/**
 * SharedSecret: data keys must be valid Secret keys, because the data is synced into project Secrets
 * (values are checked as base64 by the schema's `format: byte`).
 */
import type { Strategy } from '../../registry/strategy.js';
import { ownedKindStrategy } from '../owned.js';
import { keysColumn } from './columns.js';
import { secretDataErrors } from './validation.js';
import type { SharedSecret } from './types.js';

/** The condition the ProjectSecret sync keeps on a SharedSecret that ProjectSecrets name (controllers/projectsecretsync.ts). */
export const PROJECT_SECRETS = 'ProjectSecrets';

export const sharedSecretStrategy: Strategy<SharedSecret> = ownedKindStrategy(
  'sharedsecrets',
  secretDataErrors,
  { hostRbac: true },
  { printerColumns: [keysColumn], warningsOnDelete: projectSecretsFed },
);

/** A SharedSecret that feeds ProjectSecrets is not deleted silently: the client is told what follows. */
function projectSecretsFed(obj: SharedSecret): string[] {
  const conditions = Array.isArray(obj.status?.conditions) ? obj.status.conditions : [];
  const fed = conditions.find((c: { type?: unknown }) => c?.type === PROJECT_SECRETS);
  if (fed?.status !== 'True' || typeof fed.message !== 'string') return [];
  return [
    `SharedSecret ${obj.metadata.namespace}/${obj.metadata.name}: ${fed.message}; they report SourceNotFound until a SharedSecret of this name exists again`,
  ];
}
