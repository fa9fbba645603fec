/**
 * Virtual clusters from a terminal: `import vcluster` makes a VirtualClusterInstance of a project for a virtual
 * cluster already running on a connected cluster (ProjectImportVirtualCluster), `list vclusters` shows them with their
 * health, and `connect vcluster` asks for a kube config of one (VirtualClusterInstanceKubeConfig: a client certificate
 * the virtual cluster issues for the caller) and writes it, prints it, or merges it into the user's kubeconfig.
 */
import type { Command } from 'commander';
import { HostClusterError } from '../../host/kuberequest.js';
import { namespaceProject, projectNamespace } from '../../kinds/project/namespace.js';
import { API } from '../connection.js';
import type { CommandContext } from '../context.js';
import { CliError, describeError, usage } from '../errors.js';
import {
  mergedKubeconfigPath,
  mergeKubeconfig,
  parseKubeconfig,
  readKubeconfig,
  renderKubeconfig,
} from '../kubeconfigmerge.js';
import { age, formatOf, serialized, table } from '../output.js';
import { replaceFile } from '../privatefile.js';

const API_VERSION = 'management.platform.sh/v1';

interface Instance {
  metadata: { name: string; namespace: string; creationTimestamp?: string };
  spec?: { clusterRef?: { cluster?: string; namespace?: string } };
  status?: { phase?: string; reason?: string };
}

interface ImportOptions {
  cluster: string;
  namespace: string;
  project: string;
  importName?: string;
  ownerUser?: string;
  ownerTeam?: string;
  output?: string;
}

interface ConnectOptions {
  project: string;
  outputFile?: string;
  merge?: boolean;
  print?: boolean;
  certificateTtl?: string;
}

