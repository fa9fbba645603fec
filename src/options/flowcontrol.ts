/** API Priority and Fairness, or the two in-flight limits in its place. */
import { FlagError, type Options } from './flag.js';
import { bool, count } from './values.js';

export interface FlowControlConfig {
  /**
   * Requests (other than watches and those of system:masters) served at once: read-only and mutating. With API
   * Priority and Fairness, their sum is the seats shared among the priority levels.
   */
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** API Priority and Fairness in place of the two in-flight limits (kube's --enable-priority-and-fairness). */
  enablePriorityAndFairness: boolean;
  /** The most seats one flow holds at once in a level that queues (0: no bound but the level's). */
  maxSeatsPerFlow: number;
}

export const flowControlOptions: Options<FlowControlConfig> = {
  concern: 'flowcontrol',
  flags: [
    {
      name: 'max-requests-inflight',
      arg: 'int',
      default: '400',
      help: 'With --enable-priority-and-fairness (the default), this and --max-mutating-requests-inflight are summed into the seats shared among the priority levels (the sum must be positive). Without it: read-only requests served at once; past it 429 TooManyRequests with Retry-After (watches and system:masters are not counted; {default}, 0 for no limit).',
      apply: (c, v) => (c.maxRequestsInflight = count('max-requests-inflight', v)),
    },
    {
      name: 'max-mutating-requests-inflight',
      arg: 'int',
      default: '200',
      help: 'Summed with --max-requests-inflight as above; without --enable-priority-and-fairness, mutating requests (create, update, patch, delete) served at once; past it 429 as above ({default}, 0 for no limit).',
      apply: (c, v) => (c.maxMutatingRequestsInflight = count('max-mutating-requests-inflight', v)),
    },
    {
      name: 'enable-priority-and-fairness',
      arg: 'bool',
      default: 'true',
      help: "API Priority and Fairness: requests are classified by FlowSchemas into priority levels (the host cluster's flowcontrol.apiserver.k8s.io/v1 objects, or kube's built-in ones without a host cluster), each with its share of the server's seats and fair queues per user or namespace. false: the two in-flight limits instead ({default}).",
      apply: (c, v) => (c.enablePriorityAndFairness = bool('enable-priority-and-fairness', v)),
    },
    {
      name: 'max-seats-per-flow',
      arg: 'int',
      default: '1',
      help: "With --enable-priority-and-fairness: the most seats one flow (a FlowSchema's user or namespace) may hold at once in a priority level that queues; its other requests wait in its queues even while the level has seats free, and one wider than this runs when the flow holds none. A request waiting on the host or a cluster does not count meanwhile. It is also how many of a flow's requests whose body has not all come hold seats at once, even alone (the others wait, holding none). Each worker is one thread: more of one flow's requests at once only lengthen every other flow's wait. 0: no bound but the level's, as kube-apiserver ({default}).",
      apply: (c, v) => (c.maxSeatsPerFlow = count('max-seats-per-flow', v)),
    },
  ],
  validate(config) {
    if (config.enablePriorityAndFairness && config.maxRequestsInflight + config.maxMutatingRequestsInflight <= 0)
      throw new FlagError(
        '--max-requests-inflight plus --max-mutating-requests-inflight must be positive with --enable-priority-and-fairness (their sum is the seats shared among the priority levels); set either, or --enable-priority-and-fairness=false for no limit',
      );
  },
};
