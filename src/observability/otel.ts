/**
 * The exporting tracer (the OpenTelemetry JavaScript SDK), installed for the whole process when --tracing-config-file
 * is given, and only then imported: without the flag no module of the SDK is loaded (startup/tracing.ts imports this
 * file dynamically).
 *
 * As kube's component-base/tracing NewProvider: spans are sampled parent-based (a caller's sampled `traceparent` is
 * followed; a root is sampled at samplingRatePerMillion), batched, and sent over OTLP/gRPC without TLS to the
 * configured endpoint. Ending a span only queues it: the queue is bounded (spans past it are dropped, not kept),
 * and an export that fails or hangs is given up after its timeout, so a collector that is down neither slows a
 * request nor grows the memory. The W3C `traceparent` and `tracestate` headers carry the context in and out.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  propagation,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { credentials } from '@grpc/grpc-js';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import type { SpanAttributes, SpanLink, TraceSpan, Tracer } from '../tracing.js';
import type { TracingConfig } from './tracingconfig.js';

export interface OtelTracerOptions {
  config: TracingConfig;
  serviceName: string;
  serviceVersion: string;
}

export interface OtelTracer {
  tracer: Tracer;
  /** Sends what is queued (giving up after `withinMs`) and stops the exporter. */
  shutdown(withinMs: number): Promise<void>;
}

const INSTRUMENTATION_SCOPE = 'platform-management-api';
/** Writes remembered for links (a key and two IDs each: a few hundred kilobytes at most). */
const REMEMBERED_WRITES = 4096;

export function createOtelTracer(opts: OtelTracerOptions): OtelTracer {
  const { exporter, provider } = startProvider(opts);
  const propagator = new W3CTraceContextPropagator();
  const otel = provider.getTracer(INSTRUMENTATION_SCOPE);

  // The last traced write of each key, oldest forgotten first: links from the controllers' work to its cause.
  const writes = new Map<string, SpanLink>();
  const tracer: Tracer = {
    serve(headers, name, attributes, fn) {
      const parent = propagator.extract(ROOT_CONTEXT, headers, headerGetter);
      const span = otel.startSpan(name, { kind: SpanKind.SERVER, attributes: defined(attributes) }, parent);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        span.end();
      };
      return context.with(trace.setSpan(parent, span), () => fn(spanHandle(span), end));
    },
    inSpan(name, attributes, fn) {
      if (!recordingSpan()) return fn(idle);
      return otel.startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes: defined(attributes) }, (span) =>
        runInSpan(span, fn),
      );
    },
    inRootSpan(name, attributes, links, fn) {
      const options = {
        root: true,
        kind: SpanKind.INTERNAL,
        attributes: defined(attributes),
        links: links.map((l) => ({
          context: { traceId: l.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED },
        })),
      };
      return otel.startActiveSpan(name, options, ROOT_CONTEXT, (span) => runInSpan(span, fn));
    },
    outgoingHeaders() {
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, { set: (c, k, v) => (c[k] = v) });
      return carrier;
    },
    current(): SpanLink | undefined {
      const span = recordingSpan();
      if (!span) return undefined;
      const { traceId, spanId } = span.spanContext();
      return { traceId, spanId };
    },
    noteWrite(key) {
      const span = tracer.current();
      if (!span) return;
      writes.delete(key);
      writes.set(key, span);
      if (writes.size > REMEMBERED_WRITES) writes.delete(writes.keys().next().value!);
    },
    writeLinks(key) {
      const span = writes.get(key);
      return span ? [span] : [];
    },
  };
  return {
    tracer,
    shutdown: async (withinMs) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
      await Promise.race([provider.shutdown(), late]).finally(() => clearTimeout(timer));
      // Closes the connection even when an export still hangs.
      await exporter.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** The exporter (OTLP over gRPC) and the provider that batches spans to it, registered as the global one. */
function startProvider(opts: OtelTracerOptions): { exporter: OTLPTraceExporter; provider: NodeTracerProvider } {
  // The batch's bounds are the SDK's (2048 spans queued, 512 a batch, every 5 s, an export given up after 30 s),
  // or the standard OTEL_BSP_* variables'; the exporter's timeout its own (10 s, OTEL_EXPORTER_OTLP_TIMEOUT).
  const exporter = new OTLPTraceExporter({
    url: exporterUrl(opts.config.endpoint),
    credentials: credentials.createInsecure(),
  });
  const rate = opts.config.samplingRatePerMillion;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName, 'service.version': opts.serviceVersion }),
    sampler: new ParentBasedSampler({
      root: rate > 0 ? new TraceIdRatioBasedSampler(rate / 1_000_000) : new AlwaysOffSampler(),
    }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // The context manager (AsyncLocalStorage) that carries the current span through awaits.
  provider.register({ propagator: null });
  return { exporter, provider };
}

function spanHandle(span: Span): TraceSpan {
  return {
    setAttributes: (attributes) => span.setAttributes(defined(attributes)),
    fail: (err) =>
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) }),
  };
}

/** Runs `fn` in `span`, which ends with it (failed if `fn` throws). */
async function runInSpan<T>(span: Span, fn: (s: TraceSpan) => Promise<T>): Promise<T> {
  try {
    return await fn(spanHandle(span));
  } catch (err) {
    spanHandle(span).fail(err);
    throw err;
  } finally {
    span.end();
  }
}

/** The current span, if it is recorded. */
function recordingSpan(): Span | undefined {
  const span = trace.getSpan(context.active());
  return span?.isRecording() ? span : undefined;
}

/** Within a span that is not recorded (or none): a child would not be either. */
const idle: TraceSpan = { setAttributes() {}, fail() {} };

const headerGetter = {
  get(carrier: Record<string, string | string[] | undefined>, key: string) {
    return carrier[key];
  },
  keys(carrier: Record<string, string | string[] | undefined>) {
    return Object.keys(carrier);
  },
};

function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * The exporter's URL for kube's gRPC target (grpc naming: host:port, dns:[//authority/]host:port, unix:path,
 * unix:///path): always without TLS, as kube's exporter (WithInsecure).
 */
export function exporterUrl(endpoint: string): string {
  if (endpoint.startsWith('unix:')) return endpoint;
  const dns = /^dns:(?:\/\/[^/]*\/)?(.*)$/.exec(endpoint);
  return `http://${dns ? dns[1] : endpoint}`;
}
