/**
 * The front proxy's settings as kube-apiserver publishes them for aggregated API servers: the ConfigMap
 * kube-system/extension-apiserver-authentication (its keys named like the flags; header lists as JSON arrays).
 * Read at start when no --requestheader-client-ca-file is given, as k8s.io/apiserver's delegating authentication
 * does; used as if its values had been given as flags. A change to it needs a restart (kube reloads it live).
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { HostClusterError, type HostCluster } from './cluster.js';

export const AUTHENTICATION_CONFIGMAP = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };
const WHERE = `ConfigMap ${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name}`;

/** What the ConfigMap says, or undefined when it does not exist (the host has no front proxy configured). */
export async function readAuthenticationConfigMap(host: HostCluster): Promise<Record<string, string> | undefined> {
  try {
    const cm = await host.call(`reading ${WHERE}`, () =>
      host.api(CoreV1Api).readNamespacedConfigMap(AUTHENTICATION_CONFIGMAP),
    );
    return cm.data ?? {};
  } catch (err) {
    if (err instanceof HostClusterError && err.code === 404) return undefined;
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `${why}. The server's ServiceAccount needs the Role extension-apiserver-authentication-reader in kube-system (a RoleBinding); or give --requestheader-client-ca-file, or --authentication-skip-lookup`,
      { cause: err },
    );
  }
}

/**
 * `config` with the ConfigMap's front proxy (and client CA) settings where the flags gave none. The CA bundles are
 * written under `<data-dir>/extension-apiserver-authentication/`, since the rest of the server reads them as files.
 */
export function withAuthenticationConfigMap(config: Config, data: Record<string, string>): Config {
  const dir = join(config.dataDir, 'extension-apiserver-authentication');
  const write = (name: string, pem: string) => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, name);
    writeFileSync(file, pem, { mode: 0o600 });
    return file;
  };
  const out: Config = { ...config };
  const caPem = data['requestheader-client-ca-file'];
  if (caPem && !config.requestheaderClientCaFile) {
    out.requestheaderClientCaFile = write('requestheader-client-ca.crt', caPem);
    out.requestheaderAllowedNames = list(data, 'requestheader-allowed-names') ?? [];
    out.requestheaderUsernameHeaders =
      list(data, 'requestheader-username-headers') ?? config.requestheaderUsernameHeaders;
    out.requestheaderGroupHeaders = list(data, 'requestheader-group-headers') ?? config.requestheaderGroupHeaders;
    out.requestheaderExtraHeadersPrefix =
      list(data, 'requestheader-extra-headers-prefix') ?? config.requestheaderExtraHeadersPrefix;
    out.requestheaderUidHeaders = list(data, 'requestheader-uid-headers') ?? config.requestheaderUidHeaders;
  }
  const clientCaPem = data['client-ca-file'];
  if (clientCaPem && !config.clientCaFile) out.clientCaFile = write('client-ca.crt', clientCaPem);
  return out;
}

/** A JSON array of strings under `key`, as kube-apiserver writes them; undefined when absent or empty. */
function list(data: Record<string, string>, key: string): string[] | undefined {
  const text = data[key];
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${WHERE}: ${key} is not a JSON array of strings (${JSON.stringify(text.slice(0, 80))})`);
  }
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new Error(`${WHERE}: ${key} is not a JSON array of strings`);
  return value.length ? value : undefined;
}
