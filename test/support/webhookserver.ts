/**
 * A real HTTPS admission webhook for tests: a CA of its own (the `caBundle` to configure), one handler per path
 * answering each AdmissionReview, and a record of every review received. A raw answer serves other webhooks too
 * (an audit receiver gets EventLists).
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeCert, type TestCert } from './certs.js';

export interface ReceivedReview {
  path: string;
  /** The query string, with its '?'. */
  query: string;
  review: any;
  /** The request's traceparent header, if any. */
  traceparent?: string;
}

/**
 * What a handler answers: the response fields (uid and the review's apiVersion/kind are filled in), or a raw body;
 * after `delayMs`, or once `until` settles (a receiver that hangs until the test releases it).
 */
type Timing = { delayMs?: number; until?: Promise<unknown> };
export type WebhookAnswer =
  ({ response: Record<string, unknown> } & Timing) | ({ raw: { status: number; body: unknown } } & Timing);

export interface WebhookServer {
  url(path: string): string;
  /** The base64 PEM of the CA that signed the serving certificate. */
  caBundle: string;
  received: ReceivedReview[];
  handle(path: string, answer: (review: any) => WebhookAnswer): void;
  stop(): Promise<void>;
}

/** `token`: the bearer token a request must carry, else 401 (a webhook that authenticates kube-apiserver). */
export async function startWebhookServer(opts: { token?: string } = {}): Promise<WebhookServer> {
  const ca = makeCert({ commonName: 'webhook-ca', isCa: true });
  const serving: TestCert = makeCert({ commonName: 'webhook', issuer: ca, usage: 'serverAuth', ips: ['127.0.0.1'] });
  const handlers = new Map<string, (review: any) => WebhookAnswer>();
  const received: ReceivedReview[] = [];
  const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'https://webhook');
      const review = JSON.parse(Buffer.concat(chunks).toString() || 'null');
      if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`) {
        res.writeHead(401, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ message: 'Unauthorized' }));
        return;
      }
      const traceparent = req.headers.traceparent as string | undefined;
      received.push({ path: url.pathname, query: url.search, review, ...(traceparent ? { traceparent } : {}) });
      const handler = handlers.get(url.pathname);
      const answer: WebhookAnswer = handler
        ? handler(review)
        : { raw: { status: 404, body: { message: 'no handler' } } };
      const send = () => {
        if (res.destroyed) return;
        const [status, body] =
          'raw' in answer
            ? [answer.raw.status, answer.raw.body]
            : [
                200,
                {
                  apiVersion: review?.apiVersion,
                  kind: 'AdmissionReview',
                  response: { uid: review?.request?.uid, ...answer.response },
                },
              ];
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (answer.until) void answer.until.then(send, send);
      else if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path) => `https://127.0.0.1:${port}${path}`,
    caBundle: Buffer.from(ca.certPem).toString('base64'),
    received,
    handle: (path, answer) => void handlers.set(path, answer),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
