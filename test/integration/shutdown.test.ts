/**
 * Graceful shutdown on SIGTERM, on real server processes: /readyz fails at once while requests are still served
 * for --shutdown-delay-duration; then the listener closes, watches end cleanly, a request in flight finishes with
 * its answer, access key activity not yet written is written, the leader lease is released (another replica leads
 * at once, long before the lease would expire), the process exits 0, and an embedded etcd is stopped last.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, GROUP, sharedSecretsPath } from '../support/fixtures.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP_PATH } from '../support/http.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { startSlowVirtualCluster, type SlowVirtualCluster } from '../support/slowrequest.js';
import { waitFor } from '../support/wait.js';

const ROOT_TOKEN = 'root-token-for-shutdown-tests';
const STARTED_LEADING = 'leader election: started leading';
let etcd: TestEtcd;
let slow: SlowVirtualCluster;
let dir: string;
let tokenFile: string;
const processes: ServerProcess[] = [];

beforeAll(async () => {
  etcd = await startTestEtcd();
  // The virtual cluster signs when the test lets it: a kube config request stays in flight until then.
  slow = await startSlowVirtualCluster('held');
  dir = mkdtempSync(join(tmpdir(), 'shutdown-'));
  tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${ROOT_TOKEN},root,uid-root,"system:masters"\n`, { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await slow?.stop();
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function start(prefix: string, args: string[], etcdEndpoint = etcd.endpoint): Promise<ServerProcess> {
  const p = await startServerProcess({ etcdEndpoint, etcdPrefix: prefix, tokenAuthFile: tokenFile, args });
  processes.push(p);
  return p;
}

/** Opens a watch: `served` once its answer has begun, `ended` with how its stream ended: 'end' (clean) or the error. */
function openWatch(p: ServerProcess, path: string): { served: Promise<void>; ended: Promise<string> } {
  let served!: () => void;
  const answered = new Promise<void>((resolve) => (served = resolve));
  const ended = new Promise<string>((resolve) => {
    const req = p.client(ROOT_TOKEN).open('GET', path);
    req.on('response', (res) => {
      served();
      res.on('data', () => {});
      res.on('end', () => resolve(`end ${res.statusCode}`));
      res.on('error', (err) => resolve(`error ${err.message}`));
      res.on('aborted', () => resolve('aborted'));
    });
    req.on('error', (err) => resolve(`error ${err.message}`));
    req.end();
  });
  return { served: Promise.race([answered, ended.then(() => undefined)]), ended };
}

test('SIGTERM: readyz fails first, watches end, the request in flight finishes, activity is written, the lease is handed over', async () => {
  const prefix = '/shutdown-replicas';
  // A long lease: only a released lease lets the second replica lead within this test.
  const args = [
    '--leader-elect-lease-duration=300s',
    '--access-key-activity-interval=1h',
    // Long enough for the two requests made during it on a busy machine (3 s was not, at a load of 13), and short
    // enough for the request in flight, whose virtual cluster signs once the delay is over: the server waits 10 s
    // for a signature.
    '--shutdown-delay-duration=5s',
    `--kubeconfig=${slow.host.kubeconfigPath}`,
    // The instance's Cluster must be connected (Initialized) before a kube config can be asked for.
    '--cluster-health-interval=1s',
  ];
  const a = await start(prefix, args);
  await a.waitForLog(STARTED_LEADING);
  const b = await start(prefix, args);
  const root = a.client(ROOT_TOKEN);

  await slow.createInstance(root, 'root');
  const key = await root.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name: 'ci' },
    spec: { user: 'ci-bot' },
  });
  expect(key.status).toBe(201);
  const ci = a.client(key.body.spec.key);
  // The first use is written on the next tick; a use a second later is not due for an hour.
  expect((await ci.get('/apis')).status).toBe(200);
  const kv = new Etcd3({ hosts: etcd.endpoint });
  const lastActivity = async () =>
    JSON.parse((await kv.get(`${prefix}/${GROUP}/ownedaccesskeys/ci`).string())!).status?.lastActivity as
      string | undefined;
  try {
    await waitFor('the first use to be written', async () => !!(await lastActivity()), 60_000);
    const first = (await lastActivity())!;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await ci.get('/apis')).status).toBe(200);

    const watch = openWatch(a, `${sharedSecretsPath('default')}?watch=true`);
    await watch.served;
    slow.resetCounts();
    const inFlight = root.get(slow.kubeconfigPath);
    await slow.reached();

    a.signal('SIGTERM');
    await a.waitForLog('shutdown: /readyz fails from now on');
    // During the delay: not ready, but still serving.
    const ready = await root.get('/readyz?verbose');
    expect(ready.status).toBe(500);
    expect(ready.text).toContain('[-]shutdown failed: reason withheld');
    const served = await root.get(sharedSecretsPath('default'));
    expect(served.status).toBe(200);
    expect(served.headers.connection).toBe('close');

    await a.waitForLog(/^shutdown: stopped accepting connections/);
    // Draining now: the request in flight is answered (by the server still running) once the virtual cluster signs.
    slow.release();
    expect(await watch.ended).toBe('end 200');
    const refused = await root.get('/readyz').catch((err: NodeJS.ErrnoException) => err.code);
    expect(refused).toBe('ECONNREFUSED');

    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.body.status.kubeConfig).toContain('client-certificate-data');
    expect(await a.exited).toBe(0);

    const steps = a.logs.map((l) => l.msg).filter((m) => /^shutdown: .* done$/.test(m));
    expect(steps).toEqual([
      'shutdown: draining the HTTPS server done',
      'shutdown: writing access key activity done',
      'shutdown: stopping the controllers and releasing the leader lease done',
      'shutdown: stopping the priority and fairness informers done',
      'shutdown: stopping the admission informers done',
      'shutdown: stopping the client CA reloads done',
      'shutdown: stopping the certificate reloads done',
      'shutdown: stopping the watch caches done',
      'shutdown: stopping the compactor done',
      'shutdown: closing the etcd client done',
      'shutdown: releasing the data dir done',
    ]);
    expect(a.count('shutdown: requests in flight finished')).toBe(1);
    const written = await lastActivity();
    expect(Date.parse(written!)).toBeGreaterThan(Date.parse(first));
    // At once: a minute, however busy the machine, is still long before the 300 s lease would expire.
    await b.waitForLog(STARTED_LEADING, 60_000);
  } finally {
    kv.close();
  }
}, 300_000);

test('with the embedded etcd, etcd is stopped last (then the data dir is released) and nothing is left running', async () => {
  const p = await start('/registry', [], '');
  const served = await p.client(ROOT_TOKEN).post(sharedSecretsPath('default'), {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 's' },
    spec: {},
  });
  expect(served.status).toBe(201);
  const etcdPid = Number(/pid (\d+)/.exec(p.logs.find((l) => /etcd \(pid \d+\) is serving/.test(l.msg))!.msg)![1]);
  p.signal('SIGTERM');
  expect(await p.exited).toBe(0);
  const steps = p.logs.map((l) => l.msg).filter((m) => m.startsWith('shutdown: ') && m.endsWith(' done'));
  expect(steps.slice(-2)).toEqual([
    'shutdown: stopping the embedded etcd done',
    'shutdown: releasing the data dir done',
  ]);
  expect(steps.indexOf('shutdown: closing the etcd client done')).toBeLessThan(steps.length - 2);
  expect(() => process.kill(etcdPid, 0)).toThrow();
}, 180_000);
