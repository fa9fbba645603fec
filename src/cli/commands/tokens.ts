/**
 * Tokens for connected clusters: `token --cluster <c>` asks for a DirectClusterEndpointToken scoped to that cluster
 * and prints it, or an ExecCredential for kubectl when kubectl runs it as an exec plugin (KUBERNETES_EXEC_INFO, or
 * --exec-credential); `kubeconfig cluster <c>` writes a kubeconfig whose user is that plugin, so kubectl asks for a
 * fresh token whenever the last one expires and no token is ever written to a file.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { TOKEN_SHOWN_ONCE_WARNING } from '../../actions/directclusterendpointtoken.js';
import yaml from 'js-yaml';
import { configPath } from '../config.js';
import { API, connectionFor } from '../connection.js';
import type { CommandContext } from '../context.js';
import { CliError, usage } from '../errors.js';
import { seconds } from './keys.js';
import { replaceFile } from '../privatefile.js';

/** The ExecCredential versions kubectl speaks (v1alpha1 is gone since 1.24); a kubeconfig names the one it wants. */
const EXEC_V1 = 'client.authentication.k8s.io/v1';
const EXEC_VERSIONS = [EXEC_V1, 'client.authentication.k8s.io/v1beta1'];
/** This command line client's entry (dist/cli.js), for the plugin's arguments however it was started. */
const CLI_SCRIPT = fileURLToPath(new URL('../../cli.js', import.meta.url));

interface TokenAnswer {
  status: { token: string; expirationTimestamp: string };
}

interface TokenOptions {
  cluster: string;
  ttl?: number;
  execCredential?: boolean;
}

interface KubeconfigOptions {
  server: string;
  certificateAuthority?: string;
  outputFile?: string;
}

export function addTokenCommands(program: Command, ctx: CommandContext): void {
  program
    .command('token')
    .description('Print a short-lived token for a connected cluster (a kubectl exec credential plugin too)')
    .requiredOption('--cluster <cluster>', 'the connected cluster the token is for (its scope names it alone)')
    .option('--ttl <seconds>', "how long the token lasts (default: the server's, an hour)", seconds)
    .option('--exec-credential', 'print an ExecCredential for kubectl (the default when kubectl runs this)')
    .addHelpText(
      'after',
      `
Examples:
  TOKEN=$(platform token --cluster eu-1 --ttl 600)
  kubectl --server https://eu-1.example.com --token "$(platform token --cluster eu-1)" get pods
  platform kubeconfig cluster eu-1 --server https://eu-1.example.com   # kubectl runs \`platform token\` itself`,
    )
    .action(async (opts: TokenOptions) => {
      if (!opts.cluster) throw usage('--cluster needs the name of a connected cluster');
      const version = execCredentialVersion(opts, ctx.env);
      const answer = await ctx.api().request<TokenAnswer>('POST', `${API}/directclusterendpointtokens`, {
        body: {
          apiVersion: 'management.platform.sh/v1',
          kind: 'DirectClusterEndpointToken',
          spec: {
            ...(opts.ttl !== undefined ? { ttl: opts.ttl } : {}),
            scope: { clusters: [{ cluster: opts.cluster }] },
          },
        },
        // The token is printed for its use (a pipe, kubectl's plugin): nothing to keep.
        unshown: [TOKEN_SHOWN_ONCE_WARNING],
      });
      const { token, expirationTimestamp } = answer.status;
      if (version) {
        // kubectl keeps the token until expirationTimestamp, then runs the plugin again.
        const credential = { apiVersion: version, kind: 'ExecCredential', status: { token, expirationTimestamp } };
        return ctx.stdout(`${JSON.stringify(credential)}\n`);
      }
      ctx.stdout(token);
      if (ctx.stdoutIsTTY) ctx.stdout('\n');
    });

  program
    .command('kubeconfig')
    .description('Write kubeconfigs that log in with this command line client')
    .command('cluster')
    .description('A kubeconfig for a connected cluster whose user asks `platform token` for each token')
    .argument('<cluster>', 'the connected cluster (its Cluster object on this server)')
    .requiredOption('--server <url>', "the cluster's API server, e.g. https://eu-1.example.com:6443")
    .option('--certificate-authority <file>', "a PEM file of the CA that signed the cluster's serving certificate")
    .option('--output-file <file>', 'write it to this file (mode 0600) instead of printing it')
    .addHelpText(
      'after',
      `
Examples:
  platform kubeconfig cluster eu-1 --server https://eu-1.example.com:6443 --output-file eu-1.kubeconfig
  kubectl --kubeconfig eu-1.kubeconfig get pods
  platform kubeconfig cluster eu-1 --server https://eu-1.example.com:6443 --certificate-authority eu-1-ca.pem > kc`,
    )
    .action((cluster: string, opts: KubeconfigOptions) => {
      const server = clusterServer(opts.server);
      const caData = opts.certificateAuthority ? readFile(opts.certificateAuthority).toString('base64') : undefined;
      // The plugin runs with kubectl's environment, which may not find this login: the kubeconfig says where it is.
      connectionFor(ctx.flags(), ctx.env);
      const user = `platform-${cluster}`;
      const doc = {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: cluster, cluster: { server, ...(caData ? { 'certificate-authority-data': caData } : {}) } }],
        users: [{ name: user, user: { exec: execPlugin(cluster, ctx) } }],
        contexts: [{ name: cluster, context: { cluster, user } }],
        'current-context': cluster,
      };
      const text = yaml.dump(doc, { noRefs: true });
      if (!opts.outputFile) return ctx.stdout(text);
      // Mode 0600 as every file this client writes: it names the login the plugin reads.
      replaceFile(opts.outputFile, text);
      ctx.stdout(`Wrote the kubeconfig of cluster ${cluster} to ${opts.outputFile}\n`);
    });
}

