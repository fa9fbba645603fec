/** What the steps of the start are given besides the parts made before them: the completed flags, a worker's share. */
import type { enabledPlugins } from '../admission/chain.js';
import type { loadAdmissionConfiguration } from '../admission/config.js';
import type { Config } from '../config.js';
import type { ForwardedStdout } from '../observability/audit.js';
import type { DEFAULT_POLICY } from '../observability/auditpolicy.js';

/**
 * A worker of --workers: the primary holds the data dir's lock and runs the embedded etcd (their endpoints here, or
 * none with --etcd-servers), so that one machine has one of each however many workers serve.
 */
export interface WorkerOf {
  embeddedEtcdEndpoints?: string[];
  /** The primary's stdout, for audit events of --audit-log-path=-. */
  stdout?: ForwardedStdout;
}

/** The flags and what they name, read before anything starts: a plugin or file the server cannot take stops it here. */
export interface CompletedConfig extends Config {
  admissionPlugins: ReturnType<typeof enabledPlugins>;
  admissionConfig: ReturnType<typeof loadAdmissionConfiguration>;
  auditPolicy: typeof DEFAULT_POLICY;
}
