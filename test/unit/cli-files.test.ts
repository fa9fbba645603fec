/**
 * What the command line client takes from a kube config the server sent, and how it writes the files that hold a
 * credential: the issue 44 review's findings, each failing on the code before its fix.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import type { Io } from '../../src/cli/context.js';
import { describeError, CliError } from '../../src/cli/errors.js';
import { main } from '../../src/cli/main.js';
import { mergeKubeconfig, parseKubeconfig, renderKubeconfig } from '../../src/cli/kubeconfigmerge.js';
import { printable } from '../../src/cli/terminal.js';
import { replaceFile } from '../../src/cli/privatefile.js';
import { writeLogin } from '../../src/cli/config.js';
import { HostClusterError } from '../../src/host/kuberequest.js';
import { makeCa, makeCert } from '../support/certs.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n').toString('base64');

/** A kube config as the server issues one, with `cluster` and `user` fields added or changed. */
function issued(cluster: Record<string, unknown> = {}, user: Record<string, unknown> = {}): string {
  return yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'shop', cluster: { server: 'https://10.0.0.1:8443', 'certificate-authority-data': CA, ...cluster } },
    ],
    users: [{ name: 'shop', user: { 'client-certificate-data': 'Y2VydA==', 'client-key-data': 'a2V5', ...user } }],
    contexts: [{ name: 'shop', context: { cluster: 'shop', user: 'shop' } }],
    'current-context': 'shop',
  });
}

describe('a kube config from the server is data', () => {
  test.each([
    ['an exec plugin', {}, { exec: { command: 'sh', args: ['-c', 'id'] } }, 'users[0].user.exec (it runs a command)'],
    ['an auth-provider', {}, { 'auth-provider': { name: 'oidc' } }, 'users[0].user.auth-provider'],
    ['a key file', {}, { 'client-key': '/home/me/.ssh/id_rsa' }, 'users[0].user.client-key (it reads a file)'],
    ['a proxy', { 'proxy-url': 'http://evil:3128' }, {}, 'clusters[0].cluster.proxy-url'],
    ['no verification', { 'insecure-skip-tls-verify': true }, {}, 'clusters[0].cluster.insecure-skip-tls-verify'],
    ['impersonation', {}, { as: 'admin' }, 'users[0].user.as'],
    [
      'a user and password in the URL',
      { server: 'https://bob:hunter2@10.0.0.1:8443' },
      {},
      'clusters[0].cluster.server must be an https URL without a user name, password, query or fragment',
    ],
  ])('%s is refused, naming the field', (_what, cluster, user, named) => {
    let thrown: unknown;
    try {
      parseKubeconfig(issued(cluster, user), 'the kube config of p-web/shop');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(CliError);
    expect((thrown as CliError).message).toMatch(
      /^the kube config of p-web\/shop is refused: .*; nothing was written$/,
    );
    expect((thrown as CliError).message).toContain(named);
  });

  test('an http server is refused', () => {
    expect(() => parseKubeconfig(issued({ server: 'http://10.0.0.1:8080' }), 'it')).toThrow(
      'clusters[0].cluster.server must be an https URL',
    );
  });

  test('what is taken: the server, its CA and tls-server-name, the certificate and key; extra entries dropped', () => {
    const text = yaml.dump({
      ...(yaml.load(issued({ 'tls-server-name': 'shop.internal' })) as object),
      // A second user the current context does not name: never copied anywhere.
      users: [
        { name: 'shop', user: { 'client-certificate-data': 'Y2VydA==', 'client-key-data': 'a2V5' } },
        { name: 'other', user: { exec: { command: 'sh' } } },
      ],
      preferences: { extensions: [] },
    });
    const parsed = parseKubeconfig(text, 'it');
    expect(parsed).toEqual({
      cluster: {
        server: 'https://10.0.0.1:8443',
        'certificate-authority-data': CA,
        'tls-server-name': 'shop.internal',
      },
      user: { 'client-certificate-data': 'Y2VydA==', 'client-key-data': 'a2V5' },
    });
    expect(yaml.load(renderKubeconfig(parsed, 'platform_web_shop'))).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'platform_web_shop', cluster: parsed.cluster }],
      users: [{ name: 'platform_web_shop', user: parsed.user }],
      contexts: [{ name: 'platform_web_shop', context: { cluster: 'platform_web_shop', user: 'platform_web_shop' } }],
      'current-context': 'platform_web_shop',
    });
  });
});

