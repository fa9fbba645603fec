/**
 * `snapshot save` and `snapshot restore`: backups of the server's etcd from the server's own command line.
 *
 * save streams a consistent snapshot from a running etcd: the embedded default's (found through --data-dir, whether
 * the server runs or not: when it does not, the etcd is started for the save under the data dir's lock) or the one
 * --etcd-servers names. With --dir it writes a timestamped file there and keeps the newest --keep (the chart's
 * backup CronJob). restore makes a new data dir from a snapshot with `etcdctl snapshot restore` (Debian package
 * etcd-client) and puts the EncryptionConfiguration the snapshot was written with beside it; the server then starts
 * on that data dir as usual. Restored objects keep their resourceVersions; watches and lists must start again (a
 * watch from a resourceVersion the restored store never reached is answered 410 Gone).
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants, promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { lockDataDir } from './datadir-lock.js';
import { runningEmbeddedEtcd, startEmbeddedEtcd } from './storage/embedded-etcd.js';
import { saveSnapshot, saveSnapshotInto, type SnapshotSource } from './storage/snapshot.js';

export class SnapshotUsageError extends Error {}

export const snapshotHelp = `Usage:
  snapshot save <file> [--data-dir=.data]
  snapshot save --dir=<dir> [--keep=7] --etcd-servers=<urls> [--etcd-cafile= --etcd-certfile= --etcd-keyfile=]
  snapshot restore <file> --data-dir=<new dir> --encryption-provider-config=<file>

save: a consistent snapshot of the running server's etcd (etcd's own format, as etcdctl snapshot save writes).
  Without --etcd-servers, the embedded etcd of --data-dir (started for the save when no server runs there).
  --dir writes <dir>/etcd-snapshot-<UTC time>.db (e.g. etcd-snapshot-20260101T020000.000Z.db) and removes the oldest such files beyond --keep.
  The snapshot holds encrypted values, never the encryption keys: keep <data-dir>/encryption-config.yaml (or your
  --encryption-provider-config) safe, and apart from the snapshots.
restore: a new --data-dir (which must not hold etcd data yet) from a snapshot, with etcdctl (Debian package
  etcd-client), and the EncryptionConfiguration the data was written with; then start the server on that data dir.
`;

export interface SnapshotFlags {
  dataDir: string;
  etcdServers: string[];
  etcdCafile?: string;
  etcdCertfile?: string;
  etcdKeyfile?: string;
  dir?: string;
  keep: number;
  encryptionProviderConfig?: string;
  files: string[];
}

/** The flags after `snapshot save|restore` (SnapshotUsageError on an unknown or bad one). */
export function parseSnapshotArgs(args: string[]): SnapshotFlags {
  const flags: SnapshotFlags = { dataDir: '.data', etcdServers: [], keep: 7, files: [] };
  for (const arg of args) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m) {
      if (arg.startsWith('-')) throw new SnapshotUsageError(`unknown flag ${arg} (flags are --name=value)`);
      flags.files.push(arg);
      continue;
    }
    const [, name, value] = m;
    if (name === 'data-dir') flags.dataDir = value;
    else if (name === 'etcd-servers') flags.etcdServers = value.split(',').filter(Boolean);
    else if (name === 'etcd-cafile') flags.etcdCafile = value;
    else if (name === 'etcd-certfile') flags.etcdCertfile = value;
    else if (name === 'etcd-keyfile') flags.etcdKeyfile = value;
    else if (name === 'dir') flags.dir = value;
    else if (name === 'encryption-provider-config') flags.encryptionProviderConfig = value;
    else if (name === 'keep') {
      if (!/^[1-9][0-9]*$/.test(value))
        throw new SnapshotUsageError(`--keep must be a whole number of at least 1 (got ${JSON.stringify(value)})`);
      flags.keep = Number(value);
    } else throw new SnapshotUsageError(`unknown flag --${name}`);
  }
  return flags;
}

/** Runs `snapshot <args>`; resolves with the lines to print. */
export async function runSnapshotCommand(args: string[]): Promise<string> {
  const [action, ...rest] = args;
  const flags = parseSnapshotArgs(rest);
  if (action === 'save') return save(flags);
  if (action === 'restore') return restore(flags);
  throw new SnapshotUsageError(
    action
      ? `unknown snapshot action ${JSON.stringify(action)}: save or restore`
      : 'snapshot needs an action: save or restore',
  );
}

