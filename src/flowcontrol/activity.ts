/**
 * Which flows are at work now, across every priority level, for the bound on one flow's seats (queueset.ts). One
 * thread runs every request here: what hurts a flow that asks little (a person's kubectl, a controller's GETs) is how
 * many other requests run beside each of its own, in any level, so a flow that asks for more than the bound
 * (--max-seats-per-flow) is held to it while a flow that asks no more is at work; with none at work it may use every
 * seat of its level. That keeps the bound work-conserving: a client alone gets the whole server, and flows that each
 * ask for more than the bound share their levels by fair queuing alone, as in kube.
 *
 * A flow asks for the seats of its requests running and waiting. One that asks no more than the bound is *light*,
 * and counts as at work while it has a request and for `windowMs` after its last one ended, so that a client sending
 * one request after another is protected between them too. The headroom a flow leaves to others (queueset.ts) is
 * left only while another flow, light or not, is at work. When a flow's time runs out, `quiet` is called, for the
 * levels to give the seats they held back.
 */
interface Flow {
  /** Seats of its requests running or waiting. */
  seats: number;
  /** Set while it has none, until its window ends. */
  timer?: NodeJS.Timeout;
}

export class FlowActivity {
  private readonly flows = new Map<string, Flow>();
  /** How many known flows ask for no more than the bound (none, within their window, included): light ones. */
  private light = 0;

  constructor(
    /** The seats a flow may ask for and be light: --max-seats-per-flow (0: no flow is ever bounded). */
    readonly bound: number,
    private readonly windowMs: number,
    private readonly quiet: () => void,
  ) {}

  /** A request of `flow` asking for `seats` arrived (it waits or runs). */
  arrived(flow: string, seats: number): void {
    const f = this.flows.get(flow) ?? this.add(flow);
    clearTimeout(f.timer);
    f.timer = undefined;
    this.change(f, seats);
  }

  /** A request of `flow` ended (done, or gave up waiting). */
  ended(flow: string, seats: number): void {
    const f = this.flows.get(flow);
    if (!f) return;
    this.change(f, -Math.min(seats, f.seats));
    if (f.seats > 0) return;
    // Idle: still at work (and light) for the window, then forgotten.
    f.timer = setTimeout(() => {
      if (this.flows.get(flow) !== f || f.seats > 0) return;
      this.flows.delete(flow);
      this.light--;
      this.quiet();
    }, this.windowMs);
    f.timer.unref();
  }

  /** Whether a light flow other than `flow` is at work: then `flow` is held to the bound. */
  lightFlowBesides(flow: string): boolean {
    if (this.bound <= 0) return false;
    const self = this.flows.get(flow);
    return this.light - (self && this.isLight(self) ? 1 : 0) > 0;
  }

  /** Whether any flow other than `flow` is at work: then `flow` leaves its level's headroom to others. */
  othersBesides(flow: string): boolean {
    return this.flows.size - (this.flows.has(flow) ? 1 : 0) > 0;
  }

  /** Flows known now (at work, or within their window), for the dump. */
  get size(): number {
    return this.flows.size;
  }

  private add(flow: string): Flow {
    const f: Flow = { seats: 0 };
    this.flows.set(flow, f);
    this.light++;
    return f;
  }

  private change(f: Flow, by: number): void {
    const was = this.isLight(f);
    f.seats += by;
    const is = this.isLight(f);
    if (was !== is) this.light += is ? 1 : -1;
  }

  private isLight(f: Flow): boolean {
    return f.seats <= this.bound;
  }
}
