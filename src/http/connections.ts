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
 * On top of these, and with no kube equivalent (Go's server has no such bound either): at most
 * maxUnauthenticated connections may be open that have not yet had a request authenticated, handshakes included.
 * Connections beyond it are closed as they are accepted, so a flood of them holds a bounded number of sockets until
 * the header deadline frees them, and connections that have authenticated (kube-apiserver's, watches, keep-alive
 * clients) are served on.
 *
 * None of this cuts a request being served: a watch runs for as long as its own timeout says.
 */
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.js';

export interface ConnectionLimits {
  /** How long the TLS handshake, and then each request's line and headers, may take (kube: ReadHeaderTimeout). */
  headerTimeoutMs: number;
  /** How long a keep-alive connection may wait for its next request (kube: IdleTimeout). */
  idleTimeoutMs: number;
  /** Connections open at once that have not yet had a request authenticated. */
  maxUnauthenticated: number;
}

/** A flood is reported at most this often, with how many connections were closed since. */
const REFUSAL_WARNING_INTERVAL_MS = 60_000;

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
  /** Accepted TCP connections with no request authenticated yet. */
  private readonly unauthenticated = new Set<Socket>();
  /** The deadline of each handshake under way. */
  private readonly handshakes = new Map<Socket, NodeJS.Timeout>();

  private refusedSinceWarning = 0;
  private lastWarning = -Infinity;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log?: Logger,
  ) {}

  /** Bounds the handshakes and counts the connections of a server made with connectionServerOptions. */
  attach(server: Server): void {
    // Before the TLS layer's own listener, so a refused connection is never handshaken.
    server.prependListener('connection', (socket: Socket) => {
      if (this.unauthenticated.size >= this.limits.maxUnauthenticated) return this.refuse(socket);
      this.unauthenticated.add(socket);
      const deadline = setTimeout(() => socket.destroy(), this.limits.headerTimeoutMs).unref();
      this.handshakes.set(socket, deadline);
      socket.once('close', () => {
        clearTimeout(deadline);
        this.handshakes.delete(socket);
        this.unauthenticated.delete(socket);
      });
    });
    // From here on the header deadline and the idle timeout apply.
    server.on('secureConnection', (tls: TLSSocket) => {
      const socket = tcpSocketOf(tls);
      clearTimeout(this.handshakes.get(socket));
      this.handshakes.delete(socket);
    });
  }

  private refuse(socket: Socket): void {
    socket.destroy();
    this.refusedSinceWarning++;
    if (Date.now() - this.lastWarning < REFUSAL_WARNING_INTERVAL_MS) return;
    this.lastWarning = Date.now();
    this.log?.warn(
      'too many connections have not authenticated: new connections are closed until some authenticate or reach the header deadline',
      {
        maxUnauthenticated: this.limits.maxUnauthenticated,
        closed: this.refusedSinceWarning,
      },
    );
    this.refusedSinceWarning = 0;
  }

  /** A request on this connection was authenticated: the connection no longer counts against the bound. */
  authenticated(req: IncomingMessage): void {
    this.unauthenticated.delete(tcpSocketOf(req.socket as TLSSocket));
  }
}

/** The accepted TCP socket under a server-side TLS socket (Node keeps it as _parent). */
function tcpSocketOf(tls: TLSSocket): Socket {
  return (tls as TLSSocket & { _parent?: Socket })._parent ?? tls;
}