async function save(flags: SnapshotFlags): Promise<string> {
  if (flags.dir ? flags.files.length : flags.files.length !== 1)
    throw new SnapshotUsageError('snapshot save takes one file, or --dir and no file');
  const write = (source: SnapshotSource) =>
    flags.dir ? saveSnapshotInto(source, flags.dir, flags.keep) : saveSnapshot(source, flags.files[0]);
  let saved;
  if (flags.etcdServers.length) {
    const read = (file?: string) => (file ? readFileSync(file) : undefined);
    const tls =
      flags.etcdCafile || flags.etcdCertfile
        ? { caPem: read(flags.etcdCafile), certPem: read(flags.etcdCertfile), keyPem: read(flags.etcdKeyfile) }
        : undefined;
    saved = await write({ endpoints: flags.etcdServers, tls });
  } else {
    saved = await saveFromEmbedded(flags.dataDir, write);
  }
  const at = saved.revision ? `, revision ${saved.revision}` : '';
  const lines = [`snapshot saved: ${saved.file} (${saved.bytes} bytes${at})`];
  if ('removed' in saved && Array.isArray(saved.removed))
    for (const name of saved.removed) lines.push(`removed the older snapshot ${name}`);
  return lines.join('\n') + '\n';
}

async function saveFromEmbedded<T>(dataDir: string, write: (source: SnapshotSource) => Promise<T>): Promise<T> {
  const running = await runningEmbeddedEtcd(dataDir);
  if (running) return write({ endpoints: [running] });
  const exists = await fs.stat(path.join(dataDir, 'etcd')).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!exists) throw new Error(`${dataDir} holds no etcd data (give the server's --data-dir, or --etcd-servers)`);
  // No server runs on it: start its etcd for the save, holding the lock so that no server starts meanwhile.
  const lock = await lockDataDir(dataDir);
  try {
    const etcd = await startEmbeddedEtcd({ dataDir });
    try {
      return await write({ endpoints: etcd.endpoints });
    } finally {
      await etcd.stop();
    }
  } finally {
    await lock.release();
  }
}

async function restore(flags: SnapshotFlags): Promise<string> {
  if (flags.files.length !== 1) throw new SnapshotUsageError('snapshot restore takes one snapshot file');
  if (!flags.encryptionProviderConfig)
    throw new SnapshotUsageError(
      'snapshot restore needs --encryption-provider-config: the EncryptionConfiguration the snapshot was written ' +
        'with (the embedded default keeps it in <data-dir>/encryption-config.yaml); without its keys the restored ' +
        'objects cannot be read',
    );
  const [snapshot] = flags.files;
  await fs.access(snapshot, fsConstants.R_OK).catch(() => {
    throw new Error(`cannot read the snapshot ${snapshot}`);
  });
  const encryption = await fs.readFile(flags.encryptionProviderConfig).catch(() => {
    throw new Error(`cannot read --encryption-provider-config ${flags.encryptionProviderConfig}`);
  });
  const etcdDir = path.join(path.resolve(flags.dataDir), 'etcd');
  if (
    await fs.stat(etcdDir).then(
      () => true,
      () => false,
    )
  )
    throw new Error(`${etcdDir} exists: restore into a new --data-dir, never over a server's data`);
  await fs.mkdir(flags.dataDir, { recursive: true, mode: 0o700 });
  // The member's peer URL is only recorded: the embedded etcd listens on fresh ports at every start.
  await run('etcdctl', [
    'snapshot',
    'restore',
    snapshot,
    `--data-dir=${etcdDir}`,
    '--name=default',
    '--initial-cluster=default=http://127.0.0.1:2380',
    '--initial-advertise-peer-urls=http://127.0.0.1:2380',
  ]);
  const config = path.join(flags.dataDir, 'encryption-config.yaml');
  await fs.writeFile(config, encryption, { mode: 0o600 });
  return (
    `restored ${snapshot} into ${etcdDir}, with the encryption keys in ${config}\n` +
    `start the server on it: node dist/main.js --data-dir=${flags.dataDir} (make run ARGS=--data-dir=${flags.dataDir})\n`
  );
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error(
              `${command} was not found on PATH: install the Debian package etcd-client (apt-get install etcd-client)`,
            )
          : err,
      ),
    );
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.slice(0, 2).join(' ')} failed (exit ${code}):\n${output.trim()}`)),
    );
  });
}
