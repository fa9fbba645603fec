/**
 * The requests this server makes to Kubernetes APIs, over @kubernetes/client-node's KubeConfig: the client says
 * where the server is and how to authenticate (CA, client certificate, bearer token, basic credentials, exec
 * credential plugins and auth-providers, its http(s) or socks proxy), read again for each request, so rotated
 * files and credentials are used as they change (a new connection when the TLS material changed). What the client
 * lacks is here: a bounded time per request (the credential plugin's run included); for servers that stored data
 * names, a bound on the bytes read of one answer or one watch event (past it the connection is cut, nothing more is
 * read; a request may set its own, as the pages of a list do) and the addresses connected to limited
 * (serverallowlist.ts); watches as JSON lines whose ERROR events end them; and HostClusterErrors that say the
 * operation, the HTTP status and the host's Status, or the network error, never a credential. The client's own
 * request layer (undici's fetch) and Watch read answers whole and unbounded; requests go through boundedrequest.ts,
 * over an agent per TLS material (tlsagents.ts).
 */
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type https from 'node:https';
import { isIP } from 'node:net';
import { isPlainObject } from '../apimachinery/types.js';
import { awayFromThread } from '../apimachinery/away.js';
import { inSpan, tracer } from '../tracing.js';
import { exchange, isTimeout, readAnswer, sendRequest, withinTime, type BoundedRequest } from './boundedrequest.js';
import type { KubeConnection } from './kubeconfigfile.js';
import { RefusedServerError, type ServerAllowList } from './serverallowlist.js';
import { TlsAgents } from './tlsagents.js';

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

/** An answer larger than the bound of its request or client: cut, nothing more read. */
export class AnswerTooLargeError extends HostClusterError {}

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
  /** A body already serialized as JSON, sent as it is in place of `body` (the audit webhook's batches). */
  json?: Buffer;
  /** Aborts the request after this long (default: the client's; 0 for none). */
  timeoutMs?: number;
  /** The Accept header (default application/json), e.g. METADATA_ONLY_LIST for only the items' metadata. */
  accept?: string;
  /** The body's Content-Type (default application/json), e.g. application/merge-patch+json for a PATCH. */
  contentType?: string;
  /** Given the texts of the answer's `Warning: 299` headers, when it has any (a client shows them, as kubectl does). */
  onWarnings?: (warnings: string[]) => void;
  /** The most bytes read of this answer (default: the client's maxResponseBytes); past it an AnswerTooLargeError. */
  maxResponseBytes?: number;
}

/** kube's metadata-only forms (client-go's metadata client): PartialObjectMetadata for a watch's events, and a list. */
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
export const METADATA_ONLY_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

export type WatchEvent = { type: string; object: Record<string, unknown> };

export interface KubeRequestsOptions {
  timeoutMs: number;
  /** The clock for re-reading the token file (tests move it). */
  now?: () => number;
  /**
   * The most bytes read of one answer, and of one watch event; past it (or when the answer's Content-Length says
   * more) the connection is cut and the request fails. Undefined: no bound.
   */
  maxResponseBytes?: number;
  /** The addresses connections may go to, checked as each is made; undefined: any. Not with a proxy. */
  allowedServers?: ServerAllowList;
}

/** How often a token file is read again (the client reads certificate and CA files for each request). */
export const FILE_REFRESH_MS = 60_000;

export class KubeRequests {
  readonly server: string;
  private readonly base: URL;
  private readonly proxied: boolean;
  private readonly tokenFile?: RereadFile;
  /** One agent, for the TLS material the client gave last: a new one (new connections) when it changed. */
  private readonly agents: TlsAgents;
  private readonly now: () => number;

