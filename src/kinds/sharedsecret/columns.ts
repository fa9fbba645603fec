/** A secret's computed Table column: how many keys its data has (SharedSecret's and ProjectSecret's). */
import type { KubeObject } from '../../apimachinery/types.js';
import type { ComputedPrinterColumn } from '../../registry/strategy.js';

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
