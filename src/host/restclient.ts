/**
 * JSON requests to a Kubernetes API server over node:http(s), for the few calls this server makes to its host
 * cluster (and to virtual clusters): the connection's CA, client certificate and bearer token, files among them
 * read again at most once a minute (service account tokens and certificates rotate, as client-go re-reads them),
 * keep-alive connections, an optional http(s) proxy, a bounded time per request, and watches as JSON lines.
 * For servers that stored data names (virtual clusters), the bytes read of one answer or one watch event can be
 * bounded (past the bound the connection is cut, nothing more is read) and the addresses connected to limited
 * (serverallowlist.ts). Failures are HostClusterErrors: the operation, the HTTP status and the host's Status, or
 * the network error; never a credential.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { isPlainObject } from '../apimachinery/types.js';
import type { HostConnection } from './kubeconfig.js';
import { RefusedServerError, type ServerAllowList } from './serverallowlist.js';

/** The host cluster could not be asked: unreachable, timed out, or it answered with an error status. */
export class HostClusterError extends Error {
  constructor(
    message: string,
    /** The HTTP status when the host answered; undefined for network errors and timeouts. */
    readonly code?: number,
    /** The host's Status (kind, reason, message, details), when it sent one. */
    readonly status?: KubeStatus,
  ) {
    super(message);
    this.name = 'HostClusterError';
  }
}

export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: unknown;
}

export interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  /** Aborts the request after this long (default: the client's; 0 for none). */
  timeoutMs?: number;
}

export type WatchEvent = { type: string; object: Record<string, unknown> };

export interface RestClientOptions {
  timeoutMs: number;
  /** The clock for re-reading files (tests move it). */
  now?: () => number;
  /**
   * The most bytes read of one answer, and of one watch event; past it (or when the answer's Content-Length says
   * more) the connection is cut and the request fails. Undefined: no bound.
   */
  maxResponseBytes?: number;
  /** The addresses connections may go to, checked as each is made; undefined: any. Not with a proxy. */
  allowedServers?: ServerAllowList;
}

/** How often token, certificate and CA files are read again. */
export const FILE_REFRESH_MS = 60_000;

/**
 * How long a kept-alive connection may sit unused before it is closed (an agent's socket timeout closes idle
 * connections only; one in use, a watch say, is left alone), so one-off clients (a virtual cluster's) leave none open.
 */
const IDLE_CONNECTION_MS = 30_000;

export class RestClient {
  private readonly base: URL;
  private readonly files = new Map<string, RereadFile>();
  private agent?: { material: TlsMaterial; agent: http.Agent };
  private readonly data: TlsMaterial;
  private readonly now: () => number;

  constructor(
    private readonly conn: HostConnection,
    private readonly opts: RestClientOptions,
  ) {
    this.base = new URL(conn.server);
    // Through a proxy the connection goes to the proxy's address, so the server's could not be checked.
    if (opts.allowedServers && conn.proxyUrl) throw new Error('a client limited to allowed servers takes no proxy');
    this.data = [b64(conn.caData), b64(conn.certData), b64(conn.keyData)];
    this.now = opts.now ?? Date.now;
  }

  get server(): string {
    return this.conn.server;
  }

