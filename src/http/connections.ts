/**
 * Bounds on connections, so that clients that connect and then say nothing, or say it slowly, cannot hold the
 * server's sockets. kube-apiserver's http.Server has ReadHeaderTimeout 32s (which Go also applies to the TLS
 * handshake) and IdleTimeout 90s; these are the same, in Node's terms:
 *
 * - the TLS handshake must be done within the header deadline, counted from the connection's accept (or, for one
 *   that waited, below, from when it was taken on). Node's own handshakeTimeout is an inactivity timer, which a
 *   client sending a byte now and then never lets fire;
 * - each request's line and headers must be received within the header deadline (Node's headersTimeout, checked
 *   every connectionsCheckingInterval; the 408 that follows is answered by answerClientErrors, which then closes);
 * - a keep-alive connection waiting for its next request is closed after the idle timeout (keepAliveTimeout); an
 *   HTTP/2 connection with no stream open is told GOAWAY after as long (Go's http2 IdleTimeout, kube's 90s too).
 *
 * On top of these, and with no kube equivalent (Go's server handshakes every connection at once, each on a goroutine
 * of its own, and refuses none; here one thread serves everything, so what it takes on at once is bounded, and what
 * is beyond waits):
 *
 * - at most maxUnauthenticated connections are taken on at once that have not yet had a request authenticated,
 *   handshakes included, and at most maxUnauthenticatedPerSource of them from one source (an IPv4 address, an IPv6
 *   /64): a small part of the bound, so that a few sources cannot fill it and a new client (the admin's) finds room
 *   while they flood. Connections that have authenticated (watches, keep-alive clients) are not counted;
 * - a connection beyond either waits as it was accepted, neither handshaken nor read (its bytes stay in the
 *   kernel), in a queue per source (sourcequeues.ts). As room frees (a connection authenticates or closes), the
 *   waiting source that holds the fewest is taken first, those that hold as many in turn (one that had a request
 *   authenticated within the last hour before the others, one of the latest MAX_KNOWN_SOURCES_PER_USER of its
 *   user's: the admin's address, not one of a thousand that each flood with a few silent connections, whether
 *   anonymous or with one tenant's token): a full bound is shared among the sources that want it, and a client that
 *   just came is not behind a flood. A connection is closed only
 *   when it has waited waitTimeoutMs (a Go client gives its TLS handshake 10 s) or when maxWaiting connections wait
 *   already: then the newest of the source with the most waiting goes (the newcomer, if its source has as many), so
 *   that one source cannot fill the queue to shut others out. Both are counted and logged, at most once a minute
 *   for each;
 * - a connection whose TLS client certificate verified against the client CAs (the front proxy's: kube-apiserver's
 *   own connections) counts as authenticated from its handshake on: it holds a credential, and many of them come
 *   from one address. Which connection has one is known only from its handshake, so its source is remembered for
 *   VERIFIED_SOURCE_MEMORY_MS: that source's connections go before every anonymous source's, and beyond the global
 *   bound (still within their source's share), so kube-apiserver's new connections never wait behind anonymous
 *   ones from elsewhere. (Anonymous connections from its own address share its queue: an address is all there is
 *   to tell them apart before the handshake.);
 * - a connection that has sent no byte of a request firstByteTimeout after its handshake is closed, without an
 *   answer (there is no request to answer): it is what a flood holds longest. A request that has begun keeps the
 *   header deadline. Over HTTP/2 it is the first stream that must have come by then (the client's preface and
 *   SETTINGS are no request; a stream comes with its headers whole).
 *
 * An HTTP/2 connection is one connection here, whatever its streams: it counts as unauthenticated until a request
 * of one of its streams is authenticated, and its streams are bounded by --http2-max-streams-per-connection.
 *
 * None of this cuts a request being served: a watch runs for as long as its own timeout says.
 */
import type { IncomingMessage } from 'node:http';
import type { ServerOptions } from 'node:https';
import type { Socket } from 'node:net';
import type { ServerHttp2Session } from 'node:http2';
import type { Server, TLSSocket } from 'node:tls';
import type { Logger } from '../log.js';
import { connectionSource } from './connectionsource.js';
import { RecentSources } from './recentsources.js';
import { SourceQueues } from './sourcequeues.js';
import { takeConnections, type HandOn } from './takeconnections.js';

