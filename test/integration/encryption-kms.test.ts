/**
 * A KMS v2 provider in the EncryptionConfiguration, wired to a real plugin on a unix socket: values stored as
 * k8s:enc:kms:v2:<name>:..., read back, and the plugin's health in /healthz and /readyz as kube's kms-providers check.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { GROUP, secretBody, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startTestKMSPlugin, type TestKMSPlugin } from '../support/kmsplugin.js';
import { startTestServer, type TestServer } from '../support/server.js';

let etcd: TestEtcd;
let kv: Etcd3;
let plugin: TestKMSPlugin;
let ts: TestServer;
let dir: string;

beforeAll(async () => {
  etcd = await startTestEtcd();
  kv = new Etcd3({ hosts: etcd.endpoint });
  plugin = await startTestKMSPlugin();
  dir = mkdtempSync(join(tmpdir(), 'encryption-kms-'));
  const file = join(dir, `${randomUUID()}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'EncryptionConfiguration',
      resources: [
        {
          resources: ['*.management.platform.sh'],
          providers: [
            { kms: { apiVersion: 'v2', name: 'vault', endpoint: plugin.endpoint, timeout: '2s' } },
            { identity: {} },
          ],
        },
      ],
    }),
  );
  ts = await startTestServer({ encryptionProviderConfig: file }, etcd);
}, 60_000);
afterAll(async () => {
  await ts?.stop();
  await plugin?.close();
  kv?.close();
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

test('values are stored under k8s:enc:kms:v2:vault: without plaintext, and read back', async () => {
  const ns = uniq('ns');
  const body = secretBody('a');
  body.spec.data = { token: Buffer.from('kms-protected-value').toString('base64') };
  expect((await ts.admin.post(sharedSecretsPath(ns), body)).status).toBe(201);
  const stored = (await kv.get(`${ts.config.etcdPrefix}/${GROUP}/sharedsecrets/${ns}/a`).buffer())!;
  expect(stored.subarray(0, 21).toString()).toBe('k8s:enc:kms:v2:vault:');
  expect(stored.includes(body.spec.data.token)).toBe(false);
  expect(plugin.calls.Encrypt).toBeGreaterThan(0);
  expect((await ts.admin.get(sharedSecretPath(ns, 'a'))).body.spec.data).toEqual(body.spec.data);
  const signing = await ts.anonymous.get('/openid/v1/jwks');
  expect(signing.status).toBe(200);
  expect(
    (await kv.get(`${ts.config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`).string())!.startsWith(
      'k8s:enc:kms:v2:vault:',
    ),
  ).toBe(true);
});

test("the plugin's health is kube's kms-providers check in /healthz and /readyz, not in /livez", async () => {
  expect((await ts.admin.get('/readyz?verbose')).text).toContain('[+]kms-providers ok');
  expect((await ts.admin.get('/healthz?verbose')).text).toContain('[+]kms-providers ok');
  await plugin.stop();
  try {
    let ready = await ts.admin.get('/readyz?verbose');
    for (let i = 0; i < 100 && ready.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 300));
      ready = await ts.admin.get('/readyz?verbose');
    }
    expect(ready.status).toBe(500);
    expect(ready.text).toContain('[-]kms-providers failed: reason withheld');
    expect((await ts.admin.get('/livez')).status).toBe(200);
  } finally {
    await plugin.start();
  }
}, 60_000);
