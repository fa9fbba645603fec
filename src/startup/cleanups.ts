/** What the start has set going, and how it is undone at shutdown or when a later step fails. */
import type { Logger } from '../log.js';

/** What the start has set going, undone in reverse: the HTTPS server first, the embedded etcd last, each logged. */
export class Cleanups {
  private readonly steps: [string, () => Promise<void>][] = [];

  constructor(private readonly log: Logger) {}

  add(step: string, cleanup: () => Promise<void>): void {
    this.steps.push([step, cleanup]);
  }

  async close(): Promise<void> {
    for (const [step, cleanup] of this.steps.splice(0).reverse()) {
      await cleanup().then(
        () => this.log.info(`shutdown: ${step} done`),
        (err) => this.log.error(`shutdown: ${step} failed`, { error: String(err) }),
      );
    }
  }
}
