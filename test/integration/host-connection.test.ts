/**
 * How the server connects to its host cluster (src/host/kubeconfigfile.ts, kuberequest.ts, through
 * @kubernetes/client-node) against the stand-in: the kubeconfig fields it honours (files relative to it, a token
 * file read again as it rotates, skipped verification, an http proxy), exec credential plugins and the credentials
 * they rotate, the host's Status carried in errors, and credentials kept out of them; lists a bounded page at a
 * time (resource.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { AddressInfo } from 'node:net';
import { HostCluster, HostClusterError } from '../../src/host/cluster.js';
import { HostRbac } from '../../src/host/rbac.js';
import { PAGE_LIMIT, PAGE_MAX_BYTES } from '../../src/host/resource.js';
import { makeCa, makeCert } from '../support/certs.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { sleep, waitFor } from '../support/wait.js';

let host: HostClusterStandIn;
let dir: string;

beforeAll(async () => {
  host = await startHostCluster();
  dir = mkdtempSync(join(tmpdir(), 'host-connection-'));
});

afterAll(async () => {
  await host?.stop();
  rmSync(dir, { recursive: true, force: true });
});

let files = 0;
/** A kubeconfig file in its own directory with the stand-in as cluster; `cluster` and `user` add or replace fields. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const sub = join(dir, `k${++files}`);
  mkdirSync(sub);
  const path = join(sub, 'kubeconfig');
  writeFileSync(
    path,
    yaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'host', cluster: { server: host.url, ...cluster } }],
      users: [{ name: 'me', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'host', user: 'me' } }],
      'current-context': 'ctx',
    }),
  );
  return path;
}

const servingCa = makeCa('host-connection-test-ca');
const servingPki = makeCert({ commonName: 'host', issuer: servingCa, ips: ['127.0.0.1'] });
const b64 = (pem: string) => Buffer.from(pem).toString('base64');

/**
 * A kubeconfig user's exec plugin: a small script printing an ExecCredential whose status is `status` (a JavaScript
 * expression, evaluated as it runs, `fs` at hand) and has expired already, so the client runs it for each request;
 * each run adds a line to `runs`.
 */
const execPlugin = (status: string, runs = join(dir, 'exec-runs-unused')) => ({
  apiVersion: 'client.authentication.k8s.io/v1',
  command: process.execPath,
  args: [
    '-e',
    `const fs = require('node:fs');
     fs.appendFileSync(${JSON.stringify(runs)}, 'ran\\n');
     const status = { ...(${status}), expirationTimestamp: '2000-01-01T00:00:00Z' };
     console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }));`,
  ],
  interactiveMode: 'Never',
});

const caData = () => ({ 'certificate-authority-data': Buffer.from(host.caPem).toString('base64') });
const review = (cluster: HostCluster) => cluster.tokenReview('nobody-has-this-token');

