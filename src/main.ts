/** Entry point: parse flags, start the server, stop cleanly on SIGINT/SIGTERM; or `snapshot save|restore`. */
import { FlagError, helpText, parseFlags } from './config.js';
import { createLogger } from './log.js';
import { unsupportedRuntime } from './runtime.js';
import { runSnapshotCommand, snapshotHelp, SnapshotUsageError } from './snapshot-command.js';
import { startServer } from './server.js';

async function main(): Promise<void> {
  const unsupported = unsupportedRuntime(process.versions.node);
  if (unsupported) {
    process.stderr.write(`error: ${unsupported}\n`);
    process.exit(1);
  }
  if (process.argv[2] === 'snapshot') {
    try {
      process.stdout.write(await runSnapshotCommand(process.argv.slice(3)));
    } catch (err) {
      if (!(err instanceof SnapshotUsageError)) throw err;
      process.stderr.write(`error: ${err.message}\n\n${snapshotHelp}`);
      process.exit(2);
    }
    return;
  }
  let config;
  try {
    config = parseFlags(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    process.stderr.write(`error: ${err.message}\n\n${helpText()}`);
    process.exit(2);
  }
  if (!config) {
    process.stdout.write(helpText());
    return;
  }
  const log = createLogger(undefined, { verbosity: config.verbosity });
  const server = await startServer(config, log);
  let stopping = false;
  const stop = (signal: string) => {
    // A second signal does not wait for the graceful shutdown (as kube-apiserver).
    if (stopping) {
      log.warn('stopping at once', { signal });
      process.exit(1);
    }
    stopping = true;
    log.info('stopping', { signal });
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
