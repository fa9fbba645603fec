/** Runs the real helm (v4, unpacked by `npm run tools`) to completion, with a fresh HOME and nothing from the caller's helm setup. */
import { spawn } from 'node:child_process';
import { accessSync, constants, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function helmPath(): string {
  const file = path.join(repoRoot, '.tools', 'bin', 'helm');
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(`helm not found at ${file}: run \`npm run tools\` first`);
  }
  return file;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `helm <args>` in the repository root. HOME and the XDG folders are a new temporary dir each run, HELM_*
 * variables are dropped, and KUBECONFIG points at `opts.kubeconfig` or at nothing, so no cluster is reached unless
 * a test hands one in.
 */
export async function helm(args: string[], opts: { kubeconfig?: string; timeoutMs?: number } = {}): Promise<HelmResult> {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'helm-home-'));
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HELM_') && k !== 'KUBECONFIG') env[k] = v;
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    XDG_DATA_HOME: path.join(home, 'data'),
    KUBECONFIG: opts.kubeconfig ?? path.join(home, 'no-kubeconfig'),
  });
  try {
    return await new Promise<HelmResult>((resolve, reject) => {
      const child = spawn(helmPath(), args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (timedOut) reject(new Error(`helm ${args.join(' ')} timed out after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
        else resolve({ code: code ?? 128 + (signal ? os.constants.signals[signal] : 0), stdout, stderr });
      });
    });
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}
