/**
 * A 3-member (or n-member) etcd cluster on loopback for fault tests: each member its own process with its own
 * temp data dir and free ports, one --initial-cluster, no fsync. Members can be SIGKILLed, stopped and started
 * again on the same data dir and ports; the leader is found through each member's maintenance status.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePorts } from '../../src/storage/embedded-etcd.js';
import { waitFor } from './wait.js';

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  /** Running now (started and not yet killed or stopped). */
  readonly running: boolean;
  readonly pid: number | undefined;
}

export interface TestEtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's client URL, for --etcd-servers. */
  readonly endpoints: string[];
  /** The member the running members agree leads, waiting up to `timeoutMs` for one. */
  leader(timeoutMs?: number): Promise<EtcdMember>;
  /** SIGKILL: no shutdown of any kind. */
  kill(member: EtcdMember): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(member: EtcdMember): Promise<void>;
  /** Starts a stopped or killed member again on its data dir and ports. */
  start(member: EtcdMember): Promise<void>;
  /** Waits until every running member sees the same leader. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every member and removes the data dirs. */
  close(): Promise<void>;
}

interface Member extends EtcdMember {
  child?: ChildProcess;
  exited?: Promise<void>;
  client: Etcd3;
}

export async function startTestEtcdCluster(size = 3): Promise<TestEtcdCluster> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'etcd-cluster-'));
  const ports = await freePorts(size * 2);
  const token = `cluster-${randomUUID()}`;
  const members: Member[] = Array.from({ length: size }, (_, i): Member => {
    const clientUrl = `http://127.0.0.1:${ports[2 * i]}`;
    return {
      name: `m${i}`,
      clientUrl,
      peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
      dataDir: path.join(root, `m${i}`),
      get running(): boolean {
        return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
      },
      get pid(): number | undefined {
        return this.child?.pid;
      },
      // One client per member, for its own status; a call must not wait long on a member that is down.
      client: new Etcd3({
        hosts: clientUrl,
        dialTimeout: 1000,
        defaultCallOptions: () => ({ deadline: Date.now() + 1000 }),
      }),
    };
  });
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');

  const launch = async (m: Member) => {
    await fs.mkdir(m.dataDir, { recursive: true, mode: 0o700 });
    const log = openSync(path.join(root, `${m.name}.log`), 'a', 0o600);
    try {
      m.child = spawn(
        'etcd',
        [
          '--name',
          m.name,
          '--data-dir',
          path.join(m.dataDir, 'data'),
          '--listen-client-urls',
          m.clientUrl,
          '--advertise-client-urls',
          m.clientUrl,
          '--listen-peer-urls',
          m.peerUrl,
          '--initial-advertise-peer-urls',
          m.peerUrl,
          '--initial-cluster',
          initialCluster,
          '--initial-cluster-token',
          token,
          '--initial-cluster-state',
          'new',
          '--unsafe-no-fsync',
          '--logger',
          'zap',
          '--log-level',
          'warn',
        ],
        {
          stdio: ['ignore', log, log],
          env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ETCD_'))),
        },
      );
    } finally {
      closeSync(log);
    }
    const child = m.child;
    m.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  };

  /** Which member the given one says leads ('' when it knows of none or does not answer). */
  const leaderSeenBy = async (m: Member): Promise<string> => {
    if (!m.running) return '';
    try {
      const status = await m.client.maintenance.status();
      return status.leader && status.leader !== '0' ? status.leader : '';
    } catch {
      return '';
    }
  };
  const memberId = async (m: Member): Promise<string> => (await m.client.maintenance.status()).header.member_id;

  const cluster: TestEtcdCluster = {
    members,
    endpoints: members.map((m) => m.clientUrl),
    async leader(timeoutMs = 20_000) {
      const id = await waitFor(
        'the etcd members to agree on a leader',
        async () => {
          const seen = await Promise.all(members.filter((m) => m.running).map(leaderSeenBy));
          return seen.length > 0 && seen.every((s) => s && s === seen[0]) && seen[0];
        },
        timeoutMs,
        100,
      );
      for (const m of members) if (m.running && (await memberId(m).catch(() => '')) === id) return m;
      throw new Error(`no running member has the leader's id ${id}`);
    },
    async kill(member) {
      const m = member as Member;
      if (m.running) m.child!.kill('SIGKILL');
      await m.exited;
    },
    async stop(member) {
      const m = member as Member;
      if (m.running) m.child!.kill('SIGTERM');
      await m.exited;
    },
    async start(member) {
      const m = member as Member;
      if (m.running) return;
      await launch(m);
    },
    async waitHealthy(timeoutMs = 30_000) {
      await cluster.leader(timeoutMs);
    },
    async close() {
      await Promise.all(members.map((m) => cluster.stop(m)));
      for (const m of members) m.client.close();
      process.off('exit', killAll);
      await fs.rm(root, { recursive: true, force: true });
    },
  };
  // Never leave members running behind a test process that dies.
  const killAll = () => members.forEach((m) => m.running && m.child!.kill('SIGKILL'));
  process.on('exit', killAll);

  try {
    await Promise.all(members.map(launch));
    await cluster.waitHealthy();
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}
