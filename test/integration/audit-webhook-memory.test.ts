/**
 * What a receiver that hangs costs the server, measured in its memory (heap and external, after garbage
 * collection): the events the webhook holds, no more. A batch on its way keeps nothing of the request whose event
 * filled it, which the receiver could otherwise keep alive, body and all, for as long as it hangs. The receiver
 * runs in a process of its own, so that what it reads is not in the memory measured; it reads every batch and
 * answers none.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import yaml from 'js-yaml';
import { makeCert } from '../support/certs.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, MERGE_PATCH } from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import { parseSamples, total } from '../support/prometheus.js';
import { startTestServerWithUsers } from '../support/server.js';
import { waitFor } from '../support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MiB = 1024 * 1024;
const SECRETS = `${GROUP_PATH}/namespaces/audit-memory/sharedsecrets`;

let etcd: TestEtcd;
let dir: string;
let receiver: ChildProcess;
let receiverUrl: string;
let receiverCa: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  dir = mkdtempSync(join(tmpdir(), 'audit-memory-'));
  const ca = makeCert({ commonName: 'receiver-ca', isCa: true });
  const serving = makeCert({ commonName: 'receiver', issuer: ca, usage: 'serverAuth', ips: ['127.0.0.1'] });
  receiver = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:https').createServer({ cert: process.env.CERT, key: process.env.KEY }, (req) => req.resume());
       s.listen(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n'));`,
    ],
    {
      env: { PATH: process.env.PATH, CERT: serving.certPem, KEY: serving.keyPem },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<string>((resolve) => receiver.stdout!.once('data', (d: Buffer) => resolve(`${d}`)));
  receiverUrl = `https://127.0.0.1:${port.trim()}/audit`;
  receiverCa = Buffer.from(ca.certPem).toString('base64');
}, 60_000);

afterAll(async () => {
  receiver?.kill('SIGKILL');
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function heapAndExternal(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

test('batches on their way hold their events and nothing of the requests that sent them', async () => {
  const file = (name: string, doc: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, yaml.dump(doc));
    return path;
  };
  const policy = file('policy.yaml', {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [{ level: 'Request', resources: [{ group: 'management.platform.sh', resources: ['sharedsecrets'] }] }],
  });
  const kubeconfig = file('receiver.yaml', {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'r', cluster: { server: receiverUrl, 'certificate-authority-data': receiverCa } }],
    users: [{ name: 'r', user: { token: 'receiver-token' } }],
    contexts: [{ name: 'r', context: { cluster: 'r', user: 'r' } }],
    'current-context': 'r',
  });
  const ts = await startTestServerWithUsers(
    { root: ['system:masters'], owner: [] },
    {
      auditPolicyFile: policy,
      auditWebhookConfigFile: kubeconfig,
      // Each event a batch of its own, sent at once: every one on its way while the receiver hangs.
      auditWebhookBatchMaxSize: 1,
      auditWebhookBatchThrottleEnable: false,
    },
    etcd,
  );
  try {
    const created = await ts.as.root.post(SECRETS, {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: 'large' },
      spec: { owner: { user: 'owner' } },
    });
    expect(created.status).toBe(201);
    const before = heapAndExternal();
    // 150 writes of a quarter MiB: 40 MiB of events, well within the webhook's 64 MiB, so none is dropped.
    for (let i = 0; i < 150; i++) {
      const value = Buffer.from(`${i}`.padEnd(200_000, 'x')).toString('base64');
      const res = await ts.as.owner.patch(`${SECRETS}/large`, { spec: { data: { k: value } } }, MERGE_PATCH);
      expect(res.status).toBe(200);
    }
    const samples = await waitFor('the webhook to hold every event', async () => {
      const now = parseSamples((await ts.as.root.get('/metrics')).text);
      return total(now, 'apiserver_audit_webhook_buffered_events') === 151 && now;
    });
    const grown = heapAndExternal() - before;
    const held = total(samples, 'apiserver_audit_webhook_buffered_bytes');
    expect(total(samples, 'apiserver_audit_error_total', { plugin: 'buffered' })).toBe(0);
    // What the webhook holds, and what any server holds after 150 writes (the watch cache's history of them, at
    // most 16 MiB of JSON, and the rest it keeps for a while); the requests themselves were about 0.9 MiB each.
    expect(grown).toBeLessThan(held + 48 * MiB);
  } finally {
    // The batches on their way fail at once (else the shutdown would wait for each one's try).
    receiver.kill('SIGKILL');
    await ts.stop();
  }
}, 180_000);
