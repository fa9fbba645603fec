/**
 * A kubeconfig read from stored data (a Secret someone else wrote): data, never code. A full kubeconfig could
 * ask to read files (tokenFile, certificate paths), send requests through a `proxy-url`, skip verification or
 * impersonate (and other clients would run an `exec` plugin or auth-provider); here the current context's cluster
 * and user are read by hand and only certificate, token and CA fields reach the connection. Anything else that
 * would change how or as whom the server connects is refused by name, so nothing is silently left out. Messages
 * name fields, never values.
 */
import { isPlainObject } from '../apimachinery/types.js';
import { find, KubeconfigError, parseKubeconfig, type HostConnection } from './kubeconfigfile.js';

/** The stored kubeconfig is not one, or asks for something a stored kubeconfig may not. */
export class StoredKubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoredKubeConfigError';
  }
}

/** What a stored kubeconfig may hold, and what it may hold but does not change how the server connects. */
const CLUSTER_FIELDS = ['server', 'certificate-authority-data', 'tls-server-name'];
const USER_FIELDS = ['client-certificate-data', 'client-key-data', 'token'];
const IGNORED_FIELDS = ['extensions', 'disable-compression'];

/** Why a field is refused, for the fields a real kubeconfig may carry; any other field is refused as unknown. */
const REFUSED: Record<string, string> = {
  exec: 'it runs a command',
  'auth-provider': 'it runs an authentication plugin',
  tokenFile: 'it reads a file',
  'token-file': 'it reads a file',
  'certificate-authority': 'it reads a file',
  'client-certificate': 'it reads a file',
  'client-key': 'it reads a file',
  'proxy-url': 'it sends requests through another server',
  'insecure-skip-tls-verify':
    "it does not check the server's certificate, and the CA is handed out to callers as the virtual cluster's",
  username: 'basic authentication, which kube-apiserver no longer accepts',
  password: 'basic authentication, which kube-apiserver no longer accepts',
  as: 'impersonation acts as another user',
  'as-uid': 'impersonation acts as another user',
  'as-groups': 'impersonation acts as another user',
  'as-user-extra': 'impersonation acts as another user',
};

/**
 * The most of a name a message quotes, and the most refused fields it names: the kubeconfig may be a tenant's (a
 * virtual cluster's connection Secret), and its messages go to the log at every check.
 */
