/**
 * Tracing as the rest of the server sees it (kube's component-base/tracing): spans around the steps of a request,
 * the trace context carried on to webhooks and clusters, and the trace ID for log lines.
 *
 * Until --tracing-config-file installs an exporting tracer (observability/otel.ts, loaded only then), every call
 * here is the no-op below: no OpenTelemetry module is loaded, no context is kept, and a span costs one function
 * call. As kube's tracing.Start, a child span is made only inside a span that is recorded; roots (a request, a
 * controller's work) are sampled by the configured rate, or by the caller's `traceparent` (parent-based).
 *
 * Attribute values are names, verbs, keys and codes: never a body, a token, a Secret's data or an access key.
 */

export type AttributeValue = string | number | boolean;
export type SpanAttributes = Record<string, AttributeValue | undefined>;

export interface TraceSpan {
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed, with the error's message (messages of this server never hold a secret). */
  fail(err: unknown): void;
}

/** A span to link a root span to (the write whose effects a controller's work carries out). */
export interface SpanLink {
  traceId: string;
  spanId: string;
}

export interface Tracer {
  /**
   * Runs `fn` within a new span for an incoming request: its parent is the request's `traceparent` (when it has
   * one), the span ends when `fn`'s promise settles or `end` is called, whichever comes last being ignored.
   */
  serve<T>(
    headers: Record<string, string | string[] | undefined>,
    name: string,
    attributes: SpanAttributes,
    fn: (span: TraceSpan, end: () => void) => T,
  ): T;
  /** Runs `fn` within a child of the current span; without a recorded current span, just runs `fn`. */
  inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: TraceSpan) => Promise<T>): Promise<T>;
  /** Runs `fn` within a new root span (a controller's work), linked to `links`. */
  inRootSpan<T>(
    name: string,
    attributes: SpanAttributes,
    links: SpanLink[],
    fn: (span: TraceSpan) => Promise<T>,
  ): Promise<T>;
  /** `traceparent` (and `tracestate`) for an outgoing call made within the current span; {} outside one. */
  outgoingHeaders(): Record<string, string>;
  /** The current span, when it is recorded: for log lines and links. */
  current(): SpanLink | undefined;
  /** Remembers the current span (if recorded) as the last write of a storage key, for writeLinks. */
  noteWrite(key: string): void;
  /** The span of the last write of `key` made while traced, if still remembered: what a controller links to. */
  writeLinks(key: string): SpanLink[];
}

const noSpan: TraceSpan = { setAttributes() {}, fail() {} };
const noHeaders: Record<string, string> = Object.freeze({}) as Record<string, string>;

const noTracing: Tracer = {
  serve: (_headers, _name, _attributes, fn) => fn(noSpan, () => {}),
  inSpan: (_name, _attributes, fn) => fn(noSpan),
  inRootSpan: (_name, _attributes, _links, fn) => fn(noSpan),
  outgoingHeaders: () => noHeaders,
  current: () => undefined,
  noteWrite: () => {},
  writeLinks: () => [],
};

let installed: Tracer = noTracing;

/** The tracer in force: the no-op one unless tracing is configured. */
export function tracer(): Tracer {
  return installed;
}

/** Whether a tracer is installed: the HTTP chain has its tracing filter only then. */
export function tracingEnabled(): boolean {
  return installed !== noTracing;
}

/** Puts `t` in force for the whole process; the returned function puts the no-op tracer back. */
export function installTracer(t: Tracer): () => void {
  installed = t;
  return () => {
    if (installed === t) installed = noTracing;
  };
}

/** Shorthand for tracer().inSpan. */
export function inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: TraceSpan) => Promise<T>): Promise<T> {
  return installed.inSpan(name, attributes, fn);
}
