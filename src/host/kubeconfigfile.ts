/**
 * Where a Kubernetes API is and how to authenticate to it, as @kubernetes/client-node's KubeConfig: the operator's
 * kubeconfig file (--kubeconfig) or a pod's service account, loaded by the client, so whatever it runs (exec
 * credential plugins, auth-providers) works; and what the client lacks, filled in here: client-go's `tokenFile`
 * read again as it rotates, impersonation beyond `as`, and a check at load that the files named can be read.
 * A kubeconfig read from stored data never comes here as a file or text: storedkubeconfig.ts checks it and
 * kubeConnectionOf builds the client's configuration from the allowed fields only. Messages name fields and files,
 * never their contents.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import yaml from 'js-yaml';
import { isPlainObject } from '../apimachinery/types.js';
import { kubeClient, type KubeConfig } from './kubeclient.js';

/** A connection as a stored kubeconfig may give it (storedkubeconfig.ts): data only, base64 as in a kubeconfig. */
export interface HostConnection {
  /** The API server URL, without a trailing slash. */
  server: string;
  caData?: string;
  insecureSkipTLSVerify?: false;
  tlsServerName?: string;
  certData?: string;
  keyData?: string;
  token?: string;
}

/** Impersonation headers the client does not send itself (it sends `as` only). */
export interface Impersonation {
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The client's configuration of one context, and what the request layer adds to it. */
export interface KubeConnection {
  kubeConfig: KubeConfig;
  /** Read again while the server runs (service account tokens rotate); wins over any other token (as client-go). */
  tokenFile?: string;
  impersonate?: Impersonation;
}

/** A kubeconfig that does not load: not YAML, lacks what it needs, or names a file that cannot be read. */
export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The file's current context, loaded by the client. Throws a KubeconfigError saying what is wrong where. */
export function loadKubeconfigFile(path: string): KubeConnection {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const doc = parseKubeconfig(text);
  const dir = dirname(path);
  const kubeConfig = new (kubeClient().KubeConfig)();
  try {
    // The document parsed here, but for token-file: this module reads it (and again as it rotates); the client
    // would read it once, relative to the working directory.
    const users = Array.isArray(doc.users)
      ? doc.users.map((e) =>
          isPlainObject(e) && isPlainObject(e.user) ? { ...e, user: { ...e.user, 'token-file': undefined } } : e,
        )
      : doc.users;
    kubeConfig.loadFromString(JSON.stringify({ ...doc, users }));
  } catch (err) {
    // The client's messages name fields ("clusters[0].cluster.server is missing").
    throw new KubeconfigError(`not a kubeconfig: ${(err as Error).message.split('\n')[0]}`);
  }
  kubeConfig.makePathsAbsolute(dir);

  const current = doc['current-context'];
  const context = typeof current === 'string' && current ? find(doc, 'contexts', current) : undefined;
  const ctx = context && isPlainObject(context.entry.context) ? context.entry.context : undefined;
  const cluster = typeof ctx?.cluster === 'string' ? find(doc, 'clusters', ctx.cluster) : undefined;
  if (!cluster || !isPlainObject(cluster.entry.cluster) || !kubeConfig.getCurrentCluster())
    throw new KubeconfigError('no current context with a cluster');
  const c = cluster.entry.cluster;
  const at = `clusters[${cluster.index}].cluster`;
  const server = str(c, 'server', at)!;
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigError(`${at}.server is not a URL`);
  }
  // client-go takes http:// too (kubectl proxy, say): the operator's own choice.
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new KubeconfigError(`${at}.server must be an https or http URL`);
  // The client refuses plain http unless told to skip TLS verification, of which http has none to skip.
  if (url.protocol === 'http:')
    kubeConfig.clusters = kubeConfig.clusters.map((k) => (k.server === server ? { ...k, skipTLSVerify: true } : k));
  const file = fileField(dir);
  file(c, 'certificate-authority', at);

  // A context without a user, or naming none there is, connects without credentials (as kubectl does).
  const user = typeof ctx?.user === 'string' ? find(doc, 'users', ctx.user) : undefined;
  if (!user || !isPlainObject(user.entry.user)) return { kubeConfig };
  const u = user.entry.user;
  const uat = `users[${user.index}].user`;
  file(u, 'client-certificate', uat);
  file(u, 'client-key', uat);
  // client-go's field is tokenFile; token-file is what @kubernetes/client-node reads (once).
  const tokenFile = file(u, u.tokenFile != null ? 'tokenFile' : 'token-file', uat);
  const impersonate = impersonation(u, uat);
  return { kubeConfig, ...(tokenFile ? { tokenFile } : {}), ...(impersonate ? { impersonate } : {}) };
}

/**
 * The client's configuration of a connection read from stored data, built from its fields (never from text the
 * client would parse: that could name files or run plugins).
 */
export function kubeConnectionOf(conn: HostConnection): KubeConnection {
  const kubeConfig = new (kubeClient().KubeConfig)();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: 'cluster',
        server: conn.server,
        caData: conn.caData,
        tlsServerName: conn.tlsServerName,
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'user', certData: conn.certData, keyData: conn.keyData, token: conn.token }],
    contexts: [{ name: 'context', cluster: 'cluster', user: 'user' }],
    currentContext: 'context',
  });
  return { kubeConfig };
}

/**
 * The pod's service account, as client-go's InClusterConfig: KUBERNETES_SERVICE_HOST and _PORT, its CA, and its
 * token file (read when a request is made, and again as it rotates). Undefined outside a pod.
 */
