/**
 * One server per data dir. The lock is a unix socket listening at <data-dir>/server.lock: the kernel closes it when
 * the process dies however it dies (kill -9 included), so a lock is never held by a dead server. A second server gets
 * EADDRINUSE, connects, and is told the holder's pid; a socket file nobody listens on any more (ECONNREFUSED) was
 * left by a dead server and is replaced.
 */
import { closeSync, openSync, promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const LOCK_FILE = 'server.lock';
// sun_path holds 108 bytes, and a longer path is silently cut (the socket would land elsewhere).
const MAX_SOCKET_PATH_BYTES = 100;

export interface DataDirLock {
  release(): Promise<void>;
}

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number | undefined,
  ) {
    super(
      `the data dir ${dataDir} is in use by another server (${pid ? `pid ${pid}` : 'pid unknown'}): ` +
        'stop that one first (Ctrl-C, or kill -TERM <pid>), or give this one its own --data-dir',
    );
    this.name = 'DataDirInUseError';
  }
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const dir = path.resolve(dataDir);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const socketPath = path.join(dir, LOCK_FILE);
  const address = shortAddress(dir, socketPath);
  try {
    const server = await listenOnce(dir, socketPath, address.path);
    // The lock must not keep a process alive that has nothing else to do.
    server.unref();
    return {
      release: () => new Promise<void>((resolve) => server.close(() => resolve())).finally(address.close),
    };
  } catch (err) {
    address.close();
    throw err;
  }
}

/** A long data dir path is reached through an open descriptor of the dir (/proc/self/fd/N), which is short. */
function shortAddress(dir: string, socketPath: string): { path: string; close: () => void } {
  if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES) return { path: socketPath, close: () => {} };
  const fd = openSync(dir, 'r');
  let closed = false;
  return {
    path: `/proc/self/fd/${fd}/${LOCK_FILE}`,
    close: () => {
      if (!closed) closeSync(fd);
      closed = true;
    },
  };
}

async function listenOnce(dir: string, socketPath: string, address: string): Promise<net.Server> {
  for (let attempt = 0; ; attempt++) {
    const server = net.createServer((conn) => conn.end(`${process.pid}\n`));
    try {
      await listen(server, address);
      return server;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 0) throw lockError(err, socketPath);
      const holder = await askHolder(address);
      if (holder.alive) throw new DataDirInUseError(dir, holder.pid);
      // Left by a server that died: nobody listens on it any more.
      await fs.rm(socketPath, { force: true });
    }
  }
}

function listen(server: net.Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Connects to the lock: a listener answers with its pid; a refused connection means its server is gone. */
function askHolder(socketPath: string): Promise<{ alive: boolean; pid?: number }> {
  return new Promise((resolve) => {
    let answer = '';
    const conn = net.connect(socketPath);
    conn.setTimeout(2000, () => conn.destroy());
    conn.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    conn.on('end', () => {
      const pid = Number.parseInt(answer, 10);
      resolve({ alive: true, pid: Number.isInteger(pid) && pid > 0 ? pid : undefined });
    });
    conn.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ alive: err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT' }),
    );
    conn.on('close', () => resolve({ alive: true }));
  });
}

function lockError(err: unknown, socketPath: string): Error {
  return new Error(`cannot lock the data dir with the socket ${socketPath}: ${(err as Error).message}`);
}
