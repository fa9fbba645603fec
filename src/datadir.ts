/**
 * What a first start writes into the data dir (the self-signed serving certificate, the admin token, the default
 * encryption configuration of the embedded etcd). Its own module, importing only what it writes with: the primary of
 * --workers makes these before its workers start, so that they all read the same files rather than race to write
 * them, and loads nothing of the server it does not run.
 */
import { ensureAdminToken } from './auth/admin-token.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { ensureServingCertificate } from './pki/selfsigned.js';
import { ensureDefaultConfig } from './storage/encryption/setup.js';

/** Each is kept when it is there already. */
export async function prepareDataDir(config: Config, log: Logger): Promise<void> {
  if (!config.tlsCertFile) await ensureServingCertificate({ certDir: config.certDir, hosts: selfSignedHosts(config) });
  if (!config.tokenAuthFile) ensureAdminToken(config.dataDir);
  if (!config.encryptionProviderConfig && !config.etcdServers.length) ensureDefaultConfig(config.dataDir, log);
}

/** The names the self-signed serving certificate is for: --tls-sans and the bind address. */
export function selfSignedHosts(config: Config): string[] {
  const hosts = [...config.tlsSans];
  if (!['0.0.0.0', '::'].includes(config.bindAddress)) hosts.push(config.bindAddress);
  return hosts;
}
