/**
 * Runs a private single-member etcd as a child process, so the server works out of the box
 * without an external etcd. Ports are picked fresh at every start: etcd 3.4 restarts a
 * single-member cluster on new client/peer ports without trouble (the stored peer URL goes
 * stale, but a lone member never dials itself).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants, openSync, closeSync, promises as fs } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

export interface EtcdPorts {
  client: number;
  peer: number;
}

export interface EmbeddedEtcd {
  endpoints: string[];
  pid: number;
  ports: EtcdPorts;
  stop(): Promise<void>;
}

export interface EmbeddedEtcdOptions {
  dataDir: string;
  /** Binary name (looked up on PATH) or path; defaults to `etcd`. */
  binary?: string;
  log?: (msg: string) => void;
  /** Skips fsync: much faster, loses data on a machine crash. For tests. */
  unsafeNoFsync?: boolean;
  /** Listen on these ports instead of free ones (to come back where clients expect it after a restart). */
  ports?: EtcdPorts;
}

const READY_TIMEOUT_MS = 20_000;
const LEFTOVER_TERM_GRACE_MS = 5_000;
const STOP_GRACE_MS = 10_000;
// Free ports are probed then released before etcd binds them, so another process can win the race.
const PORT_RACE_ATTEMPTS = 3;

export async function startEmbeddedEtcd(opts: EmbeddedEtcdOptions): Promise<EmbeddedEtcd> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const etcdDir = path.join(dataDir, 'etcd');
  const pidFile = path.join(dataDir, 'etcd.pid');
  const logFile = path.join(dataDir, 'etcd.log');
  const binary = await resolveBinary(opts.binary ?? 'etcd');

  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  await stopLeftover(pidFile, etcdDir, log);

  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce({
        binary,
        etcdDir,
        pidFile,
        logFile,
        log,
        unsafeNoFsync: !!opts.unsafeNoFsync,
        ports: opts.ports,
      });
    } catch (err) {
      const raced = err instanceof Error && /address already in use/.test(err.message);
      if (!raced || opts.ports || attempt >= PORT_RACE_ATTEMPTS) throw err;
      log(`etcd lost a race for its ports, retrying (attempt ${attempt + 1})`);
    }
  }
}

function notFound(where: string): Error {
  return new Error(
    `etcd was not found ${where}: install the Debian package etcd-server (apt-get install etcd-server), ` +
      'or point the server at a running etcd with --etcd-servers',
  );
}

/** Resolves the binary up front so a missing etcd gives one clear message instead of a spawn error. */
async function resolveBinary(binary: string): Promise<string> {
  const candidates = binary.includes('/')
    ? [path.resolve(binary)]
    : (process.env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, binary));
  for (const file of candidates) {
    try {
      await fs.access(file, fsConstants.X_OK);
      if ((await fs.stat(file)).isFile()) return file;
    } catch {
      // not here; keep looking
    }
  }
  throw notFound(binary.includes('/') ? `at ${binary}` : 'on PATH');
}

interface StartArgs {
  binary: string;
  etcdDir: string;
  pidFile: string;
  logFile: string;
  log: (msg: string) => void;
  unsafeNoFsync: boolean;
  ports?: EtcdPorts;
}

async function startOnce(a: StartArgs): Promise<EmbeddedEtcd> {
  const [clientPort, peerPort] = a.ports ? [a.ports.client, a.ports.peer] : await freePorts(2);
  const clientUrl = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--data-dir',
    a.etcdDir,
    '--name',
    'default',
    '--listen-client-urls',
    clientUrl,
    '--advertise-client-urls',
    clientUrl,
    '--listen-peer-urls',
    peerUrl,
    '--initial-advertise-peer-urls',
    peerUrl,
    // Only read when the data dir is new; ignored on restart.
    '--initial-cluster',
    `default=${peerUrl}`,
    // A lone member has no peers to miss heartbeats from; short timers cut startup from ~0.7-1 s
    // (one default election timeout) to ~0.1-0.2 s.
    '--heartbeat-interval',
    '10',
    '--election-timeout',
    '100',
    '--logger',
    'zap',
    '--log-level',
    'warn',
  ];
  if (a.unsafeNoFsync) args.push('--unsafe-no-fsync');

  // Only show the failure of this start, not the history of earlier runs in the same log.
  const logStart = await fs.stat(a.logFile).then(
    (s) => s.size,
    () => 0,
  );
  const logFd = openSync(a.logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    child = spawn(a.binary, args, {
      stdio: ['ignore', logFd, logFd],
      env: etcdEnv(),
      // Own process group: a Ctrl-C on the terminal must not kill etcd before the server drains.
      detached: true,
    });
  } finally {
    closeSync(logFd);
  }

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let running = true;
  const spawnError = new Promise<Error>((resolve) =>
    child.once('error', (err) => {
      // No pid means it never started, and no 'exit' event will follow.
      if (child.pid === undefined) running = false;
      resolve(err);
    }),
  );
  void exited.then(({ code, signal }) => {
    running = false;
    a.log(`etcd (pid ${child.pid}) exited with ${signal ?? `code ${code}`}`);
  });

  const failure = Promise.race([
    exited.then(async ({ code, signal }) => {
      const tail = await readTail(a.logFile, logStart);
      return new Error(`etcd exited during startup with ${signal ?? `code ${code}`}; ${a.logFile}:\n${tail}`);
    }),
    spawnError.then((err) => ((err as NodeJS.ErrnoException).code === 'ENOENT' ? notFound(`at ${a.binary}`) : err)),
  ]);

  // The server process may die without calling stop(); do not leave etcd running behind it.
  const killOnExit = () => {
    if (running) child.kill('SIGTERM');
  };
  process.on('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (running) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => running && child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      process.off('exit', killOnExit);
      await removePidFile(a.pidFile, child.pid);
    })());

  if (child.pid !== undefined) await fs.writeFile(a.pidFile, `${child.pid}\n`);

  const ready = await Promise.race([waitHealthy(clientUrl, () => running), failure]);
  if (ready !== true) {
    await stop();
    throw ready;
  }
  a.log(`etcd (pid ${child.pid}) is serving on ${clientUrl}`);
  return { endpoints: [clientUrl], pid: child.pid!, ports: { client: clientPort, peer: peerPort }, stop };
}

