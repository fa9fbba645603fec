/** The built command line client (dist/cli.js) as a user runs it: a child process with the environment given alone. */
import { execFile } from 'node:child_process';

export const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
export const NODE = new URL('../../node_modules/.bin/node', import.meta.url).pathname;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `platform <args>` with `env` (and PATH) as its whole environment and `input` on stdin; never rejects. */
export function runCli(args: string[], env: Record<string, string | undefined>, input = ''): Promise<CliRun> {
  return new Promise<CliRun>((resolve) => {
    const child = execFile(
      NODE,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}