const MAX_QUOTED = 128;
const MAX_LISTED = 10;
const shortened = (text: string) => (text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}...` : text);
const quoted = (text: string) => JSON.stringify(shortened(text));
const listed = (items: string[]) =>
  items.length > MAX_LISTED
    ? `${items.slice(0, MAX_LISTED).join('; ')} and ${items.length - MAX_LISTED} more`
    : items.join('; ');

const USER_CREDENTIALS = 'client-certificate-data with client-key-data, or token';
const ALLOWED_TEXT = `server, certificate-authority-data and tls-server-name for the cluster, and for the user ${USER_CREDENTIALS}`;

/**
 * The connection of `text`'s current context, holding only the allowed fields. Throws a StoredKubeConfigError
 * naming every refused field (e.g. `users[0].user.exec`).
 */
export function kubeConfigFromData(text: string): HostConnection {
  let doc: Record<string, unknown>;
  try {
    doc = parseKubeconfig(text);
  } catch (err) {
    if (err instanceof KubeconfigError) throw new StoredKubeConfigError(err.message);
    throw err;
  }
  const current = doc['current-context'];
  if (typeof current !== 'string' || !current) throw new StoredKubeConfigError('the kubeconfig has no current-context');
  const context = find(doc, 'contexts', current);
  if (!context || !isPlainObject(context.entry.context))
    throw new StoredKubeConfigError(`the kubeconfig has no context ${quoted(current)} (its current-context)`);
  const { cluster: clusterName, user: userName } = context.entry.context;
  const cluster = typeof clusterName === 'string' ? find(doc, 'clusters', clusterName) : undefined;
  if (!cluster || !isPlainObject(cluster.entry.cluster))
    throw new StoredKubeConfigError('the kubeconfig has no current cluster');
  const user = typeof userName === 'string' ? find(doc, 'users', userName) : undefined;
  if (!user || !isPlainObject(user.entry.user))
    throw new StoredKubeConfigError('the kubeconfig has no user in its current context');

  const c = cluster.entry.cluster as Record<string, unknown>;
  const u = user.entry.user as Record<string, unknown>;
  const refused = [
    ...refusedFields(c, CLUSTER_FIELDS, `clusters[${cluster.index}].cluster`),
    ...refusedFields(u, USER_FIELDS, `users[${user.index}].user`),
  ];
  if (refused.length)
    throw new StoredKubeConfigError(
      `the kubeconfig may not use ${listed(refused)}. A stored kubeconfig is data: it may hold only ${ALLOWED_TEXT}`,
    );

  const server = c.server;
  if (typeof server !== 'string' || !isHttps(server))
    throw new StoredKubeConfigError(`clusters[${cluster.index}].cluster.server must be an https URL`);
  // A user and password in the URL would be sent as basic authentication, which the fields above refuse by name.
  if (!isPlainUrl(server))
    throw new StoredKubeConfigError(
      `clusters[${cluster.index}].cluster.server must be an https URL without a user name, password, query or fragment`,
    );
  const tooLong = [...Object.entries(c), ...Object.entries(u)].find(
    ([, value]) => typeof value === 'string' && value.length > MAX_FIELD_CHARS,
  );
  if (tooLong)
    throw new StoredKubeConfigError(`the kubeconfig's ${tooLong[0]} is longer than ${MAX_FIELD_CHARS} characters`);
  if (!c['certificate-authority-data'])
    throw new StoredKubeConfigError("the kubeconfig's cluster has no certificate-authority-data");
  const hasCert = !!u['client-certificate-data'] || !!u['client-key-data'];
  if (hasCert && !(u['client-certificate-data'] && u['client-key-data'])) {
    throw new StoredKubeConfigError(`users[${user.index}].user needs both client-certificate-data and client-key-data`);
  }
  if (!hasCert && !u.token)
    throw new StoredKubeConfigError(`users[${user.index}].user has no credential (${USER_CREDENTIALS})`);

  return {
    server: server.replace(/\/$/, ''),
    caData: c['certificate-authority-data'] as string,
    tlsServerName: tlsServerName(server, c['tls-server-name']),
    insecureSkipTLSVerify: false,
    certData: u['client-certificate-data'] as string | undefined,
    keyData: u['client-key-data'] as string | undefined,
    token: u.token as string | undefined,
  };
}

/**
 * tls-server-name, unless it only repeats the server's host: then the certificate is checked against that host
 * anyway, and Node warns (DEP0123) when an IP address, as virtual clusters' kubeconfigs often hold, is passed as one.
 */
function tlsServerName(server: string, name: unknown): string | undefined {
  if (typeof name !== 'string' || !name) return undefined;
  const host = new URL(server).hostname.replace(/^\[(.*)\]$/, '$1');
  return name === host ? undefined : name;
}

/** The fields of `obj` outside `allowed` (and the harmless ones), each with why; allowed ones must be strings. */
function refusedFields(obj: Record<string, unknown>, allowed: string[], at: string): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(obj)) {
    if (value === undefined || value === null || IGNORED_FIELDS.includes(key)) continue;
    if (allowed.includes(key)) {
      if (typeof value !== 'string') out.push(`${at}.${key} as anything but a string`);
      continue;
    }
    // false is the default: it asks for nothing.
    if (key === 'insecure-skip-tls-verify' && value === false) continue;
    out.push(`${at}.${shortened(key)} (${REFUSED[key] ?? 'not a field a stored kubeconfig may use'})`);
  }
  return out;
}

/** The most characters of one field: a CA bundle of hundreds of certificates fits, a flood does not. */
const MAX_FIELD_CHARS = 1024 * 1024;

function isPlainUrl(url: string): boolean {
  const parsed = new URL(url);
  return !parsed.username && !parsed.password && !parsed.search && !parsed.hash;
}

function isHttps(url: string): boolean {
  try {
    return new URL(url).protocol === 'https:';
  } catch {
    return false;
  }
}
