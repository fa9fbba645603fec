/**
 * The requests of one priority level: at most its concurrency limit of seats in use, the rest waiting in fair
 * queues (kube's fairqueuing/queueset). A flow is dealt a hand of queues by shuffle sharding (a hash of its schema
 * and distinguisher picks handSize of the queues) and its request joins the one of the hand with the fewest seats
 * waiting, so a heavy flow fills only its own hand. Requests leave the queues by fair queuing in
 * virtual time: each queue has the virtual time (R, in seat-seconds) at which it next dispatches; R advances at the
 * rate the level's seats are shared among its busy queues; a dispatch moves its queue on by the request's seats
 * times the estimated service time, corrected by the real one when it finishes. The queue furthest behind goes
 * next, but only when its oldest request fits in the free seats (a wide request is not starved by narrow ones);
 * a request wider than the whole limit runs alone.
 *
 * Two bounds kube does not have, on what one flow holds: never all but `flowHeadroom` of the level's while another
 * flow is at work, and at most `flowSeatLimit` seats (--max-seats-per-flow) while a light flow, one asking for no
 * more than that, is at work in any level (activity.ts); a flow holding none may still start one request wider than either. kube's requests take
 * milliseconds on many cores, so seats turn over at once; here one thread runs them all, more of one flow's
 * requests at once make every other request's steps wait behind theirs, and a list of 10,000 objects holds its
 * seats for as long as the thread takes to get through every list running beside it. Held to them only while
 * others are at work, a flow alone may use every seat (and among flows that each ask for more, every seat but the
 * headroom): the bounds take nothing from anyone that no one else is waiting for. A request waiting on another server (stepAway, apimachinery/away.ts)
 * keeps the level's seats but not its flow's.
 *
 * A level that rejects (limitResponse Reject) has no queues: a request that does not fit is refused at once. The
 * exempt level is never limited. Everything here is synchronous and reads time from the injected clock: waiting
 * (and its limit) is the caller's.
 */
import { createHash } from 'node:crypto';
import type { FlowActivity } from './activity.js';
import type { QueuingConfiguration } from './types.js';

/** Milliseconds, as Date.now. */
export type Clock = () => number;

export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';

/** kube's initial estimate of how long a request runs, in seconds (G). */
const ESTIMATED_SERVICE_SECONDS = 0.003;

export interface QueueSetConfig {
  /** undefined: reject rather than queue; exempt: never limit. */
  queuing?: QueuingConfiguration;
  exempt?: boolean;
  /** Seats that may be in use at once (the level's current limit). */
  concurrencyLimit: number;
  /** Seats one flow leaves free for the others (0: none). */
  flowHeadroom?: number;
  /** The most seats one flow holds at once (undefined: the level's limit less the headroom). */
  flowSeatLimit?: number;
}

export interface SeatRequest {
  /** What decides its hand: the schema's name and the flow distinguisher. */
  flowSchema: string;
  distinguisher: string;
  seats: number;
  /**
   * A request that never makes its flow one at work (activity.ts): a health probe (/healthz, /livez, /readyz), and any
   * request without credentials (anonymous, on a public path). Otherwise anyone who can reach the port, with one
   * cheap request every half second, would hold every client alone to the bound for good.
   */
  bystander?: boolean;
  /**
   * Seats taken again by a request that gave them back while its client took its answer: it was let in once, so a
   * full queue does not refuse it (that would cut an answer half written).
   */
  admitted?: boolean;
  /** Called once, when the request may run. */
  onDispatch(): void;
}

/** A request the set knows: waiting, executing, or done. */
export class Ticket {
  state: 'waiting' | 'executing' | 'done' = 'waiting';
  queue?: Queue;
  arrivedAt = 0;
  arrivalR = 0;
  dispatchedAt = 0;
  /** Executing, but waiting on another server: its seats are not its flow's meanwhile (apimachinery/away.ts). */
  away = false;
  readonly flow: string;
  constructor(readonly request: SeatRequest) {
    this.flow = `${request.flowSchema}\0${request.distinguisher}`;
  }
}

export interface Queue {
  index: number;
  waiting: Ticket[];
  executing: number;
  seatsInUse: number;
  nextDispatchR: number;
}

/** Counts since start, for the dump and metrics. */
export interface QueueSetTotals {
  dispatched: number;
  rejected: Record<RejectReason, number>;
}

/** How many seats were wanted (in use and waiting) over a period: kube's seat demand statistics. */
export interface SeatDemand {
  average: number;
  stddev: number;
  highWatermark: number;
}

export type EnqueueResult =
  { dispatched: true; ticket: Ticket } | { queued: true; ticket: Ticket } | { rejected: RejectReason };

