/**
 * An append-only log file rotated by size, named as kube-apiserver's audit log rotation (lumberjack) names it: when a
 * write would take `audit.log` past maxSizeBytes, the file becomes `audit-<UTC 2006-01-02T15-04-05.000>.log` beside it
 * and a new `audit.log` is started. At most maxBackups rotated files are kept (0: all), and none older than
 * maxAgeDays (0: no limit), judged by the time in their names. A single line longer than the limit gets a file of
 * its own. Writes are buffered (the process never waits for the disk on a request), at most maxPendingBytes of
 * them: a disk that stalls would otherwise have the process hold every line written meanwhile. close() flushes them.
 */
import {
  createWriteStream,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  existsSync,
  unlinkSync,
  type WriteStream,
} from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';

export interface RotatingFileOptions {
  path: string;
  /** 0: never rotated. */
  maxSizeBytes: number;
  /** Rotated files kept (0: all). */
  maxBackups: number;
  /** Days a rotated file is kept (0: no limit). */
  maxAgeDays: number;
  /** The most bytes written and not yet taken by the file (rotated files' included); undefined: no bound. */
  maxPendingBytes?: number;
  /** Failures to write or rotate (the disk is full, the directory went away); writing goes on. */
  onError?: (err: Error) => void;
  /** The clock (tests). */
  now?: () => Date;
}

export class RotatingFile {
  private stream: WriteStream;
  private size: number;
  private lastBackupMs = 0;
  private readonly now: () => Date;
  private readonly onError: (err: Error) => void;
  /** Streams being ended (the current one and rotated ones not flushed yet), each until it has closed. */
  private readonly ending = new Map<WriteStream, Promise<void>>();

  constructor(private readonly opts: RotatingFileOptions) {
    this.now = opts.now ?? (() => new Date());
    this.onError = opts.onError ?? (() => {});
    mkdirSync(dirname(opts.path), { recursive: true });
    const { stream, size } = this.open();
    this.stream = stream;
    this.size = size;
  }

  /** Whether the line was taken: not when the bytes not yet in the file would pass maxPendingBytes with it. */
  write(line: string): boolean {
    const bytes = Buffer.byteLength(line);
    if (this.opts.maxPendingBytes !== undefined && this.pendingBytes() + bytes > this.opts.maxPendingBytes)
      return false;
    if (this.opts.maxSizeBytes > 0 && this.size > 0 && this.size + bytes > this.opts.maxSizeBytes) this.rotate();
    this.stream.write(line);
    this.size += bytes;
    return true;
  }

  /** Bytes written and not yet taken by the file, in the current stream and those being ended. */
  pendingBytes(): number {
    let bytes = this.ending.has(this.stream) ? 0 : this.stream.writableLength;
    for (const stream of this.ending.keys()) bytes += stream.writableLength;
    return bytes;
  }

  /** Flushes what was written and closes the file. */
  async close(): Promise<void> {
    this.end(this.stream);
    await Promise.all(this.ending.values());
  }

  /** The rotated files beside the log, oldest first. */
  backups(): string[] {
    const { dir, stem, ext } = this.parts();
    const pattern = new RegExp(`^${escape(stem)}-(\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}\\.\\d{3})${escape(ext)}$`);
    return readdirSync(dir)
      .filter((name) => pattern.test(name))
      .sort()
      .map((name) => join(dir, name));
  }

  /** The file is opened here, synchronously, so a rotation right after never renames a file not yet created. */
  private open(): { stream: WriteStream; size: number } {
    const fd = openSync(this.opts.path, 'a', 0o600);
    const size = fstatSync(fd).size;
    const stream = createWriteStream('', { fd, flags: 'a' });
    stream.on('error', (err) => this.onError(err));
    return { stream, size };
  }

  private rotate(): void {
    try {
      this.end(this.stream);
      // The old stream keeps its descriptor: what it still has buffered lands in the renamed file.
      renameSync(this.opts.path, this.backupName());
      const { stream, size } = this.open();
      this.stream = stream;
      this.size = size;
      this.prune();
    } catch (err) {
      this.onError(err as Error);
      if (this.stream.closed || this.stream.writableEnded) {
        const { stream, size } = this.open();
        this.stream = stream;
        this.size = size;
      }
    }
  }

  private end(stream: WriteStream): void {
    if (stream.writableEnded) return;
    const done = new Promise<void>((resolve) => {
      // A stream that failed closes its descriptor itself (autoClose).
      stream.once('close', () => resolve());
      stream.once('error', () => resolve());
    });
    this.ending.set(stream, done);
    void done.then(() => this.ending.delete(stream));
    stream.end();
  }

  /** `<stem>-<UTC time>.<ext>`, the time moved on by a millisecond when a rotation in the same one took it. */
  private backupName(): string {
    const { dir, stem, ext } = this.parts();
    let ms = Math.max(this.now().getTime(), this.lastBackupMs + 1);
    let name: string;
    for (;;) {
      name = join(dir, `${stem}-${timestamp(new Date(ms))}${ext}`);
      if (!existsSync(name)) break;
      ms++;
    }
    this.lastBackupMs = ms;
    return name;
  }

  private prune(): void {
    const backups = this.backups();
    const remove = new Set<string>();
    if (this.opts.maxBackups > 0)
      backups.slice(0, Math.max(0, backups.length - this.opts.maxBackups)).forEach((f) => remove.add(f));
    if (this.opts.maxAgeDays > 0) {
      const cutoff = this.now().getTime() - this.opts.maxAgeDays * 24 * 3600_000;
      for (const f of backups) if (backupTime(f) < cutoff) remove.add(f);
    }
    for (const f of remove) {
      try {
        unlinkSync(f);
      } catch (err) {
        this.onError(err as Error);
      }
    }
  }

  private parts(): { dir: string; stem: string; ext: string } {
    const name = basename(this.opts.path);
    const ext = extname(name);
    return { dir: dirname(this.opts.path), stem: name.slice(0, name.length - ext.length), ext };
  }
}

/** lumberjack's backup time format, 2006-01-02T15-04-05.000, in UTC. */
function timestamp(d: Date): string {
  return d.toISOString().replace(/:/g, '-').replace(/Z$/, '');
}

function backupTime(file: string): number {
  const m = /-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})[^/]*$/.exec(file);
  return m ? Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`) : Number.POSITIVE_INFINITY;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
