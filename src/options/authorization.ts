/** Authorization: the paths anyone may GET. */
import { FlagError, type Options } from './flag.js';
import { list } from './values.js';

export interface AuthorizationConfig {
  /** Non-resource paths anyone may GET without authorization (and without credentials); a trailing '*' is a prefix. */
  authorizationAlwaysAllowPaths: string[];
}

export const authorizationOptions: Options<AuthorizationConfig> = {
  concern: 'authorization',
  flags: [
    {
      name: 'authorization-always-allow-paths',
      arg: 'paths',
      default: '/healthz,/readyz,/livez',
      help: 'Non-resource paths anyone may GET, without credentials or authorization, comma-separated; a trailing * makes a prefix, as in "/metrics*" ({default}; add /metrics for an anonymous Prometheus scrape). /version and the OpenID documents are always public.',
      apply: (c, v) => (c.authorizationAlwaysAllowPaths = allowPaths(v)),
    },
  ],
};

function allowPaths(value: string): string[] {
  const paths = list(value);
  for (const p of paths) {
    if (!p.startsWith('/') || p.slice(0, -1).includes('*')) {
      throw new FlagError(
        `--authorization-always-allow-paths takes paths such as /healthz, with at most a trailing * (got ${JSON.stringify(p)})`,
      );
    }
  }
  return paths;
}