  /** `method path` with a JSON body; the parsed answer. `what` names the operation in errors. */
  async request<T>(what: string, method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.send(method, path, opts.query, body, timeoutMs, false);
        const text = await readBody(res, what, this.opts.maxResponseBytes);
        return parseAnswer<T>(what, res.statusCode ?? 0, text);
      } catch (err) {
        // A kept-alive connection the host closed as it was reused: the request never reached it; once more.
        if (
          attempt === 0 &&
          (err as ReusedSocketError).reusedSocket &&
          (err as { code?: string }).code === 'ECONNRESET'
        )
          continue;
        throw toHostError(what, err, timeoutMs);
      }
    }
  }

  /**
   * GET `path` as a watch: `onEvent` for each event, `done` once when it ends (with the error, if any: an ERROR event
   * ends it with a HostClusterError carrying the Status's code). The answer's headers are awaited for the client's
   * timeout; the stream then stays open until the host ends it or stop().
   */
  async watch(
    what: string,
    path: string,
    query: Record<string, string | undefined>,
    onEvent: (event: WatchEvent) => void,
    done: (err?: unknown) => void,
  ): Promise<{ stop(): void }> {
    let ended = false;
    let req: http.ClientRequest | undefined;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      req?.destroy();
      done(err);
    };
    const handle = {
      stop() {
        ended = true;
        req?.destroy();
      },
    };
    try {
      const res = await this.send(
        'GET',
        path,
        { ...query, watch: 'true' },
        undefined,
        this.opts.timeoutMs,
        true,
        (r) => {
          req = r;
        },
      );
      if (res.statusCode !== 200) {
        const text = await readBody(res, what, this.opts.maxResponseBytes);
        parseAnswer(what, res.statusCode ?? 0, text);
        throw new HostClusterError(`${what}: the host cluster answered HTTP ${res.statusCode}`, res.statusCode);
      }
      res.socket?.setKeepAlive(true, 30_000);
      const limit = this.opts.maxResponseBytes;
      // The current line's bytes so far; a newline byte never occurs inside a UTF-8 character.
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      const tooLarge = () =>
        end(new HostClusterError(`${what}: the host cluster sent a watch event larger than ${limit} bytes`));
      res.on('data', (chunk: Buffer) => {
        let start = 0;
        let nl: number;
        while ((nl = chunk.indexOf(0x0a, start)) >= 0) {
          const part = chunk.subarray(start, nl);
          start = nl + 1;
          if (limit !== undefined && pendingBytes + part.length > limit) return tooLarge();
          const line = (pending.length ? Buffer.concat([...pending, part]) : part).toString('utf8').trim();
          pending = [];
          pendingBytes = 0;
          if (!line || ended) continue;
          let event: WatchEvent;
          try {
            event = JSON.parse(line);
          } catch {
            return end(new HostClusterError(`${what}: the host cluster sent a watch event that is not JSON`));
          }
          // An ERROR event (410 Gone, say) ends the watch with the host's Status as the error.
          if (event.type === 'ERROR') {
            const status = event.object as { message?: string; code?: number } | undefined;
            return end(new HostClusterError(`${what}: ${status?.message ?? 'error event'}`, status?.code));
          }
          onEvent(event);
        }
        const rest = chunk.subarray(start);
        pendingBytes += rest.length;
        if (limit !== undefined && pendingBytes > limit) return tooLarge();
        if (rest.length) pending.push(rest);
      });
      res.on('end', () => end());
      res.on('error', (err) => end(toHostError(what, err, 0)));
      res.on('close', () => end());
    } catch (err) {
      end(err instanceof HostClusterError ? err : toHostError(what, err, this.opts.timeoutMs));
    }
    return handle;
  }

  /** Sends the request; resolves with the answer's headers, or rejects (timeouts included). */
  private send(
    method: string,
    path: string,
    query: Record<string, string | undefined> | undefined,
    body: string | undefined,
    timeoutMs: number,
    headersOnly: boolean,
    onRequest?: (req: http.ClientRequest) => void,
  ): Promise<http.IncomingMessage> {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const headers: http.OutgoingHttpHeaders = { accept: 'application/json', ...this.authHeaders() };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const agent = this.currentAgent();
    const proxied = this.conn.proxyUrl && url.protocol === 'http:';
    const target = proxied ? new URL(this.conn.proxyUrl!) : url;
    const mod = target.protocol === 'https:' ? https : http;
    const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1');
    // An address is connected to without a lookup, so it is checked here; names are checked as they resolve.
    const refusal = isIP(hostname) ? this.opts.allowedServers?.refusal(hostname, hostname) : undefined;
    if (refusal) return Promise.reject(new RefusedServerError(refusal));
    return new Promise((resolve, reject) => {
      let response: http.IncomingMessage | undefined;
      const req = mod.request(
        {
          protocol: target.protocol,
          hostname,
          port: target.port || undefined,
          path: proxied ? url.href : url.pathname + url.search,
          method,
          headers: proxied ? { ...headers, ...proxyAuthorization(this.conn.proxyUrl!) } : headers,
          agent: proxied ? undefined : agent,
        },
        (res) => {
          response = res;
          if (timer && headersOnly) clearTimeout(timer);
          res.once('end', () => timer && clearTimeout(timer));
          res.once('close', () => timer && clearTimeout(timer));
          resolve(res);
        },
      );
      onRequest?.(req);
      // Before the answer the request fails with the timeout; while its body is read, the answer does.
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              const err = Object.assign(new Error('timed out'), { name: 'TimeoutError' });
              if (response) response.destroy(err);
              else req.destroy(err);
            }, timeoutMs)
          : undefined;
      req.on('error', (err) => {
        if (timer) clearTimeout(timer);
        reject(Object.assign(err, { reusedSocket: req.reusedSocket }));
      });
      req.end(body);
    });
  }

  /** Authorization and impersonation headers; the token file, when given, wins over the token (as client-go). */
  private authHeaders(): http.OutgoingHttpHeaders {
    const c = this.conn;
    const h: http.OutgoingHttpHeaders = {};
    const token = (c.tokenFile ? this.file(c.tokenFile, 'token file').toString('utf8').trim() : '') || c.token;
    if (token) h.authorization = `Bearer ${token}`;
    else if (c.username !== undefined || c.password !== undefined)
      h.authorization = `Basic ${Buffer.from(`${c.username ?? ''}:${c.password ?? ''}`).toString('base64')}`;
    const imp = c.impersonate;
    if (imp?.user) h['impersonate-user'] = imp.user;
    if (imp?.uid) h['impersonate-uid'] = imp.uid;
    if (imp?.groups?.length) h['impersonate-group'] = imp.groups;
    for (const [k, v] of Object.entries(imp?.extra ?? {})) h[`impersonate-extra-${encodeURIComponent(k)}`] = v;
    return h;
  }

  /** The agent for the current CA and client certificate; a new one (new connections) when they changed. */
  private currentAgent(): http.Agent {
    const c = this.conn;
    const material: TlsMaterial = [
      c.caFile ? this.file(c.caFile, 'certificate authority file') : this.data[0],
      c.certFile ? this.file(c.certFile, 'client certificate file') : this.data[1],
      c.keyFile ? this.file(c.keyFile, 'client key file') : this.data[2],
    ];
    if (this.agent && sameMaterial(this.agent.material, material)) return this.agent.agent;
    const [ca, cert, key] = material;
    if (this.agent) retire(this.agent.agent);
    const lookup = this.opts.allowedServers?.lookup;
    const tlsOptions: https.AgentOptions = {
      keepAlive: true,
      timeout: IDLE_CONNECTION_MS,
      lookup,
      ca,
      cert,
      key,
      rejectUnauthorized: !c.insecureSkipTLSVerify,
      servername: c.tlsServerName,
    };
    const agent =
      this.base.protocol === 'http:'
        ? new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS, lookup })
        : c.proxyUrl
          ? new ConnectProxyAgent(new URL(c.proxyUrl), tlsOptions)
          : new https.Agent(tlsOptions);
    this.agent = { material, agent };
    return agent;
  }

  private file(path: string, label: string): Buffer {
    let f = this.files.get(path);
    if (!f) this.files.set(path, (f = new RereadFile(path, label)));
    return f.read(this.now());
  }
}

