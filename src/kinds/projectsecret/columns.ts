/** A ProjectSecret's computed Table columns: its keys, and whether it is synced and delivered. */
import type { KubeObject } from '../../apimachinery/types.js';
import type { ComputedPrinterColumn } from '../../registry/strategy.js';
import { keysColumn } from '../sharedsecret/columns.js';
import { SECRET_DELIVERED, SYNCED } from './conditions.js';

export const projectSecretColumns: readonly ComputedPrinterColumn[] = [
  keysColumn,
  {
    name: 'Synced',
    type: 'string',
    description: 'Whether the data follows its SharedSecret (the status of the Synced condition).',
    cell: (obj: KubeObject) => conditionStatus(obj, SYNCED),
  },
  {
    name: 'Delivered',
    type: 'string',
    description:
      'Whether the host cluster has it as a Secret of the same name (the status of the SecretDelivered condition).',
    cell: (obj: KubeObject) => conditionStatus(obj, SECRET_DELIVERED),
  },
];

function conditionStatus(obj: KubeObject, type: string): string | undefined {
  const conditions = Array.isArray(obj.status?.conditions) ? obj.status.conditions : [];
  return (conditions as { type?: string; status?: string }[]).find((c) => c?.type === type)?.status;
}