  constructor(
    private readonly conn: KubeConnection,
    private readonly opts: KubeRequestsOptions,
  ) {
    const cluster = conn.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = cluster.server;
    this.base = new URL(cluster.server);
    this.proxied = !!cluster.proxyUrl;
    // Through a proxy the connection goes to the proxy's address, so the server's could not be checked.
    if (opts.allowedServers && this.proxied) throw new Error('a client limited to allowed servers takes no proxy');
    if (conn.tokenFile) this.tokenFile = new RereadFile(conn.tokenFile, 'token file');
    this.now = opts.now ?? Date.now;
    this.agents = new TlsAgents({
      protocol: this.base.protocol === 'http:' ? 'http:' : 'https:',
      lookup: opts.allowedServers?.lookup,
      capacity: 1,
    });
  }

  /** `method path` with a JSON body; the parsed answer. `what` names the operation in errors. */
  async request<T>(what: string, method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const body = opts.json ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
    // The span of a client call (as client-go's otelhttp transport): the operation, the path, never the body.
    const attributes = {
      'http.request.method': method,
      'server.address': this.base.host,
      'url.path': path,
      operation: what,
    };
    // Waiting on another server: the calling request's seats are not its flow's meanwhile (apimachinery/away.ts).
    return awayFromThread(() =>
      inSpan(`HTTP ${method}`, attributes, async (span) => {
        const limit = opts.maxResponseBytes ?? this.opts.maxResponseBytes;
        try {
          const { statusCode, text } = await exchange(
            () => this.prepare(method, path, opts.query, body, timeoutMs, opts.accept, opts.contentType),
            limit,
            (detail) => answerTooLarge(what, limit, detail),
            {
              onResponse: (res) => {
                span.setAttributes({ 'http.response.status_code': res.statusCode });
                const warnings = warningTexts(res.headers.warning);
                if (warnings.length) opts.onWarnings?.(warnings);
              },
            },
          );
          return parseAnswer<T>(what, statusCode, text);
        } catch (err) {
          throw toHostError(what, err, timeoutMs);
        }
      }),
    );
  }

