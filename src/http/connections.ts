/**
 * Bounds on connections, so that clients that connect and then say nothing, or say it slowly, cannot hold the
 * server's sockets. kube-apiserver's http.Server has ReadHeaderTimeout 32s (which Go also applies to the TLS
 * handshake) and IdleTimeout 90s; these are the same, in Node's terms:
 *
 * - the TLS handshake must be done within the header deadline, counted from the connection's accept. Node's own
 *   handshakeTimeout is an inactivity timer, which a client sending a byte now and then never lets fire;
 * - each request's line and headers must be received within the header deadline (Node's headersTimeout, checked
 *   every connectionsCheckingInterval; the 408 that follows is answered by answerClientErrors, which then closes);
 * - a keep-alive connection waiting for its next request is closed after the idle timeout (keepAliveTimeout).
 *
 * On top of these, and with no kube equivalent (Go's server has no such bounds either):
 *
 * - at most maxUnauthenticated connections may be open that have not yet had a request authenticated, handshakes
 *   included, and at most maxUnauthenticatedPerSource of them from one source (an IPv4 address, an IPv6 /64), so
 *   that one client cannot take them all. Connections beyond either are closed as they are accepted, so a flood
 *   holds a bounded number of sockets until its deadlines free them, and connections that have authenticated
 *   (watches, keep-alive clients) are served on;
 * - a connection whose TLS client certificate verified against the client CAs (the front proxy's: kube-apiserver's
 *   own connections) counts as authenticated from its handshake on: it holds a credential, and many of them come
 *   from one address;
 * - a connection that has sent no byte of a request firstByteTimeout after its handshake is closed, without an
 *   answer (there is no request to answer): it is what a flood holds longest. A request that has begun keeps the
 *   header deadline.
 *
 * None of this cuts a request being served: a watch runs for as long as its own timeout says.
 */
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.js';
import { connectionSource } from './connectionsource.js';

export interface ConnectionLimits {
  /** How long the TLS handshake, and then each request's line and headers, may take (kube: ReadHeaderTimeout). */
  headerTimeoutMs: number;
  /** How long a connection may wait after its handshake before the first byte of its first request. */
  firstByteTimeoutMs: number;
  /** How long a keep-alive connection may wait for its next request (kube: IdleTimeout). */
  idleTimeoutMs: number;
  /** Connections open at once that have not yet had a request authenticated. */
  maxUnauthenticated: number;
  /** Of those, how many may come from one source (connectionSource). */
  maxUnauthenticatedPerSource: number;
}

/** A flood is reported at most this often, with how many connections were closed since. */
const REFUSAL_WARNING_INTERVAL_MS = 60_000;

/** How many of the sources that reached their share a warning names (the first ones). */
const WARNING_SOURCES = 10;

/** Node's bound on receiving a whole request, body included (its default, made explicit): kube has none. */
const REQUEST_RECEIVE_TIMEOUT_MS = 300_000;

/** The server options that carry the limits: given to createServer, as some cannot be changed afterwards. */
export function connectionServerOptions(limits: ConnectionLimits): ServerOptions {
  return {
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: Math.max(REQUEST_RECEIVE_TIMEOUT_MS, limits.headerTimeoutMs),
    keepAliveTimeout: limits.idleTimeoutMs,
    handshakeTimeout: limits.headerTimeoutMs,
    // How often header deadlines are looked at (Node's default of 30 s would nearly double kube's 32 s).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headerTimeoutMs / 4))),
  };
}

export class ConnectionGuard {
  /** Accepted TCP connections with no request authenticated yet, and the source of each. */
  private readonly unauthenticated = new Map<Socket, string>();
  /** How many of them each source has open. */
  private readonly perSource = new Map<string, number>();
  /** The deadline of each handshake under way, then of each first request's first byte. */
  private readonly deadlines = new Map<Socket, NodeJS.Timeout>();

