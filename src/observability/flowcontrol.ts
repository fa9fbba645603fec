/**
 * API Priority and Fairness metrics, with kube's names, labels and buckets (k8s.io/apiserver/pkg/util/flowcontrol/
 * metrics): requests dispatched and rejected (by reason: queue-full, concurrency-limit, time-out, cancelled), those
 * waiting and executing now and their seats, how long they waited and ran, the seats estimated, and each level's
 * nominal, lower, upper and current limits (read when scraped); and, not kube's, the requests waiting for a body turn.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FlowControl } from '../flowcontrol/controller.js';
import type { RejectReason } from '../flowcontrol/queueset.js';

const FLOW = ['priority_level', 'flow_schema'] as const;
/** kube's buckets of the wait and execution durations. */
const DURATION_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];

export interface FlowLabels {
  priority_level: string;
  flow_schema: string;
}

export class FlowControlMetrics {
  private readonly dispatchedTotal: Counter<(typeof FLOW)[number]>;
  private readonly rejectedTotal: Counter<(typeof FLOW)[number] | 'reason'>;
  private readonly inQueue: Gauge<(typeof FLOW)[number]>;
  private readonly inQueueSeats: Gauge<(typeof FLOW)[number]>;
  private readonly executing: Gauge<(typeof FLOW)[number]>;
  private readonly executingSeats: Gauge<(typeof FLOW)[number]>;
  private readonly waitDurations: Histogram<(typeof FLOW)[number] | 'execute'>;
  private readonly executionDurations: Histogram<(typeof FLOW)[number] | 'type'>;
  private readonly estimatedSeats: Histogram<(typeof FLOW)[number]>;
  private readonly bodyTurnWaiting: Gauge<(typeof FLOW)[number]>;

  constructor(registry: Registry, flowControl: FlowControl) {
    const registers = [registry];
    this.dispatchedTotal = new Counter({
      name: 'apiserver_flowcontrol_dispatched_requests_total',
      help: 'Number of requests executed by API Priority and Fairness subsystem',
      labelNames: FLOW,
      registers,
    });
    this.rejectedTotal = new Counter({
      name: 'apiserver_flowcontrol_rejected_requests_total',
      help: 'Number of requests rejected by API Priority and Fairness subsystem',
      labelNames: [...FLOW, 'reason'],
      registers,
    });
    this.inQueue = new Gauge({
      name: 'apiserver_flowcontrol_current_inqueue_requests',
      help: 'Number of requests currently pending in queues of the API Priority and Fairness subsystem',
      labelNames: FLOW,
      registers,
    });
    this.inQueueSeats = new Gauge({
      name: 'apiserver_flowcontrol_current_inqueue_seats',
      help: 'Number of seats currently pending in queues of the API Priority and Fairness subsystem',
      labelNames: FLOW,
      registers,
    });
    this.executing = new Gauge({
      name: 'apiserver_flowcontrol_current_executing_requests',
      help: 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem',
      labelNames: FLOW,
      registers,
    });
    this.executingSeats = new Gauge({
      name: 'apiserver_flowcontrol_current_executing_seats',
      help: 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
      labelNames: FLOW,
      registers,
    });
    this.waitDurations = new Histogram({
      name: 'apiserver_flowcontrol_request_wait_duration_seconds',
      help: 'Length of time a request spent waiting in its queue',
      labelNames: [...FLOW, 'execute'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.executionDurations = new Histogram({
      name: 'apiserver_flowcontrol_request_execution_seconds',
      help: 'Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem',
      labelNames: [...FLOW, 'type'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.estimatedSeats = new Histogram({
      name: 'apiserver_flowcontrol_work_estimated_seats',
      help: 'Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness',
      labelNames: FLOW,
      buckets: [1, 2, 4, 10],
      registers,
    });
    // Not kube's: requests whose body is still coming, waiting for a turn of their flow (flowcontrol/bodyturns.ts).
    this.bodyTurnWaiting = new Gauge({
      name: 'apiserver_flowcontrol_current_body_turn_waiting_requests',
      help: 'Number of requests whose body had not all come, waiting (holding no seat) for a turn of their flow',
      labelNames: FLOW,
      registers,
    });
    limitGauges(registers, flowControl);
  }

  estimated(labels: FlowLabels, seats: number): void {
    this.estimatedSeats.observe(labels, seats);
  }

  queued(labels: FlowLabels, seats: number): void {
    this.inQueue.inc(labels);
    this.inQueueSeats.inc(labels, seats);
  }

  /** A request leaves its queue: to run, or refused. */
  dequeued(labels: FlowLabels, seats: number, waitedSeconds: number, execute: boolean): void {
    this.inQueue.dec(labels);
    this.inQueueSeats.dec(labels, seats);
    this.waitDurations.observe({ ...labels, execute: String(execute) }, waitedSeconds);
  }

  /**
   * A request starts (after waiting or not), or takes its seats `again` after giving them back while its client took
   * its answer (counted as dispatched once); returns what to call when it stops occupying them.
   */
  dispatched(labels: FlowLabels, seats: number, watch: boolean, again = false): (executedSeconds: number) => void {
    if (!again) this.dispatchedTotal.inc(labels);
    this.executing.inc(labels);
    this.executingSeats.inc(labels, seats);
    return (executedSeconds) => {
      this.executing.dec(labels);
      this.executingSeats.dec(labels, seats);
      this.executionDurations.observe({ ...labels, type: watch ? 'watch' : 'regular' }, executedSeconds);
    };
  }

  /** A request starts waiting for a body turn; returns what to call when it stops. */
  waitingForBodyTurn(labels: FlowLabels): () => void {
    this.bodyTurnWaiting.inc(labels);
    let stopped = false;
    return () => {
      if (!stopped) this.bodyTurnWaiting.dec(labels);
      stopped = true;
    };
  }

  rejected(labels: FlowLabels, reason: RejectReason, waitedSeconds?: number): void {
    this.rejectedTotal.inc({ ...labels, reason });
    if (waitedSeconds === undefined) this.waitDurations.observe({ ...labels, execute: 'false' }, 0);
  }
}

/** Each priority level's seat limits (nominal, lower and upper bounds, and the current one), read at each scrape. */
function limitGauges(registers: Registry[], flowControl: FlowControl): void {
  const limitGauge = (name: string, help: string, value: (l: ReturnType<FlowControl['levels']>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['priority_level'],
      registers,
      collect() {
        this.reset();
        for (const level of flowControl.levels()) this.set({ priority_level: level.name }, value(level));
      },
    });
  limitGauge(
    'apiserver_flowcontrol_nominal_limit_seats',
    'Nominal number of execution seats configured for each priority level',
    (l) => l.bounds.nominal,
  );
  limitGauge(
    'apiserver_flowcontrol_lower_limit_seats',
    'Configured lower bound on number of execution seats available to each priority level',
    (l) => l.bounds.lower,
  );
  limitGauge(
    'apiserver_flowcontrol_upper_limit_seats',
    'Configured upper bound on number of execution seats available to each priority level',
    (l) => l.bounds.upper,
  );
  limitGauge(
    'apiserver_flowcontrol_current_limit_seats',
    'current derived number of execution seats available to each priority level',
    (l) => (l.exempt ? l.bounds.nominal : l.queueSet.concurrencyLimit),
  );
}
