/**
 * `platform`, the command line client: Global Secrets, access keys and the rest of the management API from a
 * terminal or a CI job. `main` runs one command line and answers its exit code: 0, 1 for errors (one line on
 * stderr: the server's Status message, or what to do), 2 for usage (an unknown command, a missing flag).
 */
import { Command, CommanderError } from 'commander';
import { addCompletionCommand } from './commands/completion.js';
import { addAccessKeyCommands } from './commands/keys.js';
import { addLoginCommands } from './commands/login.js';
import { addSecretCommands } from './commands/secrets.js';
import { addTokenCommands } from './commands/tokens.js';
import { addVirtualClusterCommands } from './commands/vclusters.js';
import { addWhoamiCommand } from './commands/whoami.js';
import { commandContext, terminalSafe, type Io } from './context.js';
import { EXIT_ERROR, EXIT_USAGE, describeError } from './errors.js';

/** What commander answers for help and the version: not errors. */
const NOT_ERRORS = new Set([
  'commander.helpDisplayed',
  'commander.help',
  'commander.version',
  'commander.executeSubCommandAsync',
]);

export function program(io: Io): Command {
  const root = new Command('platform')
    .description('The command line client of the platform management API (management.platform.sh/v1)')
    .option('--kubeconfig <file>', 'use this kubeconfig instead of the login (its current context)')
    .option('--context <name>', 'use this context of the kubeconfig')
    .option('--v <level>', 'how much to tell on stderr: 6 for each request made', (v) => Number.parseInt(v, 10), 0)
    .showSuggestionAfterError()
    .addHelpText(
      'after',
      `
Examples:
  printf %s "$KEY" | platform login https://platform.example.com --access-key -
  platform get secret default/db --key password
  platform list secrets -n default`,
    );
  const ctx = commandContext(io, () => root.opts());
  const get = root.command('get').description('Print one object');
  const set = root.command('set').description('Change one object');
  const list = root.command('list').description('List objects');
  const create = root.command('create').description('Create an object');
  const imp = root.command('import').description('Import what runs elsewhere');
  const connect = root.command('connect').description('Get a kube config for a cluster');
  addLoginCommands(root, ctx);
  addSecretCommands(get, set, list, ctx);
  addWhoamiCommand(root, ctx);
  addAccessKeyCommands(create, list, ctx);
  addTokenCommands(root, ctx);
  addVirtualClusterCommands(imp, list, connect, ctx);
  // Last: its script lists every command added before it.
  addCompletionCommand(root, ctx);
  // Every command answers through io and ends by exit code, never by commander's process.exit.
  const configure = (c: Command) => {
    c.exitOverride().configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s, write) => write(s),
    });
    c.commands.forEach(configure);
  };
  configure(root);
  return root;
}

export async function main(argv: string[], given: Io): Promise<number> {
  const io = terminalSafe(given);
  const root = program(io);
  try {
    await root.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return NOT_ERRORS.has(err.code) ? 0 : EXIT_USAGE;
    const message = describeError(err);
    io.stderr(`error: ${message}\n`);
    return (err as { exitCode?: number }).exitCode ?? EXIT_ERROR;
  }
}
