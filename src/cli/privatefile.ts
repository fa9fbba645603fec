/**
 * Writing a file that holds a credential (the login, a kube config with a private key): whole or not at all, and
 * never through something already there. The text goes to a new file of a random name beside the target, created
 * exclusively (O_EXCL: a link or file planted at that name fails the write instead of receiving it) with the owner
 * alone able to read it from the start, then renamed over the target. A link at the target itself is replaced, not
 * followed; a caller that means to write through a link (a kubeconfig kept in dotfiles) resolves it first. A target
 * that is no file at all (/dev/stdout, a FIFO) is written to as it is: there is nothing to replace.
 */
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';

export const OWNER_ONLY = 0o600;

/** Replaces `path` with `text` (mode `mode`, 0600 unless asked); a CliError naming the file when it cannot. */
export function replaceFile(path: string, text: string, mode = OWNER_ONLY): void {
  if (isSpecialFile(path)) return writeSpecial(path, text);
  // Short, whatever the target's name: a name near the file system's limit still gets a temporary beside it.
  const temporary = join(dirname(path), `.platform-${randomBytes(6).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temporary, 'wx', mode);
    // The umask may have taken bits off; the mode is what was asked for.
    fchmodSync(fd, mode);
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temporary, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(temporary);
    } catch {
      // Never made, or already renamed.
    }
    throw new CliError(`cannot write ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); it was not changed`);
  }
}

/** A device, FIFO or socket at `path` (a link to one followed): what `--output-file /dev/stdout` names. */
function isSpecialFile(path: string): boolean {
  try {
    const stat = statSync(path);
    return !stat.isFile() && !stat.isDirectory();
  } catch {
    return false;
  }
}

function writeSpecial(path: string, text: string): void {
  try {
    writeFileSync(path, text);
  } catch (err) {
    throw new CliError(`cannot write ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
