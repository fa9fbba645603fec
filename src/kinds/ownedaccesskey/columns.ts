/** An OwnedAccessKey's computed Table column: when it expires, as time left (a date column would show an age). */
import { humanDuration } from '../../apimachinery/duration.js';
import type { ComputedPrinterColumn } from '../../registry/strategy.js';
import type { OwnedAccessKey } from './types.js';

export const accessKeyColumns: readonly ComputedPrinterColumn<OwnedAccessKey>[] = [
  {
    name: 'Expires',
    type: 'string',
    description:
      'How long until the key stops working (status.expirationTimestamp), "expired" once it has; empty for a key without a ttl.',
    before: 'Last Activity',
    cell: (obj: OwnedAccessKey, now: number) => {
      const at = obj.status?.expirationTimestamp;
      const ms = typeof at === 'string' ? Date.parse(at) : NaN;
      if (Number.isNaN(ms)) return undefined;
      return ms <= now ? 'expired' : humanDuration(ms - now);
    },
  },
];
