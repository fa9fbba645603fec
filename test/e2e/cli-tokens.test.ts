/**
 * The command line client's keys and tokens (issue 44) as a user runs them: the built `dist/cli.js` as a child
 * process against a real server on real etcd. `create accesskey` prints the key once, alone on stdout, and it
 * works; `list accesskeys` shows when keys expire and never a key; `token --cluster` is a JWT for that cluster,
 * and an ExecCredential for kubectl; `kubeconfig cluster` writes a kubeconfig with which the real kubectl runs
 * `platform token` itself against a stand-in connected cluster that checks the token with this server's JWKS (as
 * kube-apiserver's JWT authenticator does: test/support/kubejwt.ts). No key or token on stderr, with --v 6 too.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import yaml from 'js-yaml';
import { API_VERSION, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { loadJwtAuthenticator } from '../support/kubejwt.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { CLI, runCli } from '../support/cli.js';

const AUDIENCE = 'management.platform.sh/direct-cluster-endpoint';
const EXEC_V1 = 'client.authentication.k8s.io/v1';
const EXEC_V1BETA1 = 'client.authentication.k8s.io/v1beta1';

let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let dir: string;
let caFile: string;
/** A HOME logged in as alice with a full key, and one with a platformCLI-scoped key. */
let alice: string;
let aliceCli: string;
let aliceKey: string;
/** The name of alice's login key. */
const aliceKeyName = uniq('login');

/** `platform <args>` with HOME (and so the login file) in `home`, `env` added. */
function platform(args: string[], opts: { home?: string; env?: Record<string, string> } = {}) {
  return runCli(args, { HOME: opts.home ?? join(dir, 'nobody'), ...opts.env });
}

async function createKey(client: HttpClient, spec: Record<string, unknown>, name = uniq('login')): Promise<string> {
  const res = await client.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec,
  });
  expect(res.status).toBe(201);
  return res.body.spec.key;
}

/** A fresh HOME logged in with `key`. */
async function loggedIn(key: string): Promise<string> {
  const home = mkdtempSync(join(dir, 'home-'));
  const res = await platform(['login', ts.server.url, '--access-key', key, '--certificate-authority', caFile], {
    home,
  });
  expect(res).toMatchObject({ code: 0, stderr: '' });
  return home;
}

/** The names of alice's keys, as the server has them. */
async function keyNames(): Promise<string[]> {
  const res = await ts.as.alice.get(`${GROUP_PATH}/ownedaccesskeys`);
  expect(res.status).toBe(200);
  return res.body.items.map((k: { metadata: { name: string } }) => k.metadata.name).sort();
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [] });
  dir = mkdtempSync(join(tmpdir(), 'cli-tokens-'));
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ts.server.caPem!);
  aliceKey = await createKey(ts.as.alice, {}, aliceKeyName);
  alice = await loggedIn(aliceKey);
  aliceCli = await loggedIn(await createKey(ts.as.alice, { scope: { roles: [{ role: 'platformCLI' }] } }));
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** What the server says of a key alice's login (an access key) makes. */
const madeWithWarning = (name: string) =>
  `Warning: access key "${name}" is made with access key "${aliceKeyName}" and works only as long as the value of it this request used does: once "${aliceKeyName}" is deleted, disabled or expires, or that value is rotated past its grace, both are refused (status.issuedWith)`;

