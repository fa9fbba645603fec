/** The KMS v2 provider against a real gRPC plugin on a unix socket (test/support/kmsplugin.ts). */
import { afterEach, beforeEach, expect, jest, test } from '@jest/globals';
import protobuf from 'protobufjs';
import { newKMSv2Transformer, type KMSv2Transformer } from '../../src/storage/encryption/kmsv2.js';
import { encryptedObjectProtoPath, startTestKMSPlugin, type TestKMSPlugin } from '../support/kmsplugin.js';

const EncryptedObject = protobuf.loadSync(encryptedObjectProtoPath).lookupType('v2.EncryptedObject');
const key = '/registry/management.platform.sh/accesskeys/tenant-a/ak-1';
const secret = Buffer.from('{"kind":"AccessKey","spec":{"secretAccessKey":"s3cr3t-value"}}');

let plugin: TestKMSPlugin;
const transformers: KMSv2Transformer[] = [];

async function transformer(timeoutMs = 3000): Promise<KMSv2Transformer> {
  const t = await newKMSv2Transformer({ name: 'vault', endpoint: plugin.endpoint, timeoutMs });
  transformers.push(t);
  return t;
}

/** Moves the clock (Date only: gRPC's and our timers stay real) past the health check's cache of 20s. */
function later(ms: number): void {
  jest.setSystemTime(Date.now() + ms);
}

