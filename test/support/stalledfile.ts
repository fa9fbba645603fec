/**
 * A file whose disk has stalled, for what a writer holds meanwhile: a named pipe (mkfifo), opened here for reading
 * and not read until drain(). A writer's first 64 KiB fill the pipe; its next write waits, as on a disk that hangs,
 * until drain() reads everything written, to the writer's close.
 */
import { execFileSync } from 'node:child_process';
import { constants, openSync } from 'node:fs';
import { Socket } from 'node:net';

export interface StalledFile {
  path: string;
  /** Reads what was written, once every writer has closed the file. */
  drain(): Promise<string>;
}

export function stalledFile(path: string): StalledFile {
  execFileSync('mkfifo', [path]);
  // Opened without waiting for a writer (O_NONBLOCK), so that a writer's open does not wait for a reader either.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let drained: Promise<string> | undefined;
  return {
    path,
    drain: () =>
      (drained ??= new Promise((resolve, reject) => {
        const chunks: Buffer[] = [];
        const reader = new Socket({ fd, readable: true, writable: false });
        reader.on('data', (chunk: Buffer) => chunks.push(chunk));
        reader.once('end', () => resolve(Buffer.concat(chunks).toString()));
        reader.once('error', reject);
      })),
  };
}
