/**
 * When a request is done (src/apimachinery/requestend.ts whenRequestDone): once it has ended and its handler is done
 * with it, whichever comes last; once its handler is done with its answer all written, though its client has not
 * taken it; or a grace after it ended when its handler never says it is done. On a real node:http server and client.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requestHandled, whenRequestDone, whenRequestEnds } from '../../src/apimachinery/requestend.js';

const LONG_GRACE_MS = 120_000;

let server: Server;
let port: number;
/** The server's side of the next request: its response, once the request has arrived. */
let nextRequest: (res: ServerResponse) => void = () => {};

beforeAll(async () => {
  server = createServer((_req, res) => nextRequest(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/**
 * Sends a GET; resolves with the server's response, and the client's request (to destroy it). A client that does
 * not `read` takes nothing of its answer.
 */
function arrive({ read = true } = {}): Promise<{ res: ServerResponse; client: ReturnType<typeof request> }> {
  return new Promise((resolve) => {
    const client = request({ host: '127.0.0.1', port, path: '/' }, (answer) =>
      read ? answer.resume() : answer.pause(),
    );
    client.on('error', () => {});
    nextRequest = (res) => resolve({ res, client });
    client.end();
  });
}

/** Resolves once the server has seen the request of `res` end. */
const ended = (res: ServerResponse) => new Promise<void>((resolve) => whenRequestEnds(res, resolve));

test('a request answered by its handler is done once its answer is out', async () => {
  const { res } = await arrive();
  const done = new Promise<void>((resolve) => whenRequestDone(res, resolve, LONG_GRACE_MS));
  requestHandled(res);
  res.end('ok');
  await done;
});

test('a request whose handler is done with its answer all written is done, though its client takes none of it', async () => {
  const { res, client } = await arrive({ read: false });
  const done = new Promise<void>((resolve) => whenRequestDone(res, resolve, LONG_GRACE_MS));
  // Far more than the connection's buffers hold: Node keeps the rest for the client.
  res.end(Buffer.alloc(64 * 1024 * 1024));
  requestHandled(res);
  await done;
  expect(res.writableFinished).toBe(false);
  client.destroy();
});

test('a request whose client left is done only once its handler is', async () => {
  const { res, client } = await arrive();
  let done = false;
  whenRequestDone(res, () => (done = true), LONG_GRACE_MS);
  client.destroy();
  await ended(res);
  // Ended, its handler still at work: not done.
  expect(done).toBe(false);
  requestHandled(res);
  expect(done).toBe(true);
});

test('a request whose handler never says it is done is done a grace after it ended', async () => {
  const { res, client } = await arrive();
  let done = false;
  const graceOver = new Promise<void>((resolve) =>
    whenRequestDone(
      res,
      () => {
        done = true;
        resolve();
      },
      50,
    ),
  );
  client.destroy();
  await ended(res);
  expect(done).toBe(false);
  // No requestHandled: the grace ends it (the test would time out otherwise).
  await graceOver;
});
