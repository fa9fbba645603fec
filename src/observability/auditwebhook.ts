/**
 * The audit webhook (--audit-webhook-config-file), as kube-apiserver's in batch mode: events are sent as one
 * audit.k8s.io/v1 EventList once --audit-webhook-batch-max-size (400) are waiting or --audit-webhook-batch-max-wait
 * (30s) has passed since the first, at most --audit-webhook-batch-throttle-qps (10) batches a second with bursts of
 * --audit-webhook-batch-throttle-burst (15) (unless throttling is disabled). Requests never wait for the webhook.
 *
 * Two bounds hold for every event the webhook holds (waiting, in batches waiting for the throttle or a retry, and in
 * flight): --audit-webhook-batch-buffer-size (10000) events, and BUFFER_BYTES (64 MiB) of their JSON; an event that
 * would take either past it is dropped. (kube-apiserver bounds only the number of events waiting: its batches on
 * their way have no bound but the throttle's rate times the length of their tries, minutes for a receiver that
 * hangs, and none bounds their size, which a tenant's bodies make up to 3 MiB each at levels Request and above.) The
 * bytes are counted once, as each event is written: it is serialized then (never again: a batch's body is its
 * events' JSON joined, sent as it is on every try) and held as that JSON, in memory of its own outside the V8 heap.
 * A dropped event counts in kube's apiserver_audit_error_total: {plugin="buffered"} for a full buffer, as kube's
 * buffered backend counts it, {plugin="webhook"} for a batch the receiver failed. A full buffer writes an error
 * line at once, then one every 10s at most saying how many were dropped since (auditdrops.ts; kube logs each
 * dropped event, contents and all). apiserver_audit_webhook_buffered_events and apiserver_audit_webhook_buffered_bytes
 * (ours) are what the webhook holds.
 *
 * The file is a kubeconfig (its current context: the receiver's URL, CA, client certificate or token), read once at
 * start. A batch the receiver fails (a network error, 429 or 5xx) is sent again after --audit-webhook-initial-backoff
 * (10s), then 1.5 times longer each time (with up to 20% jitter), five tries in all, as kube's retry; then it is
 * dropped, with an error in the log. Another answer (a 4xx) drops it at once. At shutdown what is buffered is sent,
 * and the server waits for the batches on their way, each for the try it is in (no more retries then).
 */
import { AsyncResource } from 'node:async_hooks';
import { Backoff, withJitter } from '../apimachinery/backoff.js';
import type { Logger } from '../log.js';
import { loadKubeconfigFile } from '../host/kubeconfigfile.js';
import { HostClusterError, KubeRequests } from '../host/kuberequest.js';
import type { AuditEvent, AuditSink } from './audit.js';
import { DropLog } from './auditdrops.js';

/** kube's audit metrics, in the parts the webhook reports (src/observability/metrics.ts implements them). */
export interface AuditWebhookMetrics {
  /** Events lost to `plugin`'s error: apiserver_audit_error_total{plugin}. */
  failed(plugin: 'buffered' | 'webhook', events: number): void;
  /** What the webhook holds (events, and bytes of their JSON) is read at each scrape. */
  buffered(read: () => Held): void;
}

/** Events the webhook holds, and the bytes of their JSON. */
export interface Held {
  events: number;
  bytes: number;
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
/**
 * The most bytes of events' JSON the webhook holds, however few the events: a receiver that hangs costs the server
 * this much at most (each worker: each has its own webhook). Several times what 10000 events at Metadata take (about
 * 1 KiB each), so only bodies reach it; a sixth of the chart's 480 MiB heap, which it sits beside (docs/operating.md).
 */
export const BUFFER_BYTES = 64 * 1024 * 1024;

/** An EventList's JSON around its items: the events' JSON joined by commas. */
const EVENT_LIST_OPEN = Buffer.from('{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[');
const EVENT_LIST_CLOSE = Buffer.from(']}');
const COMMA = Buffer.from(',');

export class AuditWebhook implements AuditSink {
  private readonly client: KubeRequests;
  private readonly throttle?: TokenBucket;
  /** A batch never waits for more events than the buffer may hold. */
  private readonly batchSize: number;
  /** Each event's JSON, as it was written. */
  private buffer: Buffer[] = [];
  /** In the buffer and in batches not yet sent or dropped: at most opts.bufferSize events and BUFFER_BYTES. */
  private readonly held: Held = { events: 0, bytes: 0 };
  private readonly drops: DropLog;
  private timer?: NodeJS.Timeout;
  private readonly sending = new Set<Promise<void>>();
  private closed = false;
  /** Ends the waits between tries at shutdown: what is left is sent at once. */
  private readonly stopWaiting = new AbortController();
  /**
   * The context the webhook was made in, where batches are sent and waited for: not the request whose event filled
   * one, which a call (and a timer) begun there would keep alive, body and all, as long as the receiver hangs, and
   * whose seats in its priority level (apimachinery/away.ts) it would step away with.
   */
  private readonly home = new AsyncResource('AuditWebhook');

