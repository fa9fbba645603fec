/** A secret's computed Table column: how many keys its data has (SharedSecret's and ProjectSecret's). */
import type { ComputedPrinterColumn } from '../../registry/strategy.js';
import type { SharedSecret } from './types.js';

/** The Table column counting the data's keys. */
export const keysColumn: ComputedPrinterColumn = {
  name: 'Keys',
  type: 'integer',
  description: 'The number of keys in the secret data.',
  cell: (obj: SharedSecret) => {
    const data = obj.spec?.data;
    return data && typeof data === 'object' && !Array.isArray(data) ? Object.keys(data).length : 0;
  },
};
