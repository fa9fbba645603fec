/** A ProjectSecret's computed Table columns: its keys, whether it is synced and delivered, and to how many places. */
import type { ComputedPrinterColumn } from '../../registry/strategy.js';
import { keysColumn } from '../sharedsecret/columns.js';
import { SECRET_DELIVERED, SYNCED } from './conditions.js';
import type { ProjectSecret } from './types.js';

export const projectSecretColumns: readonly ComputedPrinterColumn<ProjectSecret>[] = [
  keysColumn,
  {
    name: 'Synced',
    type: 'string',
    description: 'Whether the data follows its SharedSecret (the status of the Synced condition).',
    cell: (obj: ProjectSecret) => conditionStatus(obj, SYNCED),
  },
  {
    name: 'Delivered',
    type: 'string',
    description:
      'Whether every place it is delivered to has it as a Secret of the same name (the status of the SecretDelivered condition).',
    cell: (obj: ProjectSecret) => conditionStatus(obj, SECRET_DELIVERED),
  },
  {
    name: 'Targets',
    type: 'string',
    description:
      'How many of the places in spec.delivery.targets hold the Secret now, of how many (status.targets; "*" counts each virtual cluster).',
    cell: (obj: ProjectSecret) => {
      const lines = Array.isArray(obj.status?.targets) ? obj.status.targets : undefined;
      return lines && `${lines.filter((l) => l?.phase === 'Delivered').length}/${lines.length}`;
    },
  },
];

function conditionStatus(obj: ProjectSecret, type: string): string | undefined {
  const conditions = Array.isArray(obj.status?.conditions) ? obj.status.conditions : [];
  return (conditions as { type?: string; status?: string }[]).find((c) => c?.type === type)?.status;
}
