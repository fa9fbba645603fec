/**
 * Prometheus metrics of one server (one prom-client Registry per server: tests run several in one process), named as
 * kube-apiserver, client-go and etcd's client metrics name them where they fit:
 *
 * - apiserver_request_total, apiserver_request_duration_seconds (kube's labels and buckets; labels in labels.ts),
 *   apiserver_current_inflight_requests{request_kind}, apiserver_longrunning_requests (open watches),
 *   apiserver_terminated_watchers_total{group,resource} (watches ended because their client did not keep up);
 * - apiserver_watch_cache_resource_version{group,resource}, and two of ours: apiserver_watch_cache_objects (objects
 *   the cache holds), apiserver_watch_cache_object_bytes and apiserver_watch_cache_history_bytes (the JSON it
 *   holds for them and in its history) and apiserver_watch_cache_lag_revisions (etcd's revision minus the cache's);
 * - etcd_request_duration_seconds{operation,type}, etcd_request_errors_total;
 * - workqueue_depth, workqueue_adds_total, workqueue_retries_total{name} (a retry follows every failed sync);
 * - leader_election_master_status{name};
 * - apiserver_audit_error_total{plugin} (events the audit webhook dropped: "buffered" for a full buffer, "webhook"
 *   for a batch the receiver failed, "log" for a line the audit log could not take), and two of ours:
 *   apiserver_audit_webhook_buffered_events and apiserver_audit_webhook_buffered_bytes (what the webhook holds);
 * - apiserver_flowcontrol_* of API Priority and Fairness (flowcontrol.ts);
 * - apiserver_encryption_config_controller_automatic_reloads_total{status} and
 *   apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds{status} (--encryption-provider-
 *   config-automatic-reload; kube also labels them with a hash of its server identity, which this server has not);
 * - the process metrics of prom-client's collectDefaultMetrics.
 *
 * Gauges are read when scraped (collect) rather than kept up to date on every request.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { WorkQueueMetrics } from '../controllers/workqueue.js';
import type { AuditWebhookMetrics, Held } from './auditwebhook.js';
import type { FlowControl } from '../flowcontrol/controller.js';
import type { Registry as ApiRegistry } from '../registry/registry.js';
import { FlowControlMetrics } from './flowcontrol.js';
import type { RequestLabels } from './labels.js';

/** kube's apiserver_request_duration_seconds buckets. */
const REQUEST_BUCKETS = [0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** kube's etcd_request_duration_seconds buckets. */
const ETCD_BUCKETS = [
  0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
];

const REQUEST_LABELS = [
  'verb',
  'dry_run',
  'group',
  'version',
  'resource',
  'subresource',
  'scope',
  'component',
] as const;
const LONG_RUNNING_LABELS = ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;

/** One resource's watch cache, as scraped. */
export interface WatchCacheStats {
  group: string;
  resource: string;
  objects: number;
  /** JSON characters of the objects held (bytes, for ASCII text), and of the states in the cache's history. */
  bytes: number;
  historyBytes: number;
  revision: number;
  /** etcd's current revision minus `revision`; absent when etcd could not be asked. */
  lag?: number;
}

/**
 * Requests being served now, by kind (read by apiserver_current_inflight_requests; kept by http/inflight.ts, or by
 * http/priorityandfairness.ts in its place).
 */
export interface InFlightCounts {
  readOnly: number;
  mutating: number;
}

export interface MetricsOptions {
  /** prom-client's process metrics (CPU, memory, event loop lag, GC, handles); on unless false. */
  processMetrics?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  /** Read-only and mutating requests being served, kept by the max-in-flight (or priority and fairness) filter. */
  readonly inFlight: InFlightCounts = { readOnly: 0, mutating: 0 };
  private readonly requests: Counter<(typeof REQUEST_LABELS)[number] | 'code'>;
  private readonly durations: Histogram<(typeof REQUEST_LABELS)[number]>;
  private readonly longRunning: Gauge<(typeof LONG_RUNNING_LABELS)[number]>;
  private readonly terminatedWatchers: Counter<'group' | 'resource'>;
  private readonly etcdDurations: Histogram<'operation' | 'type'>;
  private readonly etcdErrors: Counter<'operation' | 'type'>;
  private readonly queueAdds: Counter<'name'>;
  private readonly queueRetries: Counter<'name'>;
  private readonly encryptionReloads: Counter<'status'>;
  private readonly encryptionReloadTimes: Gauge<'status'>;
  private readonly auditErrors: Counter<'plugin'>;
  private readonly queues = new Map<string, Set<{ readonly length: number }>>();
  private readonly leaders = new Map<string, () => boolean>();
  private auditWebhookBuffered: () => Held = () => ({ events: 0, bytes: 0 });
  private watchCacheStats: () => Promise<WatchCacheStats[]> = async () => [];
  private flowControlMetrics?: FlowControlMetrics;

  constructor(opts: MetricsOptions = {}) {
    // In the order the exposition lists them; those read at each scrape are steps of their own.
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'apiserver_request_total',
      help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
      labelNames: [...REQUEST_LABELS, 'code'],
      registers,
    });
    this.durations = new Histogram({
      name: 'apiserver_request_duration_seconds',
      help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
      labelNames: REQUEST_LABELS,
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.longRunning = new Gauge({
      name: 'apiserver_longrunning_requests',
      help: 'Gauge of all active long-running apiserver requests (watches) broken out by verb, group, version, resource, scope and component.',
      labelNames: LONG_RUNNING_LABELS,
      registers,
    });
    this.terminatedWatchers = new Counter({
      name: 'apiserver_terminated_watchers_total',
      help: 'Counter of watchers closed due to unresponsiveness broken by resource type.',
      labelNames: ['group', 'resource'],
      registers,
    });
    this.inFlightGauge(registers);
    this.watchCacheGauges(registers);

    this.etcdDurations = new Histogram({
      name: 'etcd_request_duration_seconds',
      help: 'Etcd request latency in seconds for each operation and object type.',
      labelNames: ['operation', 'type'],
      buckets: ETCD_BUCKETS,
      registers,
    });
    this.etcdErrors = new Counter({
      name: 'etcd_request_errors_total',
      help: 'Etcd failed request counts for each operation and object type.',
      labelNames: ['operation', 'type'],
      registers,
    });

    this.workQueueDepthGauge(registers);
    this.encryptionReloads = new Counter({
      name: 'apiserver_encryption_config_controller_automatic_reloads_total',
      help: 'Total number of reload successes and failures of encryption configuration.',
      labelNames: ['status'],
      registers,
    });
    this.encryptionReloadTimes = new Gauge({
      name: 'apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds',
      help: 'Timestamp of the last successful or failed automatic reload of encryption configuration.',
      labelNames: ['status'],
      registers,
    });
    this.queueAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    });
    this.queueRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue (each follows a failed sync of the key)',
      labelNames: ['name'],
      registers,
    });

    this.leaderGauge(registers);

    this.auditErrors = new Counter({
      name: 'apiserver_audit_error_total',
      help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
      labelNames: ['plugin'],
      registers,
    });
    this.auditWebhookGauges(registers);

    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** apiserver_current_inflight_requests, read from `inFlight` at each scrape. */
  private inFlightGauge(registers: Registry[]): void {
    const inFlight = this.inFlight;
    new Gauge({
      name: 'apiserver_current_inflight_requests',
      help: 'Number of requests being served, per request kind (readOnly, mutating), as the max-in-flight limits count them (watches and system:masters are not counted), or, with API Priority and Fairness, every request executing (a watch until its stream starts).',
      labelNames: ['request_kind'],
      registers,
      collect() {
        this.set({ request_kind: 'readOnly' }, inFlight.readOnly);
        this.set({ request_kind: 'mutating' }, inFlight.mutating);
      },
    });
  }

  /** The watch cache's gauges, by resource. */
  private watchCacheGauges(registers: Registry[]): void {
    // The three cache gauges of one scrape share one read (and one etcd revision request).
    let reading: Promise<WatchCacheStats[]> | undefined;
    const stats = () => (reading ??= this.watchCacheStats().finally(() => setImmediate(() => (reading = undefined))));
    const cacheGauge = (name: string, help: string, value: (s: WatchCacheStats) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['group', 'resource'],
        registers,
        async collect() {
          this.reset();
          for (const s of await stats()) {
            const v = value(s);
            if (v !== undefined) this.set({ group: s.group, resource: s.resource }, v);
          }
        },
      });
    cacheGauge(
      'apiserver_watch_cache_resource_version',
      'Current resource version of watch cache broken by resource type.',
      (s) => s.revision,
    );
    cacheGauge('apiserver_watch_cache_objects', 'Objects held by the watch cache, by resource.', (s) => s.objects);
    cacheGauge(
      'apiserver_watch_cache_object_bytes',
      "Bytes of JSON the watch cache holds for its objects' current states, by resource.",
      (s) => s.bytes,
    );
    cacheGauge(
      'apiserver_watch_cache_history_bytes',
      "Bytes of JSON in the watch cache's event history (kept for watches resuming from a resourceVersion), by resource.",
      (s) => s.historyBytes,
    );
    cacheGauge(
      'apiserver_watch_cache_lag_revisions',
      "etcd's current revision minus the revision the watch cache reflects. Writes outside the cache's keys count until the cache hears of a later revision, so a small steady value is normal; a growing one means the cache falls behind.",
      (s) => s.lag,
    );
  }

  /** workqueue_depth: every tracked queue's length at each scrape. */
  private workQueueDepthGauge(registers: Registry[]): void {
    const queues = this.queues;
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
      collect() {
        this.reset();
        for (const [name, set] of queues)
          this.set(
            { name },
            [...set].reduce((n, q) => n + q.length, 0),
          );
      },
    });
  }

  /** leader_election_master_status, asked of each elector at each scrape. */
  private leaderGauge(registers: Registry[]): void {
    const leaders = this.leaders;
    new Gauge({
      name: 'leader_election_master_status',
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, isLeader] of leaders) this.set({ name }, isLeader() ? 1 : 0);
      },
    });
  }

  /** What the audit webhook holds, in events and bytes. */
  private auditWebhookGauges(registers: Registry[]): void {
    const auditWebhookBuffered = () => this.auditWebhookBuffered();
    new Gauge({
      name: 'apiserver_audit_webhook_buffered_events',
      help: 'Audit events the webhook holds: waiting, in batches waiting to be sent or sent again, and in flight. At most --audit-webhook-batch-buffer-size; past it events are dropped (apiserver_audit_error_total{plugin="buffered"}).',
      registers,
      collect() {
        this.set(auditWebhookBuffered().events);
      },
    });
    new Gauge({
      name: 'apiserver_audit_webhook_buffered_bytes',
      help: 'Bytes of JSON of the audit events the webhook holds (as apiserver_audit_webhook_buffered_events). At most 64 MiB; an event that would take them past it is dropped (apiserver_audit_error_total{plugin="buffered"}).',
      registers,
      collect() {
        this.set(auditWebhookBuffered().bytes);
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** One answered request. */
  observeRequest(labels: RequestLabels, code: number, seconds: number): void {
    this.requests.inc({ ...labels, code: String(code) });
    this.durations.observe(labels, seconds);
  }

  /** A watch is open; call the result when it ends. */
  longRunningStarted(labels: RequestLabels): () => void {
    const { dry_run: _, ...gaugeLabels } = labels;
    this.longRunning.inc(gaugeLabels);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.longRunning.dec(gaugeLabels);
    };
  }

  /** A watch ended because its client left more unread than the server buffers for it. */
  watchTerminated(labels: RequestLabels): void {
    this.terminatedWatchers.inc({ group: labels.group, resource: labels.resource });
  }

  /** One etcd call (EtcdStorage's onCall, with the key already turned into an object type). */
  etcdRequest(operation: string, type: string, seconds: number, failed: boolean): void {
    this.etcdDurations.observe({ operation, type }, seconds);
    if (failed) this.etcdErrors.inc({ operation, type });
  }

  /** For the controllers' work queues (client-go's workqueue metrics). */
  readonly workQueues: WorkQueueMetrics = {
    track: (name, queue) => {
      if (!this.queues.has(name)) this.queues.set(name, new Set());
      this.queues.get(name)!.add(queue);
      return () => void this.queues.get(name)?.delete(queue);
    },
    added: (name) => this.queueAdds.inc({ name }),
    retried: (name) => this.queueRetries.inc({ name }),
  };

  /** For the audit webhook (kube's audit metrics, and what it holds). */
  readonly auditWebhook: AuditWebhookMetrics = {
    failed: (plugin, events) => this.auditErrors.inc({ plugin }, events),
    buffered: (read) => (this.auditWebhookBuffered = read),
  };

  /** Events the audit log dropped: apiserver_audit_error_total{plugin="log"}. */
  readonly auditLogFailed = (events: number): void => void this.auditErrors.inc({ plugin: 'log' }, events);

  /** leader_election_master_status{name} reads `isLeader` at each scrape. */
  leaderElection(name: string, isLeader: () => boolean): void {
    this.leaders.set(name, isLeader);
  }

  /** One automatic reload of the encryption configuration, as kube's encryption config controller counts it. */
  encryptionConfigReload(ok: boolean): void {
    const status = ok ? 'success' : 'failure';
    this.encryptionReloads.inc({ status });
    this.encryptionReloadTimes.set({ status }, Date.now() / 1000);
  }

  /** The API Priority and Fairness metrics of `flowControl`'s levels (once per server). */
  flowControl(flowControl: FlowControl): FlowControlMetrics {
    return (this.flowControlMetrics ??= new FlowControlMetrics(this.registry, flowControl));
  }

  /** Where the watch cache gauges are read from at each scrape. */
  watchCaches(read: () => Promise<WatchCacheStats[]>): void {
    this.watchCacheStats = read;
  }
}

/**
 * The watch caches of a registry, one line per resource (a cache serves a whole API group; its revision and lag are
 * the group's), with etcd's current revision read once per scrape for the lag.
 */
export function registryWatchCacheStats(
  registry: ApiRegistry,
  etcdRevision: () => Promise<string>,
): () => Promise<WatchCacheStats[]> {
  return async () => {
    const current = await etcdRevision().then(Number, () => undefined);
    const sizes = new Map([...registry.caches].map(([group, cache]) => [group, cache.sizes()]));
    return registry.definitions.flatMap((def) => {
      const cache = registry.caches.get(def.group);
      if (!cache) return [];
      const revision = cache.currentRevision;
      const lag = current === undefined ? undefined : Math.max(0, current - revision);
      const size = sizes.get(def.group)?.get(def.plural) ?? { objects: 0, bytes: 0, historyBytes: 0 };
      return [{ group: def.group, resource: def.plural, ...size, revision, lag }];
    });
  };
}

/** The object type of an etcd key, as kube's `type` label (`<resource>.<group>`): `<prefix>/<group>/<resource>/...`. */
export function etcdObjectType(etcdPrefix: string, key: string): string {
  if (!key.startsWith(`${etcdPrefix}/`)) return '';
  const [first = '', second = ''] = key.slice(etcdPrefix.length + 1).split('/');
  // API groups have dots (management.platform.sh); the server's own keys (signingkeys, leases) do not.
  return first.includes('.') && second ? `${second}.${first}` : first;
}
