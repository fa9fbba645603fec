/** The audit step: the audit log and webhook, and the policy that chooses what they are sent. */
import type { Config } from '../config.js';
import { KubeconfigError } from '../host/kubeconfigfile.js';
import type { Logger } from '../log.js';
import { allSinks, AuditLog, type AuditSink } from '../observability/audit.js';
import { PolicyEvaluator } from '../observability/auditpolicy.js';
import { AuditWebhook } from '../observability/auditwebhook.js';
import type { Metrics } from '../observability/metrics.js';
import type { Cleanups } from './cleanups.js';
import type { CompletedConfig, WorkerOf } from './inputs.js';

export function startAudit(
  config: CompletedConfig,
  log: Logger,
  metrics: Metrics,
  cleanups: Cleanups,
  worker?: WorkerOf,
) {
  const auditSinks = auditBackends(config, log, metrics, worker);
  if (!auditSinks.length) return undefined;
  const audit = { sink: allSinks(auditSinks), policy: new PolicyEvaluator(config.auditPolicy) };
  cleanups.add('closing the audit log and webhook', () => audit.sink.close());
  return audit;
}

/**
 * --audit-log-path (rotated) and --audit-webhook-config-file (batched); failures to write or send are logged, and
 * requests go on. A webhook kubeconfig that does not load stops the start.
 */
function auditBackends(config: Config, log: Logger, metrics: Metrics, worker?: WorkerOf): AuditSink[] {
  const sinks: AuditSink[] = [];
  if (config.auditLogPath)
    sinks.push(
      new AuditLog({
        path: config.auditLogPath,
        stdout: worker?.stdout,
        maxSizeBytes: config.auditLogMaxSizeBytes,
        maxBackups: config.auditLogMaxBackup,
        maxAgeDays: config.auditLogMaxAgeDays,
        onError: (err) => log.error('audit log write failed', { path: config.auditLogPath, error: err.message }),
        log,
        failed: metrics.auditLogFailed,
      }),
    );
  if (config.auditWebhookConfigFile) {
    try {
      sinks.push(
        new AuditWebhook({
          kubeconfigPath: config.auditWebhookConfigFile,
          initialBackoffMs: config.auditWebhookInitialBackoffMs,
          bufferSize: config.auditWebhookBatchBufferSize,
          maxBatchSize: config.auditWebhookBatchMaxSize,
          maxBatchWaitMs: config.auditWebhookBatchMaxWaitMs,
          throttle: config.auditWebhookBatchThrottleEnable
            ? { qps: config.auditWebhookBatchThrottleQps, burst: config.auditWebhookBatchThrottleBurst }
            : undefined,
          log,
          metrics: metrics.auditWebhook,
        }),
      );
    } catch (err) {
      if (err instanceof KubeconfigError)
        throw new Error(`--audit-webhook-config-file ${config.auditWebhookConfigFile}: ${err.message}`, {
          cause: err,
        });
      throw err;
    }
  }
  return sinks;
}
