/** --workers: how many processes serve the port (src/workers.ts). */
import { usableCores } from '../cpus.js';
import { FlagError, type Options } from './flag.js';

export interface WorkersConfig {
  /** Processes serving the port (node:cluster); 1: this process serves alone, as before --workers. */
  workers: number;
}

export const workersOptions: Options<WorkersConfig> = {
  concern: 'workers',
  flags: [
    {
      name: 'workers',
      arg: 'int|auto',
      // 1 until workers are proven by the benchmark and the chart sizes them (issue 31); `auto` takes every core.
      default: '1',
      help: "Processes that serve the port, each with its own watch cache and etcd watch as a replica has; the controllers run in one at a time (leader election). `auto`: the cores this process may use (the cgroup's CPU limit, else the machine's). A worker that dies is started again; SIGTERM drains them all. 1 serves in this process alone ({default}).",
      apply: (c, v) => (c.workers = workers(v)),
    },
  ],
};

function workers(value: string): number {
  if (value === 'auto') return usableCores();
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 64)
    throw new FlagError(`--workers must be a whole number from 1 to 64, or auto (got ${JSON.stringify(value)})`);
  return n;
}
