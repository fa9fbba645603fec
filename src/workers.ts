/**
 * --workers N (N > 1): this process is the primary of N workers (node:cluster) that serve the same port, each what a
 * replica is (its own watch cache and etcd watch; the controllers run in the one that holds the leader lease).
 * Per machine, here, once: the data dir's lock, the embedded etcd, and what a first start writes (certificate,
 * admin token, encryption configuration), before any worker starts. The primary serves nothing itself.
 *
 * A worker that exits is started again after a backoff (doubling up to 30 s; back to the first step once a worker
 * has served a while), and the others serve meanwhile. A worker that exits before every worker has served once is a
 * failed start: the others are stopped and the primary exits 1, as one process does. SIGTERM or SIGINT tells each
 * worker to stop (it drains as one process does on SIGTERM); the primary exits once every worker has, then stops
 * the embedded etcd and releases the lock. A second signal kills the workers at once.
 */
import cluster, { type Worker } from 'node:cluster';
import { Backoff } from './apimachinery/backoff.js';
import type { Config } from './config.js';
import { lockDataDir } from './datadir-lock.js';
import type { Logger } from './log.js';
import { auditLogDrops, stdoutWritten, writeStdoutLine } from './observability/auditlogbuffer.js';
import { prepareDataDir } from './datadir.js';
import { startEmbeddedEtcd } from './storage/embedded-etcd.js';

/** The environment variable that gives a worker the embedded etcd's endpoints (comma-separated). */
export const WORKER_ETCD_ENV = 'MANAGEMENT_WORKER_EMBEDDED_ETCD';
/** The environment variable that gives a worker its number (1 to N; a restarted worker keeps its slot's). */
export const WORKER_ID_ENV = 'MANAGEMENT_WORKER_ID';

/** What a worker tells the primary. */
export type WorkerMessage = { type: 'serving'; url: string } | { type: 'stdout'; line: string };
/** What the primary tells a worker: stop, or that a line it sent was dropped (its stdout held too much). */
export type PrimaryMessage = { type: 'stop' } | { type: 'stdout-dropped' };

const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** A worker that served this long before it exited is restarted after the first backoff step again. */
const STABLE_MS = 60_000;

interface Slot {
  id: number;
  worker?: Worker;
  servingSince?: number;
  backoff: Backoff;
  restartTimer?: NodeJS.Timeout;
}

export async function runWorkers(config: Config, log: Logger): Promise<void> {
  const { cleanups, env } = await startShared(config, log);
  const slots: Slot[] = Array.from({ length: config.workers }, (_, i) => ({
    id: i + 1,
    backoff: new Backoff({ initialMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }),
  }));
  let started = false;
  let stopping = false;
  let failed = false;
  let finished: () => void;
  const allExited = new Promise<void>((resolve) => (finished = resolve));
  const stdoutDrops = auditLogDrops(log, '-');

  const fork = (slot: Slot) => {
    slot.restartTimer = undefined;
    const worker = cluster.fork({ ...env, [WORKER_ID_ENV]: String(slot.id) });
    slot.worker = worker;
    slot.servingSince = undefined;
    log.info('worker started', { worker: slot.id, pid: worker.process.pid });
    worker.on('message', (message: WorkerMessage) => {
      // Lines of every worker leave from here, one write each, never interleaved (see ForwardedStdout). Those stdout
      // cannot hold are logged here, and counted by the worker (in its metrics).
      if (message?.type === 'stdout') {
        if (writeStdoutLine(message.line)) return;
        stdoutDrops.dropped();
        if (worker.isConnected()) worker.send({ type: 'stdout-dropped' } satisfies PrimaryMessage);
        return;
      }
      if (message?.type !== 'serving') return;
      slot.servingSince = Date.now();
      if (!started && slots.every((s) => s.servingSince !== undefined)) {
        started = true;
        log.info('workers serving', { url: message.url, workers: slots.length });
      }
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      const fields = { worker: slot.id, pid: worker.process.pid, code, signal };
      if (stopping) {
        log.info('worker stopped', fields);
        if (slots.every((s) => !s.worker)) finished();
        return;
      }
      if (!started) {
        log.error('worker exited before every worker served: stopping', fields);
        failed = true;
        stop();
        return;
      }
      if (slot.servingSince !== undefined && Date.now() - slot.servingSince >= STABLE_MS) slot.backoff.reset();
      const afterMs = slot.backoff.next();
      log.error('worker exited; starting another', { ...fields, afterMs });
      slot.restartTimer = setTimeout(() => fork(slot), afterMs);
    });
  };

  const stop = () => {
    stopping = true;
    for (const slot of slots) {
      clearTimeout(slot.restartTimer);
      if (slot.worker?.isConnected()) slot.worker.send({ type: 'stop' } satisfies PrimaryMessage);
      else slot.worker?.kill('SIGTERM');
    }
    if (slots.every((s) => !s.worker)) finished();
  };

  const onSignal = (signal: NodeJS.Signals) => {
    // A second signal does not wait for the graceful shutdown (as one process does).
    if (stopping) {
      log.warn('stopping at once', { signal });
      for (const slot of slots) slot.worker?.process.kill('SIGKILL');
      process.exit(1);
    }
    log.info('stopping', { signal, workers: slots.filter((s) => s.worker).length });
    stop();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  for (const slot of slots) fork(slot);
  await allExited;
  stdoutDrops.close();
  await undo(cleanups, log);
  // The workers' last lines may still wait for stdout: exiting would lose them.
  await stdoutWritten();
  process.exit(failed ? 1 : 0);
}

/**
 * What the workers share, made once before any starts: the data dir's lock, the embedded etcd unless there are etcd
 * servers (its endpoints go to the workers' environment) and the data dir's contents; undone again if one fails.
 */
async function startShared(
  config: Config,
  log: Logger,
): Promise<{ cleanups: [string, () => Promise<void>][]; env: Record<string, string> }> {
  const lock = await lockDataDir(config.dataDir);
  const cleanups: [string, () => Promise<void>][] = [['releasing the data dir', () => lock.release()]];
  const env: Record<string, string> = {};
  try {
    if (!config.etcdServers.length) {
      const etcd = await startEmbeddedEtcd({ dataDir: config.dataDir, log: (msg) => log.info(msg) });
      cleanups.push(['stopping the embedded etcd', () => etcd.stop()]);
      env[WORKER_ETCD_ENV] = etcd.endpoints.join(',');
      log.info('started embedded etcd', { endpoints: etcd.endpoints, dataDir: config.dataDir });
    }
    await prepareDataDir(config, log);
  } catch (err) {
    await undo(cleanups, log);
    throw err;
  }
  return { cleanups, env };
}

async function undo(cleanups: [string, () => Promise<void>][], log: Logger): Promise<void> {
  for (const [step, cleanup] of cleanups.splice(0).reverse()) {
    await cleanup().then(
      () => log.info(`shutdown: ${step} done`),
      (err) => log.error(`shutdown: ${step} failed`, { error: String(err) }),
    );
  }
}
