/**
 * The EncryptionConfiguration file (apiserver.config.k8s.io/v1, YAML or JSON) of --encryption-provider-config:
 * decoded strictly and validated with kube-apiserver's messages (k8s.io/apiserver/pkg/apis/apiserver/validation
 * and pkg/server/options/encryptionconfig/config.go). Errors name the field and never show a secret.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { parseGoDuration } from '../../apimachinery/duration.js';

export interface EncryptionKey {
  name: string;
  /** The key's bytes (base64-decoded `secret`). */
  secret: Buffer;
}

export type ProviderConfig =
  | { type: 'aescbc' | 'aesgcm' | 'secretbox'; keys: EncryptionKey[] }
  | { type: 'identity' }
  | { type: 'kms'; name: string; endpoint: string; timeoutMs: number };

export interface ResourceConfig {
  /** As written: `sharedsecrets.management.platform.sh`, `*.management.platform.sh`, `*.*`. */
  resources: string[];
  providers: ProviderConfig[];
}

export interface EncryptionConfig {
  resources: ResourceConfig[];
  /** sha256:<hex> of the file's bytes, as kube's (the reload controller compares it). */
  contentHash: string;
}

export class EncryptionConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EncryptionConfigError';
  }
}

const API_VERSION = 'apiserver.config.k8s.io/v1';
const KIND = 'EncryptionConfiguration';
const PROVIDER_TYPES = ['aesgcm', 'aescbc', 'secretbox', 'identity', 'kms'] as const;
const KEY_SIZES: Record<'aescbc' | 'aesgcm' | 'secretbox', number[]> = {
  aescbc: [16, 24, 32],
  aesgcm: [16, 24, 32],
  secretbox: [32],
};
const DEFAULT_KMS_TIMEOUT_MS = 3000;

/** The fields each object of the file may have (kube decodes strictly: anything else is an error). */
const FIELDS: Record<string, string[]> = {
  root: ['apiVersion', 'kind', 'resources'],
  resource: ['resources', 'providers'],
  provider: [...PROVIDER_TYPES],
  keyed: ['keys'],
  key: ['name', 'secret'],
  identity: [],
  kms: ['apiVersion', 'name', 'cachesize', 'endpoint', 'timeout'],
};

export function contentHash(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Reads and validates the file; EncryptionConfigError (naming the file and the fields) when it is not valid. */
export function loadEncryptionConfig(path: string): EncryptionConfig {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new EncryptionConfigError(
      `error reading encryption provider configuration file ${JSON.stringify(path)}: ${(err as Error).message}`,
    );
  }
  if (!data.length)
    throw new EncryptionConfigError(`encryption provider configuration file ${JSON.stringify(path)} is empty`);
  return { ...parseEncryptionConfig(data, path), contentHash: contentHash(data) };
}

