/**
 * Requests that Node's HTTP parser refuses before any handler runs still get a metav1.Status: a request line
 * (URL included) and headers longer than kube-apiserver's 1 MiB MaxHeaderBytes (431), a request not received in
 * time (408), and malformed HTTP (400). Node would otherwise answer with an empty body. The connection is closed
 * after the answer.
 */
import type { Server } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Status } from '../apimachinery/status.js';

/**
 * How long an answered connection waits for the client to close before it is closed (Go's rstAvoidanceDelay): long
 * enough for the answer to arrive before the close, short enough that a client that never closes holds nothing.
 */
const CLOSE_AFTER_ANSWER_MS = 500;

/** kube-apiserver's MaxHeaderBytes: the request line and all headers together. */
export const MAX_HEADER_BYTES = 1 << 20;

function answer(code: number, phrase: string, reason: string, message: string): string {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  const body = `${JSON.stringify(status)}\n`;
  return [
    `HTTP/1.1 ${code} ${phrase}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

function answerFor(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return answer(
        431,
        'Request Header Fields Too Large',
        'RequestHeaderFieldsTooLarge',
        `the request line and headers together may be at most ${MAX_HEADER_BYTES} bytes (a long URL counts too)`,
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return answer(408, 'Request Timeout', 'Timeout', 'the request was not received in time');
    default:
      return answer(400, 'Bad Request', 'BadRequest', `malformed HTTP request: ${err.message}`);
  }
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing to say on a reset connection, or once a response on this connection has begun.
    const inProgress = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || inProgress) {
      socket.destroy();
      return;
    }
    // end() alone only half-closes (the server allows half-open connections): a client that never closes its
    // side, as a slow client whose headers timed out does not, would keep the connection open forever.
    socket.end(answerFor(err));
    setTimeout(() => socket.destroy(), CLOSE_AFTER_ANSWER_MS).unref();
  });
}
