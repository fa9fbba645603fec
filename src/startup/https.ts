/** The https step: the handler chain and its options, and the HTTPS server listening (HTTP/2 and HTTP/1.1). */
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ServedActions } from '../actions/served.js';
import type { ClientCertificateAuthorities } from '../auth/clientcas.js';
import type { Auth } from '../auth/setup.js';
import type { Config } from '../config.js';
import type { FlowControl } from '../flowcontrol/controller.js';
import { watchCacheObjectCount } from '../flowcontrol/objectcount.js';
import { createApp } from '../http/app.js';
import { MAX_HEADER_BYTES, answerClientErrors } from '../http/clienterrors.js';
import { ConnectionGuard, connectionServerOptions, type ConnectionLimits } from '../http/connections.js';
import { HandshakeTurns } from '../http/handshaketurns.js';
import { withTimeout } from '../http/health.js';
import { closable, createHttpsServer } from '../http/http2.js';
import { ServingTls } from '../http/servingtls.js';
import { GracefulShutdown } from '../http/shutdown.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Dynamic } from '../pki/reloading.js';
import type { ServingPair } from '../pki/servingcert.js';
import type { Registry } from '../registry/registry.js';
import type { Encryption } from '../storage/encryption/setup.js';
import type { EtcdStorage } from '../storage/etcd.js';
import type { SigningKeys } from '../tokens/signingkeys.js';
import type { ServingAddress } from './address.js';
import type { startAudit } from './audit.js';
import type { Cleanups } from './cleanups.js';
import { signingKeysUnavailable } from './tokens.js';
import { DirectTokenReviewer, allProjects } from '../auth/directtokenreview.js';
import { Project } from '../kinds/project/types.js';

/** What the HTTPS server answers with: the parts made before it. */
interface ServedParts {
  registry: Registry;
  actions: ServedActions;
  auth: Auth;
  metrics: Metrics;
  audit: ReturnType<typeof startAudit>;
  flowControl?: FlowControl;
  signingKeys: SigningKeys;
  encryption: Encryption;
  storage: EtcdStorage;
  tls: Dynamic<ServingPair>;
  clientCas: ClientCertificateAuthorities;
}

/** The handler chain and the HTTPS server, listening; drained first at shutdown. */
export async function serveHttps(
  config: Config,
  log: Logger,
  cleanups: Cleanups,
  address: ServingAddress,
  parts: ServedParts,
): Promise<{ port: number }> {
  const connectionLimits: ConnectionLimits = {
    headerTimeoutMs: config.readHeaderTimeoutMs,
    firstByteTimeoutMs: config.firstByteTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs,
    maxUnauthenticated: config.maxUnauthenticatedConnections,
    maxUnauthenticatedPerSource: config.maxUnauthenticatedConnectionsPerSource,
    maxWaiting: config.maxWaitingConnections,
    waitTimeoutMs: config.connectionWaitTimeoutMs,
  };
  const connections = new ConnectionGuard(connectionLimits, log);
  const graceful = new GracefulShutdown();
  const app = createApp(appOptions(config, log, address, parts, connections, graceful));
  // The serving certificate and the client CAs as they are now; new connections get them as they change.
  const servingTls = new ServingTls(parts.tls, parts.clientCas);
  const server: Http2SecureServer = createHttpsServer(
    { maxHeaderSize: MAX_HEADER_BYTES, ...connectionServerOptions(connectionLimits), ...servingTls.serverOptions() },
    { maxStreamsPerConnection: config.http2MaxStreamsPerConnection, maxHeaderBytes: MAX_HEADER_BYTES },
    app,
  );
  const closing = closable(server);
  servingTls.follow(server, log);
  answerClientErrors(server);
  // A new connection meets the bounds (which may hold it), then its handshake's turn, then the TLS layer: each
  // takes the listener of the one after it, so the last to attach is the first met.
  const handshakeTurns = HandshakeTurns.attach(server, (source) => connections.goesFirst(source));
  connections.attach(server);
  handshakeTurns.followAccepts(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenError(err, config)));
    server.listen(config.securePort, config.bindAddress, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  address.bound(port);
  // Requests in flight cannot outlast their deadline and its grace (answered 504, then cut), so that bounds the drain.
  const drainMs = config.requestTimeoutMs ? config.requestTimeoutMs + config.responseGraceMs : 60_000;
  cleanups.add('draining the HTTPS server', () =>
    graceful.shutdown(closing, { delayMs: config.shutdownDelayMs, drainMs, log }),
  );
  return { port };
}