export interface ConnectionLimits {
  /** How long the TLS handshake, and then each request's line and headers, may take (kube: ReadHeaderTimeout). */
  headerTimeoutMs: number;
  /** How long a connection may wait after its handshake before the first byte of its first request. */
  firstByteTimeoutMs: number;
  /** How long a keep-alive connection may wait for its next request (kube: IdleTimeout). */
  idleTimeoutMs: number;
  /** Connections taken on at once that have not yet had a request authenticated. */
  maxUnauthenticated: number;
  /** Of those, how many may come from one source (connectionSource). */
  maxUnauthenticatedPerSource: number;
  /** Connections waiting, unread, for room within the two bounds above. */
  maxWaiting: number;
  /** How long a connection may wait for that room (the header deadline counts from when it is taken on). */
  waitTimeoutMs: number;
}

/** Why a connection was closed before its handshake: the wait queue was full, or it waited too long. */
type Closure = 'queueFull' | 'waitDeadline';

/** Closures of each kind are reported at most this often, with how many connections were closed since. */
const CLOSURE_WARNING_INTERVAL_MS = 60_000;

/** How many of the sources whose connections were closed a warning names (the first ones). */
const WARNING_SOURCES = 10;

/**
 * How long a source that presented a verified client certificate is taken for the front proxy's: kube-apiserver
 * keeps talking to its APIServices (availability checks, discovery, OpenAPI), and its address changes only when it
 * moves.
 */
const VERIFIED_SOURCE_MEMORY_MS = 3_600_000;

/**
 * How long a source that had a request authenticated (a person's kubectl, a controller, a CI runner) is remembered:
 * its new connections are taken on before those of sources that hold as few, when the bound is full.
 */
const KNOWN_SOURCE_MEMORY_MS = 3_600_000;

/** Sources remembered of each kind at most (the least recent forgotten): a map entry of about 100 bytes each. */
const MAX_REMEMBERED_SOURCES = 10_000;

/**
 * Sources remembered for one user at most (the least recent forgotten): a tenant that authenticates from every
 * address of 127.0.0.0/8 (or of its IPv6 /48) would otherwise make them all as known as the admin's, and push the
 * admin's out of the 10,000.
 */
const MAX_KNOWN_SOURCES_PER_USER = 8;

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
    // A connection is not read until it is taken on: one that waits costs a socket, not its client's bytes.
    pauseOnConnect: true,
  };
}

export class ConnectionGuard {
  /** Connections taken on with no request authenticated yet, and the source of each. */
  private readonly unauthenticated = new Map<Socket, string>();
  /** How many of them each source has. */
  private readonly perSource = new Map<string, number>();
  /** Connections waiting to be taken on, by source, and the deadline of each. */
  private readonly waiting = new SourceQueues<Socket>();
  private readonly waitDeadlines = new Map<Socket, NodeJS.Timeout>();
  /** The deadline of each handshake (from when it is taken on), then of each first request's first byte. */
  private readonly deadlines = new Map<Socket, NodeJS.Timeout>();
  /** Sources of connections with a verified client certificate. */
  private readonly verifiedSources = new RecentSources(VERIFIED_SOURCE_MEMORY_MS, MAX_REMEMBERED_SOURCES);
  /** Sources that had a request authenticated. */
  private readonly knownSources = new RecentSources(
    KNOWN_SOURCE_MEMORY_MS,
    MAX_REMEMBERED_SOURCES,
    MAX_KNOWN_SOURCES_PER_USER,
  );
  /** The source of each connection that has had a request authenticated, not to work it out on each request. */
  private readonly sourceOf = new WeakMap<Socket, string>();
  /** The next step of a connection taken on: the handshake turns (and then the TLS layer). */
  private handOn: HandOn = () => {};