export class QueueSet {
  private queues: Queue[] = [];
  private config: QueueSetConfig;
  private currentR = 0;
  private lastRealTime: number;
  private robinIndex = -1;
  private seatsInUseTotal = 0;
  private executingTotal = 0;
  private waitingTotal = 0;
  private waitingSeatsTotal = 0;
  /** Seats in use by flow (schema and distinguisher), for the headroom a flow leaves. */
  private readonly flowSeats = new Map<string, number>();
  readonly totals: QueueSetTotals = {
    dispatched: 0,
    rejected: { 'queue-full': 0, 'concurrency-limit': 0, 'time-out': 0, cancelled: 0 },
  };
  private demand = { since: 0, last: 0, integral: 0, squares: 0, high: 0, held: 0 };

  constructor(
    config: QueueSetConfig,
    private readonly clock: Clock = Date.now,
    /** The flows at work across the levels, for the bound on one flow (none: never bounded). */
    private readonly activity?: FlowActivity,
  ) {
    this.config = config;
    this.lastRealTime = clock();
    this.demand.since = this.demand.last = this.lastRealTime;
    this.resize();
  }

  get concurrencyLimit(): number {
    return this.config.concurrencyLimit;
  }

  get seatsInUse(): number {
    return this.seatsInUseTotal;
  }

  get executing(): number {
    return this.executingTotal;
  }

  get waiting(): number {
    return this.waitingTotal;
  }

  get waitingSeats(): number {
    return this.waitingSeatsTotal;
  }

  get virtualTime(): number {
    return this.currentR;
  }

  /** The queues (copies of their counts), for the dump. */
  queueStates(): ReadonlyArray<Readonly<Queue>> {
    return this.queues;
  }

  /** A new configuration: waiting requests stay in their queues; queues beyond the new count go once drained. */
  reconfigure(config: QueueSetConfig): void {
    this.syncTime();
    this.config = config;
    this.resize();
    this.dispatchAsMuchAsPossible();
  }

  /** Starts a request: dispatched at once, queued, or rejected. */
  enqueue(request: SeatRequest): EnqueueResult {
    this.syncTime();
    const ticket = new Ticket(request);
    ticket.arrivedAt = this.clock();
    if (this.config.exempt) {
      this.arrive(ticket);
      this.start(ticket);
      return { dispatched: true, ticket };
    }
    if (!this.config.queuing) {
      if (!this.fits(request.seats)) return this.reject('concurrency-limit');
      this.arrive(ticket);
      this.start(ticket);
      return { dispatched: true, ticket };
    }
    const queue = this.chooseQueue(request);
    if (!request.admitted && queue.waiting.length >= this.config.queuing.queueLengthLimit)
      return this.reject('queue-full');
    this.arrive(ticket);
    // An idle queue starts at the present virtual time: it gets no credit for having been idle.
    if (!queue.waiting.length && !queue.executing) queue.nextDispatchR = this.currentR;
    ticket.queue = queue;
    ticket.arrivalR = this.currentR;
    queue.waiting.push(ticket);
    this.waitingTotal++;
    this.waitingSeatsTotal += request.seats;
    this.noteDemand();
    this.dispatchAsMuchAsPossible();
    return ticket.state === 'executing' ? { dispatched: true, ticket } : { queued: true, ticket };
  }

  /** A waiting request gives up (its wait limit passed, or its client left); false if it was no longer waiting. */
  cancel(ticket: Ticket, reason: 'time-out' | 'cancelled'): boolean {
    if (ticket.state !== 'waiting' || !ticket.queue) return false;
    this.syncTime();
    const queue = ticket.queue;
    queue.waiting.splice(queue.waiting.indexOf(ticket), 1);
    this.waitingTotal--;
    this.waitingSeatsTotal -= ticket.request.seats;
    ticket.state = 'done';
    this.totals.rejected[reason]++;
    this.leave(ticket);
    this.noteDemand();
    this.dropDrainedQueues();
    this.dispatchAsMuchAsPossible();
    return true;
  }

  /** Dispatches what may run now: after the flows at work changed elsewhere (a light flow's time ran out). */
  redispatch(): void {
    this.syncTime();
    this.dispatchAsMuchAsPossible();
  }

