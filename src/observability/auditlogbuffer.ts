/**
 * What the audit log (--audit-log-path) may hold of lines written and not yet taken by its file or stdout. A file
 * takes lines as fast as its disk does; stdout, in a pod a pipe, as fast as its reader (the node's log writer) reads;
 * what they have not taken yet Node keeps in memory without bound, so a disk that stalls would have the server hold
 * every event since. Past the bound lines are dropped (and counted) instead. It is its own module because the
 * primary of --workers, which loads none of the server, writes the workers' lines to its stdout.
 */
import type { Logger } from '../log.js';
import { DropLog } from './auditdrops.js';

/**
 * The webhook's bound (auditwebhook.ts), beside which it sits outside the V8 heap. A disk that works takes lines as
 * fast as they come (into the page cache), so only a stall fills it.
 */
export const AUDIT_LOG_BUFFER_BYTES = 64 * 1024 * 1024;

/** Writes the line to this process's stdout unless that would hold more than AUDIT_LOG_BUFFER_BYTES; whether it did. */
export function writeStdoutLine(line: string): boolean {
  if (process.stdout.writableLength + Buffer.byteLength(line) > AUDIT_LOG_BUFFER_BYTES) return false;
  process.stdout.write(line);
  return true;
}

/** Resolves once stdout has taken every line written before (the process's exit would lose those it still holds). */
export function stdoutWritten(): Promise<void> {
  return new Promise((resolve) => process.stdout.write('', () => resolve()));
}

/** The error lines of the events the audit log written to `path` ('-': stdout) drops. */
export function auditLogDrops(log: Logger, path: string): DropLog {
  return new DropLog(log, 'audit log: lines are not written as fast as they come, events are dropped', {
    path,
    bufferBytes: AUDIT_LOG_BUFFER_BYTES,
  });
}