  /**
   * GET `path` as a watch: `onEvent` for each event, `done` once when it ends (with the error, if any: an ERROR event
   * ends it with a HostClusterError carrying the Status's code). The answer's headers are awaited for the client's
   * timeout; the stream then stays open until the host ends it or stop(). `accept` as for request.
   */
  async watch(
    what: string,
    path: string,
    query: Record<string, string | undefined>,
    onEvent: (event: WatchEvent) => void,
    done: (err?: unknown) => void,
    accept?: string,
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
      const prepared = await this.prepare(
        'GET',
        path,
        { ...query, watch: 'true' },
        undefined,
        this.opts.timeoutMs,
        accept,
      );
      const res = await sendRequest({
        ...prepared,
        headersOnly: true,
        onRequest: (r) => {
          req = r;
        },
      });
      if (res.statusCode !== 200) {
        const limit = this.opts.maxResponseBytes;
        const text = await readAnswer(res, limit, (detail) => answerTooLarge(what, limit, detail));
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

  /**
   * The request to send: its URL (an address refused by the allow-list is refused here), the client's credentials
   * and TLS material for it, and what is left of `timeoutMs` once they are had.
   */
  private async prepare(
    method: string,
    path: string,
    query: Record<string, string | undefined> | undefined,
    body: string | Buffer | undefined,
    timeoutMs: number,
    accept = 'application/json',
    contentType = 'application/json',
  ): Promise<BoundedRequest> {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    // An address is connected to without a lookup, so it is checked here; names are checked as they resolve.
    const refusal = isIP(hostname) ? this.opts.allowedServers?.refusal(hostname, hostname) : undefined;
    if (refusal) throw new RefusedServerError(refusal);
    const started = Date.now();
    const tls = await withinTime(this.clientOptions(), timeoutMs);
    // The current span's traceparent, so the host's (or cluster's) apiserver may continue the trace.
    const headers: http.OutgoingHttpHeaders = {
      ...tracer().outgoingHeaders(),
      ...tls.headers,
      accept,
    };
    if (body !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = Buffer.byteLength(body);
    }
    const agent = this.proxied ? (tls.agent as http.Agent) : this.agents.for(tls);
    const left = timeoutMs > 0 ? Math.max(1, timeoutMs - (Date.now() - started)) : 0;
    return { url, method, headers, body, auth: tls.auth ?? undefined, agent, timeoutMs: left };
  }

  /**
   * What the client says of the current context for this request: TLS material, the Authorization and
   * Impersonate-User headers (running the credential plugin when its credential expired), basic credentials, and
   * for a proxy its agent; then what it lacks: the token file (wins over a token, as client-go) and impersonation
   * beyond `as`.
   */
  private async clientOptions(): Promise<
    Omit<https.RequestOptions, 'headers'> & { headers: http.OutgoingHttpHeaders }
  > {
    const opts: https.RequestOptions = {};
    try {
      await this.conn.kubeConfig.applyToHTTPSOptions(opts);
    } catch (err) {
      throw new CredentialError(`cannot get the credentials of the kubeconfig: ${firstLine(err)}`);
    }
    const headers: http.OutgoingHttpHeaders = { ...(opts.headers as http.OutgoingHttpHeaders | undefined) };
    const token = this.tokenFile?.read(this.now()).toString('utf8').trim();
    if (token) {
      delete headers.Authorization;
      headers.authorization = `Bearer ${token}`;
    }
    const imp = this.conn.impersonate;
    if (imp?.uid) headers['impersonate-uid'] = imp.uid;
    if (imp?.groups?.length) headers['impersonate-group'] = imp.groups;
    for (const [k, v] of Object.entries(imp?.extra ?? {})) headers[`impersonate-extra-${encodeURIComponent(k)}`] = v;
    return { ...opts, headers };
  }
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

/** The client could not give the credentials (a file it reads, a credential plugin that failed). */
class CredentialError extends Error {}

/** The first line of an error's message, at most 200 characters (a plugin's error output is its stderr). */
function firstLine(err: unknown): string {
  const line = (err instanceof Error ? err.message : String(err)).trim().split('\n')[0] || 'failed';
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}

/** The refusal of an answer larger than `limit`: its connection was cut, nothing more read. */
const answerTooLarge = (what: string, limit: number | undefined, detail: string) =>
  new AnswerTooLargeError(`${what}: the answer is larger than ${limit} bytes${detail}, the most read from this server`);

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
  const detail = typeof status?.message === 'string' ? `: ${shortened(status.message)}` : '';
  throw new HostClusterError(`${what}: the host cluster answered HTTP ${code}${detail}`, code, status);
}

/** The texts of `Warning: 299 - "<text>"` headers (RFC 7234, as kube sends them), unquoted. */
export function warningTexts(header: string | string[] | undefined): string[] {
  const all = Array.isArray(header) ? header : header ? [header] : [];
  return all.flatMap((h) =>
    [...h.matchAll(/\d{3} \S+ ("(?:[^"\\]|\\.)*")/g)].map((m) => {
      try {
        return shortened(JSON.parse(m[1]) as string);
      } catch {
        return shortened(m[1]);
      }
    }),
  );
}

/** The most characters of a server's Status message quoted in an error (it goes to logs and statuses). */
const MAX_QUOTED_MESSAGE = 512;

/** `text` cut to MAX_QUOTED_MESSAGE characters: a server (maybe a tenant's) chooses it, and its length. */
export function shortened(text: string): string {
  if (text.length <= MAX_QUOTED_MESSAGE) return text;
  return `${text.slice(0, MAX_QUOTED_MESSAGE)}... (${text.length - MAX_QUOTED_MESSAGE} more characters)`;
}

/** A short message: the operation and the timeout, the file that could not be read, or the network failure. */
function toHostError(what: string, err: unknown, timeoutMs: number): HostClusterError {
  if (err instanceof HostClusterError) return err;
  if (err instanceof FileError || err instanceof RefusedServerError || err instanceof CredentialError)
    return new HostClusterError(`${what}: ${err.message}`);
  const e = err as { name?: string; code?: string; message?: string };
  if (isTimeout(e)) return new HostClusterError(`${what}: the host cluster did not answer within ${timeoutMs}ms`);
  return new HostClusterError(`${what}: cannot reach the host cluster: ${e?.code ?? e?.message ?? String(err)}`);
}
