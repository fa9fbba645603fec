/**
 * The steps a new connection goes through before the TLS layer has it (the connection bounds, then the handshake
 * turns), each holding it as long as it decides: a step takes the server's 'connection' listeners (the TLS layer's,
 * which wraps the socket and starts its handshake, or those of the step taken before it) and hands each connection
 * on to them when its time comes.
 */
import type { Server } from 'node:net';
import type { Socket } from 'node:net';

export type HandOn = (socket: Socket) => void;

/** `step` hears every new connection of `server` in place of its listeners so far; it calls `handOn` to pass one on. */
export function takeConnections(server: Server, step: (socket: Socket) => void): HandOn {
  const listeners = server.listeners('connection') as HandOn[];
  server.removeAllListeners('connection');
  server.on('connection', step);
  return (socket) => {
    for (const listener of listeners) listener.call(server, socket);
  };
}
