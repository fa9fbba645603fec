/**
 * Backups of etcd's data: a snapshot streamed from a running member (etcd's Maintenance.Snapshot, what `etcdctl
 * snapshot save` calls), so no etcdctl is needed to take one. The file is etcd's own format, the database followed
 * by its SHA-256, which `etcdctl snapshot restore` checks. It is written under a temporary name and renamed once
 * complete and flushed: a snapshot file that exists is whole. The temporary file is made anew, mode 0600, never
 * opened through what is at its name (a symlink would have the snapshot written to its target, an older file would
 * keep its mode), and the rename replaces the name itself, so a symlink there is replaced, not written through.
 *
 * A snapshot holds what the server stored as it stored it: with encryption at rest, the encrypted values, not the
 * keys (the EncryptionConfiguration), which must be kept apart and are needed to restore.
 */
import { Etcd3 } from 'etcd3';
import { createHash } from 'node:crypto';
import { promises as fs, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

export interface SnapshotSource {
  endpoints: string[];
  tls?: { caPem?: Buffer; certPem?: Buffer; keyPem?: Buffer };
}

export interface SavedSnapshot {
  file: string;
  bytes: number;
  /** etcd's revision at the snapshot: the newest resourceVersion it holds. */
  revision: string;
}

/** Names of the snapshots a directory of them holds (saveSnapshotInto), oldest first when sorted. */
const SNAPSHOT_NAME = /^etcd-snapshot-\d{8}T\d{6}\.\d{3}Z\.db$/;

/** Streams a snapshot from the first member that answers into `file`. */
export async function saveSnapshot(source: SnapshotSource, file: string): Promise<SavedSnapshot> {
  const partial = `${file}.partial`;
  const out = await createPartial(partial, file).catch((err: unknown) => {
    throw notSaved(err);
  });
  const made = await out.stat();
  const client = new Etcd3({
    hosts: source.endpoints,
    dialTimeout: 10_000,
    grpcOptions: { 'grpc.max_receive_message_length': -1 },
    ...(source.tls && {
      credentials: {
        rootCertificate: source.tls.caPem ?? (null as unknown as Buffer),
        privateKey: source.tls.keyPem,
        certChain: source.tls.certPem,
      },
    }),
  });
  const check = new SnapshotCheck();
  let revision = '';
  try {
    const stream = await client.maintenance.snapshot();
    await new Promise<void>((resolve, reject) => {
      // Writes one chunk at a time, in order; a failed write ends the whole save.
      let writing = Promise.resolve();
      stream.on('data', (chunk) => {
        revision ||= chunk.header?.revision ?? '';
        const blob = Buffer.from(chunk.blob);
        check.update(blob);
        writing = writing.then(() => out.write(blob).then(() => undefined));
      });
      stream.on('error', reject);
      stream.on('end', () => writing.then(resolve, reject));
    });
    check.verify();
    await out.sync();
    await out.close();
    // Renaming what another save put there instead (it took ours for a stale one) would name a half-written file.
    if (!isSameFile(await lstatOrNothing(partial), made))
      throw new Error(`${partial} was replaced while the snapshot was written: is another save writing ${file}?`);
    await fs.rename(partial, file);
    return { file, bytes: check.bytes, revision };
  } catch (err) {
    await out.close().catch(() => undefined);
    if (isSameFile(await lstatOrNothing(partial), made)) await fs.rm(partial, { force: true });
    throw notSaved(err);
  } finally {
    client.close();
  }
}

/**
 * Creates `partial` exclusively, 0600 ('wx' is O_CREAT|O_EXCL, which also refuses a symlink, even one to nowhere).
 * What is there already was left by a save that did not finish: that path itself is removed (a symlink, not its
 * target) and the file made anew. Anything but a file or a symlink is left alone and refused, as is a file that
 * appears there again.
 */
async function createPartial(partial: string, file: string): Promise<FileHandle> {
  try {
    return await fs.open(partial, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stale = await lstatOrNothing(partial);
  if (stale && !stale.isFile() && !stale.isSymbolicLink())
    throw new Error(`${partial} exists and is not a file: remove it, or save the snapshot elsewhere`);
  await fs.rm(partial, { force: true });
  try {
    return await fs.open(partial, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    throw new Error(`${partial} appeared again as soon as it was removed: is another save writing ${file}?`, {
      cause: err,
    });
  }
}

function lstatOrNothing(at: string): Promise<Stats | undefined> {
  return fs.lstat(at).catch(() => undefined);
}

function isSameFile(a: Stats | undefined, b: Stats): boolean {
  return !!a && a.dev === b.dev && a.ino === b.ino;
}

function notSaved(err: unknown): Error {
  return new Error(`no snapshot saved: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

/**
 * Saves a snapshot into `dir` as etcd-snapshot-<UTC time to the millisecond>.db and then removes the oldest of that directory's
 * snapshots beyond `keep` (only files of that name: nothing else in the directory is touched).
 */
export async function saveSnapshotInto(
  source: SnapshotSource,
  dir: string,
  keep: number,
  now = new Date(),
): Promise<SavedSnapshot & { removed: string[] }> {
  const stamp = now.toISOString().replace(/[-:]/g, '');
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const saved = await saveSnapshot(source, path.join(dir, `etcd-snapshot-${stamp}.db`));
  const snapshots = (await fs.readdir(dir)).filter((name) => SNAPSHOT_NAME.test(name)).sort();
  const removed = snapshots.slice(0, Math.max(0, snapshots.length - keep));
  for (const name of removed) await fs.rm(path.join(dir, name), { force: true });
  return { ...saved, removed };
}

/** etcd ends the stream with the SHA-256 of what came before: a cut or garbled stream fails here, not at restore. */
class SnapshotCheck {
  private static readonly HASH_BYTES = 32;
  private readonly hash = createHash('sha256');
  /** The last bytes seen, which may be the trailing hash. */
  private tail = Buffer.alloc(0);
  bytes = 0;

  update(blob: Buffer): void {
    this.bytes += blob.length;
    const seen = Buffer.concat([this.tail, blob]);
    const hashed = Math.max(0, seen.length - SnapshotCheck.HASH_BYTES);
    this.hash.update(seen.subarray(0, hashed));
    this.tail = seen.subarray(hashed);
  }

  verify(): void {
    if (this.bytes <= SnapshotCheck.HASH_BYTES) throw new Error(`the snapshot stream ended after ${this.bytes} bytes`);
    if (!this.hash.digest().equals(this.tail))
      throw new Error('the snapshot stream is corrupt (its SHA-256 does not match)');
  }
}