  /** An executing request is done: its seats free, its queue's virtual time corrected by its real service time. */
  finish(ticket: Ticket): void {
    if (ticket.state !== 'executing') return;
    this.syncTime();
    ticket.state = 'done';
    const seats = ticket.request.seats;
    this.seatsInUseTotal -= seats;
    this.executingTotal--;
    if (!ticket.away) this.addFlowSeats(ticket.flow, -seats);
    this.leave(ticket);
    const queue = ticket.queue;
    if (queue) {
      queue.seatsInUse -= seats;
      queue.executing--;
      const servedSeconds = (this.clock() - ticket.dispatchedAt) / 1000;
      queue.nextDispatchR -= seats * (ESTIMATED_SERVICE_SECONDS - servedSeconds);
      this.boundNextDispatch(queue);
    }
    this.noteDemand();
    this.dropDrainedQueues();
    this.dispatchAsMuchAsPossible();
  }

  /**
   * An executing request waits on another server (apimachinery/away.ts): its seats stay in use in the level, but no longer count
   * against its flow's bound, so the flow's next request may start.
   */
  stepAway(ticket: Ticket): void {
    if (ticket.state !== 'executing' || ticket.away) return;
    ticket.away = true;
    this.addFlowSeats(ticket.flow, -ticket.request.seats);
    this.dispatchAsMuchAsPossible();
  }

  /** It is back: its seats count against its flow again (which may then hold more than its bound, for a while). */
  stepBack(ticket: Ticket): void {
    if (!ticket.away) return;
    ticket.away = false;
    if (ticket.state === 'executing') this.addFlowSeats(ticket.flow, ticket.request.seats);
  }

  /** The seat demand since the last call, and a new period from now. */
  takeDemand(): SeatDemand {
    this.noteDemand();
    const d = this.demand;
    const span = d.last - d.since;
    const current = this.seatsInUseTotal + this.waitingSeatsTotal;
    const average = span > 0 ? d.integral / span : current;
    const variance = span > 0 ? Math.max(0, d.squares / span - average * average) : 0;
    const result = { average, stddev: Math.sqrt(variance), highWatermark: Math.max(d.high, current) };
    this.demand = { since: d.last, last: d.last, integral: 0, squares: 0, high: current, held: current };
    return result;
  }

  private reject(reason: RejectReason): EnqueueResult {
    this.totals.rejected[reason]++;
    return { rejected: reason };
  }

  private resize(): void {
    const wanted = this.config.queuing?.queues ?? 0;
    while (this.queues.length < wanted)
      this.queues.push({
        index: this.queues.length,
        waiting: [],
        executing: 0,
        seatsInUse: 0,
        nextDispatchR: this.currentR,
      });
    this.dropDrainedQueues();
  }

  /** Queues past the configured count are kept only while they hold requests. */
  private dropDrainedQueues(): void {
    const wanted = this.config.queuing?.queues ?? 0;
    while (this.queues.length > wanted) {
      const last = this.queues[this.queues.length - 1];
      if (last.waiting.length || last.executing) break;
      this.queues.pop();
    }
  }

  private chooseQueue(request: SeatRequest): Queue {
    const { queues, handSize } = this.config.queuing!;
    let best: Queue | undefined;
    let bestLoad = Infinity;
    for (const index of dealHand(flowHash(request.flowSchema, request.distinguisher), queues, handSize)) {
      const queue = this.queues[index];
      // kube's choice: the least work waiting (seats, each taking the same estimated time).
      const load = queue.waiting.reduce((sum, t) => sum + t.request.seats, 0);
      if (load < bestLoad) [best, bestLoad] = [queue, load];
    }
    return best!;
  }

  private dispatchAsMuchAsPossible(): void {
    while (this.waitingTotal > 0) {
      const queue = this.nextQueue();
      if (!queue) return;
      const ticket = queue.waiting.shift()!;
      this.waitingTotal--;
      this.waitingSeatsTotal -= ticket.request.seats;
      queue.nextDispatchR += ticket.request.seats * ESTIMATED_SERVICE_SECONDS;
      this.start(ticket);
      this.boundNextDispatch(queue);
    }
  }

  /**
   * The busy queue furthest behind in virtual time, when its oldest request fits; round robin among equals. Queues
   * whose oldest request's flow holds all it may (overFlowShare) wait for that flow's own requests to end.
   */
  private nextQueue(): Queue | undefined {
    let best: Queue | undefined;
    const n = this.queues.length;
    for (let i = 1; i <= n; i++) {
      const queue = this.queues[(this.robinIndex + i) % n];
      if (!queue.waiting.length || this.overFlowShare(queue.waiting[0])) continue;
      if (!best || queue.nextDispatchR < best.nextDispatchR) best = queue;
    }
    if (!best || !this.fits(best.waiting[0].request.seats)) return undefined;
    this.robinIndex = best.index;
    return best;
  }

