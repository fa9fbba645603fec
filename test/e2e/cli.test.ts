/**
 * The command line client (issue 44) as a user runs it: the built `dist/cli.js` as a child process, against a real
 * server on real etcd. Login with a key and with a kubeconfig, the environment of a CI job, Global Secrets with a
 * full key and with a platformCLI-scoped one, and what a user needs when something is wrong: the exit code (1 for
 * errors, 2 for usage) and one line saying what to do, never the key.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';
import { runCli } from '../support/cli.js';
import { Etcd3 } from 'etcd3';

let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let dir: string;
let caFile: string;
let aliceKey: string;
let cliKey: string;

/** `platform <args>` with HOME (and so the login file) in `home`, `env` added, `input` on stdin. */
function platform(args: string[], opts: { home?: string; env?: Record<string, string>; input?: string } = {}) {
  return runCli(args, { HOME: opts.home ?? join(dir, 'nobody'), ...opts.env }, opts.input);
}

async function createKey(client: HttpClient, spec: Record<string, unknown>): Promise<string> {
  const res = await client.post(`${GROUP_PATH}/ownedaccesskeys`, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name: uniq('cli') },
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

/** Rewrites a key's creationTimestamp in etcd (a key made long ago) and waits until the server reads it so. */
async function rewriteCreation(name: string, at: number): Promise<void> {
  const etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  try {
    const path = `${ts.config.etcdPrefix}/management.platform.sh/ownedaccesskeys/${name}`;
    const stored = JSON.parse((await etcd.get(path).string())!);
    stored.metadata.creationTimestamp = new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await etcd.put(path).value(JSON.stringify(stored)).exec();
    await waitFor('the rewritten key', async () => {
      const read = await ts.as.root.get(`${GROUP_PATH}/ownedaccesskeys/${name}`);
      return read.body.metadata.creationTimestamp === stored.metadata.creationTimestamp;
    });
  } finally {
    etcd.close();
  }
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [] });
  dir = mkdtempSync(join(tmpdir(), 'cli-'));
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ts.server.caPem!);
  aliceKey = await createKey(ts.as.alice, {});
  cliKey = await createKey(ts.as.alice, { scope: { roles: [{ role: 'platformCLI' }] } });
  // A Global Secret alice may read and change (she owns it).
  const res = await ts.as.root.post(`${GROUP_PATH}/namespaces/default/sharedsecrets`, {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name: 'db' },
    spec: {
      owner: { user: 'alice' },
      data: { password: Buffer.from("s3cr'et").toString('base64'), user: Buffer.from('app').toString('base64') },
    },
  });
  expect(res.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('login', () => {
  test('with an access key: kept in a file only the user can read, never printed; logout removes it', async () => {
    const home = await loggedIn(aliceKey);
    const file = join(home, '.config', 'platform', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ server: ts.server.url, accessKey: aliceKey });
    const read = await platform(['get', 'secret', 'default/db', '--key', 'user'], { home });
    expect(read).toEqual({ code: 0, stdout: 'app', stderr: '' });
    expect(await platform(['logout'], { home })).toMatchObject({ code: 0, stdout: 'Logged out\n' });
    expect(existsSync(file)).toBe(false);
    const after = await platform(['list', 'secrets'], { home });
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('not logged in: run `platform login');
  });

  test('the key from stdin; a key the server refuses is not kept (exit 1, no key in the message)', async () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const piped = await platform(['login', ts.server.url, '--access-key', '-', '--certificate-authority', caFile], {
      home,
      input: `${aliceKey}\n`,
    });
    expect(piped.code).toBe(0);
    expect(piped.stdout + piped.stderr).not.toContain(aliceKey);
    const bad = mkdtempSync(join(dir, 'home-'));
    const refused = await platform(
      ['login', ts.server.url, '--access-key', 'pak_not-a-key', '--certificate-authority', caFile],
      { home: bad },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: .*the credential was refused; log in again/);
    expect(refused.stderr).not.toContain('pak_not-a-key');
    expect(existsSync(join(bad, '.config', 'platform', 'config.json'))).toBe(false);
  });

  test('a URL with a user name or password, or an http one, is refused (exit 2) and nothing is kept', async () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const withUser = new URL(ts.server.url);
    withUser.username = 'alice';
    withUser.password = 'hunter2';
    const refused = await platform(['login', withUser.toString(), '--access-key', '-'], { home, input: aliceKey });
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: the server's URL has a user name or password in it; the access key is the credential: give the URL without them, e.g. https://${withUser.host}\n`,
    });
    expect(existsSync(join(home, '.config', 'platform', 'config.json'))).toBe(false);
    const plain = await platform(['login', ts.server.url.replace('https:', 'http:'), '--access-key', '-'], {
      home,
      input: aliceKey,
    });
    expect(plain).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "error: the server's URL must start with https:// (got http:, which would send the access key unencrypted)\n",
    });
    expect(existsSync(join(home, '.config', 'platform', 'config.json'))).toBe(false);
  });

  test('a CI job: PLATFORM_URL and PLATFORM_ACCESS_KEY, no file', async () => {
    const res = await platform(['get', 'secret', 'default/db', '-o', 'json'], {
      env: { PLATFORM_URL: ts.server.url, PLATFORM_ACCESS_KEY: aliceKey, PLATFORM_CA_DATA: ts.server.caPem! },
    });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ password: "s3cr'et", user: 'app' });
  });

  test('with a kubeconfig and a context of it', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'p',
            cluster: {
              server: ts.server.url,
              'certificate-authority-data': Buffer.from(ts.server.caPem!).toString('base64'),
            },
          },
        ],
        users: [
          { name: 'alice', user: { token: aliceKey } },
          { name: 'nobody', user: { token: 'pak_nobody' } },
        ],
        contexts: [
          { name: 'wrong', context: { cluster: 'p', user: 'nobody' } },
          { name: 'alice', context: { cluster: 'p', user: 'alice' } },
        ],
        'current-context': 'wrong',
      }),
    );
    const res = await platform(['--kubeconfig', kubeconfig, '--context', 'alice', 'list', 'secrets']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^NAMESPACE\s+NAME\s+KEYS\s+AGE\ndefault\s+db\s+password,user\s+\S+\n$/);
    const missing = await platform(['--kubeconfig', kubeconfig, '--context', 'nope', 'list', 'secrets']);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toContain('the kubeconfig has no context "nope"; it has: wrong, alice');
  });
});

