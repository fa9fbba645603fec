/**
 * Merging a kube config the server issued (one cluster, user and context) into the user's kubeconfig, as
 * `kubectl config set-*` would: the entries renamed to a name of ours, the context made current, and everything else
 * in the file kept as it was. The file is read and written as YAML (js-yaml), not through client-node's KubeConfig,
 * which keeps only the fields it knows (a user's `extensions` or `preferences` would be lost on write).
 */
import { chmodSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import yaml from 'js-yaml';
import type { Env } from './config.js';
import { CliError } from './errors.js';

type Entry = { name: string; [field: string]: unknown };

export interface Kubeconfig {
  clusters?: Entry[];
  users?: Entry[];
  contexts?: Entry[];
  'current-context'?: string;
  [field: string]: unknown;
}

/** An issued kube config: its one cluster, user and context. */
export interface IssuedKubeconfig {
  cluster: unknown;
  user: unknown;
  context: { cluster: string; user: string; [field: string]: unknown };
}

/** The one cluster, user and context of `text`; an error naming `what` when it is not such a kube config. */
export function parseKubeconfig(text: string, what: string): IssuedKubeconfig {
  let config: Kubeconfig | undefined;
  try {
    config = yaml.load(text) as Kubeconfig | undefined;
  } catch {
    config = undefined;
  }
  const [cluster] = config?.clusters ?? [];
  const [user] = config?.users ?? [];
  const [context] = config?.contexts ?? [];
  if (!cluster?.cluster || !user?.user || !context?.context)
    throw new CliError(`${what} is not a kube config with a cluster, a user and a context; nothing was written`);
  return { cluster: cluster.cluster, user: user.user, context: context.context as IssuedKubeconfig['context'] };
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
  put('contexts', 'context', { ...issued.context, cluster: name, user: name });
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

/** Writes the kubeconfig whole or not at all (a file beside it, renamed over it), keeping an existing file's mode. */
function writeKubeconfig(link: string, config: Kubeconfig): void {
  let mode = 0o600;
  let path = link;
  try {
    // A kubeconfig kept elsewhere and linked (dotfiles) stays linked: its target is written.
    path = realpathSync(link);
    mode = statSync(path).mode & 0o777;
  } catch {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  }
  const temporary = `${path}.platform-${process.pid}`;
  writeFileSync(temporary, yaml.dump(config, { noRefs: true }), { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, path);
}

/** Writes `text` to `path`, readable by its owner alone (a kube config holds a private key). */
export function writePrivateFile(path: string, text: string): void {
  try {
    writeFileSync(path, text, { mode: 0o600 });
    // An existing file keeps its mode on write: set it.
    chmodSync(path, 0o600);
  } catch (err) {
    throw new CliError(`cannot write ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
