/** The storage step: etcd, encryption at rest and its rewrites of what an old key wrote, the compactor. */
import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { etcdObjectType, type Metrics } from '../observability/metrics.js';
import type { Registry } from '../registry/registry.js';
import { startEmbeddedEtcd, type EmbeddedEtcd } from '../storage/embedded-etcd.js';
import { Compactor } from '../storage/compactor.js';
import { EtcdStorage, type EtcdStorageOptions } from '../storage/etcd.js';
import { setUpEncryption, type Encryption } from '../storage/encryption/setup.js';
import type { SigningKeys } from '../tokens/signingkeys.js';
import type { Cleanups } from './cleanups.js';
import type { WorkerOf } from './inputs.js';

/** etcd (external, or embedded under --data-dir), encryption at rest, the client, and the compactor. */
export async function startStorage(
  config: Config,
  log: Logger,
  metrics: Metrics,
  cleanups: Cleanups,
  worker: WorkerOf | undefined,
  onEncryptionReload: () => void,
): Promise<{ storage: EtcdStorage; encryption: Encryption }> {
  let endpoints = worker?.embeddedEtcdEndpoints ?? config.etcdServers;
  if (!endpoints.length) {
    const etcd: EmbeddedEtcd = await startEmbeddedEtcd({ dataDir: config.dataDir, log: (msg) => log.info(msg) });
    cleanups.add('stopping the embedded etcd', () => etcd.stop());
    endpoints = etcd.endpoints;
    log.info('started embedded etcd', { endpoints, dataDir: config.dataDir });
  }
  const etcdPrefix = config.etcdPrefix;
  // Encryption at rest; an invalid file stops the start here.
  const encryption = await setUpEncryption({
    path: config.encryptionProviderConfig,
    defaultIn: config.etcdServers.length ? undefined : config.dataDir,
    reload: config.encryptionProviderConfigAutomaticReload,
    reloadIntervalMs: config.encryptionProviderConfigReloadIntervalMs,
    etcdPrefix,
    log,
    onReload: onEncryptionReload,
    onReloadResult: (ok) => metrics.encryptionConfigReload(ok),
  });
  if (encryption.configured) cleanups.add('stopping encryption at rest', async () => encryption.stop());
  const storage = new EtcdStorage({
    endpoints,
    tls: etcdTls(config),
    onCall: (operation, key, seconds, failed) =>
      metrics.etcdRequest(operation, etcdObjectType(etcdPrefix, key), seconds, failed),
    transformers: encryption.transformers,
    onUnreadable: (key, reason) =>
      log.error('a watched value cannot be read; the watch cache lists again', { key, reason }),
    onHealthChange: (healthy, reason) =>
      healthy
        ? log.info('etcd answers again; serving requests that need it')
        : log.error('etcd does not answer; requests that need it fail at once until it does', { reason }),
  });
  cleanups.add('closing the etcd client', () => storage.close());
  const compactor = new Compactor(storage, {
    intervalMs: config.etcdCompactionIntervalMs,
    log: (msg, fields) => log.info(msg, fields),
  });
  compactor.start();
  cleanups.add('stopping the compactor', async () => compactor.stop());
  return { storage, encryption };
}

/** Writes again what an old encryption key or provider wrote, and logs how much (and what could not be read). */
export async function rewriteStaleValues(
  storage: EtcdStorage,
  registry: Registry,
  signingKeys: SigningKeys,
  log: Logger,
): Promise<void> {
  try {
    const prefixes = [...registry.caches.values()].map((c) => c.prefix);
    let rewritten = 0;
    const unreadable: string[] = [];
    for (const prefix of prefixes) {
      const result = await storage.rewriteStale(prefix);
      rewritten += result.rewritten;
      unreadable.push(...result.unreadable);
    }
    await signingKeys.rewrite();
    if (unreadable.length)
      log.error('encryption at rest: these objects cannot be read with the keys configured and were not rewritten', {
        keys: unreadable,
      });
    log.info('encryption at rest: every stored object is written with the current write key', { rewritten });
  } catch (err) {
    log.error(
      'encryption at rest: rewriting stored objects with the current write key failed; it is tried again at the next start or reload',
      { error: (err as Error).message },
    );
  }
}

/** The etcd TLS files of the flags, read once (a rotated certificate needs a restart, as for kube-apiserver). */
function etcdTls(config: Config): EtcdStorageOptions['tls'] {
  if (!config.etcdCafile && !config.etcdCertfile) return undefined;
  const read = (file?: string) => (file ? readFileSync(file) : undefined);
  return { caPem: read(config.etcdCafile), certPem: read(config.etcdCertfile), keyPem: read(config.etcdKeyfile) };
}
