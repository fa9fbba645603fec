/**
 * Turns for requests whose body is still coming. A request's seats are taken before its body is read (kube reads it
 * in the handler, after priority and fairness and authorization), and a request whose body trickles, or never comes,
 * holds them without using the thread until its deadline. The bound on one flow (--max-seats-per-flow) is lifted
 * while no other flow is at work, so one client alone could take every seat of its level with such requests, and
 * the next client would find none free for a minute. So a request that arrives with its body not all here first
 * waits, holding no seat, for one of its flow's turns (as many as the bound), and keeps it until its body is read or
 * it ends. Bodies that come with their headers (nearly all) need no turn.
 */
interface Waiter {
  granted: () => void;
}

/** A turn, held until `done` (which may be called more than once); `cancel` while still waiting. */
export interface BodyTurn {
  /** Whether it was granted at once. */
  readonly now: boolean;
  done(): void;
}

export class BodyTurns {
  private readonly held = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();

  /** `perFlow`: turns one flow holds at once (--max-seats-per-flow; 0: no turns, every request goes on). */
  constructor(readonly perFlow: number) {}

  /**
   * A turn for `flow`: `granted` is called when it has one (at once, before this returns, if one is free). `done`
   * gives it back, or leaves the line if it was not granted yet.
   */
  take(flow: string, granted: () => void): BodyTurn {
    if (this.perFlow <= 0) {
      granted();
      return { now: true, done: () => {} };
    }
    let state: 'waiting' | 'holding' | 'done' = 'waiting';
    const waiter: Waiter = {
      granted: () => {
        state = 'holding';
        this.held.set(flow, (this.held.get(flow) ?? 0) + 1);
        granted();
      },
    };
    const now = (this.held.get(flow) ?? 0) < this.perFlow && !this.waiting.has(flow);
    if (now) waiter.granted();
    else this.line(flow).push(waiter);
    return {
      now,
      done: () => {
        if (state === 'done') return;
        const was = state;
        state = 'done';
        if (was === 'waiting') return this.leaveLine(flow, waiter);
        const left = (this.held.get(flow) ?? 1) - 1;
        if (left > 0) this.held.set(flow, left);
        else this.held.delete(flow);
        this.grantNext(flow);
      },
    };
  }

  /** Turns held and waited for now (for tests: the waiting ones are on /metrics). */
  get counts(): { held: number; waiting: number } {
    let held = 0;
    let waiting = 0;
    for (const n of this.held.values()) held += n;
    for (const line of this.waiting.values()) waiting += line.length;
    return { held, waiting };
  }

  private line(flow: string): Waiter[] {
    let line = this.waiting.get(flow);
    if (!line) this.waiting.set(flow, (line = []));
    return line;
  }

  private leaveLine(flow: string, waiter: Waiter): void {
    const line = this.waiting.get(flow);
    if (!line) return;
    const i = line.indexOf(waiter);
    if (i >= 0) line.splice(i, 1);
    if (line.length === 0) this.waiting.delete(flow);
  }

  private grantNext(flow: string): void {
    const line = this.waiting.get(flow);
    const next = line?.shift();
    if (line && line.length === 0) this.waiting.delete(flow);
    next?.granted();
  }
}
