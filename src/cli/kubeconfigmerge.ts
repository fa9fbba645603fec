/**
 * Merging a kube config the server issued (one cluster, user and context) into the user's kubeconfig, as
 * `kubectl config set-*` would: the entries renamed to a name of ours, the context made current, and everything else
 * in the file kept as it was. The file is read and written as YAML (js-yaml), not through client-node's KubeConfig,
 * which keeps only the fields it knows (a user's `extensions` or `preferences` would be lost on write).
 *
 * What the server sent is data, never code: kubectl would run a user's `exec` or `auth-provider`, read files named
 * in it or send its requests through a `proxy-url`, so only a server, its CA and a certificate (or token) are taken
 * from it (host/storedkubeconfig.ts, which the server applies to kubeconfigs tenants store), and anything else is
 * refused before a file is written or a line printed.
 */
import { mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import yaml from 'js-yaml';
import { kubeConfigFromData, StoredKubeConfigError } from '../host/storedkubeconfig.js';
import type { Env } from './config.js';
import { CliError } from './errors.js';
import { OWNER_ONLY, replaceFile } from './privatefile.js';

type Entry = { name: string; [field: string]: unknown };

export interface Kubeconfig {
  clusters?: Entry[];
  users?: Entry[];
  contexts?: Entry[];
  'current-context'?: string;
  [field: string]: unknown;
}

/** An issued kube config: its cluster, user and context, holding only the fields a connection needs. */
export interface IssuedKubeconfig {
  cluster: Record<string, string>;
  user: Record<string, string>;
}

/** The cluster and user of `text`'s current context; an error naming `what` and the refused fields otherwise. */
export function parseKubeconfig(text: string, what: string): IssuedKubeconfig {
  let connection;
  try {
    connection = kubeConfigFromData(text);
  } catch (err) {
    if (!(err instanceof StoredKubeConfigError)) throw err;
    throw new CliError(`${what} is refused: ${err.message}; nothing was written`);
  }
  const cluster: Record<string, string> = {
    server: connection.server,
    'certificate-authority-data': connection.caData!,
    ...(connection.tlsServerName ? { 'tls-server-name': connection.tlsServerName } : {}),
  };
  const user: Record<string, string> = connection.token
    ? { token: connection.token }
    : { 'client-certificate-data': connection.certData!, 'client-key-data': connection.keyData! };
  return { cluster, user };
}

/** `issued` alone as a kube config of its own, its cluster, user and context named `name`. */
export function renderKubeconfig(issued: IssuedKubeconfig, name: string): string {
  const config: Kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: issued.cluster }],
    users: [{ name, user: issued.user }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  };
  return yaml.dump(config, { noRefs: true, lineWidth: -1 });
}

/** The kubeconfig to merge into: the first file of $KUBECONFIG (where kubectl writes new entries), else ~/.kube/config. */
export function mergedKubeconfigPath(env: Env): string {
  const first = (env.KUBECONFIG ?? '').split(delimiter).find((p) => p !== '');
  return first ?? join(env.HOME || homedir(), '.kube', 'config');
}

/**
 * Adds `issued` to `config` (the kubeconfig at `path`, as readKubeconfig read it) as the cluster, user and context
 * `name`, makes that context current and writes it (made, mode 0600, when there was none). Answers which entries of
 * that name it replaced (say `cluster "x"`), so that the caller can say so.
 */
export function mergeKubeconfig(
  path: string,
  config: Kubeconfig,
  issued: IssuedKubeconfig,
  name: string,
): { context: string; replaced: string[] } {
  const replaced: string[] = [];
  const put = (list: 'clusters' | 'users' | 'contexts', field: string, value: unknown) => {
    const entries = config[list] ?? [];
    const at = entries.findIndex((e) => e?.name === name);
    const entry = { name, [field]: value };
    if (at >= 0) {
      replaced.push(`${field} ${JSON.stringify(name)}`);
      entries[at] = entry;
    } else entries.push(entry);
    config[list] = entries;
  };
  put('clusters', 'cluster', issued.cluster);
  put('users', 'user', issued.user);
  put('contexts', 'context', { cluster: name, user: name });
  config['current-context'] = name;
  writeKubeconfig(path, config);
  return { context: name, replaced };
}

/** The kubeconfig at `path` (an empty one when there is none); an error when it is not one, before anything is asked. */
export function readKubeconfig(path: string): Kubeconfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { apiVersion: 'v1', kind: 'Config' };
    throw new CliError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); nothing was changed`);
  }
  let config: unknown;
  try {
    config = yaml.load(text) ?? {};
  } catch {
    config = undefined;
  }
  const lists = ['clusters', 'users', 'contexts'] as const;
  if (
    typeof config !== 'object' ||
    config === null ||
    Array.isArray(config) ||
    lists.some((l) => (config as Kubeconfig)[l] != null && !Array.isArray((config as Kubeconfig)[l]))
  )
    throw new CliError(
      `${path} is not a kubeconfig (YAML with lists of clusters, users and contexts); nothing was changed`,
    );
  return { apiVersion: 'v1', kind: 'Config', ...(config as Kubeconfig) };
}

/**
 * Writes the kubeconfig whole or not at all (privatefile.ts), owner-only: it now holds a private key, so an existing
 * file's group and other bits go (a tighter mode, e.g. 0400, is kept).
 */
function writeKubeconfig(link: string, config: Kubeconfig): void {
  let mode = OWNER_ONLY;
  let path = link;
  try {
    // A kubeconfig kept elsewhere and linked (dotfiles) stays linked: its target is written.
    path = realpathSync(link);
    mode = statSync(path).mode & OWNER_ONLY || OWNER_ONLY;
  } catch {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  }
  replaceFile(path, yaml.dump(config, { noRefs: true }), mode);
}
