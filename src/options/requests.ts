/** Requests' deadlines: the request timeout, and how long watches last. */
import type { Options } from './flag.js';
import { atLeast, count, duration } from './values.js';

export interface RequestsConfig {
  /** A request other than a watch not answered within this long gets 504 Timeout (0: no deadline). */
  requestTimeoutMs: number;
  /**
   * How long after its deadline a request may still take to end (its answer still being written) before its
   * response and connection are cut. No flag: kube cuts at the deadline itself (src/http/deadline.ts).
   */
  responseGraceMs: number;
  /** Watches without timeoutSeconds end after a random time between this and twice this (seconds). */
  minRequestTimeoutSeconds: number;
}

export const requestsOptions: Options<RequestsConfig> = {
  concern: 'requests',
  flags: [
    {
      name: 'request-timeout',
      arg: 'duration',
      default: '1m',
      help: 'A request is answered 504 Timeout when not done within this long; a client may ask for less with ?timeout=. Watches are not limited by it ({default}; 0: no deadline).',
      apply: (c, v) => (c.requestTimeoutMs = duration('request-timeout', v)),
    },
    {
      name: 'min-request-timeout',
      arg: 'int',
      default: '1800',
      help: 'A watch that does not set timeoutSeconds ends after a random time between this many seconds and twice as long, so clients do not all re-watch at once ({default}, at least 1).',
      apply: (c, v) =>
        (c.minRequestTimeoutSeconds =
          atLeast('min-request-timeout', count('min-request-timeout', v) * 1000, 1000) / 1000),
    },
  ],
  settings: {
    // Enough for an answer handed over just before the deadline to reach a client that reads it.
    responseGraceMs: 10_000,
  },
};
