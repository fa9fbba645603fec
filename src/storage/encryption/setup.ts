/**
 * Encryption at rest as the server runs it: the configuration file (--encryption-provider-config, or the embedded
 * default's), its transformers, the automatic reload, and the KMS health check.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GROUP_NAME } from '../../apimachinery/group.js';
import type { HealthCheck } from '../../apimachinery/health.js';
import type { Logger } from '../../log.js';
import { contentHash, loadEncryptionConfig } from './config.js';
import { buildTransformers, closeTransformers, ResourceTransformers, type BuiltTransformers } from './transformers.js';

/** The embedded default's configuration, in the data dir next to the etcd it protects. */
export const DEFAULT_CONFIG_FILE = 'encryption-config.yaml';

/** The resource name of the token signing keys in an EncryptionConfiguration. */
export const SIGNING_KEYS_RESOURCE = { group: GROUP_NAME, resource: 'signingkeys' };

export interface EncryptionOptions {
  /** --encryption-provider-config; unset: `defaultIn` when given, else no encryption. */
  path?: string;
  /** The data dir of the embedded etcd, where a default configuration is made on first start. */
  defaultIn?: string;
  reload: boolean;
  reloadIntervalMs: number;
  etcdPrefix: string;
  log: Logger;
  /** Called after a new configuration is in force (to rewrite what was stored with the previous one). */
  onReload?: () => void;
  /** Told of every reload attempt of a changed file: whether the new configuration is in force (for metrics). */
  onReloadResult?: (ok: boolean) => void;
}

export interface Encryption {
  transformers: ResourceTransformers;
  /** Whether a configuration file is in force (else everything is stored plain). */
  configured: boolean;
  /** `kms-providers` when KMS providers are configured or the file is reloaded (kube's name). */
  healthChecks: HealthCheck[];
  stop(): void;
}

export async function setUpEncryption(opts: EncryptionOptions): Promise<Encryption> {
  const path = opts.path ?? (opts.defaultIn ? ensureDefaultConfig(opts.defaultIn, opts.log) : undefined);
  if (!path) {
    opts.log.warn(
      "no --encryption-provider-config: objects, including SharedSecret data, access keys' connectorData and the token signing keys, are stored in etcd in clear",
    );
    return {
      transformers: ResourceTransformers.identity(opts.etcdPrefix),
      configured: false,
      healthChecks: [],
      stop: () => {},
    };
  }
  const config = loadEncryptionConfig(path);
  const transformers = new ResourceTransformers(await buildTransformers(config), opts.etcdPrefix);
  opts.log.info('encryption at rest configured', {
    file: path,
    resources: config.resources.flatMap((r) => r.resources),
    writers: config.resources.map((r) => writer(r.providers[0])),
  });
  const reloader = opts.reload ? new ConfigReloader(path, config.contentHash, transformers, opts) : undefined;
  reloader?.start();
  const healthChecks: HealthCheck[] =
    transformers.kmsProviders.length || opts.reload
      ? [{ name: 'kms-providers', check: () => kmsHealth(transformers.kmsProviders) }]
      : [];
  return {
    transformers,
    configured: true,
    healthChecks,
    stop() {
      reloader?.stop();
      transformers.close();
    },
  };
}

/** What a provider entry writes with, for the log: type and key name, never the key. */
function writer(p: { type: string; keys?: { name: string }[]; name?: string }): string {
  return p.type === 'kms' ? `kms:${p.name}` : p.keys ? `${p.type}:${p.keys[0].name}` : p.type;
}

/** Each KMS provider's health; the failures named `kms-provider-<i>` as kube's aggregated check does. */
async function kmsHealth(providers: BuiltTransformers['kms']): Promise<void> {
  const results = await Promise.allSettled(providers.map((p) => p.transformer.health()));
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected' ? [`kms-provider-${i}: ${(r.reason as Error)?.message ?? r.reason}`] : [],
  );
  if (failed.length) throw new Error(failed.join(', '));
}

/**
 * The embedded default: on first start, a configuration encrypting every resource of the group (and the signing
 * keys) with a random 32-byte secretbox key, written 0600. secretbox is authenticated and, unlike aesgcm with a
 * random nonce, needs no rotation by write count; identity comes second so a data dir from before still reads.
 */
export function ensureDefaultConfig(dataDir: string, log: Logger): string {
  const path = join(dataDir, DEFAULT_CONFIG_FILE);
  if (existsSync(path)) return path;
  const text = [
    '# Made by the server on first start (embedded etcd). Keep it: without it the data in etcd cannot be read.',
    'apiVersion: apiserver.config.k8s.io/v1',
    'kind: EncryptionConfiguration',
    'resources:',
    '  - resources:',
    `      - '*.${GROUP_NAME}'`,
    '    providers:',
    '      - secretbox:',
    '          keys:',
    '            - name: key1',
    `              secret: ${randomBytes(32).toString('base64')}`,
    '      - identity: {}',
    '',
  ].join('\n');
  writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  log.info('made an encryption configuration with a new secretbox key for the embedded etcd', { file: path });
  return path;
}

/**
 * --encryption-provider-config-automatic-reload: the file's content hash is compared every interval (kube's
 * controller polls each minute); a changed, valid file is put in force at once for every resource. An invalid one,
 * or one whose KMS providers are not healthy, is logged and the configuration in force kept.
 */
class ConfigReloader {
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly path: string,
    private hash: string,
    private readonly transformers: ResourceTransformers,
    private readonly opts: EncryptionOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), this.opts.reloadIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      let hash: string;
      try {
        hash = contentHash(readFileSync(this.path));
      } catch (err) {
        this.opts.log.error(
          'encryption provider configuration not reloaded: the file cannot be read; the previous configuration stays in force',
          { file: this.path, error: (err as Error).message },
        );
        return;
      }
      if (hash === this.hash) return;
      let next: BuiltTransformers | undefined;
      try {
        const config = loadEncryptionConfig(this.path);
        next = await buildTransformers(config);
        await kmsHealth(next.kms);
        this.transformers.set(next);
        this.hash = config.contentHash;
        this.opts.log.info('encryption provider configuration reloaded', {
          file: this.path,
          writers: config.resources.map((r) => writer(r.providers[0])),
        });
        this.opts.onReloadResult?.(true);
        this.opts.onReload?.();
      } catch (err) {
        this.opts.onReloadResult?.(false);
        // Tried again next interval, as kube's controller does (a KMS plugin may come up meanwhile).
        if (next) closeTransformers(next);
        this.opts.log.error(
          'encryption provider configuration not reloaded; the previous configuration stays in force',
          { file: this.path, error: (err as Error).message },
        );
      }
    } finally {
      this.running = false;
    }
  }
}
