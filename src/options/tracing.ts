/** Tracing: the TracingConfiguration file. */
import type { Options } from './flag.js';

export interface TracingConfig {
  /** TracingConfiguration file (OpenTelemetry over OTLP/gRPC); unset: no tracing, and nothing of it loaded. */
  tracingConfigFile?: string;
}

export const tracingOptions: Options<TracingConfig> = {
  concern: 'tracing',
  flags: [
    {
      name: 'tracing-config-file',
      arg: 'file',
      help: 'File with apiserver tracing configuration: a TracingConfiguration (apiserver.config.k8s.io/v1, YAML or JSON) with endpoint (an OTLP/gRPC collector, default localhost:4317) and samplingRatePerMillion (default 0: only requests whose caller sampled them, with a traceparent header). Spans are sent over OTLP/gRPC without TLS, as kube-apiserver does. Unset: no tracing.',
      apply: (c, v) => (c.tracingConfigFile = v),
    },
  ],
};
