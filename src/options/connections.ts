/** Connections: their deadlines, and the bounds on those not yet authenticated (src/http/connections.ts). */
import type { Options } from './flag.js';
import { count, nonZeroDuration, positive } from './values.js';

export interface ConnectionsConfig {
  /**
   * Connection deadlines, without flags (kube-apiserver fixes its own): how long the TLS handshake and each
   * request's headers may take, how long a connection may wait after its handshake before it sends the first byte
   * of a request, and how long a keep-alive connection may wait for its next request (see src/http/connections.ts).
   */
  readHeaderTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  /**
   * How many connections that have not had a request authenticated are taken on at once, in all and from one
   * source address; how many more may wait for room, and for how long (see src/http/connections.ts).
   */
  maxUnauthenticatedConnections: number;
  maxUnauthenticatedConnectionsPerSource: number;
  maxWaitingConnections: number;
  connectionWaitTimeoutMs: number;
}

export const connectionsOptions: Options<ConnectionsConfig> = {
  concern: 'connections',
  flags: [
    {
      name: 'max-unauthenticated-connections',
      arg: 'int',
      // No kube equivalent: far more than clients that authenticate at once have open, and few enough that a flood's
      // sockets and TLS buffers stay small until the header deadline frees them.
      default: '500',
      help: "Connections taken on at once (their TLS handshake, then until a request on them is authenticated) that have not yet had a request authenticated; a verified client certificate (the front proxy's) counts as authenticated. Connections beyond it wait for room, unread ({default}).",
      apply: (c, v) => (c.maxUnauthenticatedConnections = positive('max-unauthenticated-connections', v)),
    },
    {
      name: 'max-unauthenticated-connections-per-source',
      arg: 'int',
      // A twentieth of the bound: it takes twenty sources to fill it (eleven did at 50), so a new client finds room
      // while a few flood; and far more than one client handshakes at once. Those beyond it wait, not refused.
      default: '25',
      help: 'Of --max-unauthenticated-connections, how many one source (an IPv4 address, an IPv6 /64) may have; its others wait for room. When the whole bound is taken, room that frees goes to the waiting source that holds the fewest ({default}).',
      apply: (c, v) =>
        (c.maxUnauthenticatedConnectionsPerSource = positive('max-unauthenticated-connections-per-source', v)),
    },
    {
      name: 'max-waiting-connections',
      arg: 'int',
      // kube-apiserver serves 600 requests at once (--max-requests-inflight 400 plus --max-mutating-requests-inflight
      // 200), which a client over HTTP/1.1 makes on as many connections: one client that opens them all
      // together waits, none is closed.
      default: '1000',
      help: 'Connections that may wait, unread, for room within the two bounds above; past it the newest of the source with the most waiting is closed ({default}; 0: those beyond the bounds are closed at once).',
      apply: (c, v) => (c.maxWaitingConnections = count('max-waiting-connections', v)),
    },
    {
      name: 'connection-wait-timeout',
      arg: 'duration',
      // Go's TLSHandshakeTimeout (client-go's, http.DefaultTransport's): a connection waiting longer is one its
      // client has given up on.
      default: '10s',
      help: 'How long a connection may wait for that room before it is closed, unanswered; once taken on, its TLS handshake has 32s as any ({default}, the TLS handshake timeout of Go clients: one that waited longer has given up).',
      apply: (c, v) => (c.connectionWaitTimeoutMs = nonZeroDuration('connection-wait-timeout', v)),
    },
  ],
  settings: {
    // kube-apiserver's ReadHeaderTimeout ("just shy of requestTimeoutUpperBound") and IdleTimeout (that of Go's
    // http.DefaultTransport, so clients close idle connections first).
    readHeaderTimeoutMs: 32_000,
    idleTimeoutMs: 90_000,
    // No kube equivalent: clients send their request as soon as the handshake is done; a connection that does not
    // is what a flood holds longest.
    firstByteTimeoutMs: 10_000,
  },
};
