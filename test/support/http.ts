/** A small HTTPS client for tests: raw status, headers and body, with the server's CA trusted. */
import { connect } from 'node:tls';
import type { ClientRequest } from 'node:http';
import { request, type Agent } from 'node:https';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: any;
}

/** The texts of an answer's `Warning: 299 - "<text>"` headers, in order. */
export function warningsOf(res: HttpResponse): string[] {
  const header = res.headers.warning;
  const all = Array.isArray(header) ? header : header ? [header] : [];
  return all.flatMap((h) => [...h.matchAll(/299 - ("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]) as string));
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (string/Buffer), else JSON-encoded. */
  contentType?: string;
  headers?: Record<string, string>;
  /** Give up (rejecting with a `timed out` error) after this long; default: never. */
  timeoutMs?: number;
}

export const GROUP_PATH = '/apis/management.platform.sh/v1';

/** What a client presents besides its token: a client certificate, and headers sent with every request. */
export interface ClientIdentity {
  /** PEM key and certificate offered in the TLS handshake (a TestCert fits). */
  cert?: { keyPem: string; certPem: string };
  /** [name, value] pairs; a name may repeat (one header line each) and repeats any request header of that name. */
  headers?: Array<[string, string]>;
  /** Connections to reuse (keep-alive); default: a new TLS connection per request. */
  agent?: Agent;
}

export class HttpClient {
  constructor(
    readonly baseUrl: string,
    private readonly ca: string,
    /** The bearer token sent (for a test that writes its own requests on a raw connection). */
    readonly token?: string,
    private readonly identity: ClientIdentity = {},
  ) {}

  get(path: string, opts: RequestOptions = {}) {
    return this.request('GET', path, opts);
  }
  post(path: string, body: unknown, opts: RequestOptions = {}) {
    return this.request('POST', path, { ...opts, body });
  }
  put(path: string, body: unknown, opts: RequestOptions = {}) {
    return this.request('PUT', path, { ...opts, body });
  }
  patch(path: string, body: unknown, contentType: string, opts: RequestOptions = {}) {
    return this.request('PATCH', path, { ...opts, body, contentType });
  }
  delete(path: string, opts: RequestOptions = {}) {
    return this.request('DELETE', path, opts);
  }

  /**
   * A request with this client's CA, token, certificate and headers, not yet ended, for a response read as it arrives
   * (a watch): the caller listens for 'response' and calls end().
   */
  open(method: string, path: string | URL, headers: Record<string, string> = {}): ClientRequest {
    const all: Record<string, string | string[]> = {};
    for (const [name, value] of [...(this.identity.headers ?? []), ...Object.entries(headers)]) {
      const prev = all[name];
      all[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
    }
    if (this.token) all.Authorization = `Bearer ${this.token}`;
    const { cert } = this.identity;
    return request(new URL(path, this.baseUrl), {
      method,
      headers: all,
      ca: this.ca,
      agent: this.identity.agent ?? false,
      ...(cert && { cert: cert.certPem, key: cert.keyPem }),
    });
  }

  request(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload =
        typeof opts.body === 'string' || Buffer.isBuffer(opts.body)
          ? Buffer.from(opts.body)
          : Buffer.from(JSON.stringify(opts.body));
      headers['Content-Type'] ??= opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    return new Promise((resolve, reject) => {
      const req = this.open(method, path, headers);
      let timer: NodeJS.Timeout | undefined;
      if (opts.timeoutMs)
        timer = setTimeout(
          () => req.destroy(new Error(`timed out after ${opts.timeoutMs} ms: ${method} ${path}`)),
          opts.timeoutMs,
        );
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
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
}

/**
 * Retries a request while the server cannot reach etcd (it answers 5xx, or the connection fails, until its client
 * reconnects after a restart); `ok` says which answers count as done.
 */
export async function eventually(
  fn: () => Promise<HttpResponse>,
  ok: (r: HttpResponse) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<HttpResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fn().catch((err): HttpResponse => ({
      status: 0,
      headers: {},
      text: String(err),
      body: undefined,
    }));
    if (ok(res)) return res;
    if (Date.now() > deadline)
      throw new Error(`${what} did not succeed within ${timeoutMs} ms; last answer ${res.status} ${res.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Writes `raw` (what no HTTP client sends: dot segments, broken headers) on a fresh TLS connection and reads until
 * the server closes it (or 10 s pass). The connection is not half-closed: Node's server would then drop answers
 * that take a moment.
 */
export function rawHttp(
  baseUrl: string,
  caPem: string,
  raw: string | Buffer,
): Promise<{ status: number; body: any; text: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), ca: caPem }, () => socket.write(raw));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 10 s')), 10_000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      let body: any;
      try {
        body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      } catch {
        body = undefined;
      }
      resolve({ status, body, text });
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