/** etcd 3.4 refuses ETCD_* variables that conflict with flags; keep the child's config in the flags. */
function etcdEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD_')) env[k] = v;
  return env;
}

/** `n` distinct free loopback ports (free when asked: another process may still take one first). */
export async function freePorts(n: number): Promise<number[]> {
  // Hold all listeners open together so the same port is not handed out twice.
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** Resolves true once /health says so; gives up (resolving with an Error) after READY_TIMEOUT_MS. */
async function waitHealthy(clientUrl: string, alive: () => boolean): Promise<true | Error> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (alive()) {
    if (await healthy(clientUrl)) return true;
    if (Date.now() > deadline) {
      return new Error(`etcd did not become healthy at ${clientUrl} within ${READY_TIMEOUT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // Process died: the exit handler supplies the real error; never resolve this side.
  return new Promise<never>(() => {});
}

function healthy(clientUrl: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(`${clientUrl}/health`, { agent: false, timeout: 1000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        try {
          resolve(res.statusCode === 200 && JSON.parse(body).health === 'true');
        } catch {
          resolve(false);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

async function readTail(file: string, from: number, maxBytes = 4096): Promise<string> {
  try {
    const fh = await fs.open(file, 'r');
    try {
      const size = (await fh.stat()).size;
      const start = Math.max(from, size - maxBytes);
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      return buf.toString('utf8').trimEnd() || '(log is empty)';
    } finally {
      await fh.close();
    }
  } catch {
    return '(log unreadable)';
  }
}

async function removePidFile(pidFile: string, pid: number | undefined): Promise<void> {
  // Only our own: a newer etcd on the same data dir may already have replaced it.
  const recorded = await fs.readFile(pidFile, 'utf8').catch(() => '');
  if (pid !== undefined && recorded.trim() === String(pid)) await fs.rm(pidFile, { force: true });
}

/**
 * The client URL of the embedded etcd a running server keeps on `dataDir`, or undefined when none runs there. Its
 * ports change at every start, so they are read from the process itself (recorded pid, checked as in stopLeftover).
 */
export async function runningEmbeddedEtcd(dataDir: string): Promise<string | undefined> {
  const dir = path.resolve(dataDir);
  const pid = Number.parseInt(await fs.readFile(path.join(dir, 'etcd.pid'), 'utf8').catch(() => ''), 10);
  if (!Number.isInteger(pid) || pid <= 0 || !(await isOurEtcd(pid, path.join(dir, 'etcd')))) return undefined;
  const argv = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const at = argv.indexOf('--listen-client-urls');
  return at >= 0 ? argv[at + 1] : undefined;
}

/**
 * A server killed with -9 leaves its etcd running, holding the data dir lock. Stop it, but only
 * if the recorded pid is still an etcd on this very data dir (pids get reused).
 */
async function stopLeftover(pidFile: string, etcdDir: string, log: (msg: string) => void): Promise<void> {
  const pid = Number.parseInt(await fs.readFile(pidFile, 'utf8').catch(() => ''), 10);
  if (!Number.isInteger(pid) || pid <= 0) return;
  if (await isOurEtcd(pid, etcdDir)) {
    log(`stopping leftover etcd (pid ${pid}) that still uses ${etcdDir}`);
    process.kill(pid, 'SIGTERM');
    if (!(await waitGone(pid, LEFTOVER_TERM_GRACE_MS))) {
      process.kill(pid, 'SIGKILL');
      await waitGone(pid, LEFTOVER_TERM_GRACE_MS);
    }
  }
  await fs.rm(pidFile, { force: true });
}

async function isOurEtcd(pid: number, etcdDir: string): Promise<boolean> {
  if (!(await isAlive(pid))) return false;
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  const argv = cmdline.split('\0');
  if (!path.basename(argv[0] ?? '').startsWith('etcd')) return false;
  return argv.some(
    (arg, i) =>
      (arg === '--data-dir' && argv[i + 1] !== undefined && path.resolve(argv[i + 1]) === etcdDir) ||
      (arg.startsWith('--data-dir=') && path.resolve(arg.slice('--data-dir='.length)) === etcdDir),
  );
}

/** Alive and not a zombie (a zombie still answers kill(pid, 0) but holds no files or ports). */
async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Field 3, after the parenthesised command name, is the state.
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await isAlive(pid))) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !(await isAlive(pid));
}
