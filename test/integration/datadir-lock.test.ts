/**
 * One server per data dir, on real processes (`node dist/main.js` with its embedded etcd): a second server on the
 * same data dir refuses to start, names the dir and the pid using it, and leaves the first one, its etcd and its
 * files alone; once the first is killed with -9, the next server takes the data dir over and stops the etcd left
 * behind. A port in use is named in the error, with the flag that changes it.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataDirInUseError, lockDataDir } from '../../src/datadir-lock.js';
import { HttpClient } from '../support/http.js';
import { alive } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const MAIN = resolve('dist/main.js');

interface Run {
  pid: number;
  /** The "serving" log line, or undefined when the process exited first. */
  serving: Promise<Record<string, unknown> | undefined>;
  exited: Promise<number | null>;
  output(): string;
  signal(name: NodeJS.Signals): void;
}

/** The server as `make run` starts it: embedded etcd under --data-dir, admin.kubeconfig written there. */
function runServer(dataDir: string, port = 0): Run {
  const child = spawn(
    process.execPath,
    [MAIN, `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${port}`],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const serving = new Promise<Record<string, unknown> | undefined>((done) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const line = stderr.split('\n').find((l) => l.includes('"msg":"serving"'));
      if (line) done(JSON.parse(line));
    });
    void exited.then(() => done(undefined));
  });
  return {
    pid: child.pid!,
    serving,
    exited,
    output: () => stderr,
    signal: (name) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(name);
    },
  };
}

async function ready(dataDir: string, url: string): Promise<number> {
  const client = new HttpClient(
    url,
    readFileSync(join(dataDir, 'certs', 'ca.crt'), 'utf8'),
    readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
  );
  return (await client.get('/readyz')).status;
}

let dir: string;
const runs: Run[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'datadir-lock-'));
});

afterAll(async () => {
  for (const run of runs) run.signal('SIGTERM');
  await Promise.all(runs.map((r) => r.exited));
  rmSync(dir, { recursive: true, force: true });
});

test('a second server on the same data dir refuses and leaves the first alone; after kill -9 of the first, the next takes over', async () => {
  const dataDir = join(dir, 'shared');
  const first = runServer(dataDir);
  runs.push(first);
  const serving = await first.serving;
  expect(serving).toBeDefined();
  const url = String(serving!.url);
  const etcdPid = Number.parseInt(readFileSync(join(dataDir, 'etcd.pid'), 'utf8'), 10);
  const kubeconfig = readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8');

  const second = runServer(dataDir);
  runs.push(second);
  expect(await second.exited).toBe(1);
  expect(await second.serving).toBeUndefined();
  expect(second.output()).toContain(`the data dir ${resolve(dataDir)} is in use by another server (pid ${first.pid})`);
  expect(second.output()).toContain('--data-dir');
  expect(second.output()).not.toContain('stopping leftover etcd');
  // The first one, its etcd and its files are as they were.
  expect(alive(etcdPid)).toBe(true);
  expect(readFileSync(join(dataDir, 'etcd.pid'), 'utf8').trim()).toBe(String(etcdPid));
  expect(readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8')).toBe(kubeconfig);
  expect(await ready(dataDir, url)).toBe(200);

  // kill -9 leaves the etcd running and the lock's socket file behind; neither stops the next server.
  first.signal('SIGKILL');
  await first.exited;
  expect(alive(etcdPid)).toBe(true);
  const third = runServer(dataDir);
  runs.push(third);
  const thirdServing = await third.serving;
  expect(thirdServing).toBeDefined();
  expect(third.output()).toContain(`stopping leftover etcd (pid ${etcdPid})`);
  await waitFor('the leftover etcd to exit', () => !alive(etcdPid), 5000);
  expect(await ready(dataDir, String(thirdServing!.url))).toBe(200);

  third.signal('SIGTERM');
  expect(await third.exited).toBe(0);
  // A clean stop frees the data dir at once.
  const fourth = runServer(dataDir);
  runs.push(fourth);
  expect(await fourth.serving).toBeDefined();
}, 90_000);

test('the serving line says where the data is and how to stop the server', async () => {
  const dataDir = join(dir, 'console');
  const run = runServer(dataDir);
  runs.push(run);
  const serving = (await run.serving)!;
  expect(serving.hint).toBe(`kubectl --kubeconfig ${join(dataDir, 'admin.kubeconfig')} get sharedsecrets -A`);
  expect(serving.dataDir).toBe(resolve(dataDir));
  expect(serving.etcdData).toBe(join(resolve(dataDir), 'etcd'));
  expect(serving.stop).toContain(`kill -TERM ${run.pid}`);
  expect(serving.stop).toContain('Ctrl-C');
}, 60_000);

test('a port in use is named with the flag to change it, and the data dir is left as it was', async () => {
  const taken = net.createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', () => done()));
  const port = (taken.address() as net.AddressInfo).port;
  try {
    const dataDir = join(dir, 'port');
    const run = runServer(dataDir, port);
    runs.push(run);
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(`cannot serve on 127.0.0.1:${port}: the port is in use by another process`);
    expect(run.output()).toContain('--secure-port');
    expect(existsSync(join(dataDir, 'admin.kubeconfig'))).toBe(false);
    // Its etcd was stopped on the way out, and the data dir is free again.
    expect(existsSync(join(dataDir, 'etcd.pid'))).toBe(false);
  } finally {
    await new Promise((done) => taken.close(done));
  }
}, 60_000);

test('a data dir with a path longer than a unix socket address holds: the lock is inside it, and a second taker is refused', async () => {
  const dataDir = join(dir, 'a-long-path-'.repeat(10));
  const lock = await lockDataDir(dataDir);
  try {
    expect(existsSync(join(dataDir, 'server.lock'))).toBe(true);
    const refused = await lockDataDir(dataDir).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as Error).message).toContain(
      `the data dir ${dataDir} is in use by another server (pid ${process.pid})`,
    );
  } finally {
    await lock.release();
  }
  expect(existsSync(join(dataDir, 'server.lock'))).toBe(false);
  await (await lockDataDir(dataDir)).release();
});