  /** Connections closed for each reason since the last warning, and the first sources they came from. */
  private closedSinceWarning = { queueFull: 0, waitDeadline: 0, sources: new Map<string, number>() };
  private readonly lastWarning: Record<Closure, number> = { queueFull: -Infinity, waitDeadline: -Infinity };

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log?: Logger,
  ) {}

  /**
   * Bounds the handshakes and counts the connections of a server made with connectionServerOptions. Attach after
   * HandshakeTurns: a connection goes to its turn once it is taken on here.
   */
  attach(server: Server): void {
    this.handOn = takeConnections(server, (socket) => this.accepted(socket));
    // An HTTP/2 connection's session, made as its handshake ends (just before 'secureConnection' below).
    server.on('session', (session: ServerHttp2Session) => this.session(session));
    // From here on the header deadline and the idle timeout apply, and the first byte's deadline.
    server.on('secureConnection', (tls: TLSSocket) => {
      const socket = tcpSocketOf(tls);
      // authorized: the certificate chains to a CA of ServingTls's client CA bundles (and only those).
      if (tls.authorized) {
        this.verifiedSources.remember(this.unauthenticated.get(socket) ?? connectionSource(socket.remoteAddress));
        return this.countAsAuthenticated(socket);
      }
      // The first stream's deadline is the session's (below).
      if (tls.alpnProtocol === 'h2') return;
      // bytesRead counts the request bytes received (after decryption), whoever reads them.
      this.deadline(socket, this.limits.firstByteTimeoutMs, () => {
        if (tls.bytesRead === 0) socket.destroy();
      });
    });
  }

  /**
   * An HTTP/2 connection: closed when no stream has come by the first byte's deadline, and told GOAWAY when it has
   * had none open for the idle timeout (its client opens a new connection for its next request).
   */
  private session(session: ServerHttp2Session): void {
    // session.socket stands in for the TLS socket, passing on its properties.
    const socket = tcpSocketOf(session.socket as TLSSocket);
    this.deadline(socket, this.limits.firstByteTimeoutMs, () => socket.destroy());
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    session.on('stream', (stream) => {
      // The first byte's deadline is met (a stream comes with its headers whole).
      if (open++ === 0) this.deadline(socket);
      clearTimeout(idle);
      stream.once('close', () => {
        if (--open === 0 && !session.closed)
          idle = setTimeout(() => session.close(), this.limits.idleTimeoutMs).unref();
      });
    });
    session.once('close', () => clearTimeout(idle));
  }

  /**
   * A request on this connection was authenticated as `user`: the connection no longer counts against the bounds,
   * and its source is known (one of the user's latest few).
   */
  authenticated(req: IncomingMessage, user: string): void {
    const socket = tcpSocketOf(req.socket as TLSSocket);
    let source = this.sourceOf.get(socket);
    if (source === undefined) {
      source = this.unauthenticated.get(socket) ?? connectionSource(socket.remoteAddress);
      this.sourceOf.set(socket, source);
    }
    this.knownSources.remember(source, user);
    this.countAsAuthenticated(socket);
  }

  private accepted(socket: Socket): void {
    const source = connectionSource(socket.remoteAddress);
    // Until the TLS layer has it, nothing else hears its errors: unheard, one would end the process.
    socket.on('error', () => socket.destroy());
    socket.once('close', () => {
      this.deadline(socket);
      this.stopWaiting(socket, source);
      this.uncount(socket);
    });
    // Behind its source's connections that wait already, if any.
    if (!this.waiting.lengthOf(source) && this.hasRoom(source)) this.takeOn(socket, source);
    else this.wait(socket, source);
  }

  /** Whether a connection of `source` may be taken on now. */
  private hasRoom(source: string): boolean {
    if ((this.perSource.get(source) ?? 0) >= this.limits.maxUnauthenticatedPerSource) return false;
    return this.unauthenticated.size < this.limits.maxUnauthenticated || this.isVerified(source);
  }

  private takeOn(socket: Socket, source: string): void {
    this.unauthenticated.set(socket, source);
    this.perSource.set(source, (this.perSource.get(source) ?? 0) + 1);
    this.deadline(socket, this.limits.headerTimeoutMs, () => socket.destroy());
    this.handOn(socket);
  }

  private wait(socket: Socket, source: string): void {
    if (this.waiting.size >= this.limits.maxWaiting) {
      // The queue is full: the newest of the source with the most waiting makes room, unless that is this one's.
      const longest = this.waiting.longest();
      if (longest === undefined || this.waiting.lengthOf(source) >= this.waiting.lengthOf(longest))
        return this.close(socket, source, 'queueFull');
      const given = this.waiting.takeNewest(longest)!;
      this.stopWaiting(given, longest);
      this.close(given, longest, 'queueFull');
    }
    this.waiting.push(source, socket);
    const expired = () => {
      this.stopWaiting(socket, source);
      this.close(socket, source, 'waitDeadline');
    };
    this.waitDeadlines.set(socket, setTimeout(expired, this.limits.waitTimeoutMs).unref());
  }

  private stopWaiting(socket: Socket, source: string): void {
    clearTimeout(this.waitDeadlines.get(socket));
    this.waitDeadlines.delete(socket);
    this.waiting.remove(source, socket);
  }

  /**
   * Takes on waiting connections while there is room: from the source that holds the fewest (one remembered for a
   * verified certificate before any; of those that hold as many, one that had a request authenticated first),
   * sources that rank the same in turn.
   */
  private takeOnWaiting(): void {
    while (this.waiting.size) {
      // The bound is full, and no source may go beyond it: nothing to look for.
      if (this.unauthenticated.size >= this.limits.maxUnauthenticated && !this.verifiedSources.size) return;
      // Holding as many, a known source ranks half a connection ahead.
      let next: string | undefined;
      let fewest = Infinity;
      for (const source of this.waiting.sources()) {
        if (!this.hasRoom(source)) continue;
        const holds = this.isVerified(source)
          ? -1
          : (this.perSource.get(source) ?? 0) + (this.knownSources.has(source) ? 0 : 0.5);
        if (holds < fewest) [next, fewest] = [source, holds];
      }
      if (next === undefined) return;
      const socket = this.waiting.take(next)!;
      this.stopWaiting(socket, next);
      this.takeOn(socket, next);
    }
  }

  /** Whether `source` is remembered for a verified client certificate: its connections go first. */
  isVerified(source: string): boolean {
    return this.verifiedSources.has(source);
  }

  /**
   * Whether `source`'s connections are handshaken before others (handshaketurns.ts): one remembered for a verified
   * certificate, or for an authenticated request.
   */
  goesFirst(source: string): boolean {
    return this.verifiedSources.has(source) || this.knownSources.has(source);
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

  /** The connection no longer counts (authenticated or closed): its room goes to a waiting one. */
  private uncount(socket: Socket): void {
    const source = this.unauthenticated.get(socket);
    if (source === undefined) return;
    this.unauthenticated.delete(socket);
    const left = (this.perSource.get(source) ?? 1) - 1;
    if (left > 0) this.perSource.set(source, left);
    else this.perSource.delete(source);
    this.takeOnWaiting();
  }

  private close(socket: Socket, source: string, reason: Closure): void {
    socket.destroy();
    const closed = this.closedSinceWarning;
    closed[reason]++;
    if (closed.sources.has(source) || closed.sources.size < WARNING_SOURCES)
      closed.sources.set(source, (closed.sources.get(source) ?? 0) + 1);
    if (Date.now() - this.lastWarning[reason] < CLOSURE_WARNING_INTERVAL_MS) return;
    this.lastWarning[reason] = Date.now();
    this.log?.warn(
      'connections beyond the bounds on those not yet authenticated wait for room; some were closed unanswered, as the wait queue was full or they had waited too long',
      {
        maxUnauthenticated: this.limits.maxUnauthenticated,
        maxUnauthenticatedPerSource: this.limits.maxUnauthenticatedPerSource,
        maxWaiting: this.limits.maxWaiting,
        waitTimeoutMs: this.limits.waitTimeoutMs,
        waiting: this.waiting.size,
        closedAtQueueFull: closed.queueFull,
        closedAtWaitDeadline: closed.waitDeadline,
        // Which sources' connections were closed, with how many.
        sources: Object.fromEntries(closed.sources),
      },
    );
    this.closedSinceWarning = { queueFull: 0, waitDeadline: 0, sources: new Map() };
  }
}

/** The accepted TCP socket under a server-side TLS socket (Node keeps it as _parent). */
function tcpSocketOf(tls: TLSSocket): Socket {
  return (tls as TLSSocket & { _parent?: Socket })._parent ?? tls;
}
