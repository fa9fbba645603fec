/** Audit: the log file, the webhook, and the policy saying what they get. */
import { FlagError, type Options } from './flag.js';
import { bool, count, nonZeroDuration, positive, positiveNumber } from './values.js';
import type { WorkersConfig } from './workers.js';

export interface AuditConfig {
  /** Where audit events are written as JSON lines ('-': stdout); unset: no audit log. */
  auditLogPath?: string;
  /** Size at which the audit log is rotated (bytes; 0: never rotated). */
  auditLogMaxSizeBytes: number;
  /** Rotated audit logs kept (0: all). */
  auditLogMaxBackup: number;
  /** Days a rotated audit log is kept (0: no age limit). */
  auditLogMaxAgeDays: number;
  /** kube's audit.k8s.io/v1 Policy; unset: every request at Metadata (observability/auditpolicy.ts). */
  auditPolicyFile?: string;
  /** A kubeconfig naming the audit webhook; unset: no webhook. */
  auditWebhookConfigFile?: string;
  /** Only kube's batch mode is served. */
  auditWebhookMode: 'batch';
  /** The wait before a failed batch is sent again (kube: 10s), growing 1.5 times each try. */
  auditWebhookInitialBackoffMs: number;
  auditWebhookBatchBufferSize: number;
  auditWebhookBatchMaxSize: number;
  auditWebhookBatchMaxWaitMs: number;
  auditWebhookBatchThrottleEnable: boolean;
  auditWebhookBatchThrottleQps: number;
  auditWebhookBatchThrottleBurst: number;
}

export const auditOptions: Options<AuditConfig & WorkersConfig> = {
  concern: 'audit',
  flags: [
    {
      name: 'audit-log-path',
      arg: 'file',
      help: 'Write audit events (audit.k8s.io/v1 Event: who did what to which object and the answer; bodies only where --audit-policy-file asks for them) as JSON lines to this file, or "-" for stdout. Lines the file (its disk) or stdout (its reader) has not taken yet are held, at most 64 MiB of them; past it events are dropped, counted in apiserver_audit_error_total{plugin="log"} and logged. Unset: no audit log.',
      apply: (c, v) => (c.auditLogPath = v),
    },
    {
      name: 'audit-log-maxsize',
      arg: 'int',
      default: '100',
      help: 'Megabytes an audit log file may reach before it is rotated to <name>-<UTC timestamp>.<ext> beside it ({default}; 0: never rotated).',
      apply: (c, v) => (c.auditLogMaxSizeBytes = count('audit-log-maxsize', v) * 1024 * 1024),
    },
    {
      name: 'audit-log-maxbackup',
      arg: 'int',
      default: '10',
      help: 'Rotated audit log files kept; older ones are removed ({default}; 0: all are kept).',
      apply: (c, v) => (c.auditLogMaxBackup = count('audit-log-maxbackup', v)),
    },
    {
      name: 'audit-log-maxage',
      arg: 'int',
      default: '0',
      help: 'Days a rotated audit log file is kept, by the timestamp in its name ({default}: no age limit).',
      apply: (c, v) => (c.auditLogMaxAgeDays = count('audit-log-maxage', v)),
    },
    {
      name: 'audit-policy-file',
      arg: 'file',
      help: "Which requests are audited and how much of them, as kube-apiserver's audit.k8s.io/v1 Policy (YAML or JSON): rules by user, group, verb, resource, namespace or non-resource URL give the level None, Metadata, Request (with the body sent) or RequestResponse (with the answer too) and the stages left out; fields no client ever reads (access keys and their hashes, issued tokens, connector data) are never in a body. A file kube would refuse stops the start. Unset: every request at Metadata, without the RequestReceived stage.",
      apply: (c, v) => (c.auditPolicyFile = v),
    },
    {
      name: 'audit-webhook-config-file',
      arg: 'file',
      help: 'A kubeconfig naming a receiver to which audit events are POSTed in batches (audit.k8s.io/v1 EventList), besides the log file; failed batches are sent again (see --audit-webhook-initial-backoff). Unset: no webhook.',
      apply: (c, v) => (c.auditWebhookConfigFile = v),
    },
    {
      name: 'audit-webhook-mode',
      arg: 'string',
      help: "How events are sent to the webhook: batch (the default and only mode served: requests never wait for the webhook; kube's blocking and blocking-strict are refused).",
      apply: (c, v) => {
        if (v !== 'batch')
          throw new FlagError(
            `--audit-webhook-mode must be batch (got ${JSON.stringify(v)}): this server does not make requests wait for the webhook, so blocking and blocking-strict are not served`,
          );
        c.auditWebhookMode = v;
      },
    },
    {
      name: 'audit-webhook-initial-backoff',
      arg: 'duration',
      default: '10s',
      help: 'The wait before a batch the webhook failed (a network error, 429 or 5xx) is sent again, 1.5 times longer each time, five tries in all ({default}).',
      apply: (c, v) => (c.auditWebhookInitialBackoffMs = nonZeroDuration('audit-webhook-initial-backoff', v)),
    },
    {
      name: 'audit-webhook-batch-buffer-size',
      arg: 'int',
      default: '10000',
      help: 'Events the webhook holds at most: waiting, in batches waiting to be sent or sent again, and in flight; and 64 MiB of their JSON at most, however few they are. An event past either is dropped, counted in apiserver_audit_error_total{plugin="buffered"} and logged ({default}).',
      apply: (c, v) => (c.auditWebhookBatchBufferSize = positive('audit-webhook-batch-buffer-size', v)),
    },
    {
      name: 'audit-webhook-batch-max-size',
      arg: 'int',
      default: '400',
      help: 'Events in one batch at most ({default}).',
      apply: (c, v) => (c.auditWebhookBatchMaxSize = positive('audit-webhook-batch-max-size', v)),
    },
    {
      name: 'audit-webhook-batch-max-wait',
      arg: 'duration',
      default: '30s',
      help: 'How long events wait for a batch to fill before it is sent anyway ({default}).',
      apply: (c, v) => (c.auditWebhookBatchMaxWaitMs = nonZeroDuration('audit-webhook-batch-max-wait', v)),
    },
    {
      name: 'audit-webhook-batch-throttle-enable',
      arg: 'bool',
      default: 'true',
      help: 'Whether batches are sent at most --audit-webhook-batch-throttle-qps a second ({default}).',
      apply: (c, v) => (c.auditWebhookBatchThrottleEnable = bool('audit-webhook-batch-throttle-enable', v)),
    },
    {
      name: 'audit-webhook-batch-throttle-qps',
      arg: 'float',
      default: '10',
      help: 'Batches sent a second at most, on average ({default}).',
      apply: (c, v) => (c.auditWebhookBatchThrottleQps = positiveNumber('audit-webhook-batch-throttle-qps', v)),
    },
    {
      name: 'audit-webhook-batch-throttle-burst',
      arg: 'int',
      default: '15',
      help: 'Batches sent at once at most when none were for a while ({default}).',
      apply: (c, v) => (c.auditWebhookBatchThrottleBurst = positive('audit-webhook-batch-throttle-burst', v)),
    },
  ],
  settings: {
    auditWebhookMode: 'batch',
  },
  validate(config) {
    // Each worker would write and rotate the same file on its own, and lose lines to the others' rotations.
    if (config.workers > 1 && config.auditLogPath && config.auditLogPath !== '-')
      throw new FlagError(
        `--audit-log-path ${config.auditLogPath} with --workers ${config.workers}: the workers cannot share one rotated file; use --audit-log-path=- (stdout) or --audit-webhook-config-file, or --workers=1`,
      );
  },
};
