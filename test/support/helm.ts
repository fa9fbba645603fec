/** Runs the real helm (v4, unpacked by `npm run tools`) to completion, with a fresh HOME and nothing from the caller's helm setup. */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, runToCompletion, toolPath, type ToolResult } from './tools.js';

export { repoRoot };
export const helmPath = () => toolPath('helm');
export type HelmResult = ToolResult;

/**
 * Runs `helm <args>` in the repository root. HOME and the XDG folders are a new temporary dir each run, HELM_*
 * variables are dropped, and KUBECONFIG points at `opts.kubeconfig` or at nothing, so no cluster is reached unless
 * a test hands one in.
 */
export async function helm(
  args: string[],
  opts: { kubeconfig?: string; timeoutMs?: number } = {},
): Promise<HelmResult> {
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
    return await runToCompletion(helmPath(), args, { env, cwd: repoRoot, timeoutMs, what: `helm ${args.join(' ')}` });
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}
