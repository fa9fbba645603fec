/**
 * HTTP/2 beside HTTP/1.1 on the one port, as kube-apiserver serves (http2.ConfigureServer): ALPN offers `h2` and
 * `http/1.1`, and a client that offers neither (or no ALPN at all) gets HTTP/1.1. Every client-go client (kubectl,
 * informers, the front proxy) takes h2 and multiplexes its requests and watches as streams of one connection.
 *
 * The handler chain is the same Express app for both. Express answers a request by swapping the prototypes of its
 * req and res for its own, which derive from http.IncomingMessage and http.ServerResponse: an Http2ServerRequest or
 * Http2ServerResponse would lose every accessor of its own (headers, url, socket, write, end: Node keeps their state
 * under private symbols). So an h2 request is given prototypes that lay Express's methods over Node's
 * Http2ServerRequest/Response ones, and goes into the app's router as app.handle sends it, less the swap. What the
 * chain reads of a request then means the same over both: req.socket is a per-stream stand-in whose 'close' and
 * destroy() are the stream's and whose other properties (remoteAddress, the peer certificate) the connection's.
 */
import type express from 'express';
import type { Express } from 'express';
import { Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  createSecureServer,
  Http2ServerRequest,
  Http2ServerResponse,
  type Http2SecureServer,
  type SecureServerOptions,
  type ServerHttp2Session,
} from 'node:http2';

/** The headers of a request that carries them as the h2 headers object does not: each value of a name apart. */
const distinct = Symbol('headersDistinct');

/** Node's bound on the header fields of an HTTP/1.1 request (its maxHeadersCount); HTTP/2's own default is 128. */
const MAX_HEADER_FIELDS = 2000;

/**
 * The stream bound when --http2-max-streams-per-connection is 0: kube-apiserver's (client-go's own initial bound,
 * so that a client opening streams past it is refused after a few hundred, not a thousand).
 */
export const DEFAULT_MAX_STREAMS = 100;

/**
 * What a stream may send before the server has read it, and the largest frame it takes: kube-apiserver's 256 KiB
 * (MaxUploadBufferPerStream, MaxReadFrameSize: "at least 99% of serialized resources ... were smaller"), so that most
 * request bodies arrive without waiting on a WINDOW_UPDATE. Node's own window is HTTP/2's 64 KiB.
 */
export const STREAM_WINDOW_BYTES = 256 * 1024;
/** How many streams' windows a connection's window holds (see createHttpsServer). */
const CONNECTION_WINDOW_STREAMS = 16;

export interface Http2Limits {
  /** --http2-max-streams-per-connection (0: DEFAULT_MAX_STREAMS). */
  maxStreamsPerConnection: number;
  /** The bound on a request's header fields, in bytes, as HTTP/1.1's maxHeaderSize. */
  maxHeaderBytes: number;
}

/**
 * The HTTPS server of both protocols around `app`, with `options` (TLS, HTTP/1.1's timeouts and header bound) and
 * the HTTP/2 limits.
 */