describe('create accesskey', () => {
  test('prints the key alone on stdout, once; the name and the warning on stderr; the key authenticates', async () => {
    const res = await platform(['create', 'accesskey'], { home: alice });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^pak_[A-Za-z0-9_-]{43}$/);
    const key = res.stdout;
    // The server's Warnings come first, as the client prints them when the answer arrives.
    const [made, created, end] = res.stderr.split('\n');
    const name = /^ownedaccesskey\/(cli-\w+) created\. Warning: the key is shown only this once; keep it now$/.exec(
      created,
    )?.[1];
    expect(name).toBeDefined();
    // The login is an access key: the new key is made with it, and the server's Warning says what that means.
    expect({ made, end }).toEqual({ made: madeWithWarning(name!), end: '' });
    const as = await ts.client(key).get(`${GROUP_PATH}/ownedaccesskeys/${name}`);
    expect(as.status).toBe(200);
    expect(as.body.spec).toMatchObject({ user: 'alice' });
    // The server never answers it again; neither does list.
    expect(JSON.stringify(as.body)).not.toContain(key);
    const list = await platform(['list', 'accesskeys', '-o', 'json'], { home: alice });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(name);
    expect(list.stdout).not.toContain(key);
  });

  test('a name, a ttl and a scope; -o json prints the whole answer, key included', async () => {
    const name = uniq('ci');
    const res = await platform(
      [
        'create',
        'accesskey',
        name,
        '--ttl',
        '600',
        '--scope-cluster',
        'eu-1',
        '--scope-cluster',
        'us-1',
        '--scope-project',
        'web',
        '--platform-cli',
        '-o',
        'json',
      ],
      { home: alice },
    );
    expect(res).toMatchObject({ code: 0, stderr: `${madeWithWarning(name)}\n` });
    const answer = JSON.parse(res.stdout);
    expect(answer).toMatchObject({
      kind: 'OwnedAccessKey',
      metadata: { name },
      spec: {
        key: expect.stringMatching(/^pak_/),
        ttl: 600,
        scope: {
          clusters: [{ cluster: 'eu-1' }, { cluster: 'us-1' }],
          projects: [{ project: 'web' }],
          roles: [{ role: 'platformCLI' }],
        },
      },
      status: { expirationTimestamp: expect.any(String) },
    });
  });

  test('with a platformCLI key: the server refuses (403) in one clear line, exit 1, nothing created', async () => {
    const before = await keyNames();
    const res = await platform(['create', 'accesskey'], { home: aliceCli });
    expect(res).toMatchObject({ code: 1, stdout: '' });
    expect(res.stderr).toMatch(
      /^error: ownedaccesskeys\.management\.platform\.sh is forbidden: User "alice" cannot create .*: the access key's scope does not allow this request\n$/,
    );
    expect(await keyNames()).toEqual(before);
  });

  test('bad input: a ttl that is not a number (exit 2), a name the server refuses (422, exit 1); nothing created', async () => {
    const before = await keyNames();
    const ttl = await platform(['create', 'accesskey', '--ttl', 'ten'], { home: alice });
    expect(ttl).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --ttl "ten" is not a number of seconds, e.g. --ttl 3600\n',
    });
    const format = await platform(['create', 'accesskey', '-o', 'table'], { home: alice });
    expect(format).toMatchObject({ code: 2, stdout: '' });
    expect(format.stderr).toContain('-o table is not a format here; use one of json, yaml');
    const bad = await platform(['create', 'accesskey', 'Not_A_Name'], { home: alice });
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toMatch(/^error: OwnedAccessKey.* "Not_A_Name" is invalid: metadata\.name: Invalid value.*\n$/);
    expect(await keyNames()).toEqual(before);
  });

  test('--v 6 tells the request, never the key', async () => {
    const res = await platform(['--v', '6', 'create', 'accesskey'], { home: alice });
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`POST ${ts.server.url}/apis/management.platform.sh/v1/ownedaccesskeys OK in `);
    expect(res.stderr).not.toContain(res.stdout);
  });
});

