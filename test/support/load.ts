/**
 * Load for the fault tests: an HTTPS client over keep-alive connections (a plain HttpClient opens one TLS connection
 * per request, far too slow for tens of thousands), a bounded worker pool, a root token file for server processes,
 * and a snapshot of everything stored in etcd under a prefix.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Etcd3 } from 'etcd3';
import { HttpClient } from './http.js';
import { repoRoot } from './tools.js';

/** Keep-alive HTTPS to one server (an HttpClient reusing its connections). */
export class PooledClient extends HttpClient {
  private readonly agent: Agent;

  constructor(baseUrl: string, ca: string, token?: string, maxSockets = 64) {
    const agent = new Agent({ keepAlive: true, maxSockets, ca });
    super(baseUrl, ca, token, { agent });
    this.agent = agent;
  }

  /** Closes the idle connections (and any still in use). */
  close(): void {
    this.agent.destroy();
  }
}

/**
 * Runs `work(i)` for i = 0 .. count-1 with at most `concurrency` at once; the first failure rejects (after the
 * ones already started are done, so nothing runs on behind the caller's back).
 */
export async function runPool(count: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < count && failure === undefined) {
      const i = next++;
      try {
        await work(i);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  if (failure !== undefined) throw failure;
}

/** A --token-auth-file with one system:masters user; remove() deletes it. */
export function rootTokenFile(): { token: string; file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'fault-tokens-'));
  const token = `root-${randomBytes(24).toString('hex')}`;
  const file = join(dir, 'tokens.csv');
  writeFileSync(file, `${token},root,uid-root,"system:masters"\n`, { mode: 0o600 });
  return { token, file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every key under `prefix` with its value, as raw bytes in hex, sorted by key: equal snapshots, equal data. */
export async function etcdSnapshot(client: Etcd3, prefix: string): Promise<Map<string, string>> {
  const kvs = await client.getAll().prefix(prefix).exec();
  const entries = kvs.kvs.map((kv) => [kv.key.toString('hex'), kv.value.toString('hex')] as const);
  return new Map([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Seconds since `start` (a performance.now() reading), rounded to 10 ms, for the figures a test prints. */
export function secondsSince(start: number): number {
  return Math.round((performance.now() - start) / 10) / 100;
}

/** Where a fault test's measurements go (git ignores it): one JSON file per test, replaced on each run. */
export const FIGURES_DIR = join(repoRoot, 'test-results', 'faults');

/** Keeps `figures` in FIGURES_DIR/<name>.json: measurements, not results, so they stay out of the test output. */
export function recordFigures(name: string, figures: unknown): void {
  mkdirSync(FIGURES_DIR, { recursive: true });
  writeFileSync(join(FIGURES_DIR, `${name}.json`), `${JSON.stringify(figures, null, 2)}\n`);
}
