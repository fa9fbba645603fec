import { expect, test } from '@jest/globals';
import { hkdfExpandSha256 } from '../../src/storage/encryption/hkdf.js';
import { socketPath } from '../../src/storage/encryption/kmsv2service.js';

test('the DEK of a KMS v2 object is HKDF-SHA256 expand of the seed, as kube derives it (RFC 5869 test case 1)', () => {
  const prk = Buffer.from('077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5', 'hex');
  const info = Buffer.from('f0f1f2f3f4f5f6f7f8f9', 'hex');
  // The first 32 bytes of the 42-byte OKM of the RFC.
  expect(hkdfExpandSha256(prk, info).toString('hex')).toBe(
    '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf',
  );
});

test('a KMS endpoint is a unix socket URL, read as kube reads it; anything else is refused saying what is allowed', () => {
  expect(socketPath('unix:///run/kms/plugin.sock')).toBe('/run/kms/plugin.sock');
  expect(socketPath('unix:/run/kms/plugin.sock')).toBe('/run/kms/plugin.sock');
  expect(() => socketPath('')).toThrow("remote KMS provider can't use empty string as endpoint");
  expect(() => socketPath('tcp://127.0.0.1:9000')).toThrow(
    'unsupported scheme "tcp" for remote KMS provider: only unix:///path/to/socket is supported',
  );
  expect(() => socketPath('/run/kms/plugin.sock')).toThrow('expected unix:///path/to/socket');
  expect(() => socketPath('unix://run/kms.sock')).toThrow('expected unix:///path/to/socket (an absolute path)');
  expect(() => socketPath('unix:///@kms')).toThrow('abstract unix sockets are not supported');
});
