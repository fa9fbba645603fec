/**
 * Entry point: parse flags, start the server, stop cleanly on SIGINT/SIGTERM; or `snapshot save|restore`. With
 * --workers N > 1 this process is the primary (workers.ts) and each worker runs this file again as a server.
 */
import cluster from 'node:cluster';
import { FlagError, helpText, parseFlags } from './config.js';
import { createLogger } from './log.js';
import type { ForwardedStdout } from './observability/audit.js';
import { unsupportedRuntime } from './runtime.js';
import { runWorkers, WORKER_ETCD_ENV, WORKER_ID_ENV, type PrimaryMessage, type WorkerMessage } from './workers.js';

async function main(): Promise<void> {
  const unsupported = unsupportedRuntime(process.versions.node);
  if (unsupported) {
    process.stderr.write(`error: ${unsupported}\n`);
    process.exit(1);
  }
  if (process.argv[2] === 'snapshot') {
    const snapshot = await import('./snapshot-command.js');
    try {
      process.stdout.write(await snapshot.runSnapshotCommand(process.argv.slice(3)));
    } catch (err) {
      if (!(err instanceof snapshot.SnapshotUsageError)) throw err;
      process.stderr.write(`error: ${err.message}\n\n${snapshot.snapshotHelp}`);
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
  if (config.workers > 1 && cluster.isPrimary) {
    await runWorkers(config, createLogger(undefined, { verbosity: config.verbosity, base: { role: 'primary' } }));
    return;
  }
  const workerId = process.env[WORKER_ID_ENV];
  const log = createLogger(undefined, {
    verbosity: config.verbosity,
    ...(cluster.isWorker ? { base: { worker: Number(workerId), pid: process.pid } } : {}),
  });
  // Heard from the start: the primary may say stop while this worker is still starting (another failed to start).
  const primarySaysStop = cluster.isWorker ? untilPrimarySaysStop() : undefined;
  const etcd = process.env[WORKER_ETCD_ENV];
  // Loaded here, not at the top: the primary of --workers runs none of the server and so loads none of it.
  const { startServer } = await import('./server.js');
  const server = await startServer(
    config,
    log,
    cluster.isWorker
      ? {
          embeddedEtcdEndpoints: etcd ? etcd.split(',') : undefined,
          stdout: primaryStdout(),
        }
      : undefined,
  );
  if (cluster.isWorker) process.send!({ type: 'serving', url: server.url } satisfies WorkerMessage);
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
  process.on('SIGTERM', () => stop('SIGTERM'));
  if (primarySaysStop) void primarySaysStop.then((why) => stopping || stop(why));
  else process.on('SIGINT', () => stop('SIGINT'));
}

/** A worker's stdout: its lines go to the primary, which says which it dropped. */
function primaryStdout(): ForwardedStdout {
  const listeners: Array<() => void> = [];
  process.on('message', (message: PrimaryMessage) => {
    if (message?.type === 'stdout-dropped') listeners.forEach((dropped) => dropped());
  });
  // Messages leave in order: once the last is sent, so are those before it.
  let sent = Promise.resolve();
  return {
    write: (line) => {
      sent = new Promise((resolve) => process.send!({ type: 'stdout', line } satisfies WorkerMessage, () => resolve()));
    },
    written: () => sent,
    onDropped: (dropped) => listeners.push(dropped),
  };
}

/**
 * A worker stops when the primary says so, or when the primary is gone. Ctrl-C reaches every process of the
 * terminal: the primary's word counts, not the SIGINT.
 */
function untilPrimarySaysStop(): Promise<string> {
  process.on('SIGINT', () => {});
  return new Promise((resolve) => {
    process.on('message', (message: PrimaryMessage) => {
      if (message?.type === 'stop') resolve('primary');
    });
    process.on('disconnect', () => resolve('primary gone'));
  });
}

main().catch((err) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
