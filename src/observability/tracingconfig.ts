/**
 * The TracingConfiguration file of --tracing-config-file (apiserver.config.k8s.io, YAML or JSON), read and validated
 * as kube-apiserver does (k8s.io/apiserver/pkg/server/options/tracing.go and component-base/tracing/api/v1
 * ValidateTracingConfiguration), with its messages: decoded strictly, `endpoint` a gRPC target (default
 * localhost:4317), `samplingRatePerMillion` from 0 (the default: only requests whose caller sampled them) to one
 * million (all). Reading it loads nothing of OpenTelemetry.
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';

export interface TracingConfig {
  /** A gRPC target: host:port, dns:///host:port, unix:///path. */
  endpoint: string;
  samplingRatePerMillion: number;
}

export class TracingConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TracingConfigError';
  }
}

const GROUP = 'apiserver.config.k8s.io';
/** The versions kube-apiserver decodes (v1 since 1.34, the betas before it). */
const VERSIONS = ['v1', 'v1beta1', 'v1alpha1'].map((v) => `${GROUP}/${v}`);
const KIND = 'TracingConfiguration';
const FIELDS = ['apiVersion', 'kind', 'endpoint', 'samplingRatePerMillion'];
export const DEFAULT_ENDPOINT = 'localhost:4317';
const MAX_SAMPLING_RATE_PER_MILLION = 1_000_000;
const GRPC_SCHEMES = ['dns', 'unix', 'unix-abstract'];

/** Reads and validates the file; TracingConfigError with kube's message when it is not valid. */
export function loadTracingConfig(path: string): TracingConfig {
  let data: string;
  try {
    data = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new TracingConfigError(`tracing-config-file ${path} does not exist`);
    throw new TracingConfigError(
      `failed to read tracing config: unable to read tracing configuration from ${JSON.stringify(path)}: ${(err as Error).message}`,
    );
  }
  return parseTracingConfig(data);
}

export function parseTracingConfig(data: string): TracingConfig {
  const decodeError = (why: string) =>
    new TracingConfigError(`failed to read tracing config: unable to decode tracing configuration data: ${why}`);
  let doc: unknown;
  try {
    doc = yaml.load(data, { schema: yaml.JSON_SCHEMA });
  } catch (err) {
    throw decodeError((err as Error).message.split('\n')[0]);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw decodeError('the file does not hold an object');
  const obj = doc as Record<string, unknown>;
  if (!obj.apiVersion || !obj.kind)
    throw decodeError(`Object 'Kind' and 'apiVersion' are required (apiVersion: ${VERSIONS[0]}, kind: ${KIND})`);
  if (!VERSIONS.includes(String(obj.apiVersion)) || obj.kind !== KIND)
    throw decodeError(
      `no kind ${JSON.stringify(String(obj.kind))} is registered for version ${JSON.stringify(String(obj.apiVersion))} (expected apiVersion ${VERSIONS[0]}, kind ${KIND})`,
    );
  const unknown = Object.keys(obj).filter((f) => !FIELDS.includes(f));
  if (unknown.length)
    throw decodeError(`strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`);
  if (obj.endpoint !== undefined && obj.endpoint !== null && typeof obj.endpoint !== 'string')
    throw decodeError(
      `json: cannot unmarshal ${jsonType(obj.endpoint)} into Go struct field TracingConfiguration.endpoint of type string`,
    );
  const rate = obj.samplingRatePerMillion;
  if (
    rate !== undefined &&
    rate !== null &&
    (typeof rate !== 'number' || !Number.isInteger(rate) || Math.abs(rate) > 2 ** 31)
  )
    throw decodeError(
      `json: cannot unmarshal ${typeof rate === 'number' ? `number ${rate}` : jsonType(rate)} into Go struct field TracingConfiguration.samplingRatePerMillion of type int32`,
    );
  const config: TracingConfig = {
    endpoint: typeof obj.endpoint === 'string' ? obj.endpoint : DEFAULT_ENDPOINT,
    samplingRatePerMillion: typeof rate === 'number' ? rate : 0,
  };
  const errs = validateTracingConfig(config);
  if (errs.length)
    throw new TracingConfigError(
      `failed to validate tracing configuration: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`,
    );
  return config;
}

/** kube's ValidateTracingConfiguration: field.Invalid errors, as `field: Invalid value: v: why`. */
export function validateTracingConfig(config: TracingConfig): string[] {
  const errs: string[] = [];
  const invalid = (field: string, value: unknown, why: string) =>
    errs.push(`${field}: Invalid value: ${JSON.stringify(value)}: ${why}`);
  const rate = config.samplingRatePerMillion;
  if (rate < 0) invalid('samplingRatePerMillion', rate, 'sampling rate must be positive');
  if (rate > MAX_SAMPLING_RATE_PER_MILLION)
    invalid('samplingRatePerMillion', rate, 'sampling rate per million must be less than or equal to one million');
  const endpoint = config.endpoint.includes('//') ? config.endpoint : `dns://${config.endpoint}`;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(endpoint)?.[1];
  if (scheme === undefined || !URL.canParse(endpoint))
    invalid('endpoint', endpoint, `parse ${JSON.stringify(endpoint)}: invalid URL`);
  else if (!GRPC_SCHEMES.includes(scheme))
    invalid(
      'endpoint',
      endpoint,
      `unsupported scheme: ${scheme}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md`,
    );
  return errs;
}

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v;
}
