/**
 * The front proxy's settings as kube-apiserver publishes them for aggregated API servers: the ConfigMap
 * kube-system/extension-apiserver-authentication (its keys named like the flags; header lists as JSON arrays).
 * Read at start when no --requestheader-client-ca-file is given, as k8s.io/apiserver's delegating authentication
 * does, and read again while the server runs (auth/clientcas.ts); used as if its values had been given as flags.
 */
import type { RequestHeaderOptions } from './requestheader.js';
import type { Config } from '../config.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';

export const AUTHENTICATION_CONFIGMAP = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };
const WHERE = `ConfigMap ${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name}`;

/** What the ConfigMap says, or undefined when it does not exist (the host has no front proxy configured). */
export async function readAuthenticationConfigMap(host: HostCluster): Promise<Record<string, string> | undefined> {
  try {
    const { namespace, name } = AUTHENTICATION_CONFIGMAP;
    const cm = await host.request<{ data?: Record<string, string> }>(
      `reading ${WHERE}`,
      'GET',
      `/api/v1/namespaces/${namespace}/configmaps/${name}`,
    );
    return cm?.data ?? {};
  } catch (err) {
    if (err instanceof HostClusterError && err.code === 404) return undefined;
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `${why}. The server's ServiceAccount needs the Role extension-apiserver-authentication-reader in kube-system (a RoleBinding); or give --requestheader-client-ca-file, or --authentication-skip-lookup`,
      { cause: err },
    );
  }
}

/** What the ConfigMap says for the settings the flags left open; header lists it lacks keep the flags' defaults. */
export function authenticationFromConfigMap(
  config: Config,
  data: Record<string, string>,
): { frontProxy?: RequestHeaderOptions; clientCaPem?: string } {
  const out: { frontProxy?: RequestHeaderOptions; clientCaPem?: string } = {};
  const caPem = data['requestheader-client-ca-file'];
  if (caPem && !config.requestheaderClientCaFile) {
    out.frontProxy = {
      clientCaPem: caPem,
      allowedNames: list(data, 'requestheader-allowed-names') ?? [],
      usernameHeaders: list(data, 'requestheader-username-headers') ?? config.requestheaderUsernameHeaders,
      groupHeaders: list(data, 'requestheader-group-headers') ?? config.requestheaderGroupHeaders,
      extraHeaderPrefixes: list(data, 'requestheader-extra-headers-prefix') ?? config.requestheaderExtraHeadersPrefix,
      uidHeaders: list(data, 'requestheader-uid-headers') ?? config.requestheaderUidHeaders,
    };
  }
  const clientCaPem = data['client-ca-file'];
  if (clientCaPem && !config.clientCaFile) out.clientCaPem = clientCaPem;
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
