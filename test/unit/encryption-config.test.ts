/**
 * The EncryptionConfiguration file: kube-apiserver's validation messages for bad files (field path, what is wrong,
 * never a secret), and the transformers' stored formats (prefixes, key lookup, stale values, identity's check).
 */
import { describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { FlagError, parseFlags } from '../../src/config.js';
import { cbcTransformer, gcmTransformer } from '../../src/storage/encryption/aes.js';
import { parseEncryptionConfig } from '../../src/storage/encryption/config.js';
import { secretboxTransformer } from '../../src/storage/encryption/secretbox.js';
import { buildTransformers, ResourceTransformers } from '../../src/storage/encryption/transformers.js';
import { identityTransformer } from '../../src/storage/encryption/transformer.js';

const k32 = randomBytes(32).toString('base64');
const k16 = randomBytes(16).toString('base64');

function file(resources: unknown): string {
  return JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration', resources });
}
const one = (providers: unknown[], resources = ['sharedsecrets.management.platform.sh']) =>
  file([{ resources, providers }]);

describe('validation', () => {
  test.each([
    ['no resources', file([]), 'resources: Required value: at least one resources is required'],
    [
      'no resource names',
      file([{ resources: [], providers: [{ identity: {} }] }]),
      'resources[0].resources: Required value: at least one resources[0].resources is required',
    ],
    [
      'no providers',
      file([{ resources: ['a'], providers: [] }]),
      'resources[0].providers: Required value: at least one resources[0].providers is required',
    ],
    [
      'an empty provider',
      one([{}]),
      'resources[0].providers[0]: Invalid value: []: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity',
    ],
    [
      'two providers in one element',
      one([{ identity: {}, aescbc: { keys: [{ name: 'k', secret: k32 }] } }]),
      'more than one provider specified in a single element, should split into different list elements',
    ],
    ['an unknown provider', one([{ aes: {} }]), 'strict decoding error: unknown field "resources[0].providers[0].aes"'],
    [
      'an aescbc key of 8 bytes',
      one([{ aescbc: { keys: [{ name: 'k', secret: randomBytes(8).toString('base64') }] } }]),
      'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]',
    ],
    [
      'a secretbox key of 16 bytes',
      one([{ secretbox: { keys: [{ name: 'k', secret: k16 }] } }]),
      'resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]',
    ],
    [
      'a key that is not base64',
      one([{ aesgcm: { keys: [{ name: 'k', secret: 'not base64!' }] } }]),
      'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded',
    ],
    [
      'a key without a name',
      one([{ aesgcm: { keys: [{ secret: k32 }] } }]),
      'resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key',
    ],
    [
      'no keys',
      one([{ aescbc: { keys: [] } }]),
      'resources[0].providers[0].aescbc.keys: Required value: at least one keys is required',
    ],
    [
      'a capital letter',
      one([{ identity: {} }], ['SharedSecrets.management.platform.sh']),
      'resources[0].resources[0]: Invalid value: "SharedSecrets.management.platform.sh": resource name should not contain capital letters',
    ],
    [
      'a bare *',
      one([{ identity: {} }], ['*']),
      "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
    ],
    [
      'a resource across groups',
      one([{ identity: {} }], ['sharedsecrets.*']),
      'encrypting the same resource across groups is not supported',
    ],
    [
      'overlapping names',
      one([{ identity: {} }], ['sharedsecrets.management.platform.sh', '*.management.platform.sh']),
      "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
    ],
    [
      'a name twice',
      one([{ identity: {} }], ['clusters.management.platform.sh', 'clusters.management.platform.sh']),
      'the same resource cannot be specified multiple times',
    ],
    [
      'KMS v1',
      one([{ kms: { name: 'p', endpoint: 'unix:///tmp/kms.sock' } }]),
      'resources[0].providers[0].kms.apiVersion: Invalid value: "v1": KMSv1 is deprecated',
    ],
    [
      'KMS over tcp',
      one([{ kms: { apiVersion: 'v2', name: 'p', endpoint: 'tcp://127.0.0.1:5000' } }]),
      'resources[0].providers[0].kms.endpoint: Invalid value: "tcp://127.0.0.1:5000": unsupported scheme "tcp" for KMS provider, only unix is supported',
    ],
    [
      'a KMS name with a colon',
      one([{ kms: { apiVersion: 'v2', name: 'a:b', endpoint: 'unix:///tmp/k.sock' } }]),
      "invalid KMS provider name a:b, must not contain ':'",
    ],
    [
      'a KMS timeout of 0',
      one([{ kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///tmp/k.sock', timeout: '0s' } }]),
      'resources[0].providers[0].kms.timeout: Invalid value: "0s": timeout should be a positive value',
    ],
    [
      'a negative KMS timeout',
      one([{ kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///tmp/k.sock', timeout: '-1s' } }]),
      'resources[0].providers[0].kms.timeout: Invalid value: "-1s": timeout should be a positive value',
    ],
    [
      'a KMS v2 cachesize',
      one([{ kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///tmp/k.sock', cachesize: 10 } }]),
      'cachesize is not supported in v2',
    ],
    [
      'two KMS providers of one name',
      one([
        { kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///a' } },
        { kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///b' } },
      ]),
      'duplicate KMS provider name p, names must be unique',
    ],
    [
      'a masked resource',
      file([
        { resources: ['*.management.platform.sh'], providers: [{ identity: {} }] },
        { resources: ['clusters.management.platform.sh'], providers: [{ identity: {} }] },
      ]),
      'resource "clusters.management.platform.sh" is masked by earlier rule "*.management.platform.sh"',
    ],
    [
      'another kind',
      JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfig', resources: [] }),
      'no kind "EncryptionConfig" is registered for version "apiserver.config.k8s.io/v1"',
    ],
    ['not YAML', 'resources: [', 'error decoding encryption provider configuration file'],
  ])('%s', (_what, text, message) => {
    let error: Error | undefined;
    try {
      parseEncryptionConfig(text, '/etc/enc.yaml');
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toContain(message);
    expect(error?.message).not.toContain(k32);
  });

  test('YAML as kube documents it: wildcards, several providers, a KMS v2 with its default timeout', () => {
    const config = parseEncryptionConfig(
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: EncryptionConfiguration',
        'resources:',
        '  - resources: [sharedsecrets.management.platform.sh, ownedaccesskeys.management.platform.sh]',
        '    providers:',
        '      - kms: {apiVersion: v2, name: vault, endpoint: "unix:///var/run/kms.sock"}',
        `      - aesgcm: {keys: [{name: key2, secret: "${k16}"}]}`,
        `      - aescbc: {keys: [{name: key1, secret: "${k32}"}]}`,
        '      - identity: {}',
        '  - resources: ["*.*"]',
        '    providers: [{identity: {}}]',
      ].join('\n'),
    );
    expect(config.resources[0].providers.map((p) => p.type)).toEqual(['kms', 'aesgcm', 'aescbc', 'identity']);
    expect(config.resources[0].providers[0]).toEqual({
      type: 'kms',
      name: 'vault',
      endpoint: 'unix:///var/run/kms.sock',
      timeoutMs: 3000,
    });
    expect(config.resources[1].resources).toEqual(['*.*']);
  });
});

describe('transformers', () => {
  const plain = Buffer.from('{"spec":{"data":{"token":"c2VjcmV0"}}}');

  test.each([
    ['aescbc', 16 + 48],
    ['aesgcm', 12 + plain.length + 16],
    ['secretbox', 24 + 16 + plain.length],
  ])('%s writes k8s:enc:%s:v1:<key name>: then nonce and ciphertext, as kube', async (type, size) => {
    const built = await buildTransformers(
      parseEncryptionConfig(one([{ [type]: { keys: [{ name: 'first', secret: k32 }] } }])),
    );
    const t = new ResourceTransformers(built, '/registry').forResource('management.platform.sh', 'sharedsecrets');
    const stored = Buffer.from(await t.transformToStorage(plain, '/registry/k'));
    const prefix = `k8s:enc:${type}:v1:first:`;
    expect(stored.subarray(0, prefix.length).toString()).toBe(prefix);
    expect(stored.length - prefix.length).toBe(size);
    expect(Buffer.from((await t.transformFromStorage(stored, '/registry/k')).data)).toEqual(plain);
  });

  test('the direct transformers read what kube layouts hold: nonce or IV first', async () => {
    const key = randomBytes(32);
    for (const make of [cbcTransformer, gcmTransformer, secretboxTransformer]) {
      const t = make(key);
      const a = Buffer.from(await t.transformToStorage(plain, 'ctx'));
      const b = Buffer.from(await t.transformToStorage(plain, 'ctx'));
      expect(a.equals(b)).toBe(false); // a fresh nonce or IV each time
      expect(Buffer.from((await t.transformFromStorage(a, 'ctx')).data)).toEqual(plain);
    }
    // aesgcm and secretbox refuse tampered bytes; aesgcm also another key's data (authenticated etcd key).
    const gcm = gcmTransformer(key);
    const sealed = Buffer.from(await gcm.transformToStorage(plain, '/registry/a'));
    await expect(gcm.transformFromStorage(sealed, '/registry/b')).rejects.toThrow(
      'cipher: message authentication failed',
    );
    const box = secretboxTransformer(key);
    const boxed = Buffer.from(await box.transformToStorage(plain, ''));
    boxed[boxed.length - 1] ^= 1;
    await expect(box.transformFromStorage(boxed, '')).rejects.toThrow('secretbox: message authentication failed');
  });

  test('the first provider and key write; the others read and mark the value stale', async () => {
    const oldKey = parseEncryptionConfig(one([{ aescbc: { keys: [{ name: 'key1', secret: k32 }] } }]));
    const rotated = parseEncryptionConfig(
      one([
        {
          aescbc: {
            keys: [
              { name: 'key2', secret: k16 },
              { name: 'key1', secret: k32 },
            ],
          },
        },
      ]),
    );
    const before = new ResourceTransformers(await buildTransformers(oldKey), '/registry').forKey(
      '/registry/management.platform.sh/sharedsecrets/ns/a',
    );
    const after = new ResourceTransformers(await buildTransformers(rotated), '/registry').forKey(
      '/registry/management.platform.sh/sharedsecrets/ns/a',
    );
    const stored = await before.transformToStorage(plain, 'k');
    expect(await after.transformFromStorage(stored, 'k')).toMatchObject({ stale: true });
    const fresh = await after.transformToStorage(plain, 'k');
    expect(Buffer.from(fresh).subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key2:');
    expect(await after.transformFromStorage(fresh, 'k')).toMatchObject({ stale: false });
  });

  test('identity reads plain values but not encrypted ones; without identity a plain value has no matching prefix', async () => {
    await expect(identityTransformer.transformFromStorage(Buffer.from('k8s:enc:aescbc:v1:k:xx'), '')).rejects.toThrow(
      'identity transformer tried to read encrypted data',
    );
    const t = new ResourceTransformers(
      await buildTransformers(parseEncryptionConfig(one([{ aescbc: { keys: [{ name: 'k', secret: k32 }] } }]))),
      '/registry',
    );
    await expect(
      t.forResource('management.platform.sh', 'sharedsecrets').transformFromStorage(plain, ''),
    ).rejects.toThrow('no matching prefix found');
    // A resource the file does not name is plain.
    expect(
      Buffer.from(await t.forResource('management.platform.sh', 'clusters').transformToStorage(plain, '')),
    ).toEqual(plain);
  });

  test('wildcards: *.<group> covers every resource of the group, *.* everything', async () => {
    const config = parseEncryptionConfig(
      file([
        { resources: ['clusters.management.platform.sh'], providers: [{ identity: {} }] },
        { resources: ['*.management.platform.sh'], providers: [{ secretbox: { keys: [{ name: 'k', secret: k32 }] } }] },
      ]),
    );
    const t = new ResourceTransformers(await buildTransformers(config), '/registry');
    expect(
      Buffer.from(await t.forResource('management.platform.sh', 'clusters').transformToStorage(plain, '')),
    ).toEqual(plain);
    expect(
      Buffer.from(await t.forResource('management.platform.sh', 'signingkeys').transformToStorage(plain, ''))
        .subarray(0, 8)
        .toString(),
    ).toBe('k8s:enc:');
    expect(Buffer.from(await t.forResource('other.example.com', 'things').transformToStorage(plain, ''))).toEqual(
      plain,
    );
  });
});

describe('flags', () => {
  test("--encryption-provider-config and its automatic reload (kube-apiserver's names)", () => {
    expect(
      parseFlags(['--encryption-provider-config=/etc/enc.yaml', '--encryption-provider-config-automatic-reload']),
    ).toMatchObject({
      encryptionProviderConfig: '/etc/enc.yaml',
      encryptionProviderConfigAutomaticReload: true,
      encryptionProviderConfigReloadIntervalMs: 60_000,
    });
    expect(() => parseFlags(['--encryption-provider-config-automatic-reload'])).toThrow(
      new FlagError('--encryption-provider-config-automatic-reload must be set with --encryption-provider-config'),
    );
  });
});