export function addVirtualClusterCommands(imp: Command, list: Command, connect: Command, ctx: CommandContext): void {
  imp
    .command('vcluster')
    .description('Import a virtual cluster running on a connected cluster into a project')
    .argument('<name>', 'the virtual cluster (its vcluster release name)')
    .requiredOption('--cluster <cluster>', 'the connected Cluster it runs on')
    .requiredOption('--namespace <namespace>', 'its namespace on that cluster')
    .requiredOption('--project <project>', 'the project to import it into')
    .option('--import-name <name>', "the VirtualClusterInstance's name (default: the virtual cluster's)")
    .option('--owner-user <user>', 'owned by this user (default: you)')
    .option('--owner-team <team>', 'owned by this team of yours')
    .option('-o, --output <format>', 'print the answer as json or yaml')
    .addHelpText(
      'after',
      `
Examples:
  platform import vcluster shop --cluster prod-eu --namespace vcluster-shop --project web
  platform import vcluster shop --cluster prod-eu --namespace vcluster-shop --project web --owner-team web -o yaml`,
    )
    .action(async (name: string, opts: ImportOptions) => {
      const format = opts.output === undefined ? undefined : formatOf(opts.output, ['json', 'yaml']);
      if (opts.ownerUser !== undefined && opts.ownerTeam !== undefined)
        throw usage('one owner: --owner-user or --owner-team, not both');
      const owner = opts.ownerUser ? { user: opts.ownerUser } : opts.ownerTeam ? { team: opts.ownerTeam } : undefined;
      const answer = await ctx
        .api()
        .request<{ status?: { virtualClusterInstance?: { name?: string } } }>(
          'POST',
          `${API}/projects/${encodeURIComponent(opts.project)}/importvirtualcluster`,
          {
            body: {
              apiVersion: API_VERSION,
              kind: 'ProjectImportVirtualCluster',
              sourceVirtualCluster: { name, namespace: opts.namespace, cluster: opts.cluster },
              ...(opts.importName !== undefined ? { importName: opts.importName } : {}),
              ...(owner ? { owner } : {}),
            },
          },
        );
      if (format) return ctx.stdout(serialized(answer, format as 'json' | 'yaml'));
      const imported = answer.status?.virtualClusterInstance?.name ?? opts.importName ?? name;
      ctx.stdout(`virtualclusterinstance/${imported} imported into project ${opts.project}\n`);
    });

  list
    .command('vclusters')
    .description('List the virtual clusters (VirtualClusterInstances) you may see, with their health')
    .option('--project <project>', 'only those of this project')
    .option('-o, --output <format>', 'table, json or yaml', 'table')
    .addHelpText(
      'after',
      `
Examples:
  platform list vclusters
  platform list vclusters --project web -o json`,
    )
    .action(async (opts: { project?: string; output: string }) => {
      const format = formatOf(opts.output);
      const path = opts.project
        ? `${API}/namespaces/${encodeURIComponent(projectNamespace(opts.project))}/virtualclusterinstances`
        : `${API}/virtualclusterinstances`;
      const found = await ctx.api().request<{ items: Instance[] }>('GET', path);
      if (format !== 'table') return ctx.stdout(serialized(found.items, format as 'json' | 'yaml'));
      const rows = found.items.map((i) => [
        // An instance outside a project's namespace (a system:masters create) shows its namespace.
        namespaceProject(i.metadata.namespace) ?? i.metadata.namespace,
        i.metadata.name,
        i.spec?.clusterRef?.cluster ?? '',
        health(i),
        age(i.metadata.creationTimestamp),
      ]);
      ctx.stdout(
        rows.length ? table(['PROJECT', 'NAME', 'CLUSTER', 'PHASE', 'AGE'], rows) : 'No virtual clusters found\n',
      );
    });

  connect
    .command('vcluster')
    .description('Get a kube config for a virtual cluster: a client certificate the virtual cluster issues for you')
    .argument('<name>', 'the VirtualClusterInstance')
    .requiredOption('--project <project>', 'the project it belongs to')
    .option('--output-file <file>', 'write the kube config to this file (mode 0600: it holds your key)')
    .option(
      '--merge',
      'merge it into your kubeconfig ($KUBECONFIG, else ~/.kube/config) and make it the current context',
    )
    .option('--print', 'print it on stdout (the default without --output-file or --merge)')
    .option('--certificate-ttl <seconds>', "the certificate's lifetime in seconds (the server's default: 86400)")
    .addHelpText(
      'after',
      `
Its cluster, user and context are named platform_<project>_<name>; merged, connecting again replaces them. Only
the server, its CA and your certificate are taken from what the server sends (a kube config that would run a
command, read a file or use a proxy is refused).

Examples:
  platform connect vcluster shop --project web --merge && kubectl get namespaces
  platform connect vcluster shop --project web --output-file shop.kubeconfig
  platform connect vcluster shop --project web --certificate-ttl 3600 > shop.kubeconfig`,
    )
    .action(async (name: string, opts: ConnectOptions) => {
      const ttl = opts.certificateTtl === undefined ? undefined : Number(opts.certificateTtl);
      if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 0))
        throw usage(`--certificate-ttl ${JSON.stringify(opts.certificateTtl)} is not a number of seconds`);
      const namespace = projectNamespace(opts.project);
      // Read first: a kubeconfig that cannot be merged into is said before a certificate is issued for nothing.
      const mergeInto = opts.merge ? mergedKubeconfigPath(ctx.env) : undefined;
      if (mergeInto !== undefined) readKubeconfig(mergeInto);
      const text = await requestKubeconfig(ctx, opts.project, name, ttl);
      // Checked before anything is written: a file is never left with half a kube config.
      const issued = parseKubeconfig(text, `the kube config of ${namespace}/${name}`);
      const entryName = `platform_${opts.project}_${name}`;
      const own = renderKubeconfig(issued, entryName);
      if (opts.outputFile !== undefined) {
        replaceFile(opts.outputFile, own);
        ctx.stderr(`kube config of virtualclusterinstance/${name} written to ${opts.outputFile}\n`);
      }
      if (mergeInto !== undefined) {
        const merged = mergeKubeconfig(mergeInto, issued, entryName);
        for (const replaced of merged.replaced) ctx.stderr(`replaced the existing ${replaced} in ${mergeInto}\n`);
        ctx.stderr(`merged into ${mergeInto}; current context is now ${merged.context}\n`);
      }
      if (opts.print || (opts.outputFile === undefined && !opts.merge)) ctx.stdout(own);
    });
}

/** The kube config the server issues for `name` of `project` (the text of its status.kubeConfig). */
async function requestKubeconfig(
  ctx: CommandContext,
  project: string,
  name: string,
  ttl: number | undefined,
): Promise<string> {
  const namespace = encodeURIComponent(projectNamespace(project));
  try {
    const answer = await ctx
      .api()
      .request<{ status?: { kubeConfig?: string } }>(
        'POST',
        `${API}/namespaces/${namespace}/virtualclusterinstances/${encodeURIComponent(name)}/kubeconfig`,
        {
          body: {
            apiVersion: API_VERSION,
            kind: 'VirtualClusterInstanceKubeConfig',
            spec: ttl === undefined ? {} : { certificateTTL: ttl },
          },
        },
      );
    return answer.status?.kubeConfig ?? '';
  } catch (err) {
    // The server answers 403 for an instance that does not exist as for one the caller may not use (it tells nothing
    // of others' instances): a mistyped name looks like this.
    if (err instanceof HostClusterError && err.code === 403)
      throw new CliError(
        `${describeError(err)}; is the name right? \`platform list vclusters --project ${project}\` lists those you may see`,
      );
    throw err;
  }
}

/** The phase, with the reason when it is not Ready: what a user needs to know whether connecting will work. */
function health(instance: Instance): string {
  const { phase, reason } = instance.status ?? {};
  if (!phase) return '';
  return reason && phase !== 'Ready' ? `${phase} (${reason})` : phase;
}