export function createHttpsServer(options: SecureServerOptions, limits: Http2Limits, app: Express): Http2SecureServer {
  const streams = limits.maxStreamsPerConnection || DEFAULT_MAX_STREAMS;
  const server = createSecureServer(
    {
      ...options,
      allowHTTP1: true,
      maxHeaderListPairs: MAX_HEADER_FIELDS,
      settings: {
        maxConcurrentStreams: streams,
        maxHeaderListSize: limits.maxHeaderBytes,
        initialWindowSize: STREAM_WINDOW_BYTES,
        maxFrameSize: STREAM_WINDOW_BYTES,
      },
    },
    serveBoth(app) as unknown as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  // The connection's window holds full windows for 16 streams at once (Node's is 64 KiB for all of them), so one
  // stream's unread body stalls not the others; kube holds one for each stream it allows (256 MiB at 1,000), which
  // is that much memory a connection may fill with bodies waiting in the queues: bounded here at 4 MiB.
  server.on('session', (session: ServerHttp2Session) =>
    session.setLocalWindowSize(STREAM_WINDOW_BYTES * Math.min(streams, CONNECTION_WINDOW_STREAMS)),
  );
  // A failed TLS handshake is no HTTP request to answer (clienterrors.ts): Node's HTTP/2 server hands it to
  // 'clientError', where node:https just closed the connection, as it is closed here.
  server.removeAllListeners('tlsClientError');
  server.on('tlsClientError', (_err: Error, socket: Socket) => socket.destroy());
  return server;
}

/** Whether a request (or its response) came as an HTTP/2 stream. */
export function isHttp2(message: IncomingMessage | ServerResponse): boolean {
  return message instanceof Http2ServerRequest || message instanceof Http2ServerResponse;
}

/** The request listener of both protocols: HTTP/1.1 as Express serves it, HTTP/2 through its router as said above. */
function serveBoth(app: Express): (req: IncomingMessage, res: ServerResponse) => void {
  const request = laidOver(Http2ServerRequest.prototype, app.request, {
    headersDistinct: {
      get(this: Http2ServerRequest & { [distinct]?: NodeJS.Dict<string[]> }) {
        return (this[distinct] ??= headersDistinct(this.rawHeaders));
      },
    },
  });
  const response = laidOver(Http2ServerResponse.prototype, app.response, {});
  return (req, res) => {
    if (!(req instanceof Http2ServerRequest)) return app(req, res);
    // A body of no stated length (kubectl create --raw -f streams its file) is what HTTP/1.1 calls chunked: said so
    // to the body reader and the flow control (body.ts, priorityandfairness.ts), which would read none otherwise.
    if (!req.stream.endAfterHeaders && req.headers['content-length'] === undefined)
      req.headers['transfer-encoding'] = 'chunked';
    // What app.handle does but the prototypes (res.req is the request already, and x-powered-by is off).
    Object.setPrototypeOf(req, request);
    Object.setPrototypeOf(res, response);
    const h2 = req as unknown as express.Request;
    const answer = res as unknown as express.Response;
    h2.res = answer;
    answer.locals ??= Object.create(null) as Record<string, unknown>;
    // The chain ends with the error handler, which answers every failure; a failure of its own is the stream's end.
    (app.router as unknown as Dispatch).handle(h2, answer, (err?: unknown) => {
      if (!answer.headersSent) answer.statusCode = err ? 500 : 404;
      answer.end();
    });
  };
}

/** What app.handle hands a request to (the router package's Router#handle, missing from Express's types). */
interface Dispatch {
  handle(req: express.Request, res: express.Response, done: (err?: unknown) => void): void;
}

/** A prototype with Express's methods (all of `expressProto`'s chain down to Node's) over `base`. */
function laidOver(base: object, expressProto: object, own: PropertyDescriptorMap): object {
  const layers: object[] = [];
  for (let p = expressProto; p && !Object.prototype.hasOwnProperty.call(p, 'constructor'); p = Object.getPrototypeOf(p))
    layers.unshift(p);
  const descriptors = Object.assign({}, ...layers.map((p) => Object.getOwnPropertyDescriptors(p)), own);
  return Object.create(base, descriptors);
}

/** IncomingMessage's headersDistinct from h2's raw headers: lowercase names, pseudo-headers left out. */
function headersDistinct(raw: string[]): NodeJS.Dict<string[]> {
  const headers: NodeJS.Dict<string[]> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (name.startsWith(':')) continue;
    (headers[name] ??= []).push(raw[i + 1]);
  }
  return headers;
}

/** What graceful shutdown closes (shutdown.ts), over both protocols. */
export interface ClosableServer {
  /** Stops listening, and sends GOAWAY on every HTTP/2 connection (its streams in flight go on); `done` once all are closed. */
  close(done: () => void): void;
  /** Closes the HTTP/1.1 connections that are between requests. */
  closeIdleConnections(): void;
  /** Closes every connection left, HTTP/2 ones with their streams. */
  closeAllConnections(): void;
}

/** `server` as shutdown closes it: Node's Http2SecureServer has no closeAllConnections, and keeps its sessions to itself. */
export function closable(server: Http2SecureServer): ClosableServer {
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  return {
    close: (done) => server.close(() => done()),
    // The HTTP/1.1 connections, which Node tracks on this server as on an http.Server (allowHTTP1).
    closeIdleConnections: () => HttpServer.prototype.closeIdleConnections.call(server),
    closeAllConnections: () => {
      HttpServer.prototype.closeAllConnections.call(server);
      for (const session of sessions) session.destroy();
    },
  };
}
