/**
 * The audit webhook (--audit-webhook-config-file), as kube-apiserver's in batch mode: events are buffered
 * (--audit-webhook-batch-buffer-size, default 10000; a full buffer drops events, with an error in the log) and sent
 * as one audit.k8s.io/v1 EventList once --audit-webhook-batch-max-size (400) are waiting or
 * --audit-webhook-batch-max-wait (30s) has passed since the first, at most --audit-webhook-batch-throttle-qps (10)
 * batches a second with bursts of --audit-webhook-batch-throttle-burst (15) (unless throttling is disabled).
 * Requests never wait for the webhook.
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
}

/** kube's retry of webhook calls: wait.Backoff{Duration: initial, Factor: 1.5, Jitter: 0.2, Steps: 5}. */
const TRIES = 5;
const BACKOFF_FACTOR = 1.5;
const BACKOFF_JITTER = 0.2;
/** kube's timeout of one webhook call. */
const REQUEST_TIMEOUT_MS = 30_000;

export class AuditWebhook implements AuditSink {
  private readonly client: KubeRequests;
  private readonly throttle?: TokenBucket;
  private buffer: AuditEvent[] = [];
  private timer?: NodeJS.Timeout;
  private readonly sending = new Set<Promise<void>>();
  private closed = false;
  /** Ends the waits between tries at shutdown: what is left is sent at once. */
  private readonly stopWaiting = new AbortController();

  constructor(private readonly opts: AuditWebhookOptions) {
    this.client = new KubeRequests(loadKubeconfigFile(opts.kubeconfigPath), { timeoutMs: REQUEST_TIMEOUT_MS });
    if (opts.throttle) this.throttle = new TokenBucket(opts.throttle.qps, opts.throttle.burst);
  }

  write(event: AuditEvent): void {
    if (this.closed) return;
    if (this.buffer.length >= this.opts.bufferSize) {
      this.opts.log.error('audit webhook: the buffer is full, an event is dropped', {
        bufferSize: this.opts.bufferSize,
        auditID: event.auditID,
      });
      return;
    }
    this.buffer.push(event);
    if (this.buffer.length >= this.opts.maxBatchSize) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.opts.maxBatchWaitMs);
  }

  /** Sends what is buffered and waits for every batch on its way (a wait between tries ends at once). */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    this.stopWaiting.abort();
    while (this.sending.size) await Promise.all(this.sending);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.buffer.length) {
      const batch = this.buffer.splice(0, this.opts.maxBatchSize);
      const sent = this.send(batch).finally(() => this.sending.delete(sent));
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
