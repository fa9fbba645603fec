/** Access keys' use, written to their status off the request path. */
import type { Options } from './flag.js';
import { duration, optionalSeconds } from './values.js';

export interface AccessKeysConfig {
  /** At most one status.lastActivity write per access key per this long. */
  accessKeyActivityMinIntervalMs: number;
  /** How often pending access key activity is looked at (and written when due). */
  accessKeyActivityTickMs: number;
  /** The longest ttl (seconds) a key gets when made or changed outside system:masters; 0 for no limit. */
  accessKeyMaxTtlSeconds: number;
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
    {
      name: 'access-key-max-ttl',
      arg: 'duration',
      default: '0s',
      help: 'The longest life an access key gets when created or changed by anyone outside system:masters: a longer spec.ttl, or none, becomes this; keys stored before are left as they are. 0s for no limit ({default}).',
      apply: (c, v) => (c.accessKeyMaxTtlSeconds = optionalSeconds('access-key-max-ttl', v, 1000)),
    },
  ],
  settings: {
    accessKeyActivityTickMs: 5_000,
  },
};
