/**
 * The seats a running request holds in its priority level, and the figures that follow them (executing requests and
 * seats, in-flight counts): given back for good once (`release`), or for a while, as the request waits for its
 * client to take its answer (`whileClientTakes`), and taken again then, waiting in its queue. While it waits on
 * another server it keeps them, but they stop counting against its flow's bound (apimachinery/away.ts).
 */
import type { ServerResponse } from 'node:http';
import { countedHold, type FlowHold } from '../apimachinery/away.js';
import { requestEnded } from '../apimachinery/requestend.js';
import type { QueueSet, Ticket } from '../flowcontrol/queueset.js';
import type { FlowControlMetrics, FlowLabels } from '../observability/flowcontrol.js';
import type { InFlightCounts } from '../observability/metrics.js';

export interface HeldSeatsOptions {
  queueSet: QueueSet;
  labels: FlowLabels;
  seats: number;
  watch: boolean;
  kind: keyof InFlightCounts;
  /** How long a write's seats stay taken after it, for the work of sending its event to the watches. */
  additionalLatencyMs: number;
  metrics?: FlowControlMetrics;
  inFlight?: InFlightCounts;
}

export class HeldSeats {
  private held?: { ticket: Ticket; started: number; stopped?: (seconds: number) => void };
  private released = false;

  constructor(
    private readonly o: HeldSeatsOptions,
    ticket: Ticket,
  ) {
    this.take(ticket, false);
  }

  /** Gives them back for good (later calls do nothing). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.giveBack(true);
  }

  /** The request's hold (apimachinery/away.ts); `takeAgain` waits for its seats in its queue. */
  hold(res: ServerResponse, takeAgain: () => Promise<Ticket>): FlowHold {
    return {
      ...countedHold(
        () => this.held && this.o.queueSet.stepAway(this.held.ticket),
        () => this.held && this.o.queueSet.stepBack(this.held.ticket),
      ),
      whileClientTakes: async (wait) => {
        if (this.released || !this.held) return wait();
        this.giveBack(false);
        await wait();
        if (this.released || requestEnded(res)) return;
        const again = await takeAgain();
        if (this.released) this.o.queueSet.finish(again);
        else this.take(again, true);
      },
    };
  }

  private take(ticket: Ticket, again: boolean): void {
    const { metrics, labels, seats, watch, inFlight, kind } = this.o;
    this.held = { ticket, started: performance.now(), stopped: metrics?.dispatched(labels, seats, watch, again) };
    if (inFlight) inFlight[kind]++;
  }

  private giveBack(last: boolean): void {
    if (!this.held) return;
    const { ticket, started, stopped } = this.held;
    this.held = undefined;
    if (this.o.inFlight) this.o.inFlight[this.o.kind]--;
    stopped?.((performance.now() - started) / 1000);
    const { queueSet, additionalLatencyMs } = this.o;
    if (last && additionalLatencyMs > 0) setTimeout(() => queueSet.finish(ticket), additionalLatencyMs).unref();
    else queueSet.finish(ticket);
  }
}
