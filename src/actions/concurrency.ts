/**
 * How many calls of one costly kind are served at once: at most `perUser` for one user name, and `total` in all.
 * Past either a call is refused at once with 429 TooManyRequests and `Retry-After: 1`, as kube-apiserver's
 * max-in-flight filter refuses (client-go retries then), instead of waiting behind the others. A call holds its place
 * until its work is done, not only until its caller was answered (a timed-out request's work still holds memory).
 */
import * as errors from '../apimachinery/status.js';

export class ConcurrencyLimit {
  private readonly running = new Map<string, number>();
  private total = 0;

  /** `what` names the calls in the refusal ("kube config requests"). */
  constructor(
    private readonly what: string,
    private readonly limits: { perUser: number; total: number },
  ) {}

  /** Runs `fn` for `user`, or throws the 429 when a bound is reached. */
  async run<T>(user: string, fn: () => Promise<T>): Promise<T> {
    const mine = this.running.get(user) ?? 0;
    if (mine >= this.limits.perUser)
      throw errors.tooManyRequests(
        `Too many ${this.what} at once: at most ${this.limits.perUser} per user; please try again later.`,
      );
    if (this.total >= this.limits.total)
      throw errors.tooManyRequests(
        `Too many ${this.what} at once: at most ${this.limits.total} in all; please try again later.`,
      );
    this.running.set(user, mine + 1);
    this.total++;
    try {
      return await fn();
    } finally {
      this.total--;
      const left = this.running.get(user)! - 1;
      if (left) this.running.set(user, left);
      else this.running.delete(user);
    }
  }
}
