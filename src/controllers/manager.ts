/**
 * Runs the server's controllers on exactly one replica at a time: every replica campaigns, through storage's lease
 * lock, for one etcd lease (`<prefix>/leases/controllers`); the holder runs all controllers until it stops leading,
 * then the next takes over.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { Logger } from '../log.js';
import type { LeaseLock } from '../storage/leaselock.js';
import { LeaderElector } from './leader.js';
import { sleep } from '../apimachinery/sleep.js';

const RESTART_DELAY_MS = 1000;

export interface Controller {
  name: string;
  /** Works until `signal` aborts; must end soon after. */
  run(signal: AbortSignal): Promise<void>;
}

export interface ControllerManagerOptions {
  /** The lock on a key (EtcdStorage.leaseLock). */
  leaseLock(key: string): LeaseLock;
  etcdPrefix: string;
  leaseDurationMs: number;
  controllers: Controller[];
  log: Logger;
}

export interface RunningControllers {
  isLeader(): boolean;
  identity: string;
  /** Stops the controllers, then gives up the lease so another replica takes over at once. */
  stop(): Promise<void>;
}

export function startControllers(opts: ControllerManagerOptions): RunningControllers {
  const { log } = opts;
  const elector = new LeaderElector({
    lock: opts.leaseLock(`${opts.etcdPrefix}/leases/controllers`),
    // client-go's convention: hostname plus a random part, so two processes on one host differ.
    identity: `${hostname()}_${randomUUID()}`,
    leaseTtlSeconds: Math.round(opts.leaseDurationMs / 1000),
    onStartedLeading: (signal) => {
      // Every controller's watches and workers listen on this one signal.
      setMaxListeners(0, signal);
      return Promise.all(
        opts.controllers.map(async (c) => {
          // A controller that fails is started again while this replica leads, never in a tight loop.
          while (!signal.aborted) {
            log.info('controller starting', { controller: c.name });
            try {
              await c.run(signal);
            } catch (err) {
              log.error('controller failed', { controller: c.name, error: String(err) });
            }
            await sleep(RESTART_DELAY_MS, signal);
          }
        }),
      ).then(() => {});
    },
    onStoppedLeading: () => {},
    log: (msg, fields) => log.info(msg, fields),
  });
  elector.start();
  return { isLeader: () => elector.isLeader(), identity: elector.identity, stop: () => elector.stop() };
}
