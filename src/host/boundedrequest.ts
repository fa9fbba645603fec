/**
 * The one way this server sends HTTP(S) requests to other servers (Kubernetes APIs through kuberequest.ts, admission
 * webhooks through admission/webhookclient.ts): node's http(s) over the caller's agent (tlsagents.ts, or a proxy's),
 * within a time, reading at most so many bytes of an answer (past it, or when its Content-Length says more, the
 * connection is cut and nothing more is read), sent once more when a kept-alive connection turns out closed by the
 * server (unless the caller says it must go once). Failures are node's errors, a TimeoutError for the time, or the caller's own for the bytes: callers say them
 * in their terms, naming the operation or the URL, never a credential.
 *
 * Node's http rather than undici (which client-node also installs): client-node hands a kubeconfig's http(s) and
 * socks proxies as node agents (hpagent, socks-proxy-agent: socks4, socks4a, socks5, socks5h), which undici cannot
 * take, and undici's own SOCKS agent takes socks5 only.
 */
import http from 'node:http';
import https from 'node:https';

export interface BoundedRequest {
  url: URL;
  method: string;
  headers: http.OutgoingHttpHeaders;
  body?: string | Buffer;
  /** Basic credentials, `user:password`. */
  auth?: string;
  agent: http.Agent;
  /** The request fails after this long, and so does its answer while it is read (0: no bound). */
  timeoutMs: number;
  /** The bound ends with the answer's headers: its body is a stream read as long as it lasts (a watch). */
  headersOnly?: boolean;
  /** The request as it is made, for a caller that may cut it later (a watch's stop). */
  onRequest?: (req: http.ClientRequest) => void;
}

/** Sends the request; resolves with the answer's headers, or rejects (timeouts included). */
export function sendRequest(request: BoundedRequest): Promise<http.IncomingMessage> {
  const { url, method, headers, body, auth, agent, timeoutMs, headersOnly, onRequest } = request;
  return new Promise((resolve, reject) => {
    let response: http.IncomingMessage | undefined;
    const req = (url.protocol === 'https:' ? https : http).request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port || undefined,
        path: url.pathname + url.search,
        method,
        headers,
        auth,
        agent,
      },
      (res) => {
        response = res;
        if (timer && headersOnly) clearTimeout(timer);
        res.once('end', () => timer && clearTimeout(timer));
        res.once('close', () => timer && clearTimeout(timer));
        resolve(res);
      },
    );
    onRequest?.(req);
    // Before the answer the request fails with the timeout; while its body is read, the answer does.
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            const err = timeoutError();
            if (response) response.destroy(err);
            else req.destroy(err);
          }, timeoutMs)
        : undefined;
    req.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(Object.assign(err, { reusedSocket: req.reusedSocket }));
    });
    req.end(body);
  });
}

/**
 * The answer's body as text: at most `limit` bytes, else `tooLarge(detail)` and the connection cut (destroying the
 * answer destroys its socket), so nothing more is read; an answer whose Content-Length says more is refused at once.
 */
export function readAnswer(
  res: http.IncomingMessage,
  limit: number | undefined,
  tooLarge: (detail: string) => Error,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const refuse = (detail: string) => {
      res.destroy();
      reject(tooLarge(detail));
    };
    const announced = Number(res.headers['content-length']);
    if (limit !== undefined && announced > limit) return refuse(` (Content-Length ${announced})`);
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (limit !== undefined && size > limit) return refuse('');
      chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    // A connection cut before the end is an 'error' too (ECONNRESET), as is the timeout's destroy().
  });
}

export interface ExchangeOptions {
  /** Sees each answer's headers. */
  onResponse?: (res: http.IncomingMessage) => void;
  /**
   * Never sent a second time, not even when its kept-alive connection turns out closed: the server may have read
   * it (an admission webhook is called once per request, as kube's).
   */
  sendOnce?: boolean;
}

/**
 * The request `prepare` gives (again for the second attempt: credentials may have changed), its answer read whole
 * (readAnswer).
 */
export async function exchange(
  prepare: () => Promise<BoundedRequest>,
  limit: number | undefined,
  tooLarge: (detail: string) => Error,
  opts: ExchangeOptions = {},
): Promise<{ statusCode: number; text: string }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await sendRequest(await prepare());
      opts.onResponse?.(res);
      return { statusCode: res.statusCode ?? 0, text: await readAnswer(res, limit, tooLarge) };
    } catch (err) {
      // A kept-alive connection the server closed as it was reused: most likely the request never reached it.
      const reusedClosed = (err as ReusedSocketError).reusedSocket && (err as { code?: string }).code === 'ECONNRESET';
      if (attempt === 0 && reusedClosed && !opts.sendOnce) continue;
      throw err;
    }
  }
}

type ReusedSocketError = Error & { reusedSocket?: boolean };

export const timeoutError = () => Object.assign(new Error('timed out'), { name: 'TimeoutError' });

/** Whether `err` is the time bound's (sendRequest's, withinTime's). */
export const isTimeout = (err: unknown) => (err as { name?: string } | undefined)?.name === 'TimeoutError';

/** `work`, or a TimeoutError when it takes longer than `ms` (0: no bound); a credential plugin may hang. */
export function withinTime<T>(work: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(timeoutError()), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