describe('files that hold a credential', () => {
  test('a link at the path is replaced, not written through: its target stays as it was', () => {
    const target = join(dir, 'someone-elses-file');
    writeFileSync(target, 'untouched\n', { mode: 0o644 });
    const path = join(dir, 'out.kubeconfig');
    symlinkSync(target, path);
    replaceFile(path, 'secret\n');
    expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('secret\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test('an existing file readable by others is replaced by one only its owner reads, nothing left beside it', () => {
    const sub = mkdtempSync(join(dir, 'mode-'));
    const path = join(sub, 'out');
    writeFileSync(path, 'old\n', { mode: 0o644 });
    replaceFile(path, 'new\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(sub)).toEqual(['out']);
  });

  test('a directory that is not there: a CliError naming the file, no file made', () => {
    const path = join(dir, 'missing', 'out');
    expect(() => replaceFile(path, 'x')).toThrow(`cannot write ${path} (ENOENT); it was not changed`);
  });

  test('the login file: a link planted at its path does not receive the key', () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const planted = join(dir, 'planted-login');
    writeFileSync(planted, '', { mode: 0o666 });
    const config = join(home, 'config.json');
    symlinkSync(planted, config);
    writeLogin({ PLATFORM_CONFIG: config }, { server: 'https://platform.example.com', accessKey: 'pak_secret' });
    expect(readFileSync(planted, 'utf8')).toBe('');
    expect(readFileSync(config, 'utf8')).toContain('pak_secret');
    expect(statSync(config).mode & 0o777).toBe(0o600);
  });

  test('a device (a link to /dev/null, as --output-file /dev/stdout names one) is written to, not replaced', () => {
    const link = join(dir, 'to-null');
    symlinkSync('/dev/null', link);
    replaceFile(link, 'x');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(statSync(link).isCharacterDevice()).toBe(true);
  });

  test('a name near the file system limit is still written (the temporary beside it is short)', () => {
    const path = join(mkdtempSync(join(dir, 'long-')), 'k'.repeat(250));
    replaceFile(path, 'x');
    expect(readFileSync(path, 'utf8')).toBe('x');
  });

  test("merge: another holder of kubectl's lock is said, the kubeconfig left as it was", () => {
    const path = join(mkdtempSync(join(dir, 'locked-')), 'config');
    const text = yaml.dump({ apiVersion: 'v1', kind: 'Config', preferences: {} });
    writeFileSync(path, text);
    writeFileSync(`${path}.lock`, '');
    expect(() => mergeKubeconfig(path, parseKubeconfig(issued(), 'it'), 'platform_web_shop')).toThrow(
      `${path}.lock exists: another program is changing ${path}`,
    );
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  test('merge keeps what YAML would retype (a date-like namespace stays that string) and releases the lock', () => {
    const path = join(mkdtempSync(join(dir, 'types-')), 'config');
    writeFileSync(
      path,
      'apiVersion: v1\nkind: Config\ncontexts:\n- name: dated\n  context: {cluster: c, user: u, namespace: 2024-01-01}\n',
    );
    mergeKubeconfig(path, parseKubeconfig(issued(), 'it'), 'platform_web_shop');
    const after = yaml.load(readFileSync(path, 'utf8'), { schema: yaml.CORE_SCHEMA }) as any;
    expect(after.contexts[0].context.namespace).toBe('2024-01-01');
    expect(readdirSync(dirname(path))).toEqual(['config']);
  });

  test('a merged kubeconfig that others could read is made 0600 (it now holds a private key); 0400 is kept', () => {
    for (const [before, after] of [
      [0o644, 0o600],
      [0o400, 0o400],
    ]) {
      const path = join(mkdtempSync(join(dir, 'merge-')), 'config');
      writeFileSync(path, yaml.dump({ apiVersion: 'v1', kind: 'Config', preferences: {} }), { mode: before });
      mergeKubeconfig(path, parseKubeconfig(issued(), 'it'), 'platform_web_shop');
      expect(statSync(path).mode & 0o777).toBe(after);
    }
  });
});

describe('what reaches a terminal', () => {
  test('escape sequences, carriage returns and C1 controls are shown, not acted on; tabs and newlines stay', () => {
    expect(printable('a\x1b]0;owned\x07b\rc\x9b31m\td\n')).toBe('a\\x1b]0;owned\\x07b\\x0dc\\x9b31m\td\n');
  });

  test("a server's long Status message is cut", () => {
    const err = new HostClusterError('GET /x: the host cluster answered HTTP 400', 400, {
      kind: 'Status',
      message: 'x'.repeat(5000),
    } as never);
    const line = describeError(err);
    expect(line.length).toBeLessThan(600);
    expect(line).toMatch(/^x{512}\.\.\. \(4488 more characters\)$/);
  });

  describe('from a server that sends them', () => {
    // A server that is not what the user meant to log in to (a mistyped URL): its words are not to be obeyed.
    const ESCAPES = '\x1b]0;owned\x07\x1b[2J\x9b6n\u202e';
    const FORGED = 'denied\nLogged in to https://platform.example.com';
    let hostile: Server;
    let url: string;
    const ca = makeCa('hostile-ca');
    const secret = (name: string, data: Record<string, string>) => ({
      metadata: { name, namespace: 'default' },
      spec: { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) },
    });
    beforeAll(async () => {
      const serving = makeCert({ commonName: '127.0.0.1', ips: ['127.0.0.1'], issuer: ca });
      hostile = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
        res.setHeader('Content-Type', 'application/json');
        if (req.url!.endsWith('/sharedsecrets/db')) return res.end(JSON.stringify(secret('db', { v: `a${ESCAPES}b` })));
        if (req.url!.endsWith('/sharedsecrets'))
          return res.end(JSON.stringify({ items: [secret('db', { 'k\nkube-system   admin-creds   token': 'x' })] }));
        res.statusCode = 403;
        const message = req.url!.endsWith('/forged') ? FORGED : `denied${ESCAPES}`;
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, message }));
      });
      await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
      url = `https://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => hostile.close(() => resolve())));

    async function run(args: string[], stdoutIsTTY: boolean, env: Record<string, string> = {}) {
      const out: Buffer[] = [];
      let err = '';
      const io: Io = {
        stdout: (text) => void out.push(Buffer.from(text)),
        stderr: (text) => void (err += text),
        stdin: async () => Buffer.alloc(0),
        stdoutIsTTY,
        env: { PLATFORM_URL: url, PLATFORM_ACCESS_KEY: 'pak_x', PLATFORM_CA_DATA: ca.certPem, ...env },
      };
      const code = await main(args, io);
      return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: err };
    }

    test('its Status message on stderr: shown, not acted on, and one line', async () => {
      const res = await run(['get', 'secret', 'default/other'], false);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe('error: denied\\x1b]0;owned\\x07\\x1b[2J\\x9b6n\\u202e\n');
      const forged = await run(['get', 'secret', 'default/forged'], false);
      expect(forged.stderr).toBe('error: denied\\x0aLogged in to https://platform.example.com\n');
    });

    test('a value to a terminal is shown escaped; piped it is given byte for byte', async () => {
      const tty = await run(['get', 'secret', 'default/db', '--key', 'v'], true);
      expect(tty.stdout).toBe('a\\x1b]0;owned\\x07\\x1b[2J\\x9b6n\\u202eb\n');
      const piped = await run(['get', 'secret', 'default/db', '--key', 'v'], false);
      expect(piped.stdout).toBe(`a${ESCAPES}b`);
    });

    test('JSON to a terminal stays JSON, the same value', async () => {
      const tty = await run(['get', 'secret', 'default/db', '-o', 'json'], true);
      for (const c of ['\x1b', '\x07', '\x9b', '\u202e']) expect(tty.stdout).not.toContain(c);
      expect(JSON.parse(tty.stdout)).toEqual({ v: `a${ESCAPES}b` });
    });

    test('a key with a newline in it makes no row of its own in a table', async () => {
      const tty = await run(['list', 'secrets'], true);
      expect(tty.stdout.trimEnd().split('\n')).toHaveLength(2);
      expect(tty.stdout).toContain('k\\x0akube-system   admin-creds   token');
    });

    test('a key named like a property of every object is a key it does not have', async () => {
      const res = await run(['get', 'secret', 'default/db', '--key', 'toString'], false);
      expect(res).toEqual({
        code: 1,
        stdout: '',
        stderr: 'error: Global Secret default/db has no key "toString"; it has: v\n',
      });
    });

    test('PLATFORM_URL with a user and password in it is refused before anything is sent (exit 2)', async () => {
      const withUser = url.replace('https://', 'https://bob:hunter2@');
      const res = await run(['list', 'secrets'], false, { PLATFORM_URL: withUser });
      expect(res.code).toBe(2);
      expect(res.stderr).toBe(
        `error: PLATFORM_URL has a user name or password in it; the access key is the credential: give the URL without them, e.g. ${url}\n`,
      );
    });
  });
});
