import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Agent } from 'node:https';
import { RequestHeaderAuthenticator, unescapeExtraKey } from '../../src/auth/requestheader.js';
import { FlagError, helpText, parseFlags } from '../../src/config.js';
import { callAuthServer, makeCa, makeCert, startAuthServer, type AuthServer, type TestCert } from '../support/certs.js';

const HEADERS = {
  usernameHeaders: ['X-Remote-User'],
  uidHeaders: ['X-Remote-Uid'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
};

let frontProxyCa: TestCert;
let otherCa: TestCert;
let proxyClient: TestCert;
let server: AuthServer;
let anyNameServer: AuthServer;

beforeAll(async () => {
  frontProxyCa = makeCa('front-proxy-ca');
  otherCa = makeCa('other-ca');
  proxyClient = makeCert({ commonName: 'front-proxy-client', issuer: frontProxyCa });
  const caPems = [frontProxyCa.certPem, otherCa.certPem];
  server = await startAuthServer(
    new RequestHeaderAuthenticator({
      clientCaPem: frontProxyCa.certPem,
      allowedNames: ['front-proxy-client'],
      ...HEADERS,
    }),
    caPems,
  );
  anyNameServer = await startAuthServer(
    new RequestHeaderAuthenticator({ clientCaPem: frontProxyCa.certPem, allowedNames: [], ...HEADERS }),
    caPems,
  );
});

afterAll(async () => {
  await server?.stop();
  await anyNameServer?.stop();
});

const aliceHeaders: Array<[string, string]> = [
  ['X-Remote-User', 'alice'],
  ['X-Remote-Uid', 'uid-1'],
  ['X-Remote-Group', 'dev'],
  ['X-Remote-Group', 'system:authenticated'],
];

describe('RequestHeaderAuthenticator', () => {
  test('trusts the headers over the front proxy certificate with an allowed name, and removes them', async () => {
    const reply = await callAuthServer(server, {
      client: proxyClient,
      headers: [...aliceHeaders, ['X-Other', 'kept']],
    });
    expect(reply.status).toBe(200);
    expect(reply.user).toEqual({ name: 'alice', uid: 'uid-1', groups: ['dev', 'system:authenticated'] });
    expect(Object.keys(reply.headers ?? {}).filter((h) => h.startsWith('x-remote-'))).toEqual([]);
    expect(reply.rawHeaders?.some((h) => /^x-remote-/i.test(h))).toBe(false);
    expect(reply.headers?.['x-other']).toBe('kept');
  });

  test('a forged X-Remote-User without a client certificate authenticates nobody', async () => {
    const reply = await callAuthServer(server, { headers: aliceHeaders });
    expect(reply).toMatchObject({ status: 200, user: null });
    // Ignored headers are left alone.
    expect(reply.headers?.['x-remote-user']).toBe('alice');
  });

  test('ignored with a certificate from another CA', async () => {
    const forged = makeCert({ commonName: 'front-proxy-client', issuer: otherCa });
    expect(await callAuthServer(server, { client: forged, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
  });

  test('ignored with a self-signed certificate naming the front proxy CA as issuer', async () => {
    // Same subject as the CA, but its own key: the signature does not verify.
    const impostorCa = makeCa('front-proxy-ca');
    const forged = makeCert({ commonName: 'front-proxy-client', issuer: impostorCa });
    expect(await callAuthServer(server, { client: forged, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
  });

  test('ignored with a name that is not allowed, accepted when any name is', async () => {
    const stranger = makeCert({ commonName: 'someone-else', issuer: frontProxyCa });
    expect(await callAuthServer(server, { client: stranger, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
    expect(await callAuthServer(anyNameServer, { client: stranger, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: { name: 'alice' },
    });
  });

  test('ignored with an expired certificate or one not for client authentication', async () => {
    const expired = makeCert({
      commonName: 'front-proxy-client',
      issuer: frontProxyCa,
      notBefore: new Date(Date.now() - 2 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    expect(await callAuthServer(server, { client: expired, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
    const serverOnly = makeCert({ commonName: 'front-proxy-client', issuer: frontProxyCa, usage: 'serverAuth' });
    expect(await callAuthServer(server, { client: serverOnly, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
    // No extendedKeyUsage at all means no restriction, as in Go.
    const unrestricted = makeCert({ commonName: 'front-proxy-client', issuer: frontProxyCa, usage: 'none' });
    expect(await callAuthServer(server, { client: unrestricted, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: { name: 'alice' },
    });
  });

  test('accepts a certificate issued through an intermediate the proxy sends', async () => {
    const intermediate = makeCert({ commonName: 'front-proxy-intermediate', issuer: frontProxyCa, isCa: true });
    const leaf = makeCert({ commonName: 'front-proxy-client', issuer: intermediate });
    expect(await callAuthServer(server, { client: leaf, headers: aliceHeaders })).toMatchObject({
      status: 200,
      user: null,
    });
    expect(
      await callAuthServer(server, { client: leaf, chain: [intermediate.certPem], headers: aliceHeaders }),
    ).toMatchObject({ status: 200, user: { name: 'alice' } });
  });

  test('every request of a kept-alive connection is judged by its certificate', async () => {
    const intermediate = makeCert({ commonName: 'front-proxy-intermediate', issuer: frontProxyCa, isCa: true });
    const leaf = makeCert({ commonName: 'front-proxy-client', issuer: intermediate });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await callAuthServer(server, {
        client: leaf,
        chain: [intermediate.certPem],
        headers: aliceHeaders,
        agent,
      });
      const second = await callAuthServer(server, {
        client: leaf,
        chain: [intermediate.certPem],
        headers: [['X-Remote-User', 'bob']],
        agent,
      });
      expect(second.clientPort).toBe(first.clientPort);
      expect(first.user).toMatchObject({ name: 'alice' });
      expect(second.user).toEqual({ name: 'bob', groups: [] });
    } finally {
      agent.destroy();
    }
  });

  test('a front proxy certificate that expires while its connection stays open is no longer believed', async () => {
    const leaf = makeCert({
      commonName: 'front-proxy-client',
      issuer: frontProxyCa,
      notBefore: new Date(Date.now() - 86_400_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    let now = Date.now();
    const clocked = await startAuthServer(
      new RequestHeaderAuthenticator({
        clientCaPem: frontProxyCa.certPem,
        allowedNames: ['front-proxy-client'],
        ...HEADERS,
        now: () => now,
      }),
      [frontProxyCa.certPem],
    );
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await callAuthServer(clocked, { client: leaf, headers: aliceHeaders, agent });
      expect(first.user).toMatchObject({ name: 'alice' });
      expect((await callAuthServer(clocked, { client: leaf, headers: aliceHeaders, agent })).user).toMatchObject({
        name: 'alice',
      });
      now += 2 * 86_400_000;
      const later = await callAuthServer(clocked, { client: leaf, headers: aliceHeaders, agent });
      expect(later.clientPort).toBe(first.clientPort);
      expect(later.user).toBeNull();
      expect(later.headers?.['x-remote-user']).toBe('alice');
    } finally {
      agent.destroy();
      await clocked.stop();
    }
  });

  test('no user header: no user, even over the right certificate', async () => {
    const reply = await callAuthServer(server, { client: proxyClient, headers: [['X-Remote-Group', 'dev']] });
    expect(reply).toMatchObject({ status: 200, user: null });
  });

  test('extra headers: prefix matched case-insensitively, key lowercased then %-decoded, values kept in order', async () => {
    const reply = await callAuthServer(server, {
      client: proxyClient,
      headers: [
        ['X-Remote-User', 'alice'],
        ['X-Remote-Extra-Authentication.kubernetes.io%2fcredential-Id', 'X509SHA256=abc'],
        ['X-REMOTE-EXTRA-Scopes', 'view'],
        ['X-REMOTE-EXTRA-Scopes', 'edit'],
        ['x-remote-extra-team', 'blue'],
        ['X-Remote-Extra-Bad%zzKey', 'kept'],
      ],
    });
    expect(reply.status).toBe(200);
    expect(reply.user).toEqual({
      name: 'alice',
      groups: [],
      extra: {
        'authentication.kubernetes.io/credential-id': ['X509SHA256=abc'],
        scopes: ['view', 'edit'],
        team: ['blue'],
        'bad%zzkey': ['kept'],
      },
    });
    expect(Object.keys(reply.headers ?? {}).filter((h) => h.startsWith('x-remote-'))).toEqual([]);
  });

  test('the first non-empty username header wins; several header names and prefixes are read', async () => {
    const multi = await startAuthServer(
      new RequestHeaderAuthenticator({
        clientCaPem: frontProxyCa.certPem,
        allowedNames: [],
        usernameHeaders: ['X-User', 'X-Remote-User'],
        uidHeaders: [],
        groupHeaders: ['X-Remote-Group', 'X-Groups'],
        extraHeaderPrefixes: ['X-Remote-Extra-', 'X-Extra-'],
      }),
      [frontProxyCa.certPem],
    );
    try {
      const reply = await callAuthServer(multi, {
        client: proxyClient,
        headers: [
          ['X-User', ''],
          ['X-Remote-User', 'bob'],
          ['X-Remote-Uid', 'not-read'],
          ['X-Groups', 'b'],
          ['X-Remote-Group', 'a'],
          ['X-Extra-Team', 'blue'],
        ],
      });
      expect(reply.user).toEqual({ name: 'bob', groups: ['a', 'b'], extra: { team: ['blue'] } });
      // Unconfigured uid headers are not identity headers here: left in place.
      expect(reply.headers?.['x-remote-uid']).toBe('not-read');
    } finally {
      await multi.stop();
    }
  });

  test('refuses a CA file without certificates', () => {
    expect(() => new RequestHeaderAuthenticator({ clientCaPem: 'nothing', allowedNames: [], ...HEADERS })).toThrow(
      /no PEM certificate/,
    );
  });
});

describe('unescapeExtraKey', () => {
  test('as url.PathUnescape over the lowercased key', () => {
    expect(unescapeExtraKey('Authentication.kubernetes.io%2Fcredential-Id')).toBe(
      'authentication.kubernetes.io/credential-id',
    );
    expect(unescapeExtraKey('a%20b')).toBe('a b');
    expect(unescapeExtraKey('bad%2')).toBe('bad%2');
    expect(unescapeExtraKey('plus+sign')).toBe('plus+sign');
  });
});

describe('delegated authentication flags', () => {
  test("defaults as kube's", () => {
    expect(parseFlags([])).toMatchObject({
      requestheaderAllowedNames: [],
      requestheaderUsernameHeaders: ['X-Remote-User'],
      requestheaderUidHeaders: ['X-Remote-Uid'],
      requestheaderGroupHeaders: ['X-Remote-Group'],
      requestheaderExtraHeadersPrefix: ['X-Remote-Extra-'],
      authenticationTokenWebhookCacheTtlMs: 10_000,
      authorizationWebhookCacheAuthorizedTtlMs: 10_000,
      authorizationWebhookCacheUnauthorizedTtlMs: 10_000,
    });
    const c = parseFlags([]);
    expect(c?.requestheaderClientCaFile).toBeUndefined();
    expect(c?.clientCaFile).toBeUndefined();
    expect(c?.kubeconfig).toBeUndefined();
  });

  test('every flag parses', () => {
    const c = parseFlags([
      '--requestheader-client-ca-file=/etc/front-proxy-ca.crt',
      '--requestheader-allowed-names=front-proxy-client,aggregator',
      '--requestheader-username-headers=X-Remote-User,X-User',
      '--requestheader-uid-headers=X-Remote-Uid',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-,X-Extra-',
      '--client-ca-file=/etc/ca.crt',
      '--kubeconfig=/etc/host.kubeconfig',
      '--authentication-token-webhook-cache-ttl=2m',
      '--authorization-webhook-cache-authorized-ttl=5m',
      '--authorization-webhook-cache-unauthorized-ttl=30s',
    ]);
    expect(c).toMatchObject({
      requestheaderClientCaFile: '/etc/front-proxy-ca.crt',
      requestheaderAllowedNames: ['front-proxy-client', 'aggregator'],
      requestheaderUsernameHeaders: ['X-Remote-User', 'X-User'],
      requestheaderExtraHeadersPrefix: ['X-Remote-Extra-', 'X-Extra-'],
      clientCaFile: '/etc/ca.crt',
      kubeconfig: '/etc/host.kubeconfig',
      authenticationTokenWebhookCacheTtlMs: 120_000,
      authorizationWebhookCacheAuthorizedTtlMs: 300_000,
      authorizationWebhookCacheUnauthorizedTtlMs: 30_000,
    });
    expect(() => parseFlags(['--authentication-token-webhook-cache-ttl=soon'])).toThrow(FlagError);
    for (const flag of [
      '--requestheader-client-ca-file',
      '--requestheader-allowed-names',
      '--client-ca-file',
      '--kubeconfig',
      '--authorization-webhook-cache-unauthorized-ttl',
    ]) {
      expect(helpText()).toContain(flag);
    }
  });
});
