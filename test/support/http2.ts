/**
 * An HTTP/2 client for tests (node:http2, as client-go speaks to the server): one connection, whose requests and
 * watches are streams of it.
 */
import { connect, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { HttpResponse } from './http.js';
import { DEFAULT_WAIT_MS, WatchStream } from './watch.js';

export interface Http2Response extends HttpResponse {
  headers: IncomingHttpHeaders;
}

export class Http2Client {
  readonly session: ClientHttp2Session;
  /** Resolves once the server's SETTINGS have come (the session is usable before). */
  readonly ready: Promise<void>;

  constructor(
    baseUrl: string,
    ca: string,
    private readonly token?: string,
    /** A TLS client certificate (a TestCert fits). */
    cert?: { keyPem: string; certPem: string },
  ) {
    this.session = connect(baseUrl, { ca, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) });
    // A session the server ends (GOAWAY, a cut) must not fail the test by an unheard error.
    this.session.on('error', () => {});
    this.ready = new Promise((resolve, reject) => {
      this.session.once('remoteSettings', () => resolve());
      this.session.once('error', reject);
    });
  }

  /** The request's stream, its body sent (and the stream ended) unless `open` says to keep writing. */
  open(
    method: string,
    path: string,
    opts: { body?: unknown; contentType?: string; headers?: Record<string, string | string[]>; open?: boolean } = {},
  ): ClientHttp2Stream {
    const headers: Record<string, string | string[]> = { ':method': method, ':path': path, ...opts.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const body =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string' || Buffer.isBuffer(opts.body)
          ? opts.body
          : JSON.stringify(opts.body);
    if (body !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const stream = this.session.request(headers, { endStream: body === undefined && !opts.open });
    if (body !== undefined && !opts.open) stream.end(body);
    return stream;
  }

  request(
    method: string,
    path: string,
    opts: { body?: unknown; contentType?: string; headers?: Record<string, string | string[]> } = {},
  ): Promise<Http2Response> {
    return answerOf(this.open(method, path, opts));
  }

  get(path: string) {
    return this.request('GET', path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.session.closed) return resolve();
      this.session.close(() => resolve());
    });
  }
}

/** The whole answer of a request's stream. */
export function answerOf(stream: ClientHttp2Stream): Promise<Http2Response> {
  return new Promise((resolve, reject) => {
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      resolve({ status: Number(headers[':status']), headers, text, body });
    });
  });
}

/** A watch as a stream of `client`'s connection (watch=true added); resolves once its headers have come. */
export function openWatch2(client: Http2Client, path: string): Promise<WatchStream> {
  const url = new URL(path, 'https://x');
  if (!url.searchParams.has('watch')) url.searchParams.set('watch', 'true');
  return new Promise((resolve, reject) => {
    const stream = client.open('GET', `${url.pathname}${url.search}`);
    const watch = new WatchStream(stream);
    const timer = setTimeout(() => {
      stream.destroy();
      reject(new Error(`no response headers for ${path} within ${DEFAULT_WAIT_MS} ms`));
    }, DEFAULT_WAIT_MS);
    stream.on('response', (headers) => {
      clearTimeout(timer);
      watch.status = Number(headers[':status']);
      watch.headers = headers;
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => watch.push(chunk));
      stream.on('end', () => watch.finish());
      // A stream reset by the server (its code: NGHTTP2_CANCEL, ...) ends with 'close' and no 'end'.
      stream.on('close', () => watch.finish(new Error(`stream closed with code ${stream.rstCode}`)));
      resolve(watch);
    });
    stream.on('error', (err) => {
      clearTimeout(timer);
      watch.finish(err);
      reject(err);
    });
  });
}
