/** Logging: klog's --v. */
import { FlagError, type Options } from './flag.js';

export interface LoggingConfig {
  /** klog's --v: 0 errors, warnings and lifecycle; 3 adds a line per request; 4 adds debug lines. */
  verbosity: number;
}

export const loggingOptions: Options<LoggingConfig> = {
  concern: 'logging',
  flags: [
    {
      name: 'v',
      arg: 'int',
      default: '0',
      help: "Log verbosity, 0 to 10 as klog's: 0 logs errors, warnings and lifecycle events (every 5xx answer is an error line at any level); 3 and more add one line per request (request id, user, verb, resource, namespace, name, code, latency, user agent), as kube-apiserver does at 3; 4 and more add debug lines ({default}).",
      apply: (c, v) => (c.verbosity = verbosity(v)),
    },
  ],
};

function verbosity(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 10)
    throw new FlagError(`--v must be a whole number from 0 to 10 (got ${JSON.stringify(value)})`);
  return n;
}
