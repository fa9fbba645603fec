/**
 * Files read again when they change, as k8s.io/apiserver's dynamic certificate controllers do for
 * --tls-cert-file/--tls-private-key-file and the client CA files: new content is parsed and put in force for what
 * comes next; content that does not parse (a half-written file, a key that does not match its certificate) is logged
 * once and the previous value kept.
 *
 * How a change is noticed: fs.watch on each file's directory, not on the file. A mounted Secret or ConfigMap is
 * swapped by the kubelet through a `..data` symlink renamed in that directory, so the file itself never sees an
 * event, and a watch on a replaced inode goes silent. Any event in the directory is a reason to read the files again
 * (after a short pause, so that a pair written one file at a time is read whole). Since fs.watch can still miss
 * changes (network file systems, a directory replaced whole), the files are also read every `intervalMs`, as kube
 * polls every minute besides fsnotify; a watch that failed is set up again at that time.
 */
import { createHash } from 'node:crypto';
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../log.js';

/** A value that may change while the server runs, and who to tell when it does. */
export interface Dynamic<T> {
  current(): T;
  onChange(listener: (value: T) => void): void;
}

export interface ReloadingFilesOptions<T> {
  /** What the files are, for the log ("serving certificate", "client CA"). */
  what: string;
  files: string[];
  /** The files' contents (in the order of `files`) to the value; throws with a message that names no key material. */
  parse: (contents: Buffer[]) => T;
  /** Fields logged when a new value is in force (a certificate's serial and dates, never a key). */
  describe?: (value: T) => Record<string, unknown>;
  intervalMs: number;
  log: Logger;
}

/** How long after a directory event the files are read, so that a change written in several steps is read whole. */
const SETTLE_MS = 100;

export class ReloadingFiles<T> implements Dynamic<T> {
  private value: T;
  private contents: Buffer[];
  /** The last content that failed and why, so that a broken file is logged once, not at every look. */
  private lastFailure = '';
  private readonly listeners: ((value: T) => void)[] = [];
  private watchers: FSWatcher[] = [];
  private timer?: NodeJS.Timeout;
  private settle?: NodeJS.Timeout;

  /** Reads and parses the files now: a start with files that cannot be read or parsed fails here. */
  constructor(private readonly opts: ReloadingFilesOptions<T>) {
    this.contents = opts.files.map((f) => readFileSync(f));
    try {
      this.value = opts.parse(this.contents);
    } catch (err) {
      throw new Error(`${opts.what} (${opts.files.join(', ')}): ${(err as Error).message}`, { cause: err });
    }
  }

  current(): T {
    return this.value;
  }

  onChange(listener: (value: T) => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    this.watchDirectories();
    this.timer = setInterval(() => {
      if (!this.watchers.length) this.watchDirectories();
      this.check();
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    clearTimeout(this.settle);
    this.closeWatchers();
  }

  /** Reads the files; puts a changed, valid content in force. */
  check(): void {
    let contents: Buffer[];
    try {
      contents = this.opts.files.map((f) => readFileSync(f));
    } catch (err) {
      return this.failed('cannot be read', err, String((err as NodeJS.ErrnoException).code ?? err));
    }
    if (contents.every((c, i) => c.equals(this.contents[i]))) {
      this.lastFailure = '';
      return;
    }
    let value: T;
    try {
      value = this.opts.parse(contents);
    } catch (err) {
      return this.failed('is not valid', err, digest(contents));
    }
    this.contents = contents;
    this.value = value;
    this.lastFailure = '';
    this.opts.log.info(`${this.opts.what} reloaded: new connections and requests use it`, {
      files: this.opts.files,
      ...this.opts.describe?.(value),
    });
    for (const listener of this.listeners) listener(value);
  }

  private failed(how: string, err: unknown, key: string): void {
    if (key === this.lastFailure) return;
    this.lastFailure = key;
    this.opts.log.error(`${this.opts.what} not reloaded: the new content ${how}; the previous one stays in force`, {
      files: this.opts.files,
      error: (err as Error).message,
    });
  }

  private watchDirectories(): void {
    for (const dir of new Set(this.opts.files.map((f) => dirname(f)))) {
      try {
        const watcher = watch(dir, { persistent: false }, () => this.changed());
        // A directory removed or unreadable: drop every watch; the next interval sets them up again.
        watcher.on('error', () => this.closeWatchers());
        this.watchers.push(watcher);
      } catch {
        // The interval reads the files anyway and tries the watch again.
      }
    }
  }

  private closeWatchers(): void {
    for (const w of this.watchers.splice(0)) w.close();
  }

  private changed(): void {
    clearTimeout(this.settle);
    this.settle = setTimeout(() => this.check(), SETTLE_MS);
    this.settle.unref();
  }
}

function digest(contents: Buffer[]): string {
  const hash = createHash('sha256');
  for (const c of contents) hash.update(createHash('sha256').update(c).digest());
  return hash.digest('hex');
}
