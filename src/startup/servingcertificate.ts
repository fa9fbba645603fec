/** The serving certificate: the flags' files, reloaded, or the self-signed one. */
import type { Config } from '../config.js';
import { selfSignedHosts } from '../datadir.js';
import type { Logger } from '../log.js';
import type { Dynamic } from '../pki/reloading.js';
import { ensureServingCertificate } from '../pki/selfsigned.js';
import { reloadingServingCertificate, type ServingPair } from '../pki/servingcert.js';

/** --tls-cert-file/--tls-private-key-file, reloaded when they change; without them, the self-signed one. */
export async function servingCertificate(
  config: Config,
  log: Logger,
): Promise<{ pair: Dynamic<ServingPair>; caPem?: string; stop(): void }> {
  if (config.tlsCertFile && config.tlsPrivateKeyFile) {
    const pair = reloadingServingCertificate({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile,
      intervalMs: config.tlsReloadIntervalMs,
      log,
    });
    pair.start();
    return { pair, stop: () => pair.stop() };
  }
  const pem = await ensureServingCertificate({ certDir: config.certDir, hosts: selfSignedHosts(config) });
  const pair = { cert: pem.certPem, key: pem.keyPem };
  return { pair: { current: () => pair, onChange: () => {} }, caPem: pem.caPem, stop: () => {} };
}