/** Health checks until one passes, as the server's poll does: a restarted plugin is reconnected to within a second. */
async function healthyAgain(t: KMSv2Transformer): Promise<void> {
  const end = performance.now() + 5000; // real time: Date is moved by later()
  for (;;) {
    later(4_000);
    try {
      return await t.health();
    } catch (err) {
      if (performance.now() > end) throw err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function decodeStored(stored: Uint8Array) {
  return EncryptedObject.toObject(EncryptedObject.decode(stored), { defaults: true, enums: Number }) as {
    encryptedData: Buffer;
    keyID: string;
    encryptedDEKSource: Buffer;
    annotations: Record<string, Buffer>;
    encryptedDEKSourceType: number;
  };
}

beforeEach(async () => {
  jest.useFakeTimers({
    advanceTimers: true,
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
  plugin = await startTestKMSPlugin();
});

afterEach(async () => {
  for (const t of transformers.splice(0)) t.close();
  await plugin.close();
  jest.useRealTimers();
});

test("objects round-trip; what is stored is kube's EncryptedObject with the key ID and the plugin-encrypted seed, and no plaintext", async () => {
  const t = await transformer();
  const stored = await t.transformToStorage(secret, key);
  expect(Buffer.from(stored).includes('s3cr3t-value')).toBe(false);
  expect(await t.transformFromStorage(stored, key)).toEqual({ data: Buffer.from(secret), stale: false });

  const object = decodeStored(stored);
  expect(object.keyID).toBe('key-1');
  expect(object.encryptedDEKSourceType).toBe(1); // HKDF_SHA256_XNONCE_AES_GCM_SEED
  expect(object.encryptedDEKSource.length).toBeGreaterThan(32);
  expect(object.annotations).toEqual({ 'version.kms.example.com': Buffer.from('1') });
  // 32 bytes of HKDF info, a 12-byte nonce, the ciphertext, a 16-byte tag.
  expect(object.encryptedData.length).toBe(32 + 12 + secret.length + 16);
});

test("an object kube wrote reads back: kube's recorded HKDF/AES-GCM output decrypts under its seed", async () => {
  // From kube's aes_test.go TestExtendedNonceGCMLegacyDataCompatibility: the seed, and what kube stored for
  // "pandas are the best" under the authenticated data "bamboo".
  const seed = Buffer.from('5d40323a820ff95561675e3b95e81867c5fdd561d35a88a2d08b08aa9d4fcf5c', 'hex');
  const encryptedData = Buffer.from(
    '2442759e33945fbad709db577a0f037fd8a709fc76979b8942209debcecb9d57efe3d6ff6a1ef6ee9a5003b9833b3043cec1e47b35175b151107a8d2416b0e296bbf66b5d102fcefdf9a78f293d271',
    'hex',
  );
  const stored = EncryptedObject.encode(
    EncryptedObject.fromObject({
      encryptedData,
      keyID: 'key-1',
      encryptedDEKSource: plugin.seal(seed),
      annotations: plugin.annotations,
      encryptedDEKSourceType: 1,
    }),
  ).finish();
  const t = await transformer();
  expect(Buffer.from((await t.transformFromStorage(stored, 'bamboo')).data).toString()).toBe('pandas are the best');
  await expect(t.transformFromStorage(stored, 'panda')).rejects.toThrow('cipher: message authentication failed');
});

test('an object kube wrote before 1.29 (the DEK itself encrypted by the plugin) reads back, as stale', async () => {
  // From kube's aes_test.go TestGCMLegacyDataCompatibility: AES-GCM under the key "snorlax_awesomes".
  const encryptedData = Buffer.from(
    '9f27c8fcea8a58c467d8e437dbf2d85955f9b4bd912f4ef967d788a0cb07797dac0a3f0a0845605ca85ac8562b4ae1',
    'hex',
  );
  const stored = EncryptedObject.encode(
    EncryptedObject.fromObject({
      encryptedData,
      keyID: 'key-1',
      encryptedDEKSource: plugin.seal(Buffer.from('snorlax_awesomes')),
      annotations: plugin.annotations,
    }),
  ).finish();
  const t = await transformer();
  expect(await t.transformFromStorage(stored, 'bamboo')).toEqual({
    data: Buffer.from('pandas are the best'),
    stale: true,
  });
});

test('the plugin encrypts one seed for many writes, and the writer reads its own objects without calling Decrypt', async () => {
  const t = await transformer();
  const stored = await Promise.all(
    Array.from({ length: 20 }, (_, i) => t.transformToStorage(Buffer.from(`object ${i}`), `${key}-${i}`)),
  );
  for (const [i, s] of stored.entries())
    expect(Buffer.from((await t.transformFromStorage(s, `${key}-${i}`)).data).toString()).toBe(`object ${i}`);
  expect(plugin.calls.Encrypt).toBe(1);
  expect(plugin.calls.Decrypt).toBe(0);
  expect(new Set(stored.map((s) => decodeStored(s).encryptedDEKSource.toString('base64'))).size).toBe(1);
});

test('after a restart, objects sharing a seed cost one Decrypt, even when read at the same time; every request has its own uid', async () => {
  const writer = await transformer();
  const stored = await Promise.all(
    Array.from({ length: 10 }, (_, i) => writer.transformToStorage(Buffer.from(`object ${i}`), `${key}-${i}`)),
  );
  writer.close();

  const restarted = await transformer();
  const read = await Promise.all(stored.map((s, i) => restarted.transformFromStorage(s, `${key}-${i}`)));
  expect(read.map((r) => Buffer.from(r.data).toString())).toEqual(stored.map((_, i) => `object ${i}`));
  await restarted.transformFromStorage(stored[0], `${key}-0`);
  expect(plugin.calls.Decrypt).toBe(1);
  expect(plugin.uids.every((uid) => /^[0-9a-f-]{36}$/.test(uid))).toBe(true);
  expect(new Set(plugin.uids).size).toBe(plugin.uids.length);
});

test('a new key ID from Status brings a new seed: older objects still decrypt and read as stale, new ones do not', async () => {
  const t = await transformer();
  const old = await t.transformToStorage(secret, key);

  plugin.keyID = 'key-2';
  later(21_000);
  await t.health();
  expect(plugin.calls.Encrypt).toBe(2);

  expect(await t.transformFromStorage(old, key)).toEqual({ data: Buffer.from(secret), stale: true });
  const fresh = await t.transformToStorage(secret, key);
  expect(decodeStored(fresh).keyID).toBe('key-2');
  expect(await t.transformFromStorage(fresh, key)).toEqual({ data: Buffer.from(secret), stale: false });

  // A server started after the rotation reads the old object through the plugin's old key.
  const restarted = await transformer();
  expect(await restarted.transformFromStorage(old, key)).toEqual({ data: Buffer.from(secret), stale: true });
});

test('the same key ID keeps the same seed across health checks', async () => {
  const t = await transformer();
  const first = decodeStored(await t.transformToStorage(secret, key));
  later(21_000);
  await t.health();
  const second = decodeStored(await t.transformToStorage(secret, key));
  expect(second.encryptedDEKSource).toEqual(first.encryptedDEKSource);
  expect(plugin.calls.Encrypt).toBe(1);
  expect(plugin.calls.Status).toBe(2);
});

test('health reflects Status: healthz, API version and key ID are checked as kube checks them', async () => {
  const t = await transformer();
  await expect(t.health()).resolves.toBeUndefined();

  plugin.healthz = 'vault sealed';
  await expect(t.health()).resolves.toBeUndefined(); // a healthy answer is trusted for 20s, as kube's
  later(21_000);
  await expect(t.health()).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): the plugin is not healthy: got unexpected healthz status: vault sealed`,
  );

  plugin.healthz = 'ok';
  plugin.version = 'v1';
  later(4_000);
  await expect(t.health()).rejects.toThrow('expected KMSv2 API version v2, got "v1"');

  plugin.version = 'v2';
  plugin.keyID = '';
  later(4_000);
  await expect(t.health()).rejects.toThrow('keyID is empty');

  plugin.keyID = 'k'.repeat(1025);
  later(4_000);
  await expect(t.health()).rejects.toThrow('keyID is 1025 bytes, which exceeds the max size of 1024');

  plugin.keyID = 'key-1';
  later(4_000);
  await expect(t.health()).resolves.toBeUndefined();
});

test('a plugin whose Encrypt returns annotations that are not domain names, or another key ID than Status, is not used', async () => {
  plugin.annotations = { Version: Buffer.from('1') };
  const t = await transformer();
  await expect(t.health()).rejects.toThrow('annotation key "Version" must be a fully qualified domain name');
  await expect(t.transformToStorage(secret, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): no data encryption key yet (it needs a healthy Status and an Encrypt from the plugin)`,
  );

  plugin.annotations = { 'version.kms.example.com': Buffer.from('1') };
  plugin.encryptKeyID = 'key-0';
  later(4_000);
  await expect(t.health()).rejects.toThrow(
    /failed to rotate DEK to key ID hash "sha256:[0-9a-f]{64}": Encrypt returned key ID hash "sha256:[0-9a-f]{64}", Status "sha256:/,
  );
  await expect(t.transformToStorage(secret, key)).rejects.toThrow('no data encryption key yet');

  plugin.encryptKeyID = undefined;
  later(4_000);
  await t.health();
  await expect(t.transformToStorage(secret, key)).resolves.toBeDefined();
});

test('a plugin that is down: reads needing Decrypt fail naming the provider and socket; writes coast on the seed for 3 minutes; all recover when it is back', async () => {
  const t = await transformer(500);
  const other = await transformer(500);
  const stored = await t.transformToStorage(secret, key);
  await plugin.stop();

  // The server that has the seed cached keeps reading and writing.
  await expect(t.transformFromStorage(stored, key)).resolves.toEqual({ data: Buffer.from(secret), stale: false });
  await t.transformToStorage(secret, key);
  later(21_000);
  await expect(t.health()).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): Status failed: no answer within 0.5s`,
  );

  // One that needs Decrypt cannot.
  await expect(other.transformFromStorage(stored, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): Decrypt failed: no answer within 0.5s`,
  );

  // Past 3 minutes without a good Status, writes are refused.
  later(3 * 60_000);
  await expect(t.transformToStorage(secret, key)).rejects.toThrow(
    /^KMS v2 provider "vault" \(unix:\/\/.*\): writes are refused: the plugin has not confirmed the key ID since .*Z: Status failed: no answer within 0\.5s/,
  );

  await plugin.start();
  await healthyAgain(t);
  await expect(t.transformToStorage(secret, key)).resolves.toBeDefined();
  await healthyAgain(other);
  await expect(other.transformFromStorage(stored, key)).resolves.toEqual({ data: Buffer.from(secret), stale: false });
});

test('Decrypt failing or too slow is an error naming the provider and the socket, within the timeout', async () => {
  const stored = await (await transformer()).transformToStorage(secret, key);

  plugin.failing.add('Decrypt');
  const reader = await transformer(500);
  await expect(reader.transformFromStorage(stored, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): Decrypt failed: INTERNAL: Decrypt is failing (test switch)`,
  );

  plugin.failing.clear();
  plugin.delayMs = 2000;
  const started = performance.now();
  await expect(reader.transformFromStorage(stored, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): Decrypt failed: no answer within 0.5s`,
  );
  expect(performance.now() - started).toBeLessThan(1500);

  plugin.delayMs = 0;
  await expect(reader.transformFromStorage(stored, key)).resolves.toEqual({ data: Buffer.from(secret), stale: false });
});

test('a plugin that starts after the server: writes fail until it answers, then work', async () => {
  await plugin.stop();
  const t = await transformer(300);
  await expect(t.transformToStorage(secret, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): no data encryption key yet (it needs a healthy Status and an Encrypt from the plugin): Status failed: no answer within 0.3s`,
  );
  await plugin.start();
  await healthyAgain(t);
  const stored = await t.transformToStorage(secret, key);
  expect(await t.transformFromStorage(stored, key)).toEqual({ data: Buffer.from(secret), stale: false });
});

test('a value changed in etcd, or copied under another key, does not decrypt', async () => {
  const t = await transformer();
  const stored = await t.transformToStorage(secret, key);

  // Moved to another object's key: the etcd key is authenticated data.
  await expect(
    t.transformFromStorage(stored, '/registry/management.platform.sh/accesskeys/tenant-b/ak-1'),
  ).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): the value stored at /registry/management.platform.sh/accesskeys/tenant-b/ak-1 failed to decrypt: cipher: message authentication failed`,
  );

  // A flipped bit anywhere in the ciphertext, the tag, the nonce or the HKDF info.
  const object = decodeStored(stored);
  for (const at of [0, 40, 50, object.encryptedData.length - 1]) {
    const data = Buffer.from(object.encryptedData);
    data[at] ^= 1;
    const tampered = EncryptedObject.encode(EncryptedObject.fromObject({ ...object, encryptedData: data })).finish();
    await expect(t.transformFromStorage(tampered, key)).rejects.toThrow('cipher: message authentication failed');
  }

  // Another encrypted seed: the plugin refuses it.
  const dek = Buffer.from(object.encryptedDEKSource);
  dek[20] ^= 1;
  const otherSeed = EncryptedObject.encode(EncryptedObject.fromObject({ ...object, encryptedDEKSource: dek })).finish();
  await expect(t.transformFromStorage(otherSeed, key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): Decrypt failed: INVALID_ARGUMENT`,
  );

  // Not an EncryptedObject, or one kube would refuse.
  await expect(t.transformFromStorage(Buffer.from('{"kind":"AccessKey"}'), key)).rejects.toThrow(
    `KMS v2 provider "vault" (${plugin.endpoint}): the stored value is not a`,
  );
  const noKeyID = EncryptedObject.encode(EncryptedObject.fromObject({ ...object, keyID: '' })).finish();
  await expect(t.transformFromStorage(noKeyID, key)).rejects.toThrow(
    'the stored value is not a valid KMS v2 EncryptedObject: invalid key ID: keyID is empty',
  );
  const unknownType = EncryptedObject.encode(
    EncryptedObject.fromObject({ ...object, encryptedDEKSourceType: 7 }),
  ).finish();
  await expect(t.transformFromStorage(unknownType, key)).rejects.toThrow('unknown encryptedDEKSourceType: 7');
});

test('an endpoint that is not a unix socket is refused before anything starts', async () => {
  await expect(
    newKMSv2Transformer({ name: 'vault', endpoint: 'tcp://127.0.0.1:9000', timeoutMs: 3000 }),
  ).rejects.toThrow('unsupported scheme "tcp" for remote KMS provider: only unix:///path/to/socket is supported');
  await expect(newKMSv2Transformer({ name: 'vault', endpoint: plugin.endpoint, timeoutMs: 0 })).rejects.toThrow(
    'KMS v2 provider "vault": timeout must be positive, got 0ms',
  );
});
