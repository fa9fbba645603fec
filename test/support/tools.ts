/** The real command line tools of the tests (kubectl, helm; unpacked by `npm run tools`) and running them to completion. */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `.tools/bin/<name>`, or a clear error when `npm run tools` has not run. */
export function toolPath(name: string): string {
  const file = path.join(repoRoot, '.tools', 'bin', name);
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(`${name} not found at ${file}: run \`npm run tools\` first`);
  }
  return file;
}

export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The shell's exit code for a process that exited with `code` or was ended by `signal`. */
export function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  return code ?? 128 + (signal ? os.constants.signals[signal] : 0);
}

/** Runs `bin args` to its end (killed after timeoutMs, which rejects with its output), feeding `stdin` when given. */
export function runToCompletion(
  bin: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd?: string; stdin?: string; timeoutMs: number; what: string },
): Promise<ToolResult> {
  return new Promise<ToolResult>((resolve, reject) => {
    const child = spawn(bin, args, { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // setEncoding keeps multi-byte characters that straddle chunks intact.
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // 'close' waits for the output pipes too, so nothing is cut off.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut)
        reject(new Error(`${opts.what} timed out after ${opts.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
      else resolve({ code: exitCode(code, signal), stdout, stderr });
    });
    // The tool may exit before reading stdin (e.g. on a usage error); that is not our failure.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin ?? '');
  });
}