export function parseEncryptionConfig(data: Buffer | string, path = '<inline>'): Omit<EncryptionConfig, 'contentHash'> {
  const decodeError = (why: string) =>
    new EncryptionConfigError(`error decoding encryption provider configuration file ${JSON.stringify(path)}: ${why}`);
  let doc: unknown;
  try {
    doc = yaml.load(data.toString(), { schema: yaml.JSON_SCHEMA });
  } catch (err) {
    throw decodeError((err as Error).message.split('\n')[0]);
  }
  if (!isObject(doc)) throw decodeError('the file does not hold an object');
  if (!doc.apiVersion || !doc.kind)
    throw decodeError(`Object 'Kind' and 'apiVersion' are required (apiVersion: ${API_VERSION}, kind: ${KIND})`);
  if (doc.apiVersion !== API_VERSION || doc.kind !== KIND) {
    throw decodeError(
      `no kind ${JSON.stringify(String(doc.kind))} is registered for version ${JSON.stringify(String(doc.apiVersion))} (expected apiVersion ${API_VERSION}, kind ${KIND})`,
    );
  }
  const unknown = unknownFields(doc);
  if (unknown.length)
    throw decodeError(`strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`);
  const errs: string[] = [];
  const config = validate(doc, errs);
  if (errs.length)
    throw new EncryptionConfigError(
      `error while parsing file ${JSON.stringify(path)}: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`,
    );
  masked(config);
  return config;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Fields the schema does not know, as paths (`resources[0].providers[1].aesgcmm`). */
function unknownFields(doc: Record<string, unknown>): string[] {
  const out: string[] = [];
  const check = (obj: unknown, kind: string, path: string) => {
    if (!isObject(obj)) return;
    for (const field of Object.keys(obj))
      if (!FIELDS[kind].includes(field)) out.push(`${path}${path ? '.' : ''}${field}`);
  };
  check(doc, 'root', '');
  (Array.isArray(doc.resources) ? doc.resources : []).forEach((r, i) => {
    check(r, 'resource', `resources[${i}]`);
    const providers = isObject(r) && Array.isArray(r.providers) ? r.providers : [];
    providers.forEach((p, j) => {
      const path = `resources[${i}].providers[${j}]`;
      check(p, 'provider', path);
      if (!isObject(p)) return;
      for (const type of ['aesgcm', 'aescbc', 'secretbox'] as const) {
        check(p[type], 'keyed', `${path}.${type}`);
        const keys =
          isObject(p[type]) && Array.isArray((p[type] as Record<string, unknown>).keys)
            ? ((p[type] as Record<string, unknown>).keys as unknown[])
            : [];
        keys.forEach((k, n) => check(k, 'key', `${path}.${type}.keys[${n}]`));
      }
      check(p.identity, 'identity', `${path}.identity`);
      check(p.kms, 'kms', `${path}.kms`);
    });
  });
  return out;
}

const invalid = (path: string, value: unknown, why: string) =>
  `${path}: Invalid value: ${JSON.stringify(value)}: ${why}`;
const required = (path: string, why: string) => `${path}: Required value: ${why}`;

function validate(doc: Record<string, unknown>, errs: string[]): Omit<EncryptionConfig, 'contentHash'> {
  const resources = Array.isArray(doc.resources) ? doc.resources : [];
  if (!resources.length) {
    errs.push(required('resources', 'at least one resources is required'));
    return { resources: [] };
  }
  const kmsNames = new Set<string>();
  const out: ResourceConfig[] = resources.map((entry, i) => {
    const r = `resources[${i}].resources`;
    const p = `resources[${i}].providers`;
    const conf = isObject(entry) ? entry : {};
    const names = Array.isArray(conf.resources) ? conf.resources.map(String) : [];
    if (!names.length) errs.push(required(r, `at least one ${r} is required`));
    errs.push(...resourceOverlap(names, r), ...resourceNames(names, r));
    const providers = Array.isArray(conf.providers) ? conf.providers : [];
    if (!providers.length) errs.push(required(p, `at least one ${p} is required`));
    return {
      resources: names,
      providers: providers.flatMap((provider, j) => validateProvider(provider, `${p}[${j}]`, kmsNames, errs)),
    };
  });
  return { resources: out };
}

function validateProvider(provider: unknown, path: string, kmsNames: Set<string>, errs: string[]): ProviderConfig[] {
  const given = isObject(provider)
    ? PROVIDER_TYPES.filter((t) => provider[t] !== undefined && provider[t] !== null)
    : [];
  if (!given.length) {
    errs.push(
      invalid(
        path,
        given,
        'provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity',
      ),
    );
    return [];
  }
  if (given.length > 1) {
    errs.push(
      invalid(
        path,
        given,
        'more than one provider specified in a single element, should split into different list elements',
      ),
    );
    return [];
  }
  const type = given[0];
  const body = (provider as Record<string, unknown>)[type];
  if (type === 'identity') return [{ type }];
  if (type === 'kms') {
    const kms = validateKms(isObject(body) ? body : {}, `${path}.kms`, kmsNames, errs);
    return kms ? [kms] : [];
  }
  const keysPath = `${path}.${type}.keys`;
  const keys = isObject(body) && Array.isArray(body.keys) ? body.keys : [];
  if (!keys.length) {
    errs.push(required(keysPath, 'at least one keys is required'));
    return [];
  }
  const valid = keys.map((key, n) => validateKey(isObject(key) ? key : {}, `${keysPath}[${n}]`, KEY_SIZES[type], errs));
  return valid.every((k): k is EncryptionKey => !!k) ? [{ type, keys: valid }] : [];
}

function validateKey(
  key: Record<string, unknown>,
  path: string,
  sizes: number[],
  errs: string[],
): EncryptionKey | undefined {
  const name = typeof key.name === 'string' ? key.name : '';
  const secret = typeof key.secret === 'string' ? key.secret : '';
  if (!name) errs.push(required(`${path}.name`, 'name is a mandatory field for a key'));
  if (!secret) {
    errs.push(required(`${path}.secret`, 'secret is a mandatory field for a key'));
    return undefined;
  }
  // Go's StdEncoding: padded standard alphabet, nothing else (Buffer.from would skip what it does not know).
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(secret)) {
    errs.push(invalid(`${path}.secret`, 'REDACTED', 'secrets must be base64 encoded'));
    return undefined;
  }
  const bytes = Buffer.from(secret, 'base64');
  if (!sizes.includes(bytes.length)) {
    errs.push(
      invalid(
        `${path}.secret`,
        'REDACTED',
        `secret is not of the expected length, got ${bytes.length}, expected one of [${sizes.join(' ')}]`,
      ),
    );
    return undefined;
  }
  return name ? { name, secret: bytes } : undefined;
}

