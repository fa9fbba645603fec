/**
 * Global Secrets (SharedSecrets) from a terminal: `get secret <namespace>/<name>` prints the decoded values (one with
 * --key), `set secret` sets one or more keys (creating the Secret when there is none), `list secrets`.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { HostClusterError } from '../../host/kuberequest.js';
import { API } from '../connection.js';
import type { CommandContext } from '../context.js';
import { CliError, usage } from '../errors.js';
import { age, formatOf, serialized, table } from '../output.js';
import { shellQuoted, validPrefix, whyLeftOut } from '../shellvariables.js';

const KIND = 'SharedSecret';
const API_VERSION = 'management.platform.sh/v1';

interface SharedSecret {
  metadata: { name: string; namespace: string; creationTimestamp?: string };
  spec?: { data?: Record<string, string> };
}

export function addSecretCommands(get: Command, set: Command, list: Command, ctx: CommandContext): void {
  get
    .command('secret')
    .description('Print the values of a Global Secret, decoded')
    .argument('<namespace/name>', 'the Global Secret')
    .option('--key <key>', 'print this value alone, as it is')
    .option(
      '-o, --output <format>',
      'env (KEY=value lines, for eval: keys that are no new, harmless variable name, e.g. PATH, are left out), json or yaml',
      'env',
    )
    .option('--prefix <prefix>', 'env: each name is <prefix><key>, e.g. DB_ (then the Secret chooses no name alone)')
    .addHelpText(
      'after',
      `
Examples:
  platform get secret default/db --key password
  eval "$(platform get secret default/db --prefix DB_)"   # DB_password=..., DB_user=...
  platform get secret default/db -o json`,
    )
    .action(async (ref: string, opts: { key?: string; output: string; prefix?: string }) => {
      const { namespace, name } = parseRef(ref);
      const prefix = opts.prefix ?? '';
      if (prefix && !validPrefix(prefix))
        throw usage(
          `--prefix ${JSON.stringify(prefix)} cannot begin a shell variable name: letters, digits and _, not first a digit`,
        );
      const secret = await ctx.api().request<SharedSecret>('GET', secretPath(namespace, name));
      const data = decoded(secret.spec?.data ?? {});
      if (opts.key !== undefined) {
        if (!Object.hasOwn(data, opts.key))
          throw new CliError(
            `Global Secret ${namespace}/${name} has no key ${JSON.stringify(opts.key)}; it has: ${Object.keys(data).join(', ') || 'none'}`,
          );
        ctx.stdout(data[opts.key]);
        if (ctx.stdoutIsTTY) ctx.stdout('\n');
        return;
      }
      const format = formatOf(opts.output, ['env', 'json', 'yaml']);
      if (format === 'env') {
        const lines: string[] = [];
        for (const [key, value] of Object.entries(data)) {
          const why = whyLeftOut(`${prefix}${key}`, value, ctx.env);
          if (why)
            ctx.stderr(
              `Warning: key ${JSON.stringify(key)} is left out: ${why}; print it with --key ${JSON.stringify(key)} or -o json\n`,
            );
          else lines.push(`${prefix}${key}=${shellQuoted(value.toString('utf8'))}\n`);
        }
        return ctx.stdout(lines.join(''));
      }
      const text = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('utf8')]));
      ctx.stdout(serialized(text, format as 'json' | 'yaml'));
    });

  set
    .command('secret')
    .description('Set values of a Global Secret (created when there is none)')
    .argument('<namespace/name>', 'the Global Secret')
    .option('--key <key>', 'the key to set (its value from --value, --from-file, or stdin)')
    .option('--value <value>', 'the value (note: visible to other users of this machine while the command runs)')
    .option('--from-file <file>', "the value: the file's bytes")
    .option(
      '--from-literal <key=value>',
      'a key and its value; repeat for several (as --value: visible to other users while the command runs)',
      collect,
      [],
    )
    .addHelpText(
      'after',
      `
Examples:
  platform set secret default/db --key password --from-file ./password.txt
  printf %s "$PASSWORD" | platform set secret default/db --key password
  platform set secret default/db --from-literal user=app --from-literal host=db.internal`,
    )
    .action(async (ref: string, opts: SetOptions) => {
      const { namespace, name } = parseRef(ref);
      const values = await valuesOf(opts, ctx);
      const data = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.toString('base64')]));
      const api = ctx.api();
      try {
        await api.request('PATCH', secretPath(namespace, name), {
          body: { spec: { data } },
          contentType: 'application/merge-patch+json',
        });
        ctx.stdout(`sharedsecret/${name} configured\n`);
      } catch (err) {
        if (!(err instanceof HostClusterError && err.code === 404)) throw err;
        await api.request('POST', `${API}/namespaces/${encodeURIComponent(namespace)}/sharedsecrets`, {
          body: { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec: { data } },
        });
        ctx.stdout(`sharedsecret/${name} created\n`);
      }
    });

  list
    .command('secrets')
    .description('List the Global Secrets you may see')
    .option('-n, --namespace <namespace>', 'only those of this namespace')
    .option('-o, --output <format>', 'table, json or yaml', 'table')
    .addHelpText('after', '\nExamples:\n  platform list secrets\n  platform list secrets -n default -o json')
    .action(async (opts: { namespace?: string; output: string }) => {
      const format = formatOf(opts.output);
      const path = opts.namespace
        ? `${API}/namespaces/${encodeURIComponent(opts.namespace)}/sharedsecrets`
        : `${API}/sharedsecrets`;
      const list = await ctx.api().request<{ items: SharedSecret[] }>('GET', path);
      if (format !== 'table') return ctx.stdout(serialized(list.items, format as 'json' | 'yaml'));
      const rows = list.items.map((s) => [
        s.metadata.namespace,
        s.metadata.name,
        Object.keys(s.spec?.data ?? {}).join(','),
        age(s.metadata.creationTimestamp),
      ]);
      ctx.stdout(rows.length ? table(['NAMESPACE', 'NAME', 'KEYS', 'AGE'], rows) : 'No Global Secrets found\n');
    });
}

interface SetOptions {
  key?: string;
  value?: string;
  fromFile?: string;
  fromLiteral: string[];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseRef(ref: string): { namespace: string; name: string } {
  const parts = ref.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1])
    throw usage(`${JSON.stringify(ref)} is not <namespace>/<name>, e.g. default/db`);
  return { namespace: parts[0], name: parts[1] };
}

function secretPath(namespace: string, name: string): string {
  return `${API}/namespaces/${encodeURIComponent(namespace)}/sharedsecrets/${encodeURIComponent(name)}`;
}

function decoded(data: Record<string, string>): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

/** The keys and values to set, from exactly one way of giving them. */
async function valuesOf(opts: SetOptions, ctx: CommandContext): Promise<Record<string, Buffer>> {
  if (opts.fromLiteral.length) {
    if (opts.key !== undefined || opts.value !== undefined || opts.fromFile !== undefined)
      throw usage('--from-literal names its keys: give it alone, or --key with --value or --from-file');
    const values: Record<string, Buffer> = {};
    for (const literal of opts.fromLiteral) {
      const at = literal.indexOf('=');
      if (at <= 0) throw usage(`--from-literal ${JSON.stringify(literal.slice(0, 40))} is not key=value`);
      values[literal.slice(0, at)] = Buffer.from(literal.slice(at + 1), 'utf8');
    }
    return values;
  }
  if (opts.key === undefined) throw usage('which key? --key <key> (or --from-literal key=value)');
  if (opts.value !== undefined && opts.fromFile !== undefined)
    throw usage('give the value once: --value or --from-file, not both');
  if (opts.value !== undefined) return { [opts.key]: Buffer.from(opts.value, 'utf8') };
  if (opts.fromFile !== undefined) {
    try {
      return { [opts.key]: readFileSync(opts.fromFile) };
    } catch (err) {
      throw new CliError(`cannot read ${opts.fromFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return { [opts.key]: await ctx.stdin() };
}