  constructor(private readonly opts: AuditWebhookOptions) {
    this.client = new KubeRequests(loadKubeconfigFile(opts.kubeconfigPath), { timeoutMs: REQUEST_TIMEOUT_MS });
    if (opts.throttle) this.throttle = new TokenBucket(opts.throttle.qps, opts.throttle.burst);
    this.batchSize = Math.min(opts.maxBatchSize, opts.bufferSize);
    this.drops = new DropLog(opts.log, 'audit webhook: the buffer is full, events are dropped', {
      bufferSize: opts.bufferSize,
      bufferBytes: BUFFER_BYTES,
    });
    opts.metrics.buffered(() => ({ ...this.held }));
  }

  write(event: AuditEvent): void {
    if (this.closed) return;
    if (this.held.events < this.opts.bufferSize) {
      const json = serialized(event);
      if (this.held.bytes + json.length <= BUFFER_BYTES) return this.hold(json);
    }
    this.opts.metrics.failed('buffered', 1);
    this.drops.dropped();
  }

  private hold(json: Buffer): void {
    this.held.events++;
    this.held.bytes += json.length;
    this.buffer.push(json);
    this.home.runInAsyncScope(() => {
      if (this.buffer.length >= this.batchSize) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.opts.maxBatchWaitMs);
    });
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
      const events = this.buffer.splice(0, this.batchSize);
      // Only the body is kept from here on: the events' own copies are let go.
      const batch: Held = { events: events.length, bytes: events.reduce((n, e) => n + e.length, 0) };
      const sent = this.send(eventList(events), batch.events).finally(() => {
        this.held.events -= batch.events;
        this.held.bytes -= batch.bytes;
        this.sending.delete(sent);
      });
      this.sending.add(sent);
    }
  }

  private async send(body: Buffer, events: number): Promise<void> {
    const backoff = new Backoff({ initialMs: this.opts.initialBackoffMs, factor: BACKOFF_FACTOR });
    for (let attempt = 1; ; attempt++) {
      if (this.throttle && !this.closed) await this.throttle.take(this.stopWaiting.signal);
      try {
        await this.client.request('audit webhook', 'POST', '', { json: body });
        return;
      } catch (err) {
        const code = err instanceof HostClusterError ? err.code : undefined;
        // At shutdown a batch gets the try it is in, no more: the server's stop is bounded by one call's timeout.
        const retried = (code === undefined || code === 429 || code >= 500) && attempt < TRIES && !this.closed;
        const fields = { events, attempt, error: (err as Error).message };
        if (!retried) {
          this.opts.metrics.failed('webhook', events);
          this.opts.log.error('audit webhook: a batch of events is dropped', fields);
          return;
        }
        const delay = backoff.next();
        this.opts.log.warn('audit webhook: sending a batch failed; it is sent again', { ...fields, inMs: delay });
        await sleep(withJitter(delay, BACKOFF_JITTER), this.stopWaiting.signal);
      }
    }
  }
}

/** The event's JSON, in memory of its own (a small Buffer.from is a slice of a shared 8 KiB pool, all kept alive). */
function serialized(event: AuditEvent): Buffer {
  const text = JSON.stringify(event);
  const json = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  json.write(text);
  return json;
}

/** The EventList of events already serialized: their JSON joined, so that none is serialized again. */
function eventList(events: Buffer[]): Buffer {
  const parts: Buffer[] = [EVENT_LIST_OPEN];
  events.forEach((e, i) => (i ? parts.push(COMMA, e) : parts.push(e)));
  parts.push(EVENT_LIST_CLOSE);
  return Buffer.concat(parts);
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
