/**
 * The real server as a separate process (`node dist/main.js`, built by `npm test` before jest runs), for what only
 * processes show: several replicas on one etcd, leader election between them, and kill -9. Its JSON log lines are
 * kept, to see what each replica did.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HttpClient } from './http.js';

const MAIN = resolve('dist/main.js');
/**
 * How long a start may take before it counts as hung: about 2 s with the machine's two cores shared, 8 s with them
 * busy several times over (loading the code, starting etcd, making keys are all CPU), and more with other servers and
 * tests beside it. A process that exits first fails at once.
 */
const SERVING_WITHIN_MS = 120_000;
/** How long waitForLog waits unless told otherwise: a line logged seconds later on a busy machine is still logged. */
const LOG_WITHIN_MS = 60_000;
/** After SIGTERM, a process that failed to start gets this long to stop its own children (an embedded etcd). */
const FAILED_START_GRACE_MS = 10_000;

export interface LogLine {
  msg: string;
  [field: string]: unknown;
}

export interface ServerProcess {
  url: string;
  pid: number;
  /** The CA (PEM) of its self-signed serving certificate, for clients of one's own. */
  caPem: string;
  /** Every JSON line it has logged so far (its logs are on stderr). */
  readonly logs: LogLine[];
  /** What it has written to stdout so far (audit events with --audit-log-path=-). */
  stdout(): string;
  /** Stops reading its stdout, as a reader that stalls: the pipe fills (64 KiB), then the server holds what it writes. */
  pauseStdout(): void;
  resumeStdout(): void;
  /** What it has written to stderr so far: its log, and what Node says when it dies (out of memory, say). */
  stderr(): string;
  client(token: string): HttpClient;
  /** Resolves with the first log line (past or future) whose msg matches. */
  waitForLog(msg: string | RegExp, timeoutMs?: number): Promise<LogLine>;
  count(msg: string | RegExp): number;
  /** SIGKILL: no shutdown of any kind. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** Sends a signal and returns at once (see `exited`). */
  signal(name: NodeJS.Signals): void;
  /** The exit code once the process has exited (null when a signal ended it). */
  readonly exited: Promise<number | null>;
}

export interface ServerProcessOptions {
  /** Unset: the embedded default (its etcd under the data dir). */
  etcdEndpoint?: string;
  etcdPrefix?: string;
  tokenAuthFile: string;
  /** A data dir of the caller's, kept when the server stops; unset: a fresh one, removed then. */
  dataDir?: string;
  args?: string[];
  /** Node's own flags, before dist/main.js (--max-old-space-size, say). */
  nodeArgs?: string[];
}

export async function startServerProcess(opts: ServerProcessOptions): Promise<ServerProcess> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'server-process-'));
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(opts.nodeArgs ?? []),
      MAIN,
      ...(opts.etcdEndpoint ? [`--etcd-servers=${opts.etcdEndpoint}`] : []),
      ...(opts.etcdPrefix ? [`--etcd-prefix=${opts.etcdPrefix}`] : []),
      `--data-dir=${dataDir}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      `--token-auth-file=${opts.tokenAuthFile}`,
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: LogLine[] = [];
  const waiters: Array<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void; fail: () => void }> = [];
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  // Once its output is closed no line comes: a wait for one fails then, not at its deadline (just after, so that a
  // start's own "exited with N before serving" comes first).
  let closed = false;
  child.once('close', () => {
    closed = true;
    setImmediate(() => {
      for (const w of waiters.splice(0)) w.fail();
    });
  });
  let rest = '';
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const text of lines) {
      let line: LogLine;
      try {
        line = JSON.parse(text);
      } catch {
        continue;
      }
      logs.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  const matcher = (msg: string | RegExp) => (l: LogLine) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg));
  const waitForLog = (msg: string | RegExp, timeoutMs = LOG_WITHIN_MS) => {
    const seen = logs.find(matcher(msg));
    if (seen) return Promise.resolve(seen);
    const exitedWithout = () => new Error(`exited without logging ${String(msg)}; logged:\n${stderr}`);
    if (closed) return Promise.reject(exitedWithout());
    return new Promise<LogLine>((resolveLine, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no log line ${String(msg)} within ${timeoutMs}ms; logged:\n${stderr}`)),
        timeoutMs,
      );
      waiters.push({
        match: matcher(msg),
        resolve: (l) => (clearTimeout(timer), resolveLine(l)),
        fail: () => (clearTimeout(timer), reject(exitedWithout())),
      });
    });
  };

  const cleanup = () => {
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  let serving: LogLine;
  try {
    serving = await Promise.race([
      waitForLog('serving', SERVING_WITHIN_MS),
      exited.then((code) => {
        throw new Error(`server process exited with ${code} before serving:\n${stderr}`);
      }),
    ]);
  } catch (err) {
    // Not left running: its pipes would keep Jest from exiting, and its etcd and data dir would stay.
    await stopFailedStart(child, exited);
    cleanup();
    throw err;
  }
  const url = String(serving.url);
  const caPem = readFileSync(join(dataDir, 'certs', 'ca.crt'), 'utf8');
  return {
    url,
    pid: child.pid!,
    caPem,
    logs,
    stdout: () => stdout,
    pauseStdout: () => child.stdout!.pause(),
    resumeStdout: () => child.stdout!.resume(),
    stderr: () => stderr,
    client: (token) => new HttpClient(url, caPem, token),
    waitForLog,
    count: (msg) => logs.filter(matcher(msg)).length,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      cleanup();
    },
    signal(name) {
      child.kill(name);
    },
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      cleanup();
    },
  };
}

/** SIGTERM (so that it stops its embedded etcd), SIGKILL if it has not exited after a grace. */
async function stopFailedStart(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  let grace: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    exited.then(() => true),
    new Promise<false>((r) => (grace = setTimeout(() => r(false), FAILED_START_GRACE_MS))),
  ]);
  clearTimeout(grace);
  if (!stopped) {
    child.kill('SIGKILL');
    await exited;
  }
}