describe('list accesskeys', () => {
  test('a table with when each key expires, whose it is, and no key', async () => {
    const withTtl = uniq('ttl');
    const forever = uniq('forever');
    const a = await platform(['create', 'accesskey', withTtl, '--ttl', '600'], { home: alice });
    const b = await platform(['create', 'accesskey', forever], { home: alice });
    expect([a.code, b.code]).toEqual([0, 0]);
    const res = await platform(['list', 'accesskeys'], { home: alice });
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const [header, ...lines] = res.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^NAME\s+USER\/TEAM\s+EXPIRES\s+DISABLED\s+LAST ACTIVITY\s+AGE$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))?.split(/\s+/);
    // kubectl's EXPIRES: the time left (10m, 9m59s, ...) for a ttl of 600 seconds; none without a ttl.
    expect(row(withTtl)).toEqual([
      withTtl,
      'alice',
      expect.stringMatching(/^(10m|9m\d*s?)$/),
      'false',
      '<never>',
      expect.any(String),
    ]);
    expect(row(forever)).toEqual([forever, 'alice', '<none>', 'false', '<never>', expect.any(String)]);
    for (const key of [a.stdout, b.stdout]) expect(res.stdout).not.toContain(key);
  });

  test('-o yaml: the keys as the server has them, without spec.key', async () => {
    const res = await platform(['list', 'accesskeys', '-o', 'yaml'], { home: alice });
    expect(res.code).toBe(0);
    const items = yaml.load(res.stdout) as Array<{ kind: string; spec: Record<string, unknown> }>;
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(item.spec).not.toHaveProperty('key');
  });
});

describe('token', () => {
  test('a JWT of the caller whose scope names the cluster alone, with the ttl asked', async () => {
    const res = await platform(['token', '--cluster', 'eu-1', '--ttl', '600'], { home: alice });
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const claims = decodeJwt(res.stdout);
    expect(claims).toMatchObject({ sub: 'alice', aud: [AUDIENCE], scope: { clusters: [{ cluster: 'eu-1' }] } });
    expect(claims.exp! - claims.iat!).toBe(600);
  });

  test('an ExecCredential with --exec-credential, and in the version kubectl asks for in KUBERNETES_EXEC_INFO', async () => {
    const flag = await platform(['token', '--cluster', 'eu-1', '--exec-credential'], { home: alice });
    expect(flag).toMatchObject({ code: 0, stderr: '' });
    const credential = JSON.parse(flag.stdout);
    expect(credential).toEqual({
      apiVersion: EXEC_V1,
      kind: 'ExecCredential',
      status: { token: expect.any(String), expirationTimestamp: expect.any(String) },
    });
    // kubectl keeps it until then: the token's own expiry.
    expect(Date.parse(credential.status.expirationTimestamp) / 1000).toBe(decodeJwt(credential.status.token).exp);

    const info = (apiVersion: string) =>
      JSON.stringify({ kind: 'ExecCredential', apiVersion, spec: { interactive: false } });
    const beta = await platform(['token', '--cluster', 'eu-1'], {
      home: alice,
      env: { KUBERNETES_EXEC_INFO: info(EXEC_V1BETA1) },
    });
    expect(beta.code).toBe(0);
    expect(JSON.parse(beta.stdout)).toMatchObject({ apiVersion: EXEC_V1BETA1, kind: 'ExecCredential' });
    const alpha = await platform(['token', '--cluster', 'eu-1'], {
      home: alice,
      env: { KUBERNETES_EXEC_INFO: info('client.authentication.k8s.io/v1alpha1') },
    });
    expect(alpha).toMatchObject({ code: 1, stdout: '' });
    expect(alpha.stderr).toContain(
      'kubectl asks for an ExecCredential of "client.authentication.k8s.io/v1alpha1"; this command answers client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1',
    );
  });

  test('bad input: no --cluster, a ttl that is not a number (exit 2); a scoped key is refused (exit 1)', async () => {
    const missing = await platform(['token'], { home: alice });
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toContain("required option '--cluster <cluster>' not specified");
    const ttl = await platform(['token', '--cluster', 'eu-1', '--ttl', '1h'], { home: alice });
    expect(ttl).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'error: --ttl "1h" is not a number of seconds, e.g. --ttl 3600\n',
    });
    const scoped = await platform(['token', '--cluster', 'eu-1'], { home: aliceCli });
    expect(scoped).toMatchObject({ code: 1, stdout: '' });
    expect(scoped.stderr).toMatch(
      /^error: directclusterendpointtokens\.management\.platform\.sh is forbidden: .*: the access key's scope does not allow this request\n$/,
    );
  });

  test('--v 6 tells the request, never the token', async () => {
    const res = await platform(['--v', '6', 'token', '--cluster', 'eu-1'], { home: alice });
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`POST ${ts.server.url}/apis/management.platform.sh/v1/directclusterendpointtokens OK`);
    expect(res.stderr).not.toContain(res.stdout);
  });
});

