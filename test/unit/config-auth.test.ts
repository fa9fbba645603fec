import { describe, expect, test } from '@jest/globals';
import { FlagError, helpText, parseFlags } from '../../src/config.js';
import { parseTokenFile } from '../../src/auth/token-file.js';

describe('parseFlags', () => {
  test('defaults like docs/operating.md (Flags) says', () => {
    expect(parseFlags([])).toMatchObject({
      etcdServers: [],
      etcdPrefix: '/registry',
      dataDir: '.data',
      bindAddress: '0.0.0.0',
      securePort: 8443,
      certDir: '.data/certs',
    });
  });

  test('both --flag=value and --flag value', () => {
    const c = parseFlags([
      '--etcd-servers=http://a:2379,http://b:2379',
      '--secure-port',
      '9443',
      '--data-dir',
      '/tmp/d',
      '--tls-sans=api.example.com,10.0.0.1',
    ]);
    expect(c).toMatchObject({
      etcdServers: ['http://a:2379', 'http://b:2379'],
      securePort: 9443,
      dataDir: '/tmp/d',
      certDir: '/tmp/d/certs',
      tlsSans: ['api.example.com', '10.0.0.1'],
    });
  });

  test('--help returns no config', () => {
    expect(parseFlags(['--help'])).toBeUndefined();
    for (const flag of [
      '--etcd-servers',
      '--etcd-prefix',
      '--bind-address',
      '--secure-port',
      '--tls-cert-file',
      '--tls-private-key-file',
      '--cert-dir',
      '--tls-sans',
      '--token-auth-file',
      '--data-dir',
    ]) {
      expect(helpText()).toContain(flag);
    }
  });

  test('--leader-elect-lease-duration: 10s by default, a duration of at least 1s', () => {
    expect(parseFlags([])!.leaderElectLeaseDurationMs).toBe(10_000);
    expect(parseFlags(['--leader-elect-lease-duration=15s'])!.leaderElectLeaseDurationMs).toBe(15_000);
    expect(() => parseFlags(['--leader-elect-lease-duration=500ms'])).toThrow(
      '--leader-elect-lease-duration must be at least 1s (got 500ms)',
    );
    expect(() => parseFlags(['--leader-elect-lease-duration=soon'])).toThrow(/must be a duration/);
  });

  test('etcd TLS files, and the certificate and key go together', () => {
    expect(
      parseFlags([
        '--etcd-servers=https://etcd:2379',
        '--etcd-cafile=/e/ca.crt',
        '--etcd-certfile=/e/tls.crt',
        '--etcd-keyfile=/e/tls.key',
      ]),
    ).toMatchObject({
      etcdCafile: '/e/ca.crt',
      etcdCertfile: '/e/tls.crt',
      etcdKeyfile: '/e/tls.key',
    });
    expect(() => parseFlags(['--etcd-certfile=/e/tls.crt'])).toThrow('--etcd-certfile and --etcd-keyfile go together');
  });

  test('boolean flags stand alone or take true/false: --authentication-skip-lookup', () => {
    expect(parseFlags([])!.authenticationSkipLookup).toBe(false);
    expect(parseFlags(['--authentication-skip-lookup', '--secure-port', '1'])).toMatchObject({
      authenticationSkipLookup: true,
      securePort: 1,
    });
    expect(parseFlags(['--authentication-skip-lookup=false'])!.authenticationSkipLookup).toBe(false);
    expect(() => parseFlags(['--authentication-skip-lookup=yes'])).toThrow(
      '--authentication-skip-lookup must be true or false (got "yes")',
    );
  });

  test('token flags: issuer an https URL, max ttl at least a minute', () => {
    expect(parseFlags(['--token-issuer=https://platform.example.com/', '--token-max-ttl=2h'])).toMatchObject({
      tokenIssuer: 'https://platform.example.com',
      tokenMaxTtlMs: 7_200_000,
    });
    expect(() => parseFlags(['--token-issuer=http://platform.example.com'])).toThrow(
      '--token-issuer must be an https URL',
    );
    expect(() => parseFlags(['--token-issuer=https://x.example.com/?a=1'])).toThrow(
      'without credentials, query or fragment',
    );
    expect(() => parseFlags(['--token-max-ttl=30s'])).toThrow('--token-max-ttl must be at least 60s');
  });

  test('in-flight limits: 400 and 200 by default, 0 turns one off, only whole numbers', () => {
    expect(parseFlags([])).toMatchObject({ maxRequestsInflight: 400, maxMutatingRequestsInflight: 200 });
    expect(parseFlags(['--max-requests-inflight=0', '--max-mutating-requests-inflight', '5'])).toMatchObject({
      maxRequestsInflight: 0,
      maxMutatingRequestsInflight: 5,
    });
    expect(() => parseFlags(['--max-requests-inflight=-1'])).toThrow(
      '--max-requests-inflight must be a whole number, 0 or more (got "-1")',
    );
    expect(() => parseFlags(['--max-mutating-requests-inflight=lots'])).toThrow(
      '--max-mutating-requests-inflight must be a whole number',
    );
  });

  test('connection bounds: 500 at once, 25 a source, 1,000 waiting for 10s by default; each can be set', () => {
    expect(parseFlags([])).toMatchObject({
      maxUnauthenticatedConnections: 500,
      maxUnauthenticatedConnectionsPerSource: 25,
      maxWaitingConnections: 1000,
      connectionWaitTimeoutMs: 10_000,
    });
    expect(
      parseFlags([
        '--max-unauthenticated-connections=2000',
        '--max-unauthenticated-connections-per-source=100',
        '--max-waiting-connections=0',
        '--connection-wait-timeout=5s',
      ]),
    ).toMatchObject({
      maxUnauthenticatedConnections: 2000,
      maxUnauthenticatedConnectionsPerSource: 100,
      maxWaitingConnections: 0,
      connectionWaitTimeoutMs: 5000,
    });
    expect(() => parseFlags(['--max-unauthenticated-connections=0'])).toThrow(
      '--max-unauthenticated-connections must be 1 or more (got "0")',
    );
    expect(() => parseFlags(['--max-unauthenticated-connections-per-source=0'])).toThrow(
      '--max-unauthenticated-connections-per-source must be 1 or more',
    );
    expect(() => parseFlags(['--connection-wait-timeout=0'])).toThrow(
      '--connection-wait-timeout must be longer than 0',
    );
  });

  test('unknown flags, missing values and bad ports are errors', () => {
    expect(() => parseFlags(['--nope=1'])).toThrow(FlagError);
    expect(() => parseFlags(['--secure-port'])).toThrow(/needs an argument/);
    expect(() => parseFlags(['--secure-port=99999'])).toThrow(/port number/);
    expect(() => parseFlags(['--tls-cert-file=a.crt'])).toThrow(/go together/);
  });
});

describe('parseTokenFile', () => {
  test("reads kube-apiserver's CSV format with quoted groups", () => {
    const tokens = parseTokenFile('t1,alice,uid-1,"dev,system:masters"\nt2,bob,uid-2\n\n');
    expect(tokens.get('t1')).toEqual({ name: 'alice', uid: 'uid-1', groups: ['dev', 'system:masters'] });
    expect(tokens.get('t2')).toEqual({ name: 'bob', uid: 'uid-2', groups: [] });
  });

  test('refuses lines with fewer than 3 columns and repeated tokens', () => {
    expect(() => parseTokenFile('t1,alice')).toThrow(/at least 3 columns/);
    expect(() => parseTokenFile('t1,a,1\nt1,b,2')).toThrow(/twice/);
  });
});
