/** The start's first step: tracing, with --tracing-config-file only. */
import { serverBuild } from '../http/version.js';
import type { Logger } from '../log.js';
import { loadTracingConfig } from '../observability/tracingconfig.js';
import { installTracer } from '../tracing.js';

/** --tracing-config-file: the OpenTelemetry SDK is imported only then (no file, no cost). */
export async function startTracing(path: string, log: Logger): Promise<() => Promise<void>> {
  const config = loadTracingConfig(path);
  const { createOtelTracer } = await import('../observability/otel.js');
  const otel = createOtelTracer({ config, serviceName: serverBuild.name, serviceVersion: serverBuild.version });
  const uninstall = installTracer(otel.tracer);
  log.info('tracing: spans are sent over OTLP/gRPC', { ...config });
  return async () => {
    uninstall();
    await otel.shutdown(TRACING_SHUTDOWN_MS);
  };
}

/** How long the spans still queued at shutdown may take to be sent (a collector that does not answer is left). */
const TRACING_SHUTDOWN_MS = 5000;
