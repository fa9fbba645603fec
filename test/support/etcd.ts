/** A throwaway etcd per test file: fresh temp data dir, no fsync, removed on stop. */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Etcd3 } from 'etcd3';
import { freePorts, startEmbeddedEtcd, type EmbeddedEtcd } from '../../src/storage/embedded-etcd.js';
import { makeCa, makeCert } from './certs.js';
import { waitFor } from './wait.js';

export interface TestEtcd {
  /** Stays the same across restart(). */
  readonly endpoint: string;
  readonly dataDir: string;
  stop(): Promise<void>;
  /** Stops etcd and starts it again on the same data dir and ports, as after a crash or an upgrade. */
  restart(): Promise<void>;
  /** Stops etcd without removing its data (restart() later brings it back). */
  kill(): Promise<void>;
  /** SIGSTOP: etcd keeps its connections but answers nothing, as a hung or partitioned etcd; resume() undoes it. */
  pause(): void;
  resume(): void;
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
    pause() {
      process.kill(etcd!.pid, 'SIGSTOP');
    },
    resume() {
      process.kill(etcd!.pid, 'SIGCONT');
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

export interface TlsEtcd {
  endpoint: string;
  /** PEM files: the CA of etcd's serving certificate (and of client certificates), and a client certificate. */
  files: { ca: string; cert: string; key: string };
  /** A client certificate signed by another CA: etcd must refuse it. */
  rogue: { cert: string; key: string };
  stop(): Promise<void>;
}

/**
 * An etcd that speaks only TLS and asks every client for a certificate signed by its CA (--client-cert-auth),
 * as the chart's etcd does. Started by hand: the embedded etcd of the server never needs TLS.
 */
export async function startTlsEtcd(): Promise<TlsEtcd> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'etcd-tls-'));
  const ca = makeCa('etcd-ca');
  const serving = makeCert({ commonName: 'etcd', issuer: ca, ips: ['127.0.0.1'] });
  const client = makeCert({ commonName: 'platform-management-api', issuer: ca });
  const rogueCa = makeCa('rogue-ca');
  const rogue = makeCert({ commonName: 'platform-management-api', issuer: rogueCa });
  const write = async (name: string, pem: string) => {
    const file = path.join(dir, name);
    await fs.writeFile(file, pem, { mode: 0o600 });
    return file;
  };
  const files = {
    ca: await write('ca.crt', ca.certPem),
    cert: await write('client.crt', client.certPem),
    key: await write('client.key', client.keyPem),
  };
  const rogueFiles = { cert: await write('rogue.crt', rogue.certPem), key: await write('rogue.key', rogue.keyPem) };
  const [clientPort, peerPort] = await freePorts(2);
  const endpoint = `https://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    'etcd',
    [
      '--data-dir',
      path.join(dir, 'data'),
      '--name',
      'default',
      '--listen-client-urls',
      endpoint,
      '--advertise-client-urls',
      endpoint,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `default=${peer}`,
      '--cert-file',
      await write('server.crt', serving.certPem),
      '--key-file',
      await write('server.key', serving.keyPem),
      '--trusted-ca-file',
      files.ca,
      '--client-cert-auth',
      '--unsafe-no-fsync',
      '--log-level',
      'warn',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
    await fs.rm(dir, { recursive: true, force: true });
  };
  const probe = new Etcd3({
    hosts: endpoint,
    credentials: {
      rootCertificate: Buffer.from(ca.certPem),
      certChain: Buffer.from(client.certPem),
      privateKey: Buffer.from(client.keyPem),
    },
  });
  try {
    await waitFor(
      'the TLS etcd to serve',
      () =>
        probe
          .get('probe')
          .string()
          .then(
            () => true,
            () => false,
          ),
      20_000,
      100,
    );
  } catch (err) {
    await stop();
    throw err;
  } finally {
    probe.close();
  }
  return { endpoint, files, rogue: rogueFiles, stop };
}
