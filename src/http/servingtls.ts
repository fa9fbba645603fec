/**
 * The HTTPS server's TLS settings, kept current as kube's DynamicServingCertificateController keeps its
 * tls.Config (GetConfigForClient): when the serving certificate or a client CA bundle changes, the server gets a new
 * secure context (server.setSecureContext), which every new connection uses; connections already open keep theirs.
 * Client certificates are asked for, not required: the authenticators check them against the CAs in force. TLS
 * verifies them against those CAs alone (never Node's default roots, also while there are none yet), so that a
 * connection's `authorized` means what ConnectionGuard takes it for.
 */
import type { ServerOptions } from 'node:https';
import type { Server } from 'node:tls';
import type { Logger } from '../log.js';
import type { Dynamic } from '../pki/reloading.js';
import type { ServingPair } from '../pki/servingcert.js';

export interface ClientCaBundles {
  /** Whether to ask for client certificates at all (some client CA is configured or may come). */
  asked: boolean;
  bundles: Dynamic<string[]>;
}

export class ServingTls {
  constructor(
    private readonly pair: Dynamic<ServingPair>,
    private readonly clientCas: ClientCaBundles,
  ) {}

  /** The options of createServer: the current context, and whether client certificates are asked for. */
  serverOptions(): ServerOptions {
    return {
      ...this.context(),
      ...(this.clientCas.asked ? { requestCert: true, rejectUnauthorized: false } : {}),
    };
  }

  /** From now on, a change of the certificate or of a CA bundle gives `server` a new secure context. */
  follow(server: Server, log: Logger): void {
    const update = () => {
      try {
        server.setSecureContext(this.context());
      } catch (err) {
        // Both were parsed before they came here; this is what OpenSSL alone refuses.
        log.error('the new TLS settings were refused; new connections keep the previous ones', {
          error: (err as Error).message,
        });
      }
    };
    this.pair.onChange(update);
    this.clientCas.bundles.onChange(update);
  }

  private context(): ServerOptions {
    const { cert, key } = this.pair.current();
    const ca = this.clientCas.bundles.current();
    // Without `ca`, Node would verify client certificates against the public roots it knows.
    return { cert, key, ...(this.clientCas.asked ? { ca } : {}) };
  }
}
