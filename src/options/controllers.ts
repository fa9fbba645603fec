/** The controllers: their leader election, how often they resync, and which run. */
import type { Options } from './flag.js';
import { atLeast, bool, duration } from './values.js';

export interface ControllersConfig {
  /** How long the controllers' leader holds its etcd lease without renewing it (whole seconds, at least 1 s). */
  leaderElectLeaseDurationMs: number;
  /** How often every SharedSecret and Cluster is reconciled with the host's RBAC again, besides watching. */
  accessResyncPeriodMs: number;
  /** With a host cluster: each ProjectSecret kept as a Secret in its project namespace there. */
  projectSecretDelivery: boolean;
}

export const controllersOptions: Options<ControllersConfig> = {
  concern: 'controllers',
  flags: [
    {
      name: 'leader-elect-lease-duration',
      arg: 'duration',
      default: '10s',
      help: 'The controllers (garbage collector and the others) run on one replica at a time, the holder of an etcd lease of this length; when it dies another replica takes over within about this long ({default}, at least 1s).',
      apply: (c, v) =>
        (c.leaderElectLeaseDurationMs = atLeast(
          'leader-elect-lease-duration',
          duration('leader-elect-lease-duration', v),
          1000,
        )),
    },
    {
      name: 'access-resync-period',
      arg: 'duration',
      default: '5m',
      help: 'Besides watching both sides, every SharedSecret, Cluster and ProjectSecret is compared with its Roles and bindings in the host cluster this often, and generated RBAC whose source is gone is removed; as often, every synced ProjectSecret is compared with its SharedSecret and whether its owner may still get it ({default}, at least 1s).',
      apply: (c, v) =>
        (c.accessResyncPeriodMs = atLeast('access-resync-period', duration('access-resync-period', v), 1000)),
    },
    {
      name: 'project-secret-delivery',
      arg: 'bool',
      default: 'true',
      help: 'With a host cluster: keep each ProjectSecret as a Secret of the same name in its project namespace there, for workloads to mount (needs get, list, watch, create, update and delete on Secrets in the host; the chart grants them with projectSecrets.delivery). false: ProjectSecrets stay in this API only ({default}).',
      apply: (c, v) => (c.projectSecretDelivery = bool('project-secret-delivery', v)),
    },
  ],
};
