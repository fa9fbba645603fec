/**
 * Runs the real kubectl (unpacked by `npm run tools`) against a test server: to completion, or in the background;
 * kubectlOn binds it to one kubeconfig with the shorthands the e2e tests share.
 */
import { expect } from '@jest/globals';
import { spawn } from 'node:child_process';
import { promises as fs, accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exitCode, repoRoot, runToCompletion, toolPath, type ToolResult } from './tools.js';

export const kubectlPath = () => toolPath('kubectl');

/** Debian's kubectl 1.20 (kubernetes-client), unpacked by scripts/ensure-test-clients.sh beside the 1.33 one. */
export function oldKubectlPath(): string {
  const file = path.join(repoRoot, '.tools', 'kubectl-1.20', 'usr', 'bin', 'kubectl');
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(`kubectl 1.20 not found at ${file}: run scripts/ensure-test-clients.sh first`);
  }
  return file;
}

export type KubectlResult = ToolResult;

/** A fresh HOME dir per run: kubectl's discovery cache must never carry over between tests. */
const HOME_PREFIX = path.join(os.tmpdir(), 'kubectl-home-');

/** Program, arguments and environment for a kubectl with HOME, TMPDIR and its cache in `home`, and --kubeconfig alone deciding the cluster. */
function kubectlCommand(
  home: string,
  kubeconfig: string,
  args: string[],
  extraEnv?: Record<string, string>,
  bin = kubectlPath(),
): [string, string[], NodeJS.ProcessEnv] {
  // TMPDIR too: kubectl edit leaves a copy of a rejected edit in its temp dir, which goes with `home`.
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: home, ...extraEnv };
  delete env.KUBECONFIG; // --kubeconfig alone decides
  return [bin, ['--kubeconfig', kubeconfig, '--cache-dir', path.join(home, 'cache'), ...args], env];
}

/** Runs kubectl (the 1.33 one of .tools/bin unless `bin` names another) to completion. */
export async function kubectl(
  args: string[],
  opts: { kubeconfig: string; stdin?: string; env?: Record<string, string>; timeoutMs?: number; bin?: string },
): Promise<KubectlResult> {
  const home = await fs.mkdtemp(HOME_PREFIX);
  const timeoutMs = opts.timeoutMs ?? 30_000;
  try {
    const [bin, argv, env] = kubectlCommand(home, opts.kubeconfig, args, opts.env, opts.bin);
    return await runToCompletion(bin, argv, { env, stdin: opts.stdin, timeoutMs, what: `kubectl ${args.join(' ')}` });
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}

/** A kubectl that keeps running (get -w, wait): its output can be read as it arrives; stop() ends it. */
export interface BackgroundKubectl {
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves once the stream's text so far matches; rejects with the output so far after `ms` or if kubectl exits first. */
  until(stream: 'stdout' | 'stderr', re: RegExp, ms?: number): Promise<void>;
  /** Resolves when the process exits by itself; rejects with the output so far after `ms`. */
  exited(ms?: number): Promise<KubectlResult>;
  /** Ends the process (SIGTERM) if it still runs, and gives its output. */
  stop(): Promise<KubectlResult>;
}

const running: BackgroundKubectl[] = [];

/** Starts kubectl without waiting for it to end; stopBackgroundKubectls() ends whatever still runs. */
export function kubectlInBackground(args: string[], opts: { kubeconfig: string }): BackgroundKubectl {
  const home = mkdtempSync(HOME_PREFIX);
  const [bin, argv, env] = kubectlCommand(home, opts.kubeconfig, args);
  const child = spawn(bin, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  let listeners: Array<() => void> = [];
  const notify = () => listeners.forEach((l) => l());
  child.stdout.setEncoding('utf8').on('data', (c: string) => ((out.stdout += c), notify()));
  child.stderr.setEncoding('utf8').on('data', (c: string) => ((out.stderr += c), notify()));
  let exited = false;
  const done = new Promise<KubectlResult>((resolve) => {
    child.on('close', (code, signal) => {
      exited = true;
      notify();
      rmSync(home, { recursive: true, force: true });
      resolve({ code: exitCode(code, signal), stdout: out.stdout, stderr: out.stderr });
    });
  });
  const describeOutput = () => `\nstdout: ${out.stdout}\nstderr: ${out.stderr}`;
  const bg: BackgroundKubectl = {
    get stdout() {
      return out.stdout;
    },
    get stderr() {
      return out.stderr;
    },
    until(stream, re, ms = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (re.test(out[stream])) {
            finish();
            resolve();
          } else if (exited) {
            finish();
            reject(new Error(`kubectl ${args.join(' ')} exited before ${stream} matched ${re}${describeOutput()}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(
            new Error(`kubectl ${args.join(' ')}: ${stream} did not match ${re} within ${ms} ms${describeOutput()}`),
          );
        }, ms);
        const finish = () => {
          clearTimeout(timer);
          listeners = listeners.filter((l) => l !== check);
        };
        listeners.push(check);
        check();
      });
    },
    exited(ms = 15_000) {
      return new Promise<KubectlResult>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`kubectl ${args.join(' ')} still runs after ${ms} ms${describeOutput()}`)),
          ms,
        );
        void done.then((r) => {
          clearTimeout(timer);
          resolve(r);
        });
      });
    },
    stop() {
      if (!exited) child.kill('SIGTERM');
      return done;
    },
  };
  running.push(bg);
  return bg;
}

/** Stops every background kubectl started so far (for afterEach). */
export async function stopBackgroundKubectls(): Promise<void> {
  await Promise.all(running.splice(0).map((bg) => bg.stop()));
}

/** Non-empty output lines. */
export const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');
/** explain wraps descriptions at 76-78 columns: compare text with whitespace collapsed. */
export const flat = (s: string) => s.replace(/\s+/g, ' ');

/**
 * kubectl against one kubeconfig (read at each call, as the server starts in beforeAll): `k(...args)` runs it to
 * completion (`bin`, when given, names another kubectl than the 1.33 one), `background(args)` in the background,
 * and two shorthands for `get`.
 */
export function kubectlOn(kubeconfig: () => string, bin?: () => string) {
  const k = (...args: string[]) => kubectl(args, { kubeconfig: kubeconfig(), bin: bin?.() });
  return {
    k,
    background: (args: string[]) => kubectlInBackground(args, { kubeconfig: kubeconfig() }),
    /** `kubectl get ... -o json`, which must succeed. */
    async getJson(...args: string[]): Promise<any> {
      const res = await k('get', ...args, '-o', 'json');
      expect(res).toMatchObject({ code: 0, stderr: '' });
      return JSON.parse(res.stdout);
    },
    /** The names `kubectl get -o name` lists (without the resource prefix). */
    async names(...args: string[]): Promise<string[]> {
      const res = await k('get', ...args, '-o', 'name');
      expect(res.code).toBe(0);
      return lines(res.stdout).map((l) => l.slice(l.indexOf('/') + 1));
    },
  };
}

/**
 * Writes at `file` a kubeconfig for `server` with no credential in it: each kubectl call then gives its own
 * (`--token`), as the server writes no admin kubeconfig with a token in it.
 */
export function writeUserlessKubeconfig(file: string, server: { url: string; caPem?: string }): string {
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: { server: server.url, 'certificate-authority-data': Buffer.from(server.caPem!).toString('base64') },
        },
      ],
      users: [{ name: 'nobody', user: {} }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'nobody' } }],
      'current-context': 'test',
    }),
  );
  return file;
}