describe('kubeconfig cluster: the real kubectl runs `platform token` as its exec plugin', () => {
  let cluster: HostClusterStandIn;
  let clusterCa: string;

  beforeAll(async () => {
    // A connected cluster "eu-1" that takes this server's tokens as kube-apiserver's JWT authenticator does:
    // discovery and keys from the server, only tokens for its audience whose scope names it.
    const authenticator = await loadJwtAuthenticator({
      issuer: { url: ts.server.url, certificateAuthority: ts.server.caPem!, audiences: [AUDIENCE] },
      claimMappings: { username: { claim: 'sub', prefix: '' } },
      claimValidationRules: [
        { expression: "claims.scope.clusters.exists(c, c.cluster == 'eu-1')", message: 'not a token for eu-1' },
      ],
    });
    cluster = await startHostCluster({
      authenticateBearer: async (token) => {
        const result = await authenticator.authenticate(token);
        return 'user' in result ? result.user.username : undefined;
      },
    });
    clusterCa = join(dir, 'eu-1-ca.pem');
    writeFileSync(clusterCa, cluster.caPem);
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  async function writtenKubeconfig(): Promise<string> {
    const file = join(mkdtempSync(join(dir, 'kc-')), 'eu-1.kubeconfig');
    const res = await platform(
      [
        'kubeconfig',
        'cluster',
        'eu-1',
        '--server',
        cluster.url,
        '--certificate-authority',
        clusterCa,
        '--output-file',
        file,
      ],
      { home: alice },
    );
    expect(res).toEqual({ code: 0, stdout: `Wrote the kubeconfig of cluster eu-1 to ${file}\n`, stderr: '' });
    return file;
  }

  test('kubectl gets a token from the plugin and the cluster sees the user it names', async () => {
    const file = await writtenKubeconfig();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const doc = yaml.load(readFileSync(file, 'utf8')) as any;
    expect(doc.users[0].user.exec).toMatchObject({
      apiVersion: EXEC_V1,
      command: expect.stringMatching(/^\//),
      args: [CLI, 'token', '--cluster', 'eu-1', '--exec-credential'],
      env: [{ name: 'PLATFORM_CONFIG', value: join(alice, '.config', 'platform', 'config.json') }],
      interactiveMode: 'Never',
    });
    // No credential in the file: kubectl asks the plugin for each.
    expect(JSON.stringify(doc)).not.toMatch(/token:|pak_/);

    cluster.resetCounts();
    const res = await kubectl(['get', '--raw', '/api/v1/namespaces/default'], { kubeconfig: file });
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(res.stdout)).toMatchObject({ kind: 'Namespace', metadata: { name: 'default' } });
    expect(cluster.requests).toEqual([expect.objectContaining({ path: '/api/v1/namespaces/default', user: 'alice' })]);
  });

  test('logged in with --kubeconfig and --context: the plugin is given them, and kubectl works', async () => {
    const platformConfig = join(dir, 'platform.kubeconfig');
    writeFileSync(
      platformConfig,
      yaml.dump({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'p', cluster: { server: ts.server.url, 'certificate-authority': caFile } }],
        users: [{ name: 'alice', user: { token: aliceKey } }],
        contexts: [{ name: 'alice', context: { cluster: 'p', user: 'alice' } }],
        'current-context': 'alice',
      }),
    );
    const file = join(mkdtempSync(join(dir, 'kc-')), 'eu-1.kubeconfig');
    const flags = ['--kubeconfig', platformConfig, '--context', 'alice'];
    const res = await platform([
      ...flags,
      'kubeconfig',
      'cluster',
      'eu-1',
      '--server',
      cluster.url,
      '--output-file',
      file,
    ]);
    expect(res.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect((yaml.load(text) as any).users[0].user.exec.args).toEqual([
      CLI,
      ...flags,
      'token',
      '--cluster',
      'eu-1',
      '--exec-credential',
    ]);
    // The file names where the key is, never the key.
    expect(text).not.toContain(aliceKey);
    // The cluster's CA was not given: kubectl is told to trust it here.
    cluster.resetCounts();
    const got = await kubectl(['get', '--raw', '/api/v1/namespaces/default', '--certificate-authority', clusterCa], {
      kubeconfig: file,
    });
    expect({ code: got.code, stderr: got.stderr }).toEqual({ code: 0, stderr: '' });
    expect(cluster.requests.map((r) => r.user)).toEqual(['alice']);
  });

  test('a kubeconfig asking for v1beta1 gets v1beta1: kubectl takes the answer', async () => {
    const file = await writtenKubeconfig();
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(`apiVersion: ${EXEC_V1}\n`, `apiVersion: ${EXEC_V1BETA1}\n`),
    );
    expect(readFileSync(file, 'utf8')).toContain(EXEC_V1BETA1);
    cluster.resetCounts();
    const res = await kubectl(['get', '--raw', '/api/v1/namespaces/default'], { kubeconfig: file });
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
    expect(cluster.requests.map((r) => r.user)).toEqual(['alice']);
  });

  test('the cluster refuses a token for another cluster: the plugin is what makes it right', async () => {
    const other = await platform(['token', '--cluster', 'us-1'], { home: alice });
    expect(other.code).toBe(0);
    const file = join(dir, 'us-1-token.kubeconfig');
    writeFileSync(
      file,
      yaml.dump({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'eu-1', cluster: { server: cluster.url, 'certificate-authority': clusterCa } }],
        users: [{ name: 'us-1', user: { token: other.stdout } }],
        contexts: [{ name: 'eu-1', context: { cluster: 'eu-1', user: 'us-1' } }],
        'current-context': 'eu-1',
      }),
    );
    const res = await kubectl(['get', '--raw', '/api/v1/namespaces/default'], { kubeconfig: file });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('Unauthorized');
  });

  test('without --output-file it prints the kubeconfig; bad input is exit 2 and writes nothing', async () => {
    const printed = await platform(['kubeconfig', 'cluster', 'eu-1', '--server', cluster.url], { home: alice });
    expect(printed).toMatchObject({ code: 0, stderr: '' });
    expect(yaml.load(printed.stdout)).toMatchObject({
      kind: 'Config',
      'current-context': 'eu-1',
      clusters: [{ name: 'eu-1', cluster: { server: cluster.url } }],
    });
    // A CI job's key in the environment stays there: the kubeconfig names the server, kubectl's environment the key.
    const ci = await platform(['kubeconfig', 'cluster', 'eu-1', '--server', cluster.url], {
      env: { PLATFORM_URL: ts.server.url, PLATFORM_ACCESS_KEY: aliceKey },
    });
    expect(ci).toMatchObject({
      code: 0,
      stderr: 'Note: the kubeconfig reads the key from PLATFORM_ACCESS_KEY: set it wherever kubectl runs\n',
    });
    expect((yaml.load(ci.stdout) as any).users[0].user.exec.env).toEqual([
      { name: 'PLATFORM_URL', value: ts.server.url },
    ]);
    expect(ci.stdout).not.toContain(aliceKey);
    const noServer = await platform(['kubeconfig', 'cluster', 'eu-1'], { home: alice });
    expect(noServer).toMatchObject({ code: 2, stdout: '' });
    expect(noServer.stderr).toContain("required option '--server <url>' not specified");
    const http = await platform(['kubeconfig', 'cluster', 'eu-1', '--server', 'http://eu-1:6443'], { home: alice });
    expect(http).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'error: --server must start with https:// (got http:)\n',
    });
    const loggedOut = await platform(['kubeconfig', 'cluster', 'eu-1', '--server', cluster.url]);
    expect(loggedOut).toMatchObject({ code: 1, stdout: '' });
    expect(loggedOut.stderr).toContain('not logged in');
  });
});