export function inClusterConnection(env: NodeJS.ProcessEnv): KubeConnection | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host) return undefined;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!port) throw new KubeconfigError('KUBERNETES_SERVICE_HOST is set but KUBERNETES_SERVICE_PORT is not');
  const kubeConfig = new (kubeClient().KubeConfig)();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: 'in-cluster',
        server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
        caFile: `${SERVICEACCOUNT_DIR}/ca.crt`,
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'in-cluster' }],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'in-cluster' }],
    currentContext: 'in-cluster',
  });
  return { kubeConfig, tokenFile: `${SERVICEACCOUNT_DIR}/token` };
}

/** as-uid, as-groups and as-user-extra of a user, checked; undefined when it has none. */
function impersonation(u: Record<string, unknown>, uat: string): Impersonation | undefined {
  const groups = u['as-groups'];
  if (groups != null && !(Array.isArray(groups) && groups.every((g) => typeof g === 'string')))
    throw new KubeconfigError(`${uat}.as-groups must be a list of strings`);
  const extra = u['as-user-extra'];
  if (
    extra != null &&
    !(
      isPlainObject(extra) &&
      Object.values(extra).every((v) => Array.isArray(v) && v.every((s) => typeof s === 'string'))
    )
  )
    throw new KubeconfigError(`${uat}.as-user-extra must map names to lists of strings`);
  const imp: Impersonation = {
    uid: str(u, 'as-uid', uat),
    groups: (groups as string[] | undefined)?.length ? (groups as string[]) : undefined,
    extra: extra as Record<string, string[]> | undefined,
  };
  return imp.uid || imp.groups || imp.extra ? imp : undefined;
}

/** What a user of a kubeconfig sends with each request: a token, a client certificate, basic auth, impersonation. */
export interface UserCredentials {
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  impersonate?: { user?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
}

/** The credentials of `u` (at `uat` in the file); plugins are refused by name. */
function readUser(u: Record<string, unknown>, uat: string, dir: string): UserCredentials {
  const file = fileField(dir);
  const creds: UserCredentials = {};
  if (u.exec != null)
    throw new KubeconfigError(
      `${uat}.exec: credential plugins are not run; give a token, tokenFile or client certificate`,
    );
  if (u['auth-provider'] != null)
    throw new KubeconfigError(
      `${uat}.auth-provider: authentication plugins are not run; give a token, tokenFile or client certificate`,
    );
  creds.certData = str(u, 'client-certificate-data', uat);
  creds.certFile = file(u, 'client-certificate', uat);
  creds.keyData = str(u, 'client-key-data', uat);
  creds.keyFile = file(u, 'client-key', uat);
  creds.token = str(u, 'token', uat);
  // client-go's field is tokenFile; token-file is what @kubernetes/client-node read.
  creds.tokenFile = file(u, u.tokenFile != null ? 'tokenFile' : 'token-file', uat);
  creds.username = str(u, 'username', uat);
  creds.password = str(u, 'password', uat);
  const as = str(u, 'as', uat);
  const others = impersonation(u, uat);
  if (as || others) creds.impersonate = { user: as, ...others };
  return creds;
}

/**
 * Webhook credentials (--admission-control-config-file's kubeConfigFile, as kube's AuthenticationInfoResolver reads
 * it): every user of a kubeconfig by name, for credentials chosen per server; files and tokens only, presented by
 * admission/webhookclient.ts to webhooks, which are not Kubernetes APIs. Plugins are refused by name.
 */
export function kubeconfigUsers(path: string): Map<string, UserCredentials> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const doc = parseKubeconfig(text);
  const users = new Map<string, UserCredentials>();
  const entries = Array.isArray(doc.users) ? doc.users : [];
  entries.forEach((entry, index) => {
    if (!isPlainObject(entry) || typeof entry.name !== 'string' || !isPlainObject(entry.user)) return;
    users.set(entry.name, readUser(entry.user, `users[${index}].user`, dirname(path)));
  });
  return users;
}

/** Like kubectl: paths are relative to the kubeconfig, and a file named must be readable when it is loaded. */
function fileField(dir: string) {
  return (obj: Record<string, unknown>, key: string, where: string): string | undefined => {
    const name = str(obj, key, where);
    if (name === undefined) return undefined;
    if (str(obj, `${key}-data`, where) !== undefined)
      throw new KubeconfigError(`${where} has both ${key} and ${key}-data: give one`);
    const path = isAbsolute(name) ? name : join(dir, name);
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      throw new KubeconfigError(`${where}.${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`);
    }
    return path;
  };
}

/** The kubeconfig document of `text` (YAML or JSON); messages quote none of it, as it may hold credentials. */
export function parseKubeconfig(text: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    // js-yaml's first line is the reason and position; later lines quote the text.
    throw new KubeconfigError(`not a kubeconfig: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isPlainObject(doc)) throw new KubeconfigError('not a kubeconfig: not a YAML or JSON object');
  return doc;
}

/** A string field, or undefined when absent or empty; anything else but a string is refused by name. */
function str(obj: Record<string, unknown>, key: string, at: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new KubeconfigError(`${at}.${key} must be a string`);
  return v;
}

/** The entry named `name` in the list `list` of the kubeconfig, with its index. */
export function find(
  doc: Record<string, unknown>,
  list: string,
  name: string,
): { entry: Record<string, unknown>; index: number } | undefined {
  const entries = doc[list];
  if (!Array.isArray(entries)) return undefined;
  const index = entries.findIndex((e) => isPlainObject(e) && e.name === name);
  return index < 0 ? undefined : { entry: entries[index] as Record<string, unknown>, index };
}