describe('the --kubeconfig file', () => {
  test('its certificate-authority and tokenFile paths are relative to it', async () => {
    const path = kubeconfig({ 'certificate-authority': 'ca.crt' }, { tokenFile: 'token' });
    writeFileSync(join(path, '..', 'ca.crt'), host.caPem);
    writeFileSync(join(path, '..', 'token'), `${host.token}\n`);
    expect(await review(HostCluster.load({ kubeconfig: path })!)).toMatchObject({ authenticated: false });
  });

  test('a token file is read again after a minute, as it rotates; until then the token read is used', async () => {
    let now = 1_000_000;
    const path = kubeconfig(caData(), { tokenFile: 'token' });
    const tokenFile = join(path, '..', 'token');
    writeFileSync(tokenFile, 'an-old-token');
    const cluster = HostCluster.load({ kubeconfig: path, now: () => now })!;
    await expect(review(cluster)).rejects.toMatchObject({ code: 401 });

    writeFileSync(tokenFile, host.token);
    now += 30_000;
    await expect(review(cluster)).rejects.toMatchObject({ code: 401 });
    now += 31_000;
    expect(await review(cluster)).toMatchObject({ authenticated: false });

    // A file gone for a while keeps the last token read.
    rmSync(tokenFile);
    now += 61_000;
    expect(await review(cluster)).toMatchObject({ authenticated: false });
  });

  test('a file it names must be readable when loaded; a token file gone before its first read fails the request', async () => {
    const missing = kubeconfig(caData(), { tokenFile: 'missing-token' });
    expect(() => HostCluster.load({ kubeconfig: missing })).toThrow(
      `--kubeconfig ${missing}: users[0].user.tokenFile: cannot read ${join(missing, '..', 'missing-token')} (ENOENT)`,
    );
    const noCa = kubeconfig({ 'certificate-authority': '/nonexistent/ca.crt' }, { token: 't' });
    expect(() => HostCluster.load({ kubeconfig: noCa })).toThrow(
      `--kubeconfig ${noCa}: clusters[0].cluster.certificate-authority: cannot read /nonexistent/ca.crt (ENOENT)`,
    );

    // As kubectl: a file and data for the same thing are one too many.
    const both = kubeconfig({ ...caData(), 'certificate-authority': noCa }, { token: 't' });
    expect(() => HostCluster.load({ kubeconfig: both })).toThrow(
      `--kubeconfig ${both}: clusters[0].cluster has both certificate-authority and certificate-authority-data: give one`,
    );

    const path = kubeconfig(caData(), { tokenFile: 'token' });
    writeFileSync(join(path, '..', 'token'), host.token);
    const cluster = HostCluster.load({ kubeconfig: path })!;
    rmSync(join(path, '..', 'token'));
    const err = await review(cluster).catch((e) => e);
    expect(err).toBeInstanceOf(HostClusterError);
    expect(err.message).toBe(`TokenReview: cannot read the token file ${join(path, '..', 'token')} (ENOENT)`);
  });

  test('insecure-skip-tls-verify connects without a CA; without either the certificate is refused', async () => {
    const skip = HostCluster.load({
      kubeconfig: kubeconfig({ 'insecure-skip-tls-verify': true }, { token: host.token }),
    })!;
    expect(await review(skip)).toMatchObject({ authenticated: false });
    const strict = HostCluster.load({ kubeconfig: kubeconfig({}, { token: host.token }) })!;
    await expect(review(strict)).rejects.toThrow(/^TokenReview: cannot reach the host cluster: [A-Z_]+$/);
  });

  test('an http:// server (kubectl proxy, say) is asked over plain HTTP, its token sent, as client-go does', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const plain = createHttpServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ major: '1', minor: '33', gitVersion: 'v1.33.0' }));
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
      const client = HostCluster.load({ kubeconfig: kubeconfig({ server: url }, { token: 'proxy-token' }) })!;
      expect(await client.request('reading the version', 'GET', '/version')).toMatchObject({ gitVersion: 'v1.33.0' });
      expect(seen[0].authorization).toBe('Bearer proxy-token');
    } finally {
      await new Promise((r) => plain.close(r));
    }
  });

  test('an exec credential plugin gives the token, run again when its credential expires (rotation without restart)', async () => {
    // As `aws eks get-token`: a command printing an ExecCredential. This one's token is what the file says now,
    // and it expires at once, so the client runs the plugin for each request.
    const tokenFile = join(dir, 'exec-token');
    const runs = join(dir, 'exec-runs');
    writeFileSync(tokenFile, 'an-old-token');
    const path = kubeconfig(caData(), {
      exec: execPlugin(`{ token: fs.readFileSync(${JSON.stringify(tokenFile)}, 'utf8') }`, runs),
    });
    const cluster = HostCluster.load({ kubeconfig: path })!;
    await expect(review(cluster)).rejects.toMatchObject({ code: 401 });
    writeFileSync(tokenFile, host.token);
    expect(await review(cluster)).toMatchObject({ authenticated: false });
    expect(readFileSync(runs, 'utf8')).toBe('ran\nran\n');
  });

  test('a credential plugin that fails, or does not answer in time, fails the request without quoting its output', async () => {
    const failing = kubeconfig(caData(), {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: '/bin/sh',
        args: ['-c', 'echo \'{"status":{"token":"printed-secret"}}\'; echo "login expired, run login" >&2; exit 1'],
      },
    });
    const err = await review(HostCluster.load({ kubeconfig: failing })!).catch((e) => e);
    expect(err).toBeInstanceOf(HostClusterError);
    expect(err.message).toBe('TokenReview: cannot get the credentials of the kubeconfig: login expired, run login');
    const hanging = kubeconfig(caData(), {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', 'exec sleep 2'] },
    });
    await expect(review(HostCluster.load({ kubeconfig: hanging, timeoutMs: 300 })!)).rejects.toThrow(
      'TokenReview: the host cluster did not answer within 300ms',
    );
  });

  test('a kubeconfig that does not parse is refused without quoting it', () => {
    const path = join(dir, 'broken.kubeconfig');
    writeFileSync(path, `users:\n- name: me\n  user:\n    token: the-secret-token\n   bad: [indent\n`);
    let message = '';
    try {
      HostCluster.load({ kubeconfig: path });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(new RegExp(`^--kubeconfig ${path}: not a kubeconfig: `));
    expect(message).not.toContain('the-secret-token');
    const noContext = kubeconfig(caData(), { token: 't' });
    writeFileSync(noContext, yaml.dump({ ...(yaml.load(`clusters: []`) as object), 'current-context': 'none' }));
    expect(() => HostCluster.load({ kubeconfig: noContext })).toThrow(
      `--kubeconfig ${noContext}: no current context with a cluster`,
    );
  });

  test('proxy-url: requests to an https server go through the proxy with CONNECT', async () => {
    const connects: string[] = [];
    const proxy: Server = createServer((client: Socket) => {
      client.once('data', (head) => {
        const [line] = head.toString('latin1').split('\r\n');
        connects.push(line);
        const [, target] = line.split(' ');
        const [h, p] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
        const upstream = connect(p, h, () => {
          client.write('HTTP/1.1 200 Connection established\r\n\r\n');
          upstream.pipe(client).pipe(upstream);
        });
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const cluster = HostCluster.load({
        kubeconfig: kubeconfig({ ...caData(), 'proxy-url': proxyUrl }, { token: host.token }),
      })!;
      expect(await review(cluster)).toMatchObject({ authenticated: false });
      expect(connects).toEqual([`CONNECT ${new URL(host.url).host} HTTP/1.1`]);
    } finally {
      proxy.close();
    }
  });
});

describe('requests and watches', () => {
  test('an answer whose body does not come in time is a timeout too; one cut short is an error', async () => {
    let cut = false;
    const stalling = createHttpsServer({ cert: servingPki.certPem, key: servingPki.keyPem }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":', () => cut && req.socket.destroy());
    });
    await new Promise<void>((r) => stalling.listen(0, '127.0.0.1', r));
    try {
      const server = `https://127.0.0.1:${(stalling.address() as AddressInfo).port}`;
      const slow = HostCluster.load({
        kubeconfig: kubeconfig({ server, 'certificate-authority-data': b64(servingCa.certPem) }, { token: 't' }),
        timeoutMs: 300,
      })!;
      const started = Date.now();
      await expect(review(slow)).rejects.toThrow('TokenReview: the host cluster did not answer within 300ms');
      expect(Date.now() - started).toBeLessThan(3000);
      cut = true;
      await expect(review(slow)).rejects.toThrow('TokenReview: cannot reach the host cluster: ECONNRESET');
    } finally {
      stalling.closeAllConnections();
      stalling.close();
    }
  });

  test('a watch delivers events until stopped, and ends with an error when the host goes', async () => {
    const rbac = new HostRbac(HostCluster.load({ kubeconfig: host.kubeconfigPath })!);
    const { resourceVersion } = await rbac.list('ClusterRole', 'watched=yes');
    const events: string[] = [];
    let ended: unknown = 'open';
    const watch = await rbac.watch(
      'ClusterRole',
      'watched=yes',
      resourceVersion,
      (type, obj) => events.push(`${type} ${obj.kind} ${obj.metadata.name}`),
      (err) => (ended = err),
    );
    host.put({ kind: 'ClusterRole', metadata: { name: 'w', labels: { watched: 'yes' } }, rules: [] });
    host.put({ kind: 'ClusterRole', metadata: { name: 'other', labels: { watched: 'no' } }, rules: [] });
    await waitFor('the ADDED event', () => events.length >= 1);
    expect(events).toEqual(['ADDED ClusterRole w']);
    watch.stop();
    host.put({ kind: 'ClusterRole', metadata: { name: 'w2', labels: { watched: 'yes' } }, rules: [] });
    await sleep(100);
    expect(events).toHaveLength(1);
    expect(ended).toBe('open');

    const again = await rbac.watch(
      'ClusterRole',
      'watched=yes',
      resourceVersion,
      () => {},
      (err) => (ended = err),
    );
    try {
      await host.setDown(true, 'refused');
      await waitFor('the watch to end', () => ended !== 'open');
      // The stand-in cuts its connections: the watch ends, and the controller lists and watches again.
      expect(ended === undefined || ended instanceof HostClusterError).toBe(true);
    } finally {
      again.stop();
      await host.setDown(false);
    }
  });

  test('a list a page at a time: every object once, pages of at most PAGE_MAX_BYTES but for one object alone, smaller after a page too large and growing back', async () => {
    const role = (name: string, resourceNames: string[]) =>
      host.put({
        kind: 'ClusterRole',
        metadata: { name, labels: { paged: 'yes' } },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames }],
      });
    const names = (bytes: number) =>
      Array.from({ length: Math.ceil(bytes / 40) }, (_, i) => `configmap-${String(i).padStart(27, '0')}`);
    // Listed in order of name: one object larger than a page may be, five of 1.2 MiB, then 1,100 small ones.
    const put = [
      role('a-huge', names(5 * 2 ** 20)),
      ...Array.from({ length: 5 }, (_, i) => role(`b-large-${i}`, names(1.2 * 2 ** 20))),
      ...Array.from({ length: 1100 }, (_, i) => role(`c-small-${String(i).padStart(4, '0')}`, ['x'])),
    ];
    const rbac = new HostRbac(HostCluster.load({ kubeconfig: host.kubeconfigPath })!);
    try {
      host.resetCounts();
      const seen: string[] = [];
      for await (const page of rbac.pages('ClusterRole', 'paged=yes')) {
        if (page.items.length > 1)
          expect(Buffer.byteLength(JSON.stringify(page.items))).toBeLessThanOrEqual(PAGE_MAX_BYTES);
        seen.push(...page.items.map((o) => o.metadata.name));
      }
      expect(seen).toEqual(put.map((o) => o.metadata.name));
      const limits = host.requests
        .filter((r) => r.resource === 'clusterroles')
        .map((r) => Number(new URLSearchParams(r.query).get('limit')));
      // Halved down to the huge object alone, then twice as many each page that fits, until pages are whole again.
      const halved = [PAGE_LIMIT, 250, 125, 62, 31, 15, 7, 3];
      const grown = [2, 4, 8, 16, 32, 64, 128, 256];
      expect(limits).toEqual([...halved, 1, ...grown, PAGE_LIMIT, PAGE_LIMIT]);
    } finally {
      for (const o of put) host.remove('clusterroles', '', o.metadata.name);
    }
  });

  test('a watch the host refuses ends at once with its Status', async () => {
    const stranger = HostCluster.load({ kubeconfig: kubeconfig(caData(), { token: 'not-the-token' }) })!;
    let ended: unknown = 'open';
    await new HostRbac(stranger).watch(
      'Role',
      '',
      '',
      () => {},
      (err) => (ended = err),
    );
    await waitFor('the watch to end', () => ended !== 'open');
    expect(ended).toBeInstanceOf(HostClusterError);
    expect(ended).toMatchObject({ code: 401, status: { reason: 'Unauthorized' } });
  });
});