/** The ExecCredential version to answer, or undefined for the bare token. */
function execCredentialVersion(opts: TokenOptions, env: CommandContext['env']): string | undefined {
  const info = env.KUBERNETES_EXEC_INFO;
  if (!info) return opts.execCredential ? EXEC_V1 : undefined;
  let apiVersion: unknown;
  try {
    apiVersion = (JSON.parse(info) as { apiVersion?: unknown }).apiVersion;
  } catch {
    throw new CliError('KUBERNETES_EXEC_INFO is not the JSON ExecCredential kubectl sends to exec plugins');
  }
  if (typeof apiVersion !== 'string' || !EXEC_VERSIONS.includes(apiVersion))
    throw new CliError(
      `kubectl asks for an ExecCredential of ${JSON.stringify(apiVersion)}; this command answers ${EXEC_VERSIONS.join(' or ')}: set that as the kubeconfig's users[].user.exec.apiVersion`,
    );
  return apiVersion;
}

/** kubectl's exec entry: this node running this CLI, with the login this command was given (never the key itself). */
function execPlugin(cluster: string, ctx: CommandContext): Record<string, unknown> {
  const { kubeconfig, context } = ctx.flags();
  const login: string[] = [];
  const env: Array<{ name: string; value: string }> = [];
  if (kubeconfig || context) {
    if (kubeconfig) login.push('--kubeconfig', resolve(kubeconfig));
    else env.push({ name: 'KUBECONFIG', value: defaultKubeconfig(ctx.env) });
    if (context) login.push('--context', context);
  } else if (ctx.env.PLATFORM_ACCESS_KEY) {
    // The key stays out of the file: kubectl must run with PLATFORM_ACCESS_KEY set, as this command did.
    for (const name of ['PLATFORM_URL', 'PLATFORM_CA_DATA'])
      if (ctx.env[name]) env.push({ name, value: ctx.env[name]! });
    ctx.stderr('Note: the kubeconfig reads the key from PLATFORM_ACCESS_KEY: set it wherever kubectl runs\n');
  } else {
    env.push({ name: 'PLATFORM_CONFIG', value: resolve(configPath(ctx.env)) });
  }
  return {
    apiVersion: EXEC_V1,
    command: process.execPath,
    args: [CLI_SCRIPT, ...login, 'token', '--cluster', cluster, '--exec-credential'],
    ...(env.length ? { env } : {}),
    interactiveMode: 'Never',
    provideClusterInfo: false,
  };
}

/** The kubeconfig files kubectl would read with no --kubeconfig, made absolute. */
function defaultKubeconfig(env: CommandContext['env']): string {
  if (env.KUBECONFIG)
    return env.KUBECONFIG.split(':')
      .filter(Boolean)
      .map((p) => resolve(p))
      .join(':');
  return join(env.HOME || homedir(), '.kube', 'config');
}

function clusterServer(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(
      `--server ${JSON.stringify(url)} is not a URL; give the cluster's API server, e.g. https://eu-1.example.com:6443`,
    );
  }
  if (parsed.protocol !== 'https:') throw usage(`--server must start with https:// (got ${parsed.protocol})`);
  return url.replace(/\/+$/, '');
}

function readFile(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
