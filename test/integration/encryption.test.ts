/**
 * Encryption at rest (--encryption-provider-config) against a real etcd, read back raw with the etcd client: the
 * stored bytes carry kube's prefixes and no plaintext; reads, lists, watches and updates decrypt; rotation as kube
 * documents it (add a key first, rewrite everything with kubectl replace, remove the old key); reload; bad files.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { defaultConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { startEmbeddedEtcd } from '../../src/storage/embedded-etcd.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import {
  API_VERSION,
  GROUP,
  KNOWN_SECRET as SECRET,
  KNOWN_SECRET_B64 as SECRET_B64,
  secretWithKnownData as withData,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';

let etcd: TestEtcd;
let kv: Etcd3;
let dir: string;
const servers: TestServer[] = [];

beforeAll(async () => {
  etcd = await startTestEtcd();
  kv = new Etcd3({ hosts: etcd.endpoint });
  dir = mkdtempSync(join(tmpdir(), 'encryption-test-'));
}, 60_000);
// The servers stop together: one after another, ten stops on a loaded machine outlasted the hook's time.
afterAll(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  kv?.close();
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

const key1 = randomBytes(32).toString('base64');
const key2 = randomBytes(32).toString('base64');

const RESOURCES = [
  'sharedsecrets.management.platform.sh',
  'projectsecrets.management.platform.sh',
  'ownedaccesskeys.management.platform.sh',
  'signingkeys.management.platform.sh',
];

function configFile(providers: unknown[], resources = RESOURCES): string {
  const path = join(dir, `${randomUUID()}.yaml`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'EncryptionConfiguration',
      resources: [{ resources, providers }],
    }),
  );
  return path;
}

const aescbc = (...keys: [string, string][]) => ({
  aescbc: { keys: keys.map(([name, secret]) => ({ name, secret })) },
});

async function server(overrides: Partial<Config>): Promise<TestServer> {
  const ts = await startTestServer(overrides, etcd);
  servers.push(ts);
  return ts;
}

async function raw(key: string): Promise<Buffer> {
  const value = await kv.get(key).buffer();
  if (!value) throw new Error(`nothing stored at ${key}`);
  return value;
}

function secretKey(ts: TestServer, ns: string, name: string): string {
  return `${ts.config.etcdPrefix}/${GROUP}/sharedsecrets/${ns}/${name}`;
}

async function createSecret(ts: TestServer, ns: string, name: string): Promise<any> {
  const res = await ts.admin.post(sharedSecretsPath(ns), withData(name));
  expect({ status: res.status, message: res.body?.message }).toMatchObject({ status: 201 });
  return res.body;
}

describe('stored format', () => {
  test.each([
    ['aescbc', 'k8s:enc:aescbc:v1:key1:'],
    ['aesgcm', 'k8s:enc:aesgcm:v1:key1:'],
    ['secretbox', 'k8s:enc:secretbox:v1:key1:'],
  ])(
    '%s: etcd holds %s and ciphertext only; get, list and watch answer the data',
    async (provider, prefix) => {
      const ts = await server({
        encryptionProviderConfig: configFile([{ [provider]: { keys: [{ name: 'key1', secret: key1 }] } }]),
      });
      const ns = uniq('ns');
      const created = await createSecret(ts, ns, 'a');
      const stored = await raw(secretKey(ts, ns, 'a'));
      expect(stored.subarray(0, prefix.length).toString()).toBe(prefix);
      for (const plain of [SECRET, SECRET_B64, 'Secret a', '"spec"']) expect(stored.includes(plain)).toBe(false);

      expect((await ts.admin.get(sharedSecretPath(ns, 'a'))).body.spec.data).toEqual({ token: SECRET_B64 });
      expect((await ts.admin.get(sharedSecretsPath(ns))).body.items.map((i: any) => i.spec.data.token)).toEqual([
        SECRET_B64,
      ]);
      // A list read from etcd (limit + continue) decrypts too.
      expect((await ts.admin.get(`${sharedSecretsPath(ns)}?limit=1`)).body.items[0].spec.data).toEqual({
        token: SECRET_B64,
      });
      // A watch from before the create sees it decrypted (the etcd watch feeding the cache decrypts).
      const watch = await ts.admin.get(
        `${sharedSecretsPath(ns)}?watch=1&resourceVersion=${Number(created.metadata.resourceVersion) - 1}&timeoutSeconds=1`,
      );
      expect(JSON.parse(watch.text.split('\n')[0])).toMatchObject({
        type: 'ADDED',
        object: { spec: { data: { token: SECRET_B64 } } },
      });
      // Updates read what is stored, decrypt, and write encrypted again.
      const patched = await ts.admin.patch(
        sharedSecretPath(ns, 'a'),
        { spec: { displayName: 'changed' } },
        'application/merge-patch+json',
      );
      expect(patched.status).toBe(200);
      expect((await raw(secretKey(ts, ns, 'a'))).subarray(0, prefix.length).toString()).toBe(prefix);
    },
    60_000,
  );

  test('aesgcm authenticates the etcd key: a value moved to another key is a 500 naming the key, with no data', async () => {
    const ts = await server({
      encryptionProviderConfig: configFile([{ aesgcm: { keys: [{ name: 'key1', secret: key1 }] } }]),
    });
    const ns = uniq('ns');
    await createSecret(ts, ns, 'a');
    await createSecret(ts, ns, 'b');
    await kv.put(secretKey(ts, ns, 'b')).value(await raw(secretKey(ts, ns, 'a')));
    const res = await ts.admin.put(sharedSecretPath(ns, 'b'), withData('b'));
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'InternalError', code: 500 });
    expect(res.body.message).toBe(
      `Internal error occurred: unable to transform key "${secretKey(ts, ns, 'b')}": cipher: message authentication failed`,
    );
    expect(res.text).not.toContain(SECRET_B64);
  }, 60_000);

  test('a watched value the server cannot read is not skipped: the cache lists again and serves it once readable', async () => {
    const ts = await server({ encryptionProviderConfig: configFile([aescbc(['key1', key1])]) });
    const ns = uniq('ns');
    await createSecret(ts, ns, 'a');
    const readable = await raw(secretKey(ts, ns, 'a'));
    // Another writer's value with a key this server lacks (a replica ahead in a rotation, say).
    const other = (await import('../../src/storage/encryption/aes.js')).cbcTransformer(randomBytes(32));
    const plain = Buffer.from(
      JSON.stringify({
        ...withData('a'),
        metadata: { name: 'a', namespace: ns, uid: 'u', creationTimestamp: '2024-01-01T00:00:00Z' },
      }),
    );
    await kv
      .put(secretKey(ts, ns, 'a'))
      .value(
        Buffer.concat([Buffer.from('k8s:enc:aescbc:v1:key9:'), Buffer.from(await other.transformToStorage(plain, ''))]),
      );
    // Reads answer from etcd while the cache cannot be filled: the object is a 500 naming it, not its old state.
    await waitFor(
      async () => (await ts.admin.get(sharedSecretPath(ns, 'a'))).status === 500,
      'the unreadable value seen',
    );
    expect((await ts.admin.get(sharedSecretPath(ns, 'a'))).body.message).toBe(
      `Internal error occurred: unable to transform key "${secretKey(ts, ns, 'a')}": no matching key was found for the provided AES transformer`,
    );
    // Readable again (written back): the cache catches up and serves it.
    await kv.put(secretKey(ts, ns, 'a')).value(readable);
    await waitFor(async () => (await ts.admin.get(sharedSecretPath(ns, 'a'))).status === 200, 'the cache filled again');
    const list = await ts.admin.get(sharedSecretsPath(ns));
    expect(list.body.items.map((i: any) => i.spec.data.token)).toEqual([SECRET_B64]);
  }, 60_000);

  test('identity first: stored plain; values an encrypting provider wrote are still read', async () => {
    const prefix = `/test-${randomUUID()}`;
    const enc = await server({ etcdPrefix: prefix, encryptionProviderConfig: configFile([aescbc(['key1', key1])]) });
    const ns = uniq('ns');
    await createSecret(enc, ns, 'old');
    await enc.stop();
    servers.splice(servers.indexOf(enc), 1);

    const plain = await server({
      etcdPrefix: prefix,
      encryptionProviderConfig: configFile([{ identity: {} }, aescbc(['key1', key1])]),
    });
    expect((await plain.admin.get(sharedSecretPath(ns, 'old'))).body.spec.data).toEqual({ token: SECRET_B64 });
    await createSecret(plain, ns, 'new');
    expect(JSON.parse((await raw(secretKey(plain, ns, 'new'))).toString())).toMatchObject({
      spec: { data: { token: SECRET_B64 } },
    });
    // The old value is stale: a no-op update (kubectl replace) writes it plain now.
    const old = await plain.admin.get(sharedSecretPath(ns, 'old'));
    expect((await plain.admin.put(sharedSecretPath(ns, 'old'), old.body)).status).toBe(200);
    expect(JSON.parse((await raw(secretKey(plain, ns, 'old'))).toString())).toMatchObject({
      metadata: { name: 'old' },
    });
  }, 60_000);

  test('a plain value without identity in the list: the server does not start, and says which key', async () => {
    const prefix = `/test-${randomUUID()}`;
    const plain = await server({ etcdPrefix: prefix });
    const ns = uniq('ns');
    await createSecret(plain, ns, 'a');
    await plain.stop();
    servers.splice(servers.indexOf(plain), 1);
    await expect(
      startTestServer({ etcdPrefix: prefix, encryptionProviderConfig: configFile([aescbc(['key1', key1])]) }, etcd),
    ).rejects.toThrow(`unable to transform key "${prefix}/${GROUP}/sharedsecrets/${ns}/a": no matching prefix found`);
  }, 60_000);

  test('ProjectSecrets are encrypted: etcd holds ciphertext only, the API answers the data', async () => {
    const ts = await server({ encryptionProviderConfig: configFile([aescbc(['key1', key1])]) });
    const project = uniq('enc');
    const created = await ts.admin.post(`${GROUP_PATH}/projects`, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: project },
    });
    expect(created.status).toBe(201);
    const path = `${GROUP_PATH}/namespaces/p-${project}/projectsecrets`;
    const res = await ts.admin.post(path, {
      apiVersion: API_VERSION,
      kind: 'ProjectSecret',
      metadata: { name: 'db' },
      spec: { data: { token: SECRET_B64 } },
    });
    expect(res.status).toBe(201);
    const stored = await raw(`${ts.config.etcdPrefix}/${GROUP}/projectsecrets/p-${project}/db`);
    expect(stored.subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key1:');
    for (const plain of [SECRET, SECRET_B64, 'ProjectSecret', '"spec"']) expect(stored.includes(plain)).toBe(false);
    expect((await ts.admin.get(`${path}/db`)).body.spec.data).toEqual({ token: SECRET_B64 });
  }, 60_000);

  test('resources the file does not name stay plain; signing keys and access keys are encrypted', async () => {
    const ts = await server({ encryptionProviderConfig: configFile([aescbc(['key1', key1])]) });
    const cluster = await ts.admin.post(`${GROUP_PATH}/clusters`, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: { name: uniq('c') },
      spec: { displayName: 'c', config: { secretName: 's', secretNamespace: 'p' }, managementNamespace: 'm' },
    });
    expect(cluster.status).toBe(201);
    expect(
      JSON.parse((await raw(`${ts.config.etcdPrefix}/${GROUP}/clusters/${cluster.body.metadata.name}`)).toString())
        .kind,
    ).toBe('Cluster');

    const name = uniq('key');
    const key = await ts.admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name },
      spec: { user: 'alice', identity: { connectorData: 'Y29ubmVjdG9yLXNlY3JldA==' } },
    });
    expect(key.status).toBe(201);
    const storedKey = await raw(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`);
    expect(storedKey.subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key1:');
    expect(storedKey.includes('Y29ubmVjdG9yLXNlY3JldA==')).toBe(false);

    expect((await ts.anonymous.get('/openid/v1/jwks')).status).toBe(200);
    const signing = await raw(`${ts.config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`);
    expect(signing.subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key1:');
    expect(signing.includes('"d"')).toBe(false);
  }, 60_000);
});

describe('rotation', () => {
  test('add key2 first and reload: the server rewrites everything; remove key1: all still read; a value left under key1 is a 500', async () => {
    const file = join(dir, 'rotating.yaml');
    writeFileSync(file, readFileSync(configFile([aescbc(['key1', key1])])));
    const ts = await server({
      encryptionProviderConfig: file,
      encryptionProviderConfigAutomaticReload: true,
      encryptionProviderConfigReloadIntervalMs: 100,
    });
    const ns = uniq('ns');
    await createSecret(ts, ns, 'a');
    await createSecret(ts, ns, 'left');
    const accessKey = uniq('key');
    expect(
      (
        await ts.admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
          apiVersion: API_VERSION,
          kind: 'OwnedAccessKey',
          metadata: { name: accessKey },
          spec: { user: 'alice', identity: { connectorData: 'eA==' } },
        })
      ).status,
    ).toBe(201);
    await ts.anonymous.get('/openid/v1/jwks');
    const keyOf = (k: Buffer) => /^k8s:enc:aescbc:v1:([^:]+):/.exec(k.subarray(0, 40).toString('latin1'))?.[1];
    const signingKey = `${ts.config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`;
    const accessKeyKey = `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${accessKey}`;
    const underKey1 = await raw(secretKey(ts, ns, 'left'));
    expect([keyOf(underKey1), keyOf(await raw(signingKey)), keyOf(await raw(accessKeyKey))]).toEqual([
      'key1',
      'key1',
      'key1',
    ]);

    // 1. key2 first: new writes use it, and the server writes every object and the signing keys again with it.
    writeFileSync(file, readFileSync(configFile([aescbc(['key2', key2], ['key1', key1])])));
    const all = [secretKey(ts, ns, 'a'), secretKey(ts, ns, 'left'), accessKeyKey, signingKey];
    await waitFor(
      async () => (await Promise.all(all.map(raw))).every((v) => keyOf(v) === 'key2'),
      'everything rewritten with key2',
    );
    await createSecret(ts, ns, 'b');
    expect(keyOf(await raw(secretKey(ts, ns, 'b')))).toBe('key2');
    // What clients never see (the access key's connectorData) was kept through the rewrite.
    expect((await raw(accessKeyKey)).includes('eA==')).toBe(false);

    // 2. key1 removed: everything still reads and updates; a value still under key1 is a clear 500 for that object.
    writeFileSync(file, readFileSync(configFile([aescbc(['key2', key2])])));
    await kv.put(secretKey(ts, ns, 'left')).value(underKey1);
    await waitFor(
      async () => (await ts.admin.put(sharedSecretPath(ns, 'left'), withData('left'))).status === 500,
      'key1 removed',
    );
    const res = await ts.admin.put(sharedSecretPath(ns, 'left'), withData('left'));
    expect(res.body).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError' });
    expect(res.body.message).toBe(
      `Internal error occurred: unable to transform key "${secretKey(ts, ns, 'left')}": no matching key was found for the provided AES transformer`,
    );
    expect(res.text).not.toContain(SECRET_B64);
    expect(
      (
        await ts.admin.patch(
          sharedSecretPath(ns, 'a'),
          { metadata: { labels: { x: 'y' } } },
          'application/merge-patch+json',
        )
      ).status,
    ).toBe(200);
    expect((await ts.admin.get(`${GROUP_PATH}/ownedaccesskeys/${accessKey}`)).status).toBe(200);

    // A server started on key2 alone reads everything (from etcd, not from a cache); the signing keys too.
    await kv.delete().key(secretKey(ts, ns, 'left'));
    const fresh = await server({ etcdPrefix: ts.config.etcdPrefix, encryptionProviderConfig: file });
    expect(
      (await fresh.admin.get(sharedSecretsPath(ns))).body.items.map((i: any) => [i.metadata.name, i.spec.data.token]),
    ).toEqual([
      ['a', SECRET_B64],
      ['b', SECRET_B64],
    ]);
    expect((await fresh.anonymous.get('/openid/v1/jwks')).body.keys).toHaveLength(1);
  }, 120_000);

  test("a no-op update of a value an old key wrote writes it with the current key (kube's rotation by kubectl replace)", async () => {
    const prefix = `/test-${randomUUID()}`;
    const old = await server({ etcdPrefix: prefix, encryptionProviderConfig: configFile([aescbc(['key1', key1])]) });
    const name = uniq('key');
    expect(
      (
        await old.admin.post(`${GROUP_PATH}/ownedaccesskeys`, {
          apiVersion: API_VERSION,
          kind: 'OwnedAccessKey',
          metadata: { name },
          spec: { user: 'alice', identity: { connectorData: 'eA==' } },
        })
      ).status,
    ).toBe(201);
    await old.stop();
    servers.splice(servers.indexOf(old), 1);
    // Without automatic reload the server still rewrites at start; put the old value back to see the update do it.
    const stored = await raw(`${prefix}/${GROUP}/ownedaccesskeys/${name}`);
    const ts = await server({
      etcdPrefix: prefix,
      encryptionProviderConfig: configFile([aescbc(['key2', key2], ['key1', key1])]),
    });
    await waitFor(
      async () =>
        (await raw(`${prefix}/${GROUP}/ownedaccesskeys/${name}`)).subarray(0, 23).toString() ===
        'k8s:enc:aescbc:v1:key2:',
      'rewritten at start',
    );
    await kv.put(`${prefix}/${GROUP}/ownedaccesskeys/${name}`).value(stored);
    const get = await kubectl(['get', 'ownedaccesskey', name, '-o', 'json'], { kubeconfig: ts.kubeconfig });
    const replaced = await kubectl(['replace', '-f', '-'], { kubeconfig: ts.kubeconfig, stdin: get.stdout });
    expect({ code: replaced.code, stderr: replaced.stderr }).toEqual({ code: 0, stderr: '' });
    const after = await raw(`${prefix}/${GROUP}/ownedaccesskeys/${name}`);
    expect(after.subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key2:');
    // connectorData, which clients never see, survived the replace.
    const { cbcTransformer } = await import('../../src/storage/encryption/aes.js');
    const plain = JSON.parse(
      Buffer.from(
        (await cbcTransformer(Buffer.from(key2, 'base64')).transformFromStorage(after.subarray(23), '')).data,
      ).toString(),
    );
    expect(plain.spec.identity.connectorData).toBe('eA==');
  }, 60_000);

  test('reload: an invalid new file is logged and the configuration in force kept', async () => {
    const file = join(dir, 'reload-invalid.yaml');
    writeFileSync(file, readFileSync(configFile([aescbc(['key1', key1])])));
    const lines: string[] = [];
    const config: Config = {
      ...defaultConfig(),
      etcdServers: [etcd.endpoint],
      etcdPrefix: `/test-${randomUUID()}`,
      dataDir: mkdtempSync(join(dir, 'data-')),
      bindAddress: '127.0.0.1',
      securePort: 0,
      encryptionProviderConfig: file,
      encryptionProviderConfigAutomaticReload: true,
      encryptionProviderConfigReloadIntervalMs: 100,
    };
    config.certDir = join(config.dataDir, 'certs');
    const running = await startServer(
      config,
      createLogger((line) => lines.push(line)),
    );
    try {
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'apiserver.config.k8s.io/v1',
          kind: 'EncryptionConfiguration',
          resources: [{ resources: RESOURCES, providers: [aescbc(['key2', Buffer.alloc(7).toString('base64')])] }],
        }),
      );
      await waitFor(async () => lines.some((l) => l.includes('not reloaded')), 'the reload error logged');
      const logged = JSON.parse(lines.find((l) => l.includes('not reloaded'))!);
      expect(logged.error).toContain(
        'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 7, expected one of [16 24 32]',
      );
      // Writes still use key1.
      const token = readFileSync(join(config.dataDir, 'admin-token'), 'utf8').trim();
      const { HttpClient } = await import('../support/http.js');
      const admin = new HttpClient(running.url, running.caPem!, token);
      const ns = uniq('ns');
      expect((await admin.post(sharedSecretsPath(ns), withData('a'))).status).toBe(201);
      expect((await raw(`${config.etcdPrefix}/${GROUP}/sharedsecrets/${ns}/a`)).subarray(0, 23).toString()).toBe(
        'k8s:enc:aescbc:v1:key1:',
      );
      // Health: with reload on, kube's kms-providers check is there.
      expect((await admin.get('/readyz?verbose')).text).toContain('[+]kms-providers ok');
      // kube's reload metrics count the failure.
      const metrics = (await admin.get('/metrics')).text;
      expect(metrics).toMatch(
        /^apiserver_encryption_config_controller_automatic_reloads_total\{status="failure"\} [1-9]/m,
      );
      expect(metrics).toMatch(
        /^apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds\{status="failure"\} \d/m,
      );
      // No key material and no secret data in any log line.
      for (const secret of [key1, key2, SECRET_B64]) expect(lines.join('\n')).not.toContain(secret);
    } finally {
      await running.close();
    }
  }, 60_000);
});

describe('configuration errors stop the start', () => {
  test.each([
    [
      [{ aescbc: { keys: [{ name: 'k', secret: 'c2hvcnQ=' }] } }],
      'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]',
    ],
    [[{ aesgcmm: {} }], 'strict decoding error: unknown field "resources[0].providers[0].aesgcmm"'],
    [
      [{ kms: { name: 'k', endpoint: 'tcp://127.0.0.1:1' } }],
      'resources[0].providers[0].kms.apiVersion: Invalid value: "v1": KMSv1 is deprecated',
    ],
  ])('%j', async (providers, message) => {
    await expect(startTestServer({ encryptionProviderConfig: configFile(providers) }, etcd)).rejects.toThrow(message);
  });

  test('a missing file', async () => {
    await expect(startTestServer({ encryptionProviderConfig: join(dir, 'absent.yaml') }, etcd)).rejects.toThrow(
      `error reading encryption provider configuration file "${join(dir, 'absent.yaml')}"`,
    );
  });
});

test('the embedded default encrypts out of the box with a secretbox key made 0600 in the data dir', async () => {
  const dataDir = mkdtempSync(join(dir, 'embedded-'));
  const config: Config = {
    ...defaultConfig(),
    etcdServers: [],
    dataDir,
    certDir: join(dataDir, 'certs'),
    bindAddress: '127.0.0.1',
    securePort: 0,
  };
  const lines: string[] = [];
  const running = await startServer(
    config,
    createLogger((line) => lines.push(line)),
  );
  const ns = uniq('ns');
  try {
    const { HttpClient } = await import('../support/http.js');
    const admin = new HttpClient(
      running.url,
      running.caPem!,
      readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
    );
    expect((await admin.post(sharedSecretsPath(ns), withData('a'))).status).toBe(201);
  } finally {
    await running.close();
  }
  const file = join(dataDir, 'encryption-config.yaml');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const generated = /secretbox:\n\s+keys:\n\s+- name: key1\n\s+secret: ([A-Za-z0-9+/]{43}=)/.exec(
    readFileSync(file, 'utf8'),
  )?.[1];
  expect(generated).toBeDefined();
  expect(lines.join('\n')).not.toContain(generated);
  expect(lines.join('\n')).toContain('made an encryption configuration with a new secretbox key for the embedded etcd');
  const embedded = await startEmbeddedEtcd({ dataDir, unsafeNoFsync: true });
  const client = new Etcd3({ hosts: embedded.endpoints });
  try {
    const stored = (await client.get(`/registry/${GROUP}/sharedsecrets/${ns}/a`).buffer())!;
    expect(stored.subarray(0, 26).toString()).toBe('k8s:enc:secretbox:v1:key1:');
    expect(stored.includes(SECRET_B64)).toBe(false);
  } finally {
    client.close();
    await embedded.stop();
  }
}, 120_000);

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for: ${what}`);
}