/** The handler chain's options (http/app.ts): health checks, limits, OpenID documents, audit. */
function appOptions(
  config: Config,
  log: Logger,
  address: ServingAddress,
  parts: ServedParts,
  connections: ConnectionGuard,
  graceful: GracefulShutdown,
): Parameters<typeof createApp>[0] {
  const { registry, auth, signingKeys } = parts;
  const etcdCheck = withTimeout('etcd', 2000, () => parts.storage.check());
  const ping = withTimeout('ping', 1000, async () => {});
  // Not in /livez: a KMS plugin that is down is no reason to restart (kube's addHealthChecksWithoutLivez).
  const kmsChecks = parts.encryption.healthChecks.map((c) => withTimeout(c.name, 5000, () => c.check()));
  const shutdown = withTimeout('shutdown', 1000, async () => {
    if (graceful.shuttingDown) throw new Error('shutting down');
  });
  return {
    registry,
    actions: parts.actions,
    authenticator: auth.authenticator,
    authorizer: auth.authorizer,
    visibleTo: auth.visibleTo,
    health: {
      livez: [ping],
      healthz: [ping, etcdCheck, ...kmsChecks],
      readyz: [ping, etcdCheck, ...kmsChecks, shutdown],
    },
    get serverAddress() {
      return address.hostPort;
    },
    maxInFlight: { readOnly: config.maxRequestsInflight, mutating: config.maxMutatingRequestsInflight },
    flowControl: parts.flowControl && { controller: parts.flowControl, objectCount: watchCacheObjectCount(registry) },
    timeouts: {
      requestTimeoutMs: config.requestTimeoutMs,
      responseGraceMs: config.responseGraceMs,
      minRequestTimeoutSeconds: config.minRequestTimeoutSeconds,
    },
    shutdown: graceful,
    oidc: {
      get issuer() {
        return address.issuer;
      },
      jwks: () => signingKeys.jwks().catch(signingKeysUnavailable),
      maxAgeSeconds: Math.min(3600, Math.floor(config.tokenSigningKeyPublishDelayMs / 2000)),
    },
    tokenReview: tokenReviewer(address, parts),
    metrics: parts.metrics,
    audit: parts.audit,
    alwaysAllowPaths: config.authorizationAlwaysAllowPaths,
    connections,
    log,
  };
}

/** The review behind the TokenReview webhook: this server's issuer and published keys, access keys and Projects. */
function tokenReviewer(address: ServingAddress, parts: ServedParts): DirectTokenReviewer {
  const projects = parts.registry.store(Project);
  return new DirectTokenReviewer({
    issuer: () => address.issuer,
    jwks: () => parts.signingKeys.jwks().catch(signingKeysUnavailable),
    accessKeys: parts.auth.accessKeys,
    project: (name) => projects.find(undefined, name),
    projects: () => allProjects(() => projects.list(undefined)),
  });
}

/** A port already taken is named, with the flags that choose another. */
function listenError(err: NodeJS.ErrnoException, config: Config): Error {
  const address = `${config.bindAddress.includes(':') ? `[${config.bindAddress}]` : config.bindAddress}:${config.securePort}`;
  if (err.code === 'EADDRINUSE')
    return new Error(
      `cannot serve on ${address}: the port is in use by another process; choose another with --secure-port (0 picks a free one) or --bind-address`,
    );
  if (err.code === 'EACCES')
    return new Error(
      `cannot serve on ${address}: permission denied (ports below 1024 need root); choose another with --secure-port`,
    );
  if (err.code === 'EADDRNOTAVAIL')
    return new Error(
      `cannot serve on ${address}: no network interface has this address; choose another with --bind-address`,
    );
  return err;
}
