/**
 * A streaming watch client for tests: HttpClient buffers whole responses, which a watch never finishes. openWatch()
 * resolves once the headers arrive; the WatchStream then collects events as they come and waits for them.
 */
import { expect } from '@jest/globals';
import type { IncomingHttpHeaders } from 'node:http';
import type { HttpClient } from './http.js';

export interface WatchEvent {
  type: string;
  object: any;
}

/** How long the waits below allow unless told otherwise. */
export const DEFAULT_WAIT_MS = 10_000;

/** One watch response, read as it arrives: its newline-delimited events, and whether and how it ended. */
export class WatchStream {
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** Every newline-terminated line received, as sent. */
  readonly lines: string[] = [];
  readonly events: WatchEvent[] = [];
  /** Text after the last newline (a well-formed stream leaves none). */
  partial = '';
  /** The response finished normally (the server ended it). */
  endedCleanly = false;
  /** The connection failed or was cut before the response finished. */
  error?: Error;
  private done = false;
  private listeners: (() => void)[] = [];

  /** `req`: the request (an HTTP/1.1 one, or an HTTP/2 stream), destroyed by close(). */
  constructor(private readonly req: { destroy(): unknown }) {}

  get ended(): boolean {
    return this.done;
  }

  /** The body as JSON, for a non-200 answer. */
  get body(): any {
    try {
      return JSON.parse(this.lines.join('') + this.partial);
    } catch {
      return undefined;
    }
  }

  push(chunk: string): void {
    const text = this.partial + chunk;
    const parts = text.split('\n');
    this.partial = parts.pop()!;
    for (const line of parts) {
      this.lines.push(line);
      if (this.status !== 200) continue;
      try {
        this.events.push(JSON.parse(line));
      } catch {
        this.events.push({ type: 'UNPARSEABLE', object: line });
      }
    }
    this.notify();
  }

  finish(error?: Error): void {
    if (this.done) return;
    this.done = true;
    if (error) this.error = error;
    else this.endedCleanly = true;
    this.notify();
  }

  private notify(): void {
    for (const l of this.listeners.splice(0)) l();
  }

  private waitUntil<T>(check: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; got ${this.events.length} events: ${JSON.stringify(this.summary())}`,
          ),
        );
      }, timeoutMs);
      const attempt = () => {
        let value: T | undefined;
        try {
          value = check();
        } catch (err) {
          clearTimeout(timer);
          reject(err);
          return;
        }
        if (value !== undefined) {
          clearTimeout(timer);
          resolve(value);
        } else if (this.done) {
          clearTimeout(timer);
          reject(
            new Error(
              `stream ended while waiting for ${what}; got ${this.events.length} events: ${JSON.stringify(this.summary())}`,
            ),
          );
        } else {
          this.listeners.push(attempt);
        }
      };
      attempt();
    });
  }

  /** Resolves with the first n events once that many arrived. */
  count(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<WatchEvent[]> {
    return this.waitUntil(
      () => (this.events.length >= n ? this.events.slice(0, n) : undefined),
      `${n} events`,
      timeoutMs,
    );
  }

  /** The Nth event (1-based). */
  async nth(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<WatchEvent> {
    return (await this.count(n, timeoutMs))[n - 1];
  }

  /** The first event (from index `from` on) that matches. */
  find(
    pred: (e: WatchEvent) => boolean,
    what = 'a matching event',
    timeoutMs = DEFAULT_WAIT_MS,
    from = 0,
  ): Promise<WatchEvent> {
    return this.waitUntil(() => this.events.slice(from).find(pred), what, timeoutMs);
  }

  /** Resolves once the stream has ended (cleanly or not). */
  end(timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`stream did not end within ${timeoutMs} ms; events: ${JSON.stringify(this.summary())}`)),
        timeoutMs,
      );
      const check = () => {
        if (this.done) {
          clearTimeout(timer);
          resolve();
        } else this.listeners.push(check);
      };
      check();
    });
  }

  /** No further event arrives within `ms` (to prove something is NOT sent). */
  async quiet(ms: number): Promise<void> {
    const before = this.events.length;
    await new Promise((r) => setTimeout(r, ms));
    expect(this.summary().slice(before)).toEqual([]);
  }

  summary(): string[] {
    return this.events.map(
      (e) =>
        `${e.type} ${e.object?.metadata?.namespace ?? ''}/${e.object?.metadata?.name ?? ''}@${e.object?.metadata?.resourceVersion ?? ''}`,
    );
  }

  close(): void {
    this.req.destroy();
    this.finish(new Error('closed by the test'));
  }
}

const openStreams = new Set<WatchStream>();

/** Closes every watch opened so far (for afterEach). */
export function closeWatches(): void {
  for (const s of openStreams) s.close();
  openStreams.clear();
}

/** Opens a watch as `client` (adds watch=true unless the query has a watch parameter); resolves once headers arrive. */
export function openWatch(
  client: HttpClient,
  path: string,
  opts: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<WatchStream> {
  const url = new URL(path, client.baseUrl);
  if (!url.searchParams.has('watch')) url.searchParams.set('watch', 'true');
  return new Promise((resolve, reject) => {
    const req = client.open('GET', url, opts.headers);
    const stream = new WatchStream(req);
    openStreams.add(stream);
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no response headers for ${path} within ${opts.timeoutMs ?? DEFAULT_WAIT_MS} ms`));
    }, opts.timeoutMs ?? DEFAULT_WAIT_MS);
    req.on('response', (res) => {
      clearTimeout(timer);
      stream.status = res.statusCode ?? 0;
      stream.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => stream.push(chunk));
      res.on('end', () => stream.finish());
      res.on('aborted', () => stream.finish(new Error('response aborted')));
      res.on('error', (err) => stream.finish(err));
      resolve(stream);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      stream.finish(err);
      reject(err);
    });
    req.end();
  });
}

/** A non-200 watch answer, read to its end. */
export async function watchFailure(
  client: HttpClient,
  path: string,
  timeoutMs = DEFAULT_WAIT_MS,
): Promise<{ status: number; body: any; headers: IncomingHttpHeaders }> {
  const stream = await openWatch(client, path, { timeoutMs });
  await stream.end(timeoutMs);
  return { status: stream.status, body: stream.body, headers: stream.headers };
}