function validateKms(
  kms: Record<string, unknown>,
  path: string,
  names: Set<string>,
  errs: string[],
): ProviderConfig | undefined {
  const before = errs.length;
  const apiVersion = kms.apiVersion === undefined || kms.apiVersion === '' ? 'v1' : String(kms.apiVersion);
  const name = typeof kms.name === 'string' ? kms.name : '';
  if (!name) errs.push(required(`${path}.name`, 'name is a mandatory field for a provider'));
  if (name.includes(':'))
    errs.push(invalid(`${path}.name`, name, `invalid KMS provider name ${name}, must not contain ':'`));
  if (name && names.has(name))
    errs.push(invalid(`${path}.name`, name, `duplicate KMS provider name ${name}, names must be unique`));
  names.add(name);
  let timeoutMs = DEFAULT_KMS_TIMEOUT_MS;
  if (kms.timeout !== undefined) {
    const parsed = typeof kms.timeout === 'string' ? parseGoDuration(kms.timeout) : undefined;
    if (parsed === undefined)
      errs.push(invalid(`${path}.timeout`, kms.timeout, 'must be a duration such as 3s or 500ms'));
    else if (parsed <= 0) errs.push(invalid(`${path}.timeout`, kms.timeout, 'timeout should be a positive value'));
    else timeoutMs = parsed;
  }
  const endpoint = typeof kms.endpoint === 'string' ? kms.endpoint : '';
  if (!endpoint) errs.push(invalid(`${path}.endpoint`, '', 'endpoint is a mandatory field for a kms'));
  else {
    const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(endpoint)?.[1] ?? '';
    if (scheme !== 'unix')
      errs.push(
        invalid(
          `${path}.endpoint`,
          endpoint,
          `unsupported scheme ${JSON.stringify(scheme)} for KMS provider, only unix is supported`,
        ),
      );
  }
  if (apiVersion !== 'v1' && kms.cachesize !== undefined)
    errs.push(invalid(`${path}.cachesize`, kms.cachesize, 'cachesize is not supported in v2'));
  if (apiVersion !== 'v1' && apiVersion !== 'v2')
    errs.push(
      invalid(
        `${path}.apiVersion`,
        apiVersion,
        'unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported',
      ),
    );
  // kube-apiserver 1.29+ refuses KMS v1 unless its deprecated feature gate is on; this server has no KMS v1.
  if (apiVersion === 'v1')
    errs.push(
      invalid(
        `${path}.apiVersion`,
        apiVersion,
        'KMSv1 is deprecated and not supported by this server. Use KMSv2 instead (apiVersion: v2)',
      ),
    );
  return errs.length === before ? { type: 'kms', name, endpoint, timeoutMs } : undefined;
}

/** `group/resource` of a name in the file: `secrets` is core, `*.` every core resource, `*.*` everything. */
export function parseGroupResource(name: string): { group: string; resource: string } {
  const dot = name.indexOf('.');
  return dot < 0 ? { group: '', resource: name } : { group: name.slice(dot + 1), resource: name.slice(0, dot) };
}

function resourceOverlap(names: string[], path: string): string[] {
  if (names.length < 2) return [];
  const grs = names.map(parseGroupResource);
  let overlap = false;
  let duplicate = false;
  grs.forEach((a, i) =>
    grs.forEach((b, j) => {
      if (i === j) return;
      if (a.group === b.group && a.resource === b.resource) duplicate = true;
      else if (
        (a.group === '*' && a.resource === '*') ||
        (a.group === b.group && (a.resource === '*' || b.resource === '*'))
      )
        overlap = true;
    }),
  );
  const out: string[] = [];
  if (duplicate) out.push(invalid(path, names, 'the same resource cannot be specified multiple times'));
  if (overlap)
    out.push(
      invalid(
        path,
        names,
        "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
      ),
    );
  return out;
}

function resourceNames(names: string[], path: string): string[] {
  const out: string[] = [];
  names.forEach((name, j) => {
    const at = `${path}[${j}]`;
    const { group, resource } = parseGroupResource(name);
    if (name.toLowerCase() !== name) out.push(invalid(at, name, 'resource name should not contain capital letters'));
    else if (name === '*')
      out.push(
        invalid(at, name, "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"),
      );
    else if (['apiserveripinfo', 'serviceipallocations', 'servicenodeportallocations'].includes(name))
      out.push(invalid(at, name, 'resources which do not have REST API/s cannot be encrypted'));
    else if (group === 'events.k8s.io')
      out.push(
        invalid(
          at,
          name,
          "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file",
        ),
      );
    else if (group === 'extensions')
      out.push(invalid(at, name, "'extensions' group has been removed and cannot be used for encryption"));
    else if (group === '*' && resource !== '*')
      out.push(invalid(at, name, 'encrypting the same resource across groups is not supported'));
  });
  return out;
}

/** A resource after a wildcard that already covers it would never be used (kube refuses such a file). */
function masked(config: Omit<EncryptionConfig, 'contentHash'>): void {
  const seen = new Set<string>();
  const text = (g: string, r: string) => (g === '' && r === '*' ? '*.' : g ? `${r}.${g}` : r);
  for (const entry of config.resources) {
    for (const name of entry.resources) {
      const { group, resource } = parseGroupResource(name);
      if (seen.has(`${group}/*`))
        throw new EncryptionConfigError(
          `error while building transformers: resource ${JSON.stringify(text(group, resource))} is masked by earlier rule ${JSON.stringify(text(group, '*'))}`,
        );
      if (seen.has('*/*'))
        throw new EncryptionConfigError(
          `error while building transformers: resource ${JSON.stringify(text(group, resource))} is masked by earlier rule "*.*"`,
        );
      seen.add(`${group}/${resource}`);
    }
  }
}
