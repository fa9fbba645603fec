/** The last step: once serving, what is written and logged for the one who started the server. */
import { join, resolve as resolvePath } from 'node:path';
import { writeKubeconfig } from '../admin-kubeconfig.js';
import { compileWaitingSchemas } from '../apimachinery/schema.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { WorkerOf } from './inputs.js';

/**
 * Once serving: the admin kubeconfig (with the embedded default's token and CA), the `serving` line saying where and
 * how to stop, and the schemas compiled in the background.
 */
export function announce(
  config: Config,
  log: Logger,
  worker: WorkerOf | undefined,
  url: string,
  adminToken: string | undefined,
  caPem: string | undefined,
): string | undefined {
  let adminKubeconfig: string | undefined;
  if (adminToken && caPem) {
    adminKubeconfig = join(config.dataDir, 'admin.kubeconfig');
    writeKubeconfig(adminKubeconfig, { server: url, caPem, token: adminToken });
  }
  log.info('serving', {
    url,
    ...(adminKubeconfig ? { hint: `kubectl --kubeconfig ${adminKubeconfig} get sharedsecrets -A` } : {}),
    dataDir: resolvePath(config.dataDir),
    ...(config.etcdServers.length ? {} : { etcdData: resolvePath(config.dataDir, 'etcd') }),
    stop: `Ctrl-C (or kill -TERM ${worker ? process.ppid : process.pid}) stops the server; what is stored stays in ${config.etcdServers.length ? 'etcd' : resolvePath(config.dataDir)} for the next start`,
  });
  // In the background, so that the first write of each kind does not wait for its schema to compile.
  compileWaitingSchemas().catch((err: unknown) =>
    log.warn('compiling a schema failed; it is compiled again at its first use', { error: String(err) }),
  );
  return adminKubeconfig;
}
