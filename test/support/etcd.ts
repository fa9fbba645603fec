/** A throwaway etcd per test file: fresh temp data dir, no fsync, removed on stop. */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { startEmbeddedEtcd, type EmbeddedEtcd } from '../../src/storage/embedded-etcd.js';

export interface TestEtcd {
  /** Stays the same across restart(). */
  readonly endpoint: string;
  readonly dataDir: string;
  stop(): Promise<void>;
  /** Stops etcd and starts it again on the same data dir and ports, as after a crash or an upgrade. */
  restart(): Promise<void>;
  /** Stops etcd without removing its data (restart() later brings it back). */
  kill(): Promise<void>;
}

export async function startTestEtcd(): Promise<TestEtcd> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'etcd-test-'));
  let etcd: EmbeddedEtcd | undefined;
  const start = () => startEmbeddedEtcd({ dataDir, unsafeNoFsync: true, ports: etcd?.ports });
  try {
    etcd = await start();
  } catch (err) {
    await fs.rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    get endpoint() {
      return etcd!.endpoints[0];
    },
    dataDir,
    async stop() {
      await etcd!.stop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
    async restart() {
      await etcd!.stop();
      etcd = await start();
    },
    async kill() {
      await etcd!.stop();
    },
  };
}

/** etcd's current revision (the header of a one-key, keys-only range read). */
export async function etcdRevision(client: Etcd3): Promise<number> {
  const res = await client.kv.range({ key: Buffer.from([0]), limit: 1, keys_only: true });
  return Number(res.header.revision);
}

/** Compacts etcd's history up to its current revision, and returns that revision. */
export async function compactEtcd(client: Etcd3): Promise<number> {
  const revision = await etcdRevision(client);
  await client.kv.compact({ revision: String(revision) });
  return revision;
}
