/**
 * Graceful shutdown of the HTTPS server, in kube-apiserver's order: /readyz fails at once (load balancers and the
 * APIService stop sending), requests keep being served for --shutdown-delay-duration, then the listener closes,
 * watches end cleanly (clients re-watch elsewhere from their last resourceVersion), requests in flight finish
 * within a bound, and only then are the remaining connections closed. Answers given while draining say
 * `Connection: close`, so keep-alive clients reconnect to another replica; an HTTP/2 connection is told GOAWAY when
 * the listener closes (its streams in flight go on, new ones go to another replica), as Go's server does.
 */
import { setMaxListeners } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import { requestContext } from '../apimachinery/request.js';
import { whenRequestEnds } from '../apimachinery/requestend.js';
import * as errors from '../apimachinery/status.js';
import type { Logger } from '../log.js';
import { isHttp2, type ClosableServer } from './http2.js';

export interface ShutdownOptions {
  /** --shutdown-delay-duration: how long requests are still served after /readyz turned false. */
  delayMs: number;
  /** How long requests in flight may take to finish once the listener is closed. */
  drainMs: number;
  log: Logger;
}

export class GracefulShutdown {
  private started = false;
  private readonly watches = new AbortController();
  private inFlight = 0;
  /** Watches whose response has not closed yet: once ended, a streaming one's last bytes must reach the client first. */
  private readonly openWatches = new Set<Response>();
  private drained?: () => void;

  constructor() {
    // Every open watch listens for the end: thousands may.
    setMaxListeners(0, this.watches.signal);
  }

  /** True from the moment shutdown begins: /readyz fails. */
  get shuttingDown(): boolean {
    return this.started;
  }

  /** Aborted when the listener closes: every watch ends. */
  get watchesEnd(): AbortSignal {
    return this.watches.signal;
  }

  /**
   * Counts requests in flight (watches aside: they are ended, not waited for). Once watches have ended, a new
   * watch is refused with 429 and Retry-After, so its client goes to another replica.
   */
  track() {
    return (req: Request, res: Response, next: NextFunction) => {
      // HTTP/2 has no Connection header (Node drops it, with a warning): its connections get GOAWAY instead.
      if (this.started && !isHttp2(req)) res.setHeader('Connection', 'close');
      const watch = requestContext(req).info.verb === 'watch';
      if (watch && this.watches.signal.aborted) throw errors.shuttingDown();
      if (watch) {
        this.openWatches.add(res);
        whenRequestEnds(res, () => {
          this.openWatches.delete(res);
          if (this.idle()) this.drained?.();
        });
      } else {
        this.inFlight++;
        whenRequestEnds(res, () => {
          this.inFlight--;
          if (this.idle()) this.drained?.();
        });
      }
      next();
    };
  }

  async shutdown(server: ClosableServer, opts: ShutdownOptions): Promise<void> {
    if (this.started) return;
    this.started = true;
    opts.log.info('shutdown: /readyz fails from now on', { delayMs: opts.delayMs });
    if (opts.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, opts.delayMs));

    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    this.watches.abort();
    opts.log.info('shutdown: stopped accepting connections and ended watches; waiting for requests in flight', {
      inFlight: this.inFlight,
    });
    const finished = await this.waitForRequests(opts.drainMs);
    if (finished) opts.log.info('shutdown: requests in flight finished');
    else
      opts.log.warn('shutdown: requests still in flight after the drain period are cut off', {
        inFlight: this.inFlight,
        drainMs: opts.drainMs,
      });
    server.closeAllConnections();
    await closed;
  }

  /**
   * No request in flight, and the response of every watch that was streaming closed: its end written out, or cut by
   * the watch writer when the client does not take it in (so closing the connections cannot cut a clean end short).
   * A watch whose 200 had not gone out writes nothing more: closing the connections ends it.
   */
  private idle(): boolean {
    if (this.inFlight > 0) return false;
    for (const res of this.openWatches) if (res.headersSent) return false;
    return true;
  }

  private waitForRequests(ms: number): Promise<boolean> {
    if (this.idle()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.drained = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}
