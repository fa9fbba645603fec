/**
 * The error lines of audit events a backend drops (the webhook's full buffer, a log file that is not keeping up):
 * the first at once, then at most one every DROP_LOG_INTERVAL_MS with how many were dropped since the last, so a
 * flood of drops writes a few lines (kube logs each dropped event, contents and all). They name no event: what an
 * event holds is for the audit, not the server's log.
 */
import type { Logger } from '../log.js';

/** How often at most a backend's drops are logged. */
const DROP_LOG_INTERVAL_MS = 10_000;

export class DropLog {
  private unlogged = 0;
  private timer?: NodeJS.Timeout;

  /** Each line is `message` with `dropped` and `fields` (the bounds that were reached). */
  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly fields: Record<string, unknown>,
  ) {}

  dropped(): void {
    this.unlogged++;
    if (!this.timer) this.report();
  }

  /** Logs what is not logged yet, and no more. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.unlogged) this.write();
  }

  /** Logs what was dropped since the last line, if any, and waits the interval before the next. */
  private report(): void {
    this.timer = undefined;
    if (!this.unlogged) return;
    this.write();
    this.timer = setTimeout(() => this.report(), DROP_LOG_INTERVAL_MS);
    this.timer.unref();
  }

  private write(): void {
    this.log.error(this.message, { dropped: this.unlogged, ...this.fields });
    this.unlogged = 0;
  }
}
