/**
 * Where the command line client finds its credential: flags (`--kubeconfig`, `--context`) first, then the environment
 * (`PLATFORM_URL` with `PLATFORM_ACCESS_KEY`, for CI jobs), then the file `login` wrote: `$PLATFORM_CONFIG`, else
 * `$XDG_CONFIG_HOME/platform/config.json`, else `~/.config/platform/config.json`, mode 0600 (the key is in it; it
 * is never printed).
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';
import { replaceFile } from './privatefile.js';

/** What `login` keeps. */
export interface LoginConfig {
  /** The server's URL, e.g. https://platform.example.com (the API is under /apis/management.platform.sh/v1). */
  server: string;
  accessKey: string;
  /** The PEM of the CA that signed the server's certificate, when the system's CAs do not trust it. */
  certificateAuthorityData?: string;
  insecureSkipTlsVerify?: boolean;
}

export type Env = Record<string, string | undefined>;

export function configPath(env: Env): string {
  if (env.PLATFORM_CONFIG) return env.PLATFORM_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'platform', 'config.json');
}

/** The login file, or undefined when there is none. */
export function readLogin(env: Env): LoginConfig | undefined {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`${path} is not JSON; run \`platform logout\` and log in again`);
  }
  const login = parsed as Partial<LoginConfig> | null;
  if (!login || typeof login.server !== 'string' || typeof login.accessKey !== 'string')
    throw new CliError(`${path} has no server and access key; run \`platform login\` again`);
  return login as LoginConfig;
}

/** Writes the login file, readable by its owner alone (it holds the key). */
export function writeLogin(env: Env, login: LoginConfig): string {
  const path = configPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // A new file renamed over the old: never written through a link planted at the path, never readable by others.
  replaceFile(path, `${JSON.stringify(login, null, 2)}\n`);
  return path;
}

/** Removes the login file; whether there was one. */
export function removeLogin(env: Env): boolean {
  const path = configPath(env);
  try {
    readFileSync(path);
  } catch {
    return false;
  }
  rmSync(path, { force: true });
  return true;
}
