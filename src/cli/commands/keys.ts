/**
 * Access keys (OwnedAccessKeys) from a terminal: `create accesskey` prints the new key once, alone on stdout (so
 * `KEY=$(platform create accesskey)` keeps it; the server never answers it again), `list accesskeys` the keys you
 * may see, with when each expires (never a key: the server keeps only a hash).
 */
import type { Command } from 'commander';
import { KEY_SHOWN_ONCE_WARNING } from '../../kinds/ownedaccesskey/strategy.js';
import { humanDuration } from '../../apimachinery/duration.js';
import { API } from '../connection.js';
import type { CommandContext } from '../context.js';
import { usage } from '../errors.js';
import { age, formatOf, serialized, table } from '../output.js';

const PLATFORM_CLI_ROLE = 'platformCLI';

interface AccessKey {
  metadata: { name: string; creationTimestamp?: string };
  spec?: { key?: string; user?: string; team?: string; subject?: string; disabled?: boolean };
  status?: { expirationTimestamp?: string; lastActivity?: string };
}

interface CreateOptions {
  ttl?: number;
  scopeCluster: string[];
  scopeProject: string[];
  platformCli?: boolean;
  output?: string;
}

export function addAccessKeyCommands(create: Command, list: Command, ctx: CommandContext): void {
  create
    .command('accesskey')
    .description('Create an access key for yourself; the key is printed once, alone on stdout')
    .argument('[name]', 'the name of the key (default: generated, cli-...)')
    .option('--ttl <seconds>', 'the key stops working this long after its creation (default: never)', seconds)
    .option('--scope-cluster <cluster>', 'the key may reach only this cluster; repeat for several', collect, [])
    .option('--scope-project <project>', 'the key may reach only this project; repeat for several', collect, [])
    .option('--platform-cli', "the key may make only the command line client's read-only requests")
    .option('-o, --output <format>', 'json or yaml: the whole answer (the key in spec.key) instead of the key alone')
    .addHelpText(
      'after',
      `
Examples:
  KEY=$(platform create accesskey ci-deploy --ttl 86400)
  platform create accesskey --platform-cli --scope-project web > key.txt
  platform create accesskey -o json | jq -r .spec.key`,
    )
    .action(async (name: string | undefined, opts: CreateOptions) => {
      const format = opts.output === undefined ? undefined : formatOf(opts.output, ['json', 'yaml']);
      const created = await ctx.api().request<AccessKey>('POST', `${API}/ownedaccesskeys`, {
        body: {
          apiVersion: 'management.platform.sh/v1',
          kind: 'OwnedAccessKey',
          metadata: name ? { name } : { generateName: 'cli-' },
          spec: { ...(opts.ttl !== undefined ? { ttl: opts.ttl } : {}), ...scopeOf(opts) },
        },
        // This command says so itself, in its own terms.
        unshown: [KEY_SHOWN_ONCE_WARNING],
      });
      if (format) return ctx.stdout(serialized(created, format as 'json' | 'yaml'));
      ctx.stdout(created.spec?.key ?? '');
      if (ctx.stdoutIsTTY) ctx.stdout('\n');
      ctx.stderr(
        `ownedaccesskey/${created.metadata.name} created. Warning: the key is shown only this once; keep it now\n`,
      );
    });

  list
    .command('accesskeys')
    .description('List the access keys you may see (never the keys themselves)')
    .option('-o, --output <format>', 'table, json or yaml', 'table')
    .addHelpText('after', '\nExamples:\n  platform list accesskeys\n  platform list accesskeys -o yaml')
    .action(async (opts: { output: string }) => {
      const format = formatOf(opts.output);
      const keys = await ctx.api().request<{ items: AccessKey[] }>('GET', `${API}/ownedaccesskeys`);
      if (format !== 'table') return ctx.stdout(serialized(keys.items, format as 'json' | 'yaml'));
      const now = Date.now();
      const rows = keys.items.map((k) => [
        k.metadata.name,
        holderOf(k),
        expiresIn(k.status?.expirationTimestamp, now),
        String(k.spec?.disabled === true),
        k.status?.lastActivity ? age(k.status.lastActivity, now) : '<never>',
        age(k.metadata.creationTimestamp, now),
      ]);
      ctx.stdout(
        rows.length
          ? table(['NAME', 'USER/TEAM', 'EXPIRES', 'DISABLED', 'LAST ACTIVITY', 'AGE'], rows)
          : 'No access keys found\n',
      );
    });
}

/** A whole number of seconds, 0 or more (commander's option parser: a usage error otherwise). */
export function seconds(value: string): number {
  if (!/^\d+$/.test(value)) throw usage(`--ttl ${JSON.stringify(value)} is not a number of seconds, e.g. --ttl 3600`);
  return Number(value);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** spec.scope from the flags, or nothing when none narrows the key. */
function scopeOf(opts: CreateOptions): { scope?: Record<string, unknown> } {
  const scope: Record<string, unknown> = {};
  if (opts.scopeCluster.length) scope.clusters = opts.scopeCluster.map((cluster) => ({ cluster }));
  if (opts.scopeProject.length) scope.projects = opts.scopeProject.map((project) => ({ project }));
  if (opts.platformCli) scope.roles = [{ role: PLATFORM_CLI_ROLE }];
  return Object.keys(scope).length ? { scope } : {};
}

function holderOf(key: AccessKey): string {
  const s = key.spec ?? {};
  if (s.user) return s.user;
  if (s.team) return `team:${s.team}`;
  return s.subject ?? '<none>';
}

/** Time left until `timestamp`, as the server's EXPIRES column has it (kinds/ownedaccesskey/columns.ts). */
function expiresIn(timestamp: string | undefined, now: number): string {
  const at = Date.parse(timestamp ?? '');
  if (Number.isNaN(at)) return '<none>';
  return at <= now ? 'expired' : humanDuration(at - now);
}
