/**
 * The audit webhook (--audit-webhook-config-file), as kube-apiserver's in batch mode: events are sent as one
 * audit.k8s.io/v1 EventList once --audit-webhook-batch-max-size (400) are waiting or --audit-webhook-batch-max-wait
 * (30s) has passed since the first, at most --audit-webhook-batch-throttle-qps (10) batches a second with bursts of
 * --audit-webhook-batch-throttle-burst (15) (unless throttling is disabled). Requests never wait for the webhook.
 *
 * --audit-webhook-batch-buffer-size (10000) bounds every event the webhook holds: waiting, in batches waiting for the
 * throttle or a retry, and in flight; an event past it is dropped. (kube-apiserver bounds only the events waiting: its
 * batches on their way have no bound but the throttle's rate times the length of their tries, minutes for a receiver
 * that hangs.) A dropped event counts in kube's apiserver_audit_error_total: {plugin="buffered"} for a full buffer, as
 * kube's buffered backend counts it, {plugin="webhook"} for a batch the receiver failed. A full buffer writes an error
 * line at once, then one every DROP_LOG_INTERVAL_MS at most saying how many were dropped since (kube logs each dropped
 * event, contents and all). apiserver_audit_webhook_buffered_events (ours) is what the webhook holds.
 *
 * The file is a kubeconfig (its current context: the receiver's URL, CA, client certificate or token), read once at
 * start. A batch the receiver fails (a network error, 429 or 5xx) is sent again after --audit-webhook-initial-backoff
 * (10s), then 1.5 times longer each time (with up to 20% jitter), five tries in all, as kube's retry; then it is
 * dropped, with an error in the log. Another answer (a 4xx) drops it at once. At shutdown what is buffered is sent,
 * and the server waits for the batches on their way, each for the try it is in (no more retries then).
 */
import type { Logger } from '../log.js';
import { loadKubeconfigFile } from '../host/kubeconfig.js';
import { HostClusterError, KubeRequests } from '../host/kuberequest.js';
import type { AuditEvent, AuditSink } from './audit.js';

/** kube's audit metrics, in the parts the webhook reports (src/observability/metrics.ts implements them). */
export interface AuditWebhookMetrics {
  /** Events lost to `plugin`'s error: apiserver_audit_error_total{plugin}. */
  failed(plugin: 'buffered' | 'webhook', events: number): void;
  /** The events the webhook holds are read at each scrape. */
  buffered(read: () => number): void;
}

export interface AuditWebhookOptions {
  /** The kubeconfig naming the receiver. */
  kubeconfigPath: string;
  initialBackoffMs: number;
  bufferSize: number;
  maxBatchSize: number;
  maxBatchWaitMs: number;
  /** Batches a second and burst; undefined: not throttled. */
  throttle?: { qps: number; burst: number };
  log: Logger;
  metrics: AuditWebhookMetrics;
}

/** kube's retry of webhook calls: wait.Backoff{Duration: initial, Factor: 1.5, Jitter: 0.2, Steps: 5}. */
const TRIES = 5;
const BACKOFF_FACTOR = 1.5;
const BACKOFF_JITTER = 0.2;
/** kube's timeout of one webhook call. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How often at most a full buffer's drops are logged. */
const DROP_LOG_INTERVAL_MS = 10_000;

export class AuditWebhook implements AuditSink {
  private readonly client: KubeRequests;
  private readonly throttle?: TokenBucket;
  /** A batch never waits for more events than the buffer may hold. */
  private readonly batchSize: number;
  private buffer: AuditEvent[] = [];
  /** Events in the buffer and in batches not yet sent or dropped: at most opts.bufferSize. */
  private held = 0;
  private readonly drops: DropLog;
  private timer?: NodeJS.Timeout;
  private readonly sending = new Set<Promise<void>>();
  private closed = false;
  /** Ends the waits between tries at shutdown: what is left is sent at once. */
  private readonly stopWaiting = new AbortController();

  constructor(private readonly opts: AuditWebhookOptions) {
    this.client = new KubeRequests(loadKubeconfigFile(opts.kubeconfigPath), { timeoutMs: REQUEST_TIMEOUT_MS });
    if (opts.throttle) this.throttle = new TokenBucket(opts.throttle.qps, opts.throttle.burst);
    this.batchSize = Math.min(opts.maxBatchSize, opts.bufferSize);
    this.drops = new DropLog(opts.log, opts.bufferSize);
    opts.metrics.buffered(() => this.held);
  }

  write(event: AuditEvent): void {
    if (this.closed) return;
    if (this.held >= this.opts.bufferSize) {
      this.opts.metrics.failed('buffered', 1);
      this.drops.dropped();
      return;
    }
    this.held++;
    this.buffer.push(event);
    if (this.buffer.length >= this.batchSize) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.opts.maxBatchWaitMs);
  }

  /** Sends what is buffered and waits for every batch on its way (a wait between tries ends at once). */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    this.stopWaiting.abort();
    this.drops.close();
    while (this.sending.size) await Promise.all(this.sending);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.buffer.length) {
      const batch = this.buffer.splice(0, this.batchSize);
      const sent = this.send(batch).finally(() => {
        this.held -= batch.length;
        this.sending.delete(sent);
      });
      this.sending.add(sent);
    }
  }

  private async send(items: AuditEvent[]): Promise<void> {
    const body = { kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items };
    let delay = this.opts.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      if (this.throttle && !this.closed) await this.throttle.take(this.stopWaiting.signal);
      try {
        await this.client.request('audit webhook', 'POST', '', { body });
        return;
      } catch (err) {
        const code = err instanceof HostClusterError ? err.code : undefined;
        // At shutdown a batch gets the try it is in, no more: the server's stop is bounded by one call's timeout.
        const retried = (code === undefined || code === 429 || code >= 500) && attempt < TRIES && !this.closed;
        const fields = { events: items.length, attempt, error: (err as Error).message };
        if (!retried) {
          this.opts.metrics.failed('webhook', items.length);
          this.opts.log.error('audit webhook: a batch of events is dropped', fields);
          return;
        }
        this.opts.log.warn('audit webhook: sending a batch failed; it is sent again', { ...fields, inMs: delay });
        await sleep(delay * (1 + Math.random() * BACKOFF_JITTER), this.stopWaiting.signal);
        delay *= BACKOFF_FACTOR;
      }
    }
  }
}

/**
 * The error lines of events a full buffer drops: the first at once, then at most one every DROP_LOG_INTERVAL_MS with
 * how many were dropped since the last, so a flood of drops writes a few lines. They name no event: what an event
 * holds is for the audit, not the server's log.
 */
class DropLog {
  private unlogged = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly log: Logger,
    private readonly bufferSize: number,
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
    this.log.error('audit webhook: the buffer is full, events are dropped', {
      dropped: this.unlogged,
      bufferSize: this.bufferSize,
    });
    this.unlogged = 0;
  }
}

/** A wait that ends early (at once) when the signal fires. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** client-go's token bucket rate limiter: `burst` at once, then `qps` a second. */
class TokenBucket {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  async take(signal: AbortSignal): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1 || signal.aborted) {
        this.tokens -= 1;
        return;
      }
      await sleep(((1 - this.tokens) / this.qps) * 1000, signal);
    }
  }
}
