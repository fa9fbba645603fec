/** Runs the real kubectl (unpacked by `npm run tools`) against a test server. */
import { spawn } from 'node:child_process';
import { accessSync, constants, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function kubectlPath(): string {
  const file = path.join(repoRoot, '.tools', 'bin', 'kubectl');
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(`kubectl not found at ${file}: run \`npm run tools\` first`);
  }
  return file;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function kubectl(
  args: string[],
  opts: { kubeconfig: string; stdin?: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<KubectlResult> {
  const bin = kubectlPath();
  // Fresh HOME and cache per run: kubectl's discovery cache must never carry over between tests.
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'kubectl-home-'));
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...opts.env };
  delete env.KUBECONFIG; // --kubeconfig alone decides
  try {
    return await new Promise<KubectlResult>((resolve, reject) => {
      const child = spawn(
        bin,
        ['--kubeconfig', opts.kubeconfig, '--cache-dir', path.join(home, 'cache'), ...args],
        { env, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      // setEncoding keeps multi-byte characters that straddle chunks intact.
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
      // 'close' waits for the output pipes too, so nothing is cut off.
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (timedOut) {
          const msg = `kubectl ${args.join(' ')} timed out after ${timeoutMs} ms`;
          reject(new Error(`${msg}\nstdout: ${stdout}\nstderr: ${stderr}`));
        } else {
          resolve({ code: code ?? 128 + (signal ? os.constants.signals[signal] : 0), stdout, stderr });
        }
      });
      // kubectl may exit before reading stdin (e.g. on a usage error); that is not our failure.
      child.stdin.on('error', () => {});
      child.stdin.end(opts.stdin ?? '');
    });
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}
