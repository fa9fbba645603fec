/**
 * The waits between tries after failures, as kube's wait.Backoff (Duration, Factor, Cap) and wait.Jitter, on
 * cockatiel's ExponentialBackoff: the first wait is `initialMs`, each next one `factor` times longer, never longer
 * than `maxMs`. One place for them, so that every loop that tries again (watches, leader election, the work queue,
 * the audit webhook, the workers) waits alike and none spins. In the lowest layer, so that storage, the host client,
 * the controllers and the process's own loops all reach it.
 */
import { ExponentialBackoff, type IBackoff, type IBackoffFactory } from 'cockatiel';

export interface BackoffOptions {
  /** The first wait (ms). */
  initialMs: number;
  /** The longest wait (ms); default: no bound. */
  maxMs?: number;
  /** How much longer each wait is than the one before; default 2. */
  factor?: number;
}

/**
 * The waits as a cockatiel backoff factory: `next()` of it (or of the last step) is the next step, so a caller may
 * keep one step per key (the work queue) or run one sequence (Backoff).
 */
export function exponentialBackoff(opts: BackoffOptions): IBackoffFactory<unknown> {
  const factor = opts.factor ?? 2;
  const maxMs = opts.maxMs ?? Infinity;
  // cockatiel's own no-jitter generator knows only the factor 2: this one is kube's, any factor, capped.
  return new ExponentialBackoff<number>({
    initialDelay: opts.initialMs,
    maxDelay: maxMs,
    exponent: factor,
    generator: (attempt = 0, o) => [Math.min(o.maxDelay, o.initialDelay * o.exponent ** attempt), attempt + 1],
  });
}

/** One sequence of waits: `next()` is the wait before the next try, `reset()` starts again from the first. */
export class Backoff {
  private readonly factory: IBackoffFactory<unknown>;
  private step?: IBackoff<unknown>;

  constructor(opts: BackoffOptions) {
    this.factory = exponentialBackoff(opts);
  }

  next(): number {
    this.step = (this.step ?? this.factory).next(undefined);
    return this.step.duration;
  }

  /** After a success: the next failure waits the first wait again. */
  reset(): void {
    this.step = undefined;
  }
}

/** kube's wait.Jitter: `ms` plus up to `fraction` of it at random (so that many waiting clients do not try at once). */
export function withJitter(ms: number, fraction: number, random: () => number = Math.random): number {
  return ms * (1 + random() * fraction);
}
