/** The admission step: the host's webhooks and policies, and the enabled plugins. */
import { startHostAdmission, type HostAdmission } from '../admission/host.js';
import type { HostCluster } from '../host/cluster.js';
import type { Logger } from '../log.js';
import type { Cleanups } from './cleanups.js';
import type { CompletedConfig } from './inputs.js';

/** The admission chain, with a host cluster only (its webhooks and policies are the host's objects). */
export function startAdmission(
  config: CompletedConfig,
  log: Logger,
  host: HostCluster | undefined,
  cleanups: Cleanups,
): HostAdmission | undefined {
  if (!host) return undefined;
  const admission = startHostAdmission(host, config.admissionPlugins, config.admissionConfig, (msg, fields) =>
    log.warn(msg, fields),
  );
  cleanups.add('stopping the admission informers', async () => admission.stop());
  log.info('admission plugins', { plugins: admission.chain.names });
  return admission;
}
