/**
 * Command-line flags (named like kube-apiserver's) into one typed configuration, put together from the options of
 * each concern in src/options/ (as kube-apiserver's from k8s.io/apiserver pkg/server/options): a new flag is one
 * entry in its concern's file.
 */
import { GROUP_NAME } from './apimachinery/group.js';
import { FlagError, flagsByName, helpOf, type Flag, type Options } from './options/flag.js';
import { accessKeysOptions, type AccessKeysConfig } from './options/accesskeys.js';
import { admissionOptions, type AdmissionConfig } from './options/admission.js';
import { auditOptions, type AuditConfig } from './options/audit.js';
import { authenticationOptions, type AuthenticationConfig } from './options/authentication.js';
import { authorizationOptions, type AuthorizationConfig } from './options/authorization.js';
import { clustersOptions, type ClustersConfig } from './options/clusters.js';
import { connectionsOptions, type ConnectionsConfig } from './options/connections.js';
import { controllersOptions, type ControllersConfig } from './options/controllers.js';
import { dataDirOptions, type DataDirConfig } from './options/datadir.js';
import { encryptionOptions, type EncryptionConfig } from './options/encryption.js';
import { etcdOptions, type EtcdConfig } from './options/etcd.js';
import { flowControlOptions, type FlowControlConfig } from './options/flowcontrol.js';
import { hostOptions, type HostConfig } from './options/host.js';
import { hostReviewsOptions, type HostReviewsConfig } from './options/hostreviews.js';
import { loggingOptions, type LoggingConfig } from './options/logging.js';
import { requestsOptions, type RequestsConfig } from './options/requests.js';
import { servingOptions, type ServingConfig } from './options/serving.js';
import { shutdownOptions, type ShutdownConfig } from './options/shutdown.js';
import { tokensOptions, type TokensConfig } from './options/tokens.js';
import { tracingOptions, type TracingConfig } from './options/tracing.js';
import { workersOptions, type WorkersConfig } from './options/workers.js';

export { FlagError };

export type Config = EtcdConfig &
  AccessKeysConfig &
  DataDirConfig &
  ServingConfig &
  AuthenticationConfig &
  HostConfig &
  AdmissionConfig &
  HostReviewsConfig &
  ControllersConfig &
  ClustersConfig &
  FlowControlConfig &
  RequestsConfig &
  ConnectionsConfig &
  ShutdownConfig &
  WorkersConfig &
  TokensConfig &
  LoggingConfig &
  AuthorizationConfig &
  AuditConfig &
  EncryptionConfig &
  TracingConfig;

/** The concerns, in the order of --help; each one's flags, settings and checks in its own file. */
export const CONCERNS: readonly Options<Config>[] = [
  etcdOptions,
  accessKeysOptions,
  dataDirOptions,
  servingOptions,
  authenticationOptions,
  hostOptions,
  admissionOptions,
  hostReviewsOptions,
  controllersOptions,
  clustersOptions,
  flowControlOptions,
  requestsOptions,
  connectionsOptions,
  shutdownOptions,
  workersOptions,
  tokensOptions,
  loggingOptions,
  authorizationOptions,
  auditOptions,
  encryptionOptions,
  tracingOptions,
];

const BY_NAME = flagsByName(CONCERNS);

/** Every flag, in the order of --help. */
export const FLAGS: readonly Flag<Config>[] = [...BY_NAME.values()];

/** The configuration without flags: each concern's settings, and each flag's default as it parses. */
export function defaultConfig(): Config {
  const config = {} as Config;
  for (const concern of CONCERNS) Object.assign(config, concern.settings);
  for (const flag of FLAGS) if (flag.default !== undefined) flag.apply(config, flag.default);
  return config;
}

/** Parses `--flag=value` and `--flag value`; returns undefined when help was asked for. */
export function parseFlags(argv: string[]): Config | undefined {
  const config = defaultConfig();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return undefined;
    const match = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new FlagError(`unexpected argument ${JSON.stringify(arg)}`);
    const spec = BY_NAME.get(match[1]);
    if (!spec) throw new FlagError(`unknown flag: --${match[1]}`);
    // Booleans stand alone (`--flag` = true), as Go's flag package takes them; `--flag=false` turns one off.
    const value = match[2] ?? (spec.arg === 'bool' ? 'true' : argv[++i]);
    if (value === undefined) throw new FlagError(`flag needs an argument: --${spec.name}`);
    spec.apply(config, value);
  }
  for (const concern of CONCERNS) concern.complete?.(config);
  for (const concern of CONCERNS) concern.validate?.(config);
  return config;
}

export function helpText(): string {
  const rows = FLAGS.map((f) => `  --${f.name} ${f.arg}\n      ${helpOf(f)}`);
  return `Usage: node dist/main.js [flags]\n       node dist/main.js snapshot save|restore ... (backups of its etcd; \`snapshot\` alone says how)\n\nThe ${GROUP_NAME}/v1 API server.\n\nFlags:\n${rows.join('\n')}\n  -h, --help\n      Show this help.\n`;
}
