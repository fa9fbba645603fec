/** The flow control step: API Priority and Fairness and its configuration's informers. */
import type { Config } from '../config.js';
import { FlowControl } from '../flowcontrol/controller.js';
import { startFlowControlSource } from '../flowcontrol/source.js';
import type { HostCluster } from '../host/cluster.js';
import type { Logger } from '../log.js';
import type { Cleanups } from './cleanups.js';

/** API Priority and Fairness, unless --enable-priority-and-fairness=false (then the two in-flight limits). */
export function startFlowControl(
  config: Config,
  log: Logger,
  host: HostCluster | undefined,
  cleanups: Cleanups,
): FlowControl | undefined {
  if (!config.enablePriorityAndFairness) return undefined;
  const flowControl = new FlowControl(
    config.maxRequestsInflight + config.maxMutatingRequestsInflight,
    log,
    Date.now,
    config.maxSeatsPerFlow,
  );
  const source = startFlowControlSource(flowControl, host, log);
  cleanups.add('stopping the priority and fairness informers', async () => source.stop());
  return flowControl;
}