  /**
   * Whether dispatching the ticket would leave less than the headroom to other flows, or take its flow past the
   * bound while a light flow is at work (see the header).
   */
  private overFlowShare(ticket: Ticket): boolean {
    const held = this.flowSeats.get(ticket.flow);
    if (!held) return false;
    const { concurrencyLimit, flowHeadroom = 0, flowSeatLimit } = this.config;
    const bounded = flowSeatLimit !== undefined && !!this.activity?.lightFlowBesides(ticket.flow);
    // Without the activity of flows (a level on its own), the headroom is always left.
    const headroom = this.activity && !this.activity.othersBesides(ticket.flow) ? 0 : flowHeadroom;
    const most = bounded ? Math.min(concurrencyLimit - headroom, flowSeatLimit) : concurrencyLimit - headroom;
    return held + ticket.request.seats > most;
  }

  /** A request joins its flow's demand (activity.ts). */
  private arrive(ticket: Ticket): void {
    if (!ticket.request.bystander) this.activity?.arrived(ticket.flow, ticket.request.seats);
  }

  /** It leaves its flow's demand: done, or gave up waiting. */
  private leave(ticket: Ticket): void {
    if (!ticket.request.bystander) this.activity?.ended(ticket.flow, ticket.request.seats);
  }

  private fits(seats: number): boolean {
    // A request wider than the whole limit would never fit: it runs once nothing else does.
    if (seats > this.config.concurrencyLimit) return this.executingTotal === 0;
    return this.seatsInUseTotal + seats <= this.config.concurrencyLimit;
  }

  private start(ticket: Ticket): void {
    ticket.state = 'executing';
    ticket.dispatchedAt = this.clock();
    this.seatsInUseTotal += ticket.request.seats;
    this.executingTotal++;
    this.addFlowSeats(ticket.flow, ticket.request.seats);
    if (ticket.queue) {
      ticket.queue.seatsInUse += ticket.request.seats;
      ticket.queue.executing++;
    }
    this.totals.dispatched++;
    this.noteDemand();
    ticket.request.onDispatch();
  }

  private addFlowSeats(flow: string, seats: number): void {
    const held = (this.flowSeats.get(flow) ?? 0) + seats;
    if (held > 0) this.flowSeats.set(flow, held);
    else this.flowSeats.delete(flow);
  }

  /** A queue's next dispatch is never earlier than the arrival of its oldest waiting request (kube's bound). */
  private boundNextDispatch(queue: Queue): void {
    const oldest = queue.waiting[0];
    if (oldest && queue.nextDispatchR < oldest.arrivalR) queue.nextDispatchR = oldest.arrivalR;
  }

  /** Advances virtual time to now: at the seats the busy queues ask for (at most the limit), shared among them. */
  private syncTime(): void {
    const now = this.clock();
    const elapsed = Math.max(0, now - this.lastRealTime) / 1000;
    this.lastRealTime = now;
    let active = 0;
    let requested = 0;
    for (const queue of this.queues) {
      if (queue.waiting.length || queue.executing) active++;
      requested += queue.seatsInUse + queue.waiting.reduce((sum, t) => sum + t.request.seats, 0);
    }
    if (active) this.currentR += (elapsed * Math.min(requested, this.config.concurrencyLimit)) / active;
  }

  private noteDemand(): void {
    const now = this.clock();
    const d = this.demand;
    const span = Math.max(0, now - d.last);
    // The demand that held since the last change: it changes only where this is called.
    d.integral += d.held * span;
    d.squares += d.held * d.held * span;
    d.last = now;
    d.held = this.seatsInUseTotal + this.waitingSeatsTotal;
    d.high = Math.max(d.high, d.held);
  }
}

/** kube's flow hash: the first 8 bytes of SHA-256 of schema name, a zero byte and distinguisher, little-endian. */
export function flowHash(flowSchema: string, distinguisher: string): bigint {
  const digest = createHash('sha256')
    .update(flowSchema)
    .update(Buffer.from([0]))
    .update(distinguisher)
    .digest();
  return digest.readBigUInt64LE(0);
}

/**
 * Shuffle sharding (kube's shufflesharding.Dealer): `handSize` distinct queues out of `deckSize`, read from the
 * hash as digits of a mixed radix (deckSize, deckSize-1, ...), each digit an index among the queues not yet dealt.
 */
export function dealHand(hash: bigint, deckSize: number, handSize: number): number[] {
  const hand: number[] = [];
  let value = hash;
  for (let i = 0; i < handSize; i++) {
    const radix = BigInt(deckSize - i);
    let card = Number(value % radix);
    value /= radix;
    // The card-th of the queues not dealt yet.
    for (const dealt of [...hand].sort((a, b) => a - b)) if (card >= dealt) card++;
    hand.push(card);
  }
  return hand;
}
