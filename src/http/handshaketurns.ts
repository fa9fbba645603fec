/**
 * TLS handshakes in turns. Node runs a handshake's cryptography (the serving key's signature, the key exchange) on
 * the one thread that serves every request, at once, when the client's first flight is read: a client that opens
 * 64 connections together has the thread do 64 handshakes in one turn of the event loop (about 1 ms each), and every
 * request already on an open connection waits for all of them. kube-apiserver's Go server runs handshakes on every
 * core and needs no such rule.
 *
 * So a new connection is handed to the TLS layer only once its client's first bytes have arrived (its ClientHello,
 * which the TLS layer then reads at once), and at most HANDSHAKES_PER_TURN of them each turn of the event loop; the
 * rest wait, unread, one queue per source (connectionSource) taken in turn (sourcequeues.ts), so that one client
 * opening many connections holds back another's new connection by a turn, not by its whole burst. Connections come
 * here once the connection bounds take them on (connections.ts), and one that waits for its turn is still under the
 * header deadline counted from then; one whose client has sent nothing holds no turn.
 *
 * A source that goes first (one whose connections presented a verified client certificate, the front proxy's, or
 * that had a request authenticated within the last hour: connections.ts) is handshaken before any other waits its turn, one a turn at least: taken in turn with the others,
 * kube-apiserver's new connection waited behind one handshake of every other source, seconds with hundreds of
 * sources flooding.
 */
import type { Server, Socket } from 'node:net';
import { connectionSource } from './connectionsource.js';
import { SourceQueues } from './sourcequeues.js';
import { takeConnections, type HandOn } from './takeconnections.js';

/** Handshakes begun per turn of the event loop: measured at 4-5 ms of the thread for 2, 11 ms for 8. */
export const HANDSHAKES_PER_TURN = 2;

/**
 * While connections keep being accepted, one handshake is begun every this many turns instead. Node accepts one
 * connection a turn of the event loop (libuv takes one per poll since libuv#3696), in the order they came: behind a
 * storm of new connections (a flood's, opened again as fast as they are closed), a new client's waits in the
 * kernel's queue for as many turns as there are connections ahead of it, and every turn that begins handshakes is
 * milliseconds longer. So while they come, connections are taken from the kernel's queue, which is first come first
 * served, into the bounds' and these queues, where sources go in turn, four times as fast as they are handshaken.
 */
export const TURNS_PER_HANDSHAKE_WHILE_ACCEPTING = 4;

/** The sockets whose first bytes have come, waiting for their handshake's turn, by source. */
export class HandshakeTurns {
  private readonly waiting = new SourceQueues<Socket>();
  /** Those of sources that go first. */
  private readonly firstWaiting = new SourceQueues<Socket>();
  private scheduled = false;
  /** A connection was accepted since the last turn (so more may wait in the kernel's queue). */
  private acceptedSinceTurn = false;
  /** Turns since one began a handshake. */
  private turnsWithoutHandshake = 0;

  constructor(
    private readonly begin: HandOn,
    private readonly perTurn = HANDSHAKES_PER_TURN,
    /** Whether a source's connections go before every other's (a verified certificate's, a known one's: connections.ts). */
    private readonly goesFirst: (source: string) => boolean = () => false,
  ) {}

  /** Takes every new connection of `server` from the TLS layer, which it hands each to in its turn. */
  static attach(
    server: Server,
    goesFirst?: (source: string) => boolean,
    perTurn = HANDSHAKES_PER_TURN,
  ): HandshakeTurns {
    // The TLS layer's listener, which wraps the socket and starts the handshake: called in the connection's turn.
    let beginHandshake: HandOn = () => {};
    const turns = new HandshakeTurns((socket) => beginHandshake(socket), perTurn, goesFirst);
    beginHandshake = takeConnections(server, (socket) => turns.accepted(socket));
    return turns;
  }

  /**
   * Hears every connection `server` accepts, those the connection bounds hold included: attach after them (they
   * take the listeners before theirs).
   */
  followAccepts(server: Server): void {
    server.on('connection', () => this.connectionAccepted());
  }

  connectionAccepted(): void {
    this.acceptedSinceTurn = true;
  }

  /** How many connections wait for their turn. */
  get size(): number {
    return this.waiting.size + this.firstWaiting.size;
  }

  /** A new connection: it waits for its first bytes (or its end), then for its turn. */
  accepted(socket: Socket): void {
    // Closed before it came here.
    if (socket.destroyed) return;
    // Until the TLS layer has it, nothing else hears its errors (a client's reset): unheard, one would end the process.
    socket.on('error', () => socket.destroy());
    socket.once('readable', () => this.arrived(socket));
  }

  private arrived(socket: Socket): void {
    if (socket.destroyed) return;
    const source = connectionSource(socket.remoteAddress);
    (this.goesFirst(source) ? this.firstWaiting : this.waiting).push(source, socket);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.turn());
    }
  }

  /**
   * Begins up to perTurn handshakes (while connections keep being accepted, one every few turns), those of sources
   * that go first before the others (and at least one of theirs a turn), one source after another, and leaves the
   * rest for the next turn.
   */
  private turn(): void {
    this.scheduled = false;
    this.turnsWithoutHandshake++;
    let handshakes = this.perTurn;
    if (this.acceptedSinceTurn) {
      this.acceptedSinceTurn = false;
      handshakes = this.turnsWithoutHandshake >= TURNS_PER_HANDSHAKE_WHILE_ACCEPTING ? 1 : 0;
    }
    if (this.firstWaiting.size) handshakes = Math.max(handshakes, 1);
    let begun = 0;
    while (begun < handshakes) {
      const socket = this.firstWaiting.take() ?? this.waiting.take();
      if (!socket) break;
      if (socket.destroyed) continue;
      this.begin(socket);
      begun++;
      this.turnsWithoutHandshake = 0;
    }
    if (this.size) {
      this.scheduled = true;
      setImmediate(() => this.turn());
    }
  }
}
