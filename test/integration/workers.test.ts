/**
 * --workers: the built server as one process (node dist/main.js, with its embedded etcd) whose primary forks two
 * workers on one port. Which worker answered a request is read from its request log line (--v=3): every line of a
 * worker names its pid, and the line's auditID is the answer's Audit-Id. Nothing here is timed: each step waits
 * for an answer or a log line.
 */
import { afterAll, afterEach, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import type { HttpResponse } from '../support/http.js';
import { startServerProcess, type LogLine, type ServerProcess } from '../support/serverprocess.js';
import { waitFor } from '../support/wait.js';
import { closeWatches, openWatch, type WatchStream } from '../support/watch.js';

const ROOT_TOKEN = 'root-token-for-worker-tests';
const NS = 'workers';
const STARTED_LEADING = 'leader election: started leading';
let dir: string;
let tokenFile: string;
let server: ServerProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'workers-'));
  tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${ROOT_TOKEN},root,uid-root,"system:masters"\n`, { mode: 0o600 });
  // Audit events with their bodies, on stdout: lines far longer than a pipe's atomic write.
  const policy = join(dir, 'audit-policy.yaml');
  writeFileSync(
    policy,
    'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n' +
      'rules:\n- level: RequestResponse\n  resources: [{group: management.platform.sh, resources: [sharedsecrets]}]\n' +
      '  verbs: [create]\n- level: None\n',
  );
  server = await startServerProcess({
    tokenAuthFile: tokenFile,
    args: [
      '--workers=2',
      '--v=3',
      '--leader-elect-lease-duration=2s',
      '--audit-log-path=-',
      `--audit-policy-file=${policy}`,
    ],
  });
  await server.waitForLog('workers serving', 60_000);
}, 90_000);

afterEach(() => closeWatches());

afterAll(async () => {
  await server?.kill();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** The pid of the worker that answered (each request of this client is a connection of its own). */
async function answeredBy(res: { headers: HttpResponse['headers'] }): Promise<number> {
  const auditID = res.headers['audit-id'];
  const line = await waitFor(`the request log line of ${auditID}`, () =>
    server.logs.find((l) => l.msg === 'HTTP' && l.auditID === auditID),
  );
  return Number(line.pid);
}

const livePids = () => {
  const started = server.logs.filter((l) => l.msg === 'worker started').map((l) => Number(l.pid));
  const gone = new Set(server.logs.filter((l) => /^worker (exited|stopped)/.test(l.msg)).map((l) => Number(l.pid)));
  return started.filter((pid) => !gone.has(pid));
};

async function create(name: string): Promise<number> {
  const res = await server.client(ROOT_TOKEN).post(sharedSecretsPath(NS), secretBody(name));
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return answeredBy(res);
}

test('the workers share the port: connections are answered by each of them, and each names its pid in its logs', async () => {
  const workers = livePids();
  expect(workers).toHaveLength(2);
  const seen = new Set<number>();
  await waitFor('answers from both workers', async () => {
    const res = await server.client(ROOT_TOKEN).get(sharedSecretsPath(NS));
    expect(res.status).toBe(200);
    seen.add(await answeredBy(res));
    return seen.size === 2;
  });
  expect([...seen].sort()).toEqual([...workers].sort());
  // One embedded etcd for the machine, started by the primary.
  expect(server.count('started embedded etcd')).toBe(1);
});

test('a watch on either worker sees the writes made through the other', async () => {
  const watches: WatchStream[] = [];
  for (let i = 0; i < 4; i++) watches.push(await openWatch(server.client(ROOT_TOKEN), sharedSecretsPath(NS)));
  const names: string[] = [];
  const writers = new Set<number>();
  await waitFor('writes through both workers', async () => {
    const name = uniq('w');
    names.push(name);
    writers.add(await create(name));
    return writers.size === 2;
  });
  for (const watch of watches)
    for (const name of names) await watch.find((e) => e.type === 'ADDED' && e.object.metadata.name === name, name);
  const watchers = new Set<number>();
  for (const watch of watches) watchers.add(await answeredByWhenClosed(watch));
  expect(watchers.size).toBe(2);
});

/** A watch's request line is written when it ends. */
async function answeredByWhenClosed(watch: WatchStream): Promise<number> {
  watch.close();
  return answeredBy(watch);
}

test('audit events on stdout leave whole from every worker, however long (the primary writes them)', async () => {
  const names = Array.from({ length: 24 }, () => uniq('audited'));
  const pids = await Promise.all(
    names.map(async (name) => {
      const body = secretBody(name);
      body.metadata.annotations = { note: 'n'.repeat(20_000) };
      const res = await server.client(ROOT_TOKEN).post(sharedSecretsPath(NS), body);
      expect(res.status).toBe(201);
      return answeredBy(res);
    }),
  );
  expect(new Set(pids).size).toBe(2);
  const audited = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"audit.k8s.io/v1"'));
  await waitFor('an audit event of every create', () =>
    names.every((name) => audited().some((line) => line.includes(`"${name}"`))),
  );
  for (const line of audited()) {
    const event = JSON.parse(line);
    expect(event).toMatchObject({ kind: 'Event', stage: 'ResponseComplete', verb: 'create' });
  }
  const ours = audited().filter((line) => names.some((name) => line.includes(`"${name}"`)));
  expect(ours).toHaveLength(names.length);
  expect(ours.every((line) => line.length > 20_000)).toBe(true);
});

test('a killed worker is started again while the other serves, and the controllers move to a live worker', async () => {
  const leader = await waitFor('a leading worker', () => {
    const lines = server.logs.filter((l) => l.msg === STARTED_LEADING);
    return lines.at(-1);
  });
  const killed = Number(leader.pid);
  const [survivor] = livePids().filter((pid) => pid !== killed);
  process.kill(killed, 'SIGKILL');
  await server.waitForLog(/^worker exited; starting another$/);
  // The other answers meanwhile: every new connection goes to a live worker.
  for (let i = 0; i < 3; i++) expect(await create(uniq('during'))).toBe(survivor);
  const replacement = await waitFor('a new worker serving', () =>
    server.logs.find((l: LogLine) => l.msg === 'serving' && Number(l.pid) !== killed && Number(l.pid) !== survivor),
  );
  expect(livePids().sort()).toEqual([survivor, Number(replacement.pid)].sort());
  // The lease of the killed leader runs out and a live worker takes the controllers.
  await waitFor(
    'a live worker leading',
    () => server.logs.some((l) => l.msg === STARTED_LEADING && Number(l.pid) !== killed),
    30_000,
  );
  const seen = new Set<number>();
  await waitFor('answers from the new worker', async () => {
    seen.add(await create(uniq('after')));
    return seen.has(Number(replacement.pid));
  });
}, 60_000);

test('a leader worker stopped cleanly hands the controllers over: it stops leading, another worker leads, a new one starts', async () => {
  const leader = await waitFor('a leading worker', () => {
    const lines = server.logs.filter((l) => l.msg === STARTED_LEADING);
    const last = lines.at(-1);
    return last && livePids().includes(Number(last.pid)) ? last : undefined;
  });
  const stopped = Number(leader.pid);
  const before = server.logs.length;
  process.kill(stopped, 'SIGTERM');
  await waitFor('the leader stopping its lead', () =>
    server.logs.some((l) => l.msg === 'leader election: stopped leading' && Number(l.pid) === stopped),
  );
  const next = await waitFor(
    'another worker leading',
    () => server.logs.slice(before).find((l) => l.msg === STARTED_LEADING && Number(l.pid) !== stopped),
    30_000,
  );
  expect(livePids()).toContain(Number(next.pid));
  const exit = await waitFor('the stopped worker exiting', () =>
    server.logs.find((l) => /^worker (exited|stopped)/.test(l.msg) && Number(l.pid) === stopped),
  );
  expect(exit.code).toBe(0);
  await waitFor('two live workers again', () => livePids().length === 2 && !livePids().includes(stopped));
}, 60_000);

test('SIGTERM drains every worker: their watches end cleanly, each worker stops, and the primary exits 0', async () => {
  const watches: WatchStream[] = [];
  for (let i = 0; i < 4; i++) watches.push(await openWatch(server.client(ROOT_TOKEN), sharedSecretsPath(NS)));
  const workers = livePids();
  const since = server.logs.length;
  server.signal('SIGTERM');
  expect(await server.exited).toBe(0);
  await waitFor('every watch ended', () => watches.every((w) => w.ended));
  for (const watch of watches)
    expect({ cleanly: watch.endedCleanly, error: watch.error?.message, status: watch.status }).toEqual({
      cleanly: true,
      error: undefined,
      status: 200,
    });
  const drained = server.logs
    .slice(since)
    .filter((l) => l.msg === 'shutdown: draining the HTTPS server done')
    .map((l) => Number(l.pid));
  expect(drained.sort()).toEqual([...workers].sort());
  const stopped = server.logs.slice(since).filter((l) => l.msg === 'worker stopped');
  expect(stopped.map((l) => ({ pid: Number(l.pid), code: l.code }))).toEqual(
    expect.arrayContaining(workers.map((pid) => ({ pid, code: 0 }))),
  );
  expect(server.count('shutdown: stopping the embedded etcd done')).toBe(1);
  expect(server.count('shutdown: releasing the data dir done')).toBe(1);
}, 60_000);

/** Whether a process is alive (signal 0 finds it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids of the etcd processes whose command line names `dataDir`. */
function etcdOf(dataDir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv[0].endsWith('etcd') && argv.some((arg) => arg.includes(dataDir));
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

test('a second signal does not wait for the drain: the workers are killed at once, the primary exits 1 and its etcd stops', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'workers-second-signal-'));
  // A drain that would take a minute: only the second signal can end it sooner.
  const second = await startServerProcess({
    tokenAuthFile: tokenFile,
    dataDir,
    args: ['--workers=2', '--shutdown-delay-duration=60s'],
  });
  try {
    await second.waitForLog('workers serving', 60_000);
    const workers = second.logs.filter((l) => l.msg === 'worker started').map((l) => Number(l.pid));
    const etcd = etcdOf(dataDir);
    expect([workers.length, etcd.length]).toEqual([2, 1]);
    second.signal('SIGTERM');
    await second.waitForLog('stopping');
    second.signal('SIGTERM');
    expect(await second.exited).toBe(1);
    expect(second.count('stopping at once')).toBe(1);
    await waitFor('the workers and the etcd gone', () => [...workers, ...etcd].every((pid) => !alive(pid)));
  } finally {
    await second.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 90_000);

test('a worker that cannot serve fails the start: the primary stops the others and its etcd, and exits 1 saying why', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as AddressInfo).port;
  try {
    await expect(
      startServerProcess({ tokenAuthFile: tokenFile, args: ['--workers=2', `--secure-port=${port}`] }),
    ).rejects.toThrow(
      new RegExp(
        `exited with 1 before serving:[\\s\\S]*cannot serve on 127\\.0\\.0\\.1:${port}: the port is in use[\\s\\S]*shutdown: stopping the embedded etcd done`,
      ),
    );
  } finally {
    taken.close();
  }
}, 60_000);