describe('Global Secrets', () => {
  test('get prints decoded values: one as it is, all as shell lines or YAML', async () => {
    const home = await loggedIn(aliceKey);
    const env = await platform(['get', 'secret', 'default/db'], { home });
    expect(env).toEqual({ code: 0, stdout: "password='s3cr'\\''et'\nuser='app'\n", stderr: '' });
    const yaml = await platform(['get', 'secret', 'default/db', '-o', 'yaml'], { home });
    expect(yaml.stdout).toBe("password: s3cr'et\nuser: app\n");
  });

  test('as shell lines, only new harmless variables: eval sets those, what the shell or its programs read stays', async () => {
    // The owner of a Secret chooses its keys; whoever evals its lines must not run what the owner chose.
    const name = uniq('env');
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const refused: Record<string, string> = {
      PATH: 'the environment already has this variable',
      EDITOR: 'the environment already has this variable',
      PROMPT_COMMAND: 'the shell or the programs it runs read this variable',
      PROMPT: 'the shell or the programs it runs read this variable',
      path: 'the shell or the programs it runs read this variable',
      LD_PRELOAD: 'the shell or the programs it runs read this variable',
      NODE_OPTIONS: 'the shell or the programs it runs read this variable',
      PLATFORM_URL: 'the shell or the programs it runs read this variable',
      'my-key': 'not a shell variable name',
      '1st': 'not a shell variable name',
      BLOB: 'its value holds a NUL byte',
    };
    const created = await ts.as.root.post(`${GROUP_PATH}/namespaces/default/sharedsecrets`, {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name },
      spec: {
        owner: { user: 'alice' },
        data: {
          ...Object.fromEntries(Object.keys(refused).map((k) => [k, b64('touch owned')])),
          BLOB: Buffer.from([0x61, 0, 0x62]).toString('base64'),
          DB_USER: b64('app'),
        },
      },
    });
    expect(created.status).toBe(201);
    const home = await loggedIn(aliceKey);
    // EDITOR exported in the shell that runs the command, as in most.
    const env = await platform(['get', 'secret', `default/${name}`], { home, env: { EDITOR: 'vi' } });
    expect(env.code).toBe(0);
    expect(env.stdout).toBe("DB_USER='app'\n");
    for (const [key, why] of Object.entries(refused))
      expect(env.stderr).toContain(`Warning: key "${key}" is left out: ${why}`);
    const evaluated = await new Promise<string>((resolve, reject) =>
      execFile('bash', ['-c', `eval "$1"; printf '%s|%s' "$DB_USER" "$PATH"`, 'bash', env.stdout], (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      ),
    );
    expect(evaluated).toBe(`app|${process.env.PATH}`);
    // With a prefix, the Secret chooses no name alone; --key still prints one the lines leave out.
    const prefixed = await platform(['get', 'secret', `default/${name}`, '--prefix', 'S_'], { home });
    expect(prefixed.stdout).toContain("S_PATH='touch owned'\n");
    expect(prefixed.stdout).toContain("S_EDITOR='touch owned'\n");
    expect(prefixed.stdout).toContain("S_DB_USER='app'\n");
    expect(prefixed.stderr).toContain('Warning: key "my-key" is left out: not a shell variable name');
    expect(await platform(['get', 'secret', `default/${name}`, '--key', 'PATH'], { home })).toEqual({
      code: 0,
      stdout: 'touch owned',
      stderr: '',
    });
    const badPrefix = await platform(['get', 'secret', `default/${name}`, '--prefix', '1-'], { home });
    expect(badPrefix).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --prefix "1-" cannot begin a shell variable name: letters, digits and _, not first a digit\n',
    });
  });

  test('set changes a key, adds one, creates a Secret, from a flag, a file, stdin and literals', async () => {
    // As the admin (a tenant changes the Secrets she has, and creates none): a static token in the environment.
    const admin = {
      PLATFORM_URL: ts.server.url,
      PLATFORM_ACCESS_KEY: ts.as.root.token!,
      PLATFORM_CA_DATA: ts.server.caPem!,
    };
    const name = uniq('app');
    const file = join(dir, 'value.bin');
    writeFileSync(file, Buffer.from([0, 1, 2, 255]));
    const created = await platform(['set', 'secret', `default/${name}`, '--key', 'a', '--value', 'one'], {
      env: admin,
    });
    expect(created).toEqual({ code: 0, stdout: `sharedsecret/${name} created\n`, stderr: '' });
    expect(
      await platform(['set', 'secret', `default/${name}`, '--key', 'b', '--from-file', file], { env: admin }),
    ).toMatchObject({ code: 0, stdout: `sharedsecret/${name} configured\n` });
    expect(
      await platform(['set', 'secret', `default/${name}`, '--key', 'c'], { env: admin, input: 'from stdin' }),
    ).toMatchObject({ code: 0 });
    expect(
      await platform(['set', 'secret', `default/${name}`, '--from-literal', 'd=x=y', '--from-literal', 'a=two'], {
        env: admin,
      }),
    ).toMatchObject({ code: 0 });
    const stored = await ts.as.root.get(`${GROUP_PATH}/namespaces/default/sharedsecrets/${name}`);
    const data = stored.body.spec.data;
    expect(Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v as string, 'base64')]))).toEqual({
      a: Buffer.from('two'),
      b: Buffer.from([0, 1, 2, 255]),
      c: Buffer.from('from stdin'),
      d: Buffer.from('x=y'),
    });
  });

  test('a platformCLI key reads, and a write gets the server’s 403 as one clear line; nothing changes', async () => {
    const home = await loggedIn(cliKey);
    expect(await platform(['get', 'secret', 'default/db', '--key', 'user'], { home })).toMatchObject({
      code: 0,
      stdout: 'app',
    });
    const before = await ts.as.root.get(`${GROUP_PATH}/namespaces/default/sharedsecrets/db`);
    const write = await platform(['set', 'secret', 'default/db', '--key', 'user', '--value', 'evil'], { home });
    expect(write.code).toBe(1);
    expect(write.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(write.stderr).toMatch(/^error: sharedsecrets.management.platform.sh "db" is forbidden: .*/);
    const after = await ts.as.root.get(`${GROUP_PATH}/namespaces/default/sharedsecrets/db`);
    expect(after.body.metadata.resourceVersion).toBe(before.body.metadata.resourceVersion);
  });

  test('--v 6 tells each request on stderr, never the key or a value', async () => {
    const home = await loggedIn(aliceKey);
    const res = await platform(['--v', '6', 'get', 'secret', 'default/db', '--key', 'password'], { home });
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(
      new RegExp(
        `^GET ${ts.server.url}/apis/management.platform.sh/v1/namespaces/default/sharedsecrets/db OK in \\d+ms\\n$`,
      ),
    );
    expect(res.stderr).not.toContain(aliceKey);
    expect(res.stderr).not.toContain('s3cr');
  });
});