/** An agent no longer used: its idle connections are closed now, those in use (a watch, say) when they end. */
function retire(agent: http.Agent): void {
  agent.maxFreeSockets = 0;
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/** A file read again when older than FILE_REFRESH_MS; a failed re-read keeps the last good content. */
class RereadFile {
  private content?: Buffer;
  private readAt = 0;

  constructor(
    private readonly path: string,
    private readonly label: string,
  ) {}

  read(now: number): Buffer {
    if (this.content && now - this.readAt < FILE_REFRESH_MS) return this.content;
    try {
      this.content = readFileSync(this.path);
      this.readAt = now;
    } catch (err) {
      if (!this.content)
        throw new FileError(`cannot read the ${this.label} ${this.path} (${(err as NodeJS.ErrnoException).code})`);
    }
    return this.content;
  }
}

class FileError extends Error {}

/** An https agent whose connections go through an http(s) proxy's CONNECT, TLS to the server inside. */
class ConnectProxyAgent extends https.Agent {
  constructor(
    private readonly proxy: URL,
    opts: https.AgentOptions,
  ) {
    super(opts);
  }

  override createConnection(
    options: tls.ConnectionOptions & { host?: string; port?: number },
    cb: (err: Error | null, socket?: Duplex) => void,
  ): undefined {
    const p = this.proxy;
    const hostPort = `${options.host?.includes(':') ? `[${options.host}]` : options.host}:${options.port}`;
    const req = (p.protocol === 'https:' ? https : http).request({
      hostname: p.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: p.port || undefined,
      method: 'CONNECT',
      path: hostPort,
      headers: { host: hostPort, ...proxyAuthorization(p.href) },
      agent: false,
    });
    req.once('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return cb(Object.assign(new Error(`proxy answered HTTP ${res.statusCode}`), { code: 'EPROXY' }));
      }
      cb(null, tls.connect({ ...options, socket }));
    });
    req.once('error', (err) => cb(err));
    req.end();
    return undefined;
  }
}