describe('client certificates', () => {
  const ca = makeCa('client-cert-test-ca');
  let url: string;
  let server: ReturnType<typeof createHttpsServer>;

  // A host that knows callers by their client certificate: its TokenReview answers with the certificate's CN, and
  // shows what else the request said of who is asking (the Authorization scheme, the Impersonate-* headers).
  let seen: IncomingHttpHeaders = {};
  beforeAll(async () => {
    const serving = makeCert({ commonName: 'host', issuer: ca, ips: ['127.0.0.1'] });
    server = createHttpsServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const cn = (req.socket as TLSSocket).getPeerCertificate().subject.CN;
        seen = req.headers;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ status: { authenticated: true, user: { username: cn, groups: [] } } }));
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const who = async (cluster: HostCluster) => (await cluster.tokenReview('t')).user?.name;

  test('client-certificate-data and client-key-data are presented', async () => {
    const alice = makeCert({ commonName: 'alice', issuer: ca });
    const path = kubeconfig(
      { server: url, 'certificate-authority-data': b64(ca.certPem) },
      { 'client-certificate-data': b64(alice.certPem), 'client-key-data': b64(alice.keyPem) },
    );
    expect(await who(HostCluster.load({ kubeconfig: path })!)).toBe('alice');
  });

  test('basic credentials and impersonation (as, as-uid, as-groups, as-user-extra) are sent as kubectl sends them', async () => {
    const bob = makeCert({ commonName: 'bob', issuer: ca });
    const path = kubeconfig(
      { server: url, 'certificate-authority-data': b64(ca.certPem) },
      {
        'client-certificate-data': b64(bob.certPem),
        'client-key-data': b64(bob.keyPem),
        username: 'admin',
        password: 'pw',
        as: 'carol',
        'as-uid': 'carol-uid',
        'as-groups': ['dev', 'ops'],
        'as-user-extra': { 'example.com/team': ['blue'] },
      },
    );
    expect(await who(HostCluster.load({ kubeconfig: path })!)).toBe('bob');
    expect(seen).toMatchObject({
      authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}`,
      'impersonate-user': 'carol',
      'impersonate-uid': 'carol-uid',
      'impersonate-group': 'dev, ops',
      'impersonate-extra-example.com%2fteam': 'blue',
    });
  });

  test('client-certificate and client-key files are read for each request: a rotated certificate is used at once', async () => {
    const path = kubeconfig(
      { server: url, 'certificate-authority': 'ca.crt' },
      { 'client-certificate': 'tls.crt', 'client-key': 'tls.key' },
    );
    const write = (cert: { certPem: string; keyPem: string }) => {
      writeFileSync(join(path, '..', 'tls.crt'), cert.certPem);
      writeFileSync(join(path, '..', 'tls.key'), cert.keyPem);
    };
    writeFileSync(join(path, '..', 'ca.crt'), ca.certPem);
    write(makeCert({ commonName: 'first', issuer: ca }));
    const cluster = HostCluster.load({ kubeconfig: path })!;
    expect(await who(cluster)).toBe('first');
    write(makeCert({ commonName: 'second', issuer: ca }));
    expect(await who(cluster)).toBe('second');
  });

  test('an exec credential plugin may give a client certificate, rotated as the plugin gives a new one', async () => {
    const certFile = join(dir, 'exec-cert.json');
    const issue = (commonName: string) => {
      const cert = makeCert({ commonName, issuer: ca });
      writeFileSync(certFile, JSON.stringify({ clientCertificateData: cert.certPem, clientKeyData: cert.keyPem }));
    };
    issue('dave');
    const path = kubeconfig(
      { server: url, 'certificate-authority-data': b64(ca.certPem) },
      { exec: execPlugin(`JSON.parse(fs.readFileSync(${JSON.stringify(certFile)}, 'utf8'))`) },
    );
    const cluster = HostCluster.load({ kubeconfig: path })!;
    expect(await who(cluster)).toBe('dave');
    issue('erin');
    expect(await who(cluster)).toBe('erin');
  });
});

describe('errors', () => {
  test("the host's Status is carried, its message in the error's", async () => {
    const cluster = HostCluster.load({ kubeconfig: host.kubeconfigPath })!;
    const rbac = new HostRbac(cluster);
    host.put({ kind: 'ClusterRole', metadata: { name: 'exists' }, rules: [] });
    const err = await rbac
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'exists', labels: {}, annotations: {} },
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(HostClusterError);
    expect(err.code).toBe(409);
    expect(err.status).toMatchObject({ kind: 'Status', reason: 'AlreadyExists', code: 409 });
    expect(err.message).toBe(
      'create clusterroles exists: the host cluster answered HTTP 409: clusterroles.rbac.authorization.k8s.io "exists" already exists',
    );
    expect(await rbac.get('ClusterRole', undefined, 'missing')).toBeUndefined();
  });

  test('never carry the token, wherever the request fails', async () => {
    const token = 'very-secret-token-value';
    const wrong = HostCluster.load({ kubeconfig: kubeconfig(caData(), { token }) })!;
    const rejected = await review(wrong).catch((e) => e);
    expect(rejected).toMatchObject({ code: 401 });
    // A token that cannot be a header value fails in Node before anything is sent.
    const bad = HostCluster.load({ kubeconfig: kubeconfig(caData(), { token: `${token}\nInjected: yes` }) })!;
    const invalid = await review(bad).catch((e) => e);
    expect(invalid).toBeInstanceOf(HostClusterError);
    const down = HostCluster.load({ kubeconfig: kubeconfig(caData(), { token }) })!;
    await host.setDown(true, 'refused');
    let refused: unknown;
    try {
      refused = await review(down).catch((e) => e);
    } finally {
      await host.setDown(false);
    }
    for (const err of [rejected, invalid, refused]) {
      expect(err).toBeInstanceOf(HostClusterError);
      expect(`${(err as Error).message} ${(err as Error).stack} ${JSON.stringify(err)}`).not.toContain(token);
    }
  });
});