describe('what a user needs when something is wrong', () => {
  test.each([
    ['an unknown command', ['frobnicate'], 2, /error: unknown command 'frobnicate'/],
    ['a missing argument', ['get', 'secret'], 2, /error: missing required argument 'namespace\/name'/],
    ['a reference without a namespace', ['get', 'secret', 'db'], 2, /"db" is not <namespace>\/<name>/],
    ['set without a key', ['set', 'secret', 'default/db', '--value', 'x'], 2, /which key\? --key <key>/],
    [
      'an unknown output format',
      ['list', 'secrets', '-o', 'xml'],
      2,
      /-o xml is not a format here; use one of table, json, yaml/,
    ],
    [
      'a key the Secret lacks',
      ['get', 'secret', 'default/db', '--key', 'nope'],
      1,
      /Global Secret default\/db has no key "nope"; it has: password, user/,
    ],
    [
      // Not hers to know of: the server's 403, not a 404.
      'a Secret she may not see',
      ['get', 'secret', 'default/none'],
      1,
      /^error: sharedsecrets.management.platform.sh "none" is forbidden: User "alice" cannot get/,
    ],
  ] as const)('%s', async (_what, args, code, message) => {
    const home = await loggedIn(aliceKey);
    const res = await platform([...args], { home });
    expect(res.code).toBe(code);
    expect(res.stderr).toMatch(message);
    expect(res.stderr).not.toMatch(/\n\s+at /); // no stack
  });

  test('a server that is down: exit 1, where it tried and what to check', async () => {
    const res = await platform(['list', 'secrets'], {
      env: { PLATFORM_URL: 'https://127.0.0.1:1', PLATFORM_ACCESS_KEY: aliceKey },
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      /^error: cannot reach https:\/\/127\.0\.0\.1:1: .*is the server running and the URL right\?\n$/,
    );
    expect(res.stderr).not.toContain(aliceKey);
  });

  test('a disabled key: exit 1 with the server’s reason', async () => {
    const disabled = await createKey(ts.as.root, { user: 'alice', disabled: true });
    const res = await platform(['list', 'secrets'], {
      env: { PLATFORM_URL: ts.server.url, PLATFORM_ACCESS_KEY: disabled, PLATFORM_CA_DATA: ts.server.caPem! },
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^error: access key ".*" is disabled: the credential was refused; log in again/);
  });

  test('an expired key: exit 1 with the server’s reason; one near its end works and says when it expires', async () => {
    const name = uniq('old');
    const res = await ts.as.root.post(`${GROUP_PATH}/ownedaccesskeys`, {
      apiVersion: API_VERSION,
      kind: 'OwnedAccessKey',
      metadata: { name },
      spec: { user: 'alice', ttl: 600 },
    });
    expect(res.status).toBe(201);
    const key: string = res.body.spec.key;
    const env = { PLATFORM_URL: ts.server.url, PLATFORM_ACCESS_KEY: key, PLATFORM_CA_DATA: ts.server.caPem! };
    // Made 9.5 minutes ago: in the last tenth of its life, the server warns with every answer.
    await rewriteCreation(name, Date.now() - 570_000);
    const near = await platform(['get', 'secret', 'default/db', '--key', 'user'], { env });
    expect(near.code).toBe(0);
    expect(near.stderr).toMatch(
      new RegExp(
        `^Warning: access key "${name}" expires at \\S+ \\(in \\d+s\\); requests with it are refused from then on\\n$`,
      ),
    );
    // Made an hour ago: expired.
    await rewriteCreation(name, Date.now() - 3_600_000);
    const expired = await platform(['list', 'secrets'], { env });
    expect(expired.code).toBe(1);
    expect(expired.stderr).toBe(
      `error: access key "${name}" has expired: the credential was refused; log in again (platform login) or check the key\n`,
    );
  });

  test('every command has help with an example, exit 0', async () => {
    for (const args of [
      ['--help'],
      ['login', '--help'],
      ['get', 'secret', '--help'],
      ['set', 'secret', '--help'],
      ['completion', '--help'],
      ['logout', '--help'],
      ['whoami', '--help'],
      ['list', 'secrets', '--help'],
      ['list', 'accesskeys', '--help'],
      ['create', 'accesskey', '--help'],
      ['token', '--help'],
      ['kubeconfig', 'cluster', '--help'],
      ['import', 'vcluster', '--help'],
      ['list', 'vclusters', '--help'],
      ['connect', 'vcluster', '--help'],
    ]) {
      const res = await platform(args);
      expect({ args, code: res.code }).toEqual({ args, code: 0 });
      expect(res.stdout).toContain('Examples:');
    }
  });
});

describe('completion', () => {
  /** What bash completes after `words` (the last one being typed), with the script the CLI printed. */
  async function completes(script: string, words: string[]): Promise<string[]> {
    const file = join(dir, `completion-${uniq('c')}.sh`);
    writeFileSync(file, script);
    const cword = words.length - 1;
    const line = `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${cword}; _platform; echo "\${COMPREPLY[*]}"`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile('bash', ['-c', line], (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    return out.trim().split(' ').filter(Boolean);
  }

  test('bash completes commands, subcommands, and the options after an argument', async () => {
    const res = await platform(['completion', 'bash']);
    expect(res.code).toBe(0);
    expect(await completes(res.stdout, ['platform', 'l'])).toEqual(['list', 'login', 'logout']);
    expect(await completes(res.stdout, ['platform', 'get', ''])).toEqual(['secret', '--help']);
    expect(await completes(res.stdout, ['platform', 'get', 'secret', 'default/db', '--'])).toEqual([
      '--key',
      '--output',
      '--prefix',
      '--help',
    ]);
  });

  test('the script declares no variable named path: in zsh that is $PATH, and completion would find no command after it', async () => {
    const res = await platform(['completion', 'zsh']);
    expect(res.stdout).not.toMatch(/\blocal\b[^\n]*\bpath\b/);
    expect(res.stdout).not.toMatch(/(^|[\s;])path=/m);
  });

  test('zsh gets the same script through bashcompinit; another shell is a usage error', async () => {
    const zsh = await platform(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^autoload -U \+X bashcompinit && bashcompinit\n# platform completion/);
    const fish = await platform(['completion', 'fish']);
    expect(fish).toMatchObject({ code: 2, stdout: '' });
    expect(fish.stderr).toContain('no completion for "fish"; use bash or zsh');
  });
});
