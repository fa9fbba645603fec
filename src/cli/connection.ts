/**
 * The command line client's connection to the server, on @kubernetes/client-node's KubeConfig (TLS, tokens, client
 * certificates, exec plugins) and the server's own request layer (host/kuberequest.ts: bounded, errors that name no
 * credential): from `--kubeconfig`/`--context`, else `PLATFORM_URL` + `PLATFORM_ACCESS_KEY`, else the login file.
 * With `--v 6` or more each request is told on stderr: method, URL and status, never a header or a body.
 */
import { HostClusterError, KubeRequests, type RequestOptions } from '../host/kuberequest.js';
import { kubeClient } from '../host/kubeclient.js';
import type { KubeConnection } from '../host/kubeconfigfile.js';
import { readLogin, type Env, type LoginConfig } from './config.js';
import { CliError, serverText, usage } from './errors.js';

export const API = '/apis/management.platform.sh/v1';
const TIMEOUT_MS = 30_000;

export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
  v?: number;
}

/** The server, as the commands ask it. */
export class Api {
  constructor(
    private readonly requests: KubeRequests,
    readonly server: string,
    private readonly log: (line: string) => void,
    private readonly verbosity: number,
  ) {}

  /**
   * `method path`; the server's Warnings go to stderr as kubectl prints them (a key near its expiry, a ttl cut
   * short), but those in `unshown`: a command that prints the credential itself has no use for "keep it now".
   */
  async request<T>(
    method: string,
    path: string,
    opts: RequestOptions & { unshown?: readonly string[] } = {},
  ): Promise<T> {
    const started = Date.now();
    const tell = (status: string) => {
      if (this.verbosity >= 6) this.log(`${method} ${this.server}${path} ${status} in ${Date.now() - started}ms`);
    };
    try {
      const { unshown = [], ...rest } = opts;
      const answer = await this.requests.request<T>(`${method} ${path}`, method, path, {
        ...rest,
        onWarnings: (warnings) =>
          warnings.filter((w) => !unshown.includes(w)).forEach((w) => this.log(`Warning: ${serverText(w)}`)),
      });
      tell('OK');
      return answer;
    } catch (err) {
      if (!(err instanceof HostClusterError)) throw err;
      tell(err.code ? String(err.code) : 'failed');
      // The layer speaks of the host cluster (it is the server's own); here it is this server.
      if (err.code === undefined) {
        const reason = /did not answer/.test(err.message)
          ? 'it did not answer in time'
          : err.message.slice(err.message.lastIndexOf(': ') + 2);
        throw new CliError(`cannot reach ${this.server}: ${reason}; is the server running and the URL right?`);
      }
      throw err;
    }
  }
}

/** A KubeConfig for a login: the server, its CA, the key as a bearer token. */
export function loginConnection(login: LoginConfig): KubeConnection {
  const kubeConfig = new (kubeClient().KubeConfig)();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: 'platform',
        server: login.server,
        caData: login.certificateAuthorityData
          ? Buffer.from(login.certificateAuthorityData).toString('base64')
          : undefined,
        skipTLSVerify: login.insecureSkipTlsVerify === true,
      },
    ],
    users: [{ name: 'platform', token: login.accessKey }],
    contexts: [{ name: 'platform', cluster: 'platform', user: 'platform' }],
    currentContext: 'platform',
  });
  return { kubeConfig };
}

/** A kubeconfig file's context (the current one unless `context` names another). */
export function kubeconfigConnection(path: string | undefined, context: string | undefined): KubeConnection {
  const kubeConfig = new (kubeClient().KubeConfig)();
  try {
    if (path) kubeConfig.loadFromFile(path);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot load the kubeconfig${path ? ` ${path}` : ''}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (context) {
    if (!kubeConfig.getContextObject(context))
      throw new CliError(
        `the kubeconfig has no context ${JSON.stringify(context)}; it has: ${kubeConfig.contexts.map((c) => c.name).join(', ') || 'none'}`,
      );
    kubeConfig.setCurrentContext(context);
  }
  if (!kubeConfig.getCurrentCluster()) throw new CliError('the kubeconfig has no current context with a cluster');
  return { kubeConfig };
}

/** The credential the flags, the environment or the login file name; a clear error when there is none. */
export function connectionFor(flags: ConnectionFlags, env: Env): KubeConnection {
  if (flags.kubeconfig || flags.context) return kubeconfigConnection(flags.kubeconfig, flags.context);
  if (env.PLATFORM_ACCESS_KEY) {
    const server =
      env.PLATFORM_URL !== undefined ? serverUrl(env.PLATFORM_URL, 'PLATFORM_URL') : readLogin(env)?.server;
    if (!server) throw new CliError("PLATFORM_ACCESS_KEY is set but PLATFORM_URL is not: set it to the server's URL");
    return loginConnection({ server, accessKey: env.PLATFORM_ACCESS_KEY, ...caFromEnv(env) });
  }
  const login = readLogin(env);
  if (!login)
    throw new CliError(
      'not logged in: run `platform login <url>` (the key from stdin: --access-key -), set PLATFORM_URL and PLATFORM_ACCESS_KEY, or pass --kubeconfig',
    );
  return loginConnection(login);
}

function caFromEnv(env: Env): Partial<LoginConfig> {
  return env.PLATFORM_CA_DATA ? { certificateAuthorityData: env.PLATFORM_CA_DATA } : {};
}

export function apiFor(conn: KubeConnection, flags: ConnectionFlags, log: (line: string) => void): Api {
  const requests = new KubeRequests(conn, { timeoutMs: TIMEOUT_MS, maxResponseBytes: 64 * 1024 * 1024 });
  return new Api(requests, requests.server.replace(/\/+$/, ''), log, flags.v ?? 0);
}

/**
 * The server's URL a login keeps or PLATFORM_URL gives (`what`): https (the key goes with every request), with no
 * user or password in it (they would be kept, and printed in every `cannot reach` line of a CI log).
 */
export function serverUrl(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(`${what} ${JSON.stringify(url)} is not a URL; give the server's, e.g. https://platform.example.com`);
  }
  if (parsed.protocol !== 'https:')
    throw usage(
      `${what} must start with https:// (got ${parsed.protocol}${parsed.protocol === 'http:' ? ', which would send the access key unencrypted' : ''})`,
    );
  if (parsed.username || parsed.password)
    throw usage(
      `${what} has a user name or password in it; the access key is the credential: give the URL without them, e.g. ${parsed.protocol}//${parsed.host}`,
    );
  return parsed.toString().replace(/\/+$/, '');
}
