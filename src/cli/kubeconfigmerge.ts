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
import { closeSync, mkdirSync, openSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
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
 * Adds `issued` to the kubeconfig at `path` as the cluster, user and context `name`, makes that context current and
 * writes it (made, mode 0600, when there was none). The file is read again under kubectl's lock (`<file>.lock`,
 * created exclusively, as client-go's clientcmd takes it), so a `kubectl config` change or another merge since the
 * caller first read it is kept. Answers which entries of that name it replaced (say `cluster "x"`), so that the
 * caller can say so.
 */
export function mergeKubeconfig(
  path: string,
  issued: IssuedKubeconfig,
  name: string,
): { context: string; replaced: string[] } {
  const file = target(path);
  return underLock(file, () => {
    const config = readKubeconfig(file);
    const replaced = putIssued(config, issued, name);
    writeKubeconfig(file, config);
    return { context: name, replaced };
  });
}

/** Puts `issued` into `config` under `name`, current; which entries of that name it replaced. */
function putIssued(config: Kubeconfig, issued: IssuedKubeconfig, name: string): string[] {
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
  return replaced;
}

/** The file a kubeconfig path names: a link's target (a kubeconfig kept in dotfiles and linked stays linked). */
function target(link: string): string {
  try {
    return realpathSync(link);
  } catch {
    return link;
  }
}

/** Runs `fn` holding `<path>.lock`; another holder is said, never waited for or broken. */
function underLock<T>(path: string, fn: () => T): T {
  const lock = `${path}.lock`;
  let fd: number;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    fd = openSync(lock, 'wx', OWNER_ONLY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new CliError(
        `${lock} exists: another program is changing ${path}; try again once it is done (or remove the lock if none is); nothing was changed`,
      );
    throw new CliError(`cannot lock ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); nothing was changed`);
  }
  try {
    return fn();
  } finally {
    closeSync(fd);
    rmSync(lock, { force: true });
  }
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
    // The core schema: a value such as 2024-01-01 stays the string it is to kubectl, not a date written back as
    // 2024-01-01T00:00:00.000Z.
    config = yaml.load(text, { schema: yaml.CORE_SCHEMA }) ?? {};
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
function writeKubeconfig(path: string, config: Kubeconfig): void {
  let mode = OWNER_ONLY;
  try {
    mode = statSync(path).mode & OWNER_ONLY || OWNER_ONLY;
  } catch {
    // None yet: made 0600.
  }
  replaceFile(path, yaml.dump(config, { noRefs: true }), mode);
}
