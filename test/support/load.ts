/**
 * Load for the fault tests: an HTTPS client over keep-alive connections (HttpClient opens one TLS connection per
 * request, far too slow for tens of thousands), a bounded worker pool, a root token file for server processes,
 * and a snapshot of everything stored in etcd under a prefix.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Etcd3 } from 'etcd3';
import type { HttpResponse } from './http.js';

export interface PooledRequest {
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  /** Give up (rejecting with a `timed out` error) after this long; default: never. */
  timeoutMs?: number;
}

/** Keep-alive HTTPS to one server. Connection failures reject; every answer (any status) resolves. */
export class PooledClient {
  private readonly agent: Agent;

  constructor(
    readonly baseUrl: string,
    private readonly ca: string,
    private readonly token?: string,
    maxSockets = 64,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets, ca });
  }

  get(path: string, opts: PooledRequest = {}) {
    return this.request('GET', path, opts);
  }
  post(path: string, body: unknown, opts: PooledRequest = {}) {
    return this.request('POST', path, { ...opts, body });
  }
  put(path: string, body: unknown, opts: PooledRequest = {}) {
    return this.request('PUT', path, { ...opts, body });
  }
  patch(path: string, body: unknown, contentType: string, opts: PooledRequest = {}) {
    return this.request('PATCH', path, { ...opts, body, contentType });
  }
  delete(path: string, opts: PooledRequest = {}) {
    return this.request('DELETE', path, opts);
  }

  request(method: string, path: string, opts: PooledRequest = {}): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' || Buffer.isBuffer(opts.body) ? Buffer.from(opts.body) : Buffer.from(JSON.stringify(opts.body));
      headers['Content-Type'] ??= opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, this.baseUrl), { method, headers, agent: this.agent, ca: this.ca });
      let timer: NodeJS.Timeout | undefined;
      if (opts.timeoutMs) timer = setTimeout(() => req.destroy(new Error(`timed out after ${opts.timeoutMs} ms: ${method} ${path}`)), opts.timeoutMs);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', fail);
        res.on('aborted', () => fail(new Error(`response aborted: ${method} ${path}`)));
      });
      req.on('error', fail);
      req.end(payload);
    });
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
