/**
 * The stand-in's HTTPS listener on a loopback port: JSON Status answers for whatever a handler throws, and stop and
 * restart on the same port (to simulate a refused connection).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';

export class HostServer {
  private readonly server: Server;

  /** `beforeClose` runs as the listener closes (to end open watches, which would hold it open). */
  constructor(
    tls: { certPem: string; keyPem: string; caPem: string },
    handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
    private readonly beforeClose: () => void,
  ) {
    // Client certificates are asked for, not required: those that chain to the CA name a user (clientcerts.ts).
    const options = { cert: tls.certPem, key: tls.keyPem, ca: tls.caPem, requestCert: true, rejectUnauthorized: false };
    this.server = createServer(options, (req, res) => {
      handle(req, res).catch((err) => {
        if (res.headersSent) return res.end();
        const status = errors.isStatusError(err) ? err.status : errors.internalError(err).status;
        reply(res, status.code, status);
      });
    });
  }

  /** Listens on 127.0.0.1:`port` (0: a free one). */
  listen(port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every connection; nothing when not listening. */
  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.server.listening) return resolve();
      this.beforeClose();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
