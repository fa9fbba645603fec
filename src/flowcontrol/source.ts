/**
 * Where the configuration comes from. With a host cluster: its flowcontrol.apiserver.k8s.io/v1 FlowSchemas and
 * PriorityLevelConfigurations, kept current by two informers (a change the admins make takes effect as its watch
 * event arrives; while the host cannot be reached the last objects seen stay in force). Until both have listed,
 * and without a host cluster, kube's built-in configuration applies (bootstrap.ts). The limits are shared again
 * every adjustment period either way.
 */
import type { HostCluster } from '../host/cluster.js';
import { HostInformer, type HostObject } from '../host/informer.js';
import type { Logger } from '../log.js';
import {
  MANDATORY_FLOW_SCHEMAS,
  MANDATORY_PRIORITY_LEVELS,
  SUGGESTED_FLOW_SCHEMAS,
  SUGGESTED_PRIORITY_LEVELS,
} from './bootstrap.js';
import { ADJUSTMENT_PERIOD_MS, type FlowControl } from './controller.js';
import { FLOWCONTROL_PATH, type FlowSchema, type PriorityLevelConfiguration } from './types.js';

export interface FlowControlSource {
  /** Whether the host's configuration is in force (always false without a host). */
  fromHost(): boolean;
  stop(): void;
}

export function builtInConfiguration(fc: FlowControl): void {
  fc.configure(
    [...MANDATORY_FLOW_SCHEMAS, ...SUGGESTED_FLOW_SCHEMAS],
    [...MANDATORY_PRIORITY_LEVELS, ...SUGGESTED_PRIORITY_LEVELS],
  );
}

export function startFlowControlSource(
  fc: FlowControl,
  host: HostCluster | undefined,
  log: Pick<Logger, 'warn'>,
): FlowControlSource {
  const running = new AbortController();
  const adjusting = setInterval(() => fc.adjust(), ADJUSTMENT_PERIOD_MS);
  adjusting.unref();
  running.signal.addEventListener('abort', () => clearInterval(adjusting), { once: true });
  builtInConfiguration(fc);
  if (!host) return { fromHost: () => false, stop: () => running.abort() };

  let scheduled = false;
  const digest = () => {
    scheduled = false;
    if (running.signal.aborted || !schemas.hasSynced() || !levels.hasSynced()) return;
    fc.configure(schemas.list() as unknown as FlowSchema[], levels.list() as unknown as PriorityLevelConfiguration[]);
  };
  // The events of one list or one burst of changes make one new configuration.
  const onChange = () => {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(digest);
  };
  const warn = (msg: string, fields?: Record<string, unknown>) => log.warn(msg, fields);
  const schemas = new HostInformer<HostObject>(host, {
    what: 'flowschemas',
    path: `${FLOWCONTROL_PATH}/flowschemas`,
    log: warn,
    onChange,
  });
  const levels = new HostInformer<HostObject>(host, {
    what: 'prioritylevelconfigurations',
    path: `${FLOWCONTROL_PATH}/prioritylevelconfigurations`,
    log: warn,
    onChange,
  });
  void schemas.run(running.signal);
  void levels.run(running.signal);
  return {
    fromHost: () => schemas.hasSynced() && levels.hasSynced(),
    stop: () => running.abort(),
  };
}
