/** KMS v2 end to end: kube's EncryptedObject in etcd, one Decrypt per DEK after a restart, and an unhealthy plugin's answers. */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import protobuf from 'protobufjs';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import {
  GROUP,
  KNOWN_SECRET_B64 as SECRET_B64,
  secretWithKnownData as withData,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { encryptedObjectProtoPath, startTestKMSPlugin, type TestKMSPlugin } from '../support/kmsplugin.js';
import { startTestServer, type TestServer } from '../support/server.js';

const EncryptedObject = protobuf.loadSync(encryptedObjectProtoPath).lookupType('v2.EncryptedObject');
const PREFIX = 'k8s:enc:kms:v2:vault:';

let etcd: TestEtcd;
let kv: Etcd3;
let dir: string;
let plugin: TestKMSPlugin;
const servers: TestServer[] = [];

beforeAll(async () => {
  etcd = await startTestEtcd();
  kv = new Etcd3({ hosts: etcd.endpoint });
  dir = mkdtempSync(join(tmpdir(), 'encryption-kms-test-'));
  plugin = await startTestKMSPlugin();
}, 60_000);
afterAll(async () => {
  for (const s of servers.splice(0)) await s.stop();
  kv?.close();
  await etcd?.stop();
  await plugin?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function server(etcdPrefix = `/test-${randomUUID()}`): Promise<TestServer> {
  const file = join(dir, `${randomUUID()}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'EncryptionConfiguration',
      resources: [
        {
          resources: ['sharedsecrets.management.platform.sh'],
          providers: [
            { kms: { apiVersion: 'v2', name: 'vault', endpoint: plugin.endpoint, timeout: '1s' } },
            { identity: {} },
          ],
        },
      ],
    }),
  );
  const ts = await startTestServer({ etcdPrefix, encryptionProviderConfig: file }, etcd);
  servers.push(ts);
  return ts;
}

test("etcd holds kube's KMS v2 EncryptedObject; the API answers the data; a restarted server asks the plugin once per DEK", async () => {
  const ts = await server();
  const ns = uniq('ns');
  for (const name of ['a', 'b', 'c'])
    expect((await ts.admin.post(sharedSecretsPath(ns), withData(name))).status).toBe(201);
  const key = `${ts.config.etcdPrefix}/${GROUP}/sharedsecrets/${ns}/a`;
  const stored = (await kv.get(key).buffer())!;
  expect(stored.subarray(0, PREFIX.length).toString()).toBe(PREFIX);
  expect(stored.includes(SECRET_B64)).toBe(false);
  expect(EncryptedObject.toObject(EncryptedObject.decode(stored.subarray(PREFIX.length)))).toMatchObject({
    keyID: 'key-1',
    encryptedDEKSourceType: 1,
  });
  expect((await ts.admin.get(sharedSecretPath(ns, 'a'))).body.spec.data).toEqual({ token: SECRET_B64 });
  expect((await ts.admin.get('/readyz?verbose')).text).toContain('[+]kms-providers ok');

  const decrypts = plugin.calls.Decrypt;
  const again = await server(ts.config.etcdPrefix);
  expect(
    (await again.admin.get(`${sharedSecretsPath(ns)}?limit=10`)).body.items.map((i: any) => i.spec.data.token),
  ).toEqual([SECRET_B64, SECRET_B64, SECRET_B64]);
  expect(plugin.calls.Decrypt - decrypts).toBe(1);
}, 60_000);

test('an unhealthy plugin: readyz says which provider and why; writes are a 500 naming the provider, with no data', async () => {
  plugin.healthz = 'vault sealed';
  try {
    const ts = await server();
    const readyz = await ts.admin.get('/readyz?verbose');
    expect(readyz.status).toBe(500);
    expect(readyz.text).toContain('[-]kms-providers failed');
    const res = await ts.admin.post(sharedSecretsPath(uniq('ns')), withData('a'));
    expect(res.status).toBe(500);
    expect(res.body.message).toContain(
      `KMS v2 provider "vault" (${plugin.endpoint}): no data encryption key yet (it needs a healthy Status and an Encrypt from the plugin): the plugin is not healthy: got unexpected healthz status: vault sealed`,
    );
    expect(res.text).not.toContain(SECRET_B64);
  } finally {
    plugin.healthz = 'ok';
  }
}, 60_000);
