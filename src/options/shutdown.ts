/** Shutdown: how long requests are still served after SIGTERM. */
import type { Options } from './flag.js';
import { duration } from './values.js';

export interface ShutdownConfig {
  /** After SIGTERM, /readyz fails at once but requests are still served this long before the listener closes. */
  shutdownDelayMs: number;
}

export const shutdownOptions: Options<ShutdownConfig> = {
  concern: 'shutdown',
  flags: [
    {
      name: 'shutdown-delay-duration',
      arg: 'duration',
      default: '0s',
      help: 'On SIGTERM /readyz fails at once, and requests are still served this long (so load balancers and kube-apiserver stop sending first); then the listener closes, watches end and requests in flight get up to --request-timeout to finish ({default}).',
      apply: (c, v) => (c.shutdownDelayMs = duration('shutdown-delay-duration', v)),
    },
  ],
};
