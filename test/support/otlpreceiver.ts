/**
 * A real OTLP/gRPC trace receiver for tests: the TraceService Export RPC of an OpenTelemetry collector, served with
 * @grpc/grpc-js and decoded with the OpenTelemetry project's own protobuf definitions (the code generated from
 * opentelemetry-proto that @opentelemetry/otlp-transformer 0.208 ships, installed as otlp-transformer-protos).
 * It keeps every span received, flattened to plain values, and tells waiters as batches arrive.
 */
import { Server, ServerCredentials, type ServiceDefinition, type sendUnaryData, status } from '@grpc/grpc-js';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface MessageType {
  decode(buf: Uint8Array): any;
  encode(msg: unknown): { finish(): Uint8Array };
  fromObject(obj: unknown): unknown;
}
const root = require('otlp-transformer-protos/build/src/generated/root.js');
const traceService = root.opentelemetry.proto.collector.trace.v1;
const Request: MessageType = traceService.ExportTraceServiceRequest;
const Response: MessageType = traceService.ExportTraceServiceResponse;

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: { traceId: string; spanId: string }[];
  /** The attributes of the resource that sent it (service.name, service.version). */
  resource: Record<string, AttributeValue>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

export interface OtlpReceiver {
  /** host:port, as a TracingConfiguration's endpoint. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Export calls answered. */
  exports: number;
  /** Resolves with the spans received once `done` holds of them (checked at each batch). */
  until(what: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]>;
  stop(): Promise<void>;
}

const SERVICE: ServiceDefinition = {
  Export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: (msg: unknown) => Buffer.from(Request.encode(msg).finish()),
    requestDeserialize: (buf: Buffer) => Request.decode(buf),
    responseSerialize: (msg: unknown) => Buffer.from(Response.encode(msg).finish()),
    responseDeserialize: (buf: Buffer) => Response.decode(buf),
  },
};

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const receiver: OtlpReceiver = {
    endpoint: '',
    spans,
    exports: 0,
    until: (what, done) =>
      new Promise((resolve) => {
        const check = () => {
          if (!done(spans)) return;
          waiters.delete(check);
          resolve(spans);
        };
        // A test that waits in vain fails on its own timeout, naming `what` in its output.
        Object.defineProperty(check, 'name', { value: what });
        waiters.add(check);
        check();
      }),
    stop: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
  const server = new Server();
  server.addService(SERVICE, {
    Export: (call: { request: any }, callback: sendUnaryData<unknown>) => {
      try {
        spans.push(...flatten(call.request));
      } catch (err) {
        callback({ code: status.INVALID_ARGUMENT, details: String(err) });
        return;
      }
      receiver.exports++;
      callback(null, Response.fromObject({}));
      for (const waiter of [...waiters]) waiter();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  receiver.endpoint = `127.0.0.1:${port}`;
  return receiver;
}

function flatten(request: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          attributes: attributes(s.attributes),
          links: (s.links ?? []).map((l: any) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          resource,
          statusCode: s.status?.code ?? 0,
        });
  }
  return out;
}

function attributes(kvs: any[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));
}

function value(v: any): AttributeValue {
  if (!v) return undefined;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return Number(String(v.intValue));
  if (v.doubleValue != null) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  if (v.bytesValue != null) return Buffer.from(v.bytesValue).toString('base64');
  return undefined;
}

function hex(bytes: Uint8Array | null | undefined): string {
  return bytes && bytes.length ? Buffer.from(bytes).toString('hex') : '';
}
