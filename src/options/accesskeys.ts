/** Access keys' use, written to their status off the request path. */
import type { Options } from './flag.js';
import { duration } from './values.js';

export interface AccessKeysConfig {
  /** At most one status.lastActivity write per access key per this long. */
  accessKeyActivityMinIntervalMs: number;
  /** How often pending access key activity is looked at (and written when due). */
  accessKeyActivityTickMs: number;
}

export const accessKeysOptions: Options<AccessKeysConfig> = {
  concern: 'accesskeys',
  flags: [
    {
      name: 'access-key-activity-interval',
      arg: 'duration',
      default: '1m',
      help: 'Access key use is written to status.lastActivity at most this often per key, off the request path ({default}).',
      apply: (c, v) => (c.accessKeyActivityMinIntervalMs = duration('access-key-activity-interval', v)),
    },
  ],
  settings: {
    accessKeyActivityTickMs: 5_000,
  },
};