  /** Connections closed at each bound since the last warning, and the first sources closed at their share. */
  private closedSinceWarning = { atTotal: 0, atSourceShare: 0, sources: new Map<string, number>() };
  private lastWarning = -Infinity;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log?: Logger,
  ) {}

  /** Bounds the handshakes and counts the connections of a server made with connectionServerOptions. */
  attach(server: Server): void {
    // Before the TLS layer's own listener, so a refused connection is never handshaken.
    server.prependListener('connection', (socket: Socket) => {
      const source = connectionSource(socket.remoteAddress);
      if (this.unauthenticated.size >= this.limits.maxUnauthenticated) return this.refuse(socket, 'total', source);
      if ((this.perSource.get(source) ?? 0) >= this.limits.maxUnauthenticatedPerSource)
        return this.refuse(socket, 'source', source);
      this.unauthenticated.set(socket, source);
      this.perSource.set(source, (this.perSource.get(source) ?? 0) + 1);
      this.deadline(socket, this.limits.headerTimeoutMs, () => socket.destroy());
      socket.once('close', () => {
        this.deadline(socket);
        this.uncount(socket);
      });
    });
    // From here on the header deadline and the idle timeout apply, and the first byte's deadline.
    server.on('secureConnection', (tls: TLSSocket) => {
      const socket = tcpSocketOf(tls);
      // authorized: the certificate chains to a CA of ServingTls's client CA bundles (and only those).
      if (tls.authorized) return this.countAsAuthenticated(socket);
      // bytesRead counts the request bytes received (after decryption), whoever reads them.
      this.deadline(socket, this.limits.firstByteTimeoutMs, () => {
        if (tls.bytesRead === 0) socket.destroy();
      });
    });
  }

  /** A request on this connection was authenticated: the connection no longer counts against the bounds. */
  authenticated(req: IncomingMessage): void {
    this.countAsAuthenticated(tcpSocketOf(req.socket as TLSSocket));
  }

  private countAsAuthenticated(socket: Socket): void {
    this.deadline(socket);
    this.uncount(socket);
  }

  /** Calls `expired` on `socket` in `ms`, instead of its deadline so far; without `ms` it has none any more. */
  private deadline(socket: Socket, ms?: number, expired?: () => void): void {
    clearTimeout(this.deadlines.get(socket));
    this.deadlines.delete(socket);
    if (ms !== undefined && expired) this.deadlines.set(socket, setTimeout(expired, ms).unref());
  }

  private uncount(socket: Socket): void {
    const source = this.unauthenticated.get(socket);
    if (source === undefined) return;
    this.unauthenticated.delete(socket);
    const left = (this.perSource.get(source) ?? 1) - 1;
    if (left > 0) this.perSource.set(source, left);
    else this.perSource.delete(source);
  }

  private refuse(socket: Socket, bound: 'total' | 'source', source: string): void {
    socket.destroy();
    const closed = this.closedSinceWarning;
    if (bound === 'total') closed.atTotal++;
    else {
      closed.atSourceShare++;
      if (closed.sources.has(source) || closed.sources.size < WARNING_SOURCES)
        closed.sources.set(source, (closed.sources.get(source) ?? 0) + 1);
    }
    if (Date.now() - this.lastWarning < REFUSAL_WARNING_INTERVAL_MS) return;
    this.lastWarning = Date.now();
    this.log?.warn(
      'too many connections have not authenticated, in all or from one source: new ones are closed until some authenticate or reach their deadline',
      {
        maxUnauthenticated: this.limits.maxUnauthenticated,
        maxUnauthenticatedPerSource: this.limits.maxUnauthenticatedPerSource,
        closedAtTotal: closed.atTotal,
        closedAtSourceShare: closed.atSourceShare,
        // Which sources reached their share, with how many of their connections were closed.
        sources: Object.fromEntries(closed.sources),
      },
    );
    this.closedSinceWarning = { atTotal: 0, atSourceShare: 0, sources: new Map() };
  }
}

/** The accepted TCP socket under a server-side TLS socket (Node keeps it as _parent). */
function tcpSocketOf(tls: TLSSocket): Socket {
  return (tls as TLSSocket & { _parent?: Socket })._parent ?? tls;
}