/** Basic credentials of a proxy URL's user info, as a Proxy-Authorization header. */
function proxyAuthorization(proxyUrl: string): http.OutgoingHttpHeaders {
  const p = new URL(proxyUrl);
  if (!p.username && !p.password) return {};
  const creds = `${decodeURIComponent(p.username)}:${decodeURIComponent(p.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(creds).toString('base64')}` };
}

/** CA, client certificate and key, as read. */
type TlsMaterial = [Buffer | undefined, Buffer | undefined, Buffer | undefined];

const sameMaterial = (a: TlsMaterial, b: TlsMaterial) =>
  a.every((x, i) => x === b[i] || (x !== undefined && b[i] !== undefined && x.equals(b[i]!)));

type ReusedSocketError = Error & { reusedSocket?: boolean };

const b64 = (data: string | undefined) => (data ? Buffer.from(data, 'base64') : undefined);

/**
 * The answer's body as text: at most `limit` bytes, else a HostClusterError and the connection cut (destroying the
 * answer destroys its socket), so nothing more is read; an answer whose Content-Length says more is refused at once.
 */
function readBody(res: http.IncomingMessage, what: string, limit: number | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const refuse = (detail: string) => {
      res.destroy();
      reject(
        new HostClusterError(
          `${what}: the answer is larger than ${limit} bytes${detail}, the most read from this server`,
        ),
      );
    };
    const announced = Number(res.headers['content-length']);
    if (limit !== undefined && announced > limit) return refuse(` (Content-Length ${announced})`);
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (limit !== undefined && size > limit) return refuse('');
      chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    // A connection cut before the end is an 'error' too (ECONNRESET), as is the timeout's destroy().
  });
}

/** The parsed answer of a 2xx; else a HostClusterError with the HTTP status and the host's Status message. */
function parseAnswer<T>(what: string, code: number, text: string): T {
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    if (code >= 200 && code < 300)
      throw new HostClusterError(
        `${what}: the host cluster answered HTTP ${code} with something other than JSON`,
        code,
      );
  }
  if (code >= 200 && code < 300) return body as T;
  const status = isPlainObject(body) ? (body as KubeStatus) : undefined;
  const detail = typeof status?.message === 'string' ? `: ${status.message}` : '';
  throw new HostClusterError(`${what}: the host cluster answered HTTP ${code}${detail}`, code, status);
}

/** A short message: the operation and the timeout, the file that could not be read, or the network failure. */
function toHostError(what: string, err: unknown, timeoutMs: number): HostClusterError {
  if (err instanceof HostClusterError) return err;
  if (err instanceof FileError || err instanceof RefusedServerError)
    return new HostClusterError(`${what}: ${err.message}`);
  const e = err as { name?: string; code?: string; message?: string };
  if (e?.name === 'TimeoutError')
    return new HostClusterError(`${what}: the host cluster did not answer within ${timeoutMs}ms`);
  return new HostClusterError(`${what}: cannot reach the host cluster: ${e?.code ?? e?.message ?? String(err)}`);
}
