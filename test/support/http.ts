/** A small HTTPS client for tests: raw status, headers and body, with the server's CA trusted. */
import { request } from 'node:https';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: any;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (string/Buffer), else JSON-encoded. */
  contentType?: string;
  headers?: Record<string, string>;
}

export const GROUP_PATH = '/apis/management.platform.sh/v1';

export class HttpClient {
  constructor(
    readonly baseUrl: string,
    private readonly ca: string,
    private readonly token?: string,
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

  request(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    const url = new URL(path, this.baseUrl);
    const headers: Record<string, string> = { ...opts.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' || Buffer.isBuffer(opts.body) ? Buffer.from(opts.body) : Buffer.from(JSON.stringify(opts.body));
      headers['Content-Type'] ??= opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, ca: this.ca, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }
}
