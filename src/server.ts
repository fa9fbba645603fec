/** Wires the parts from a Config and runs them: etcd (external or embedded), storage, registry, auth, HTTPS. */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, resolve as resolvePath } from 'node:path';
import { directClusterEndpointTokenAction } from './actions/directclusterendpointtoken.js';
import { importVirtualClusterAction } from './actions/importvirtualcluster.js';
import { kubeConfigAction } from './actions/virtualclusterkubeconfig.js';
import { ServedActions } from './actions/served.js';
import type { Authorizer } from './apimachinery/authorizer.js';
import { compileWaitingSchemas } from './apimachinery/schema.js';
import * as errors from './apimachinery/status.js';
import { ownerDeletionCheck } from './auth/ownerdeletion.js';
import { startClientCertificateAuthorities, type ClientCertificateAuthorities } from './auth/clientcas.js';
import { setUpAuth, type Auth } from './auth/setup.js';
import { enabledPlugins } from './admission/chain.js';
import { loadAdmissionConfiguration } from './admission/config.js';
import { startHostAdmission, type HostAdmission } from './admission/host.js';
import { HostCluster } from './host/cluster.js';
import type { Config } from './config.js';
import { GarbageCollector } from './controllers/garbagecollector.js';
import { FlowControl } from './flowcontrol/controller.js';
import { watchCacheObjectCount } from './flowcontrol/objectcount.js';
import { startFlowControlSource } from './flowcontrol/source.js';
import { AccessSync } from './controllers/accesssync.js';
import { ClusterHealth } from './controllers/clusterhealth.js';
import { ClusterUidHolders } from './controllers/clusteruidholders.js';
import { DeliveryRecords } from './controllers/deliveryrecords.js';
import { ProjectSecretDelivery } from './controllers/projectsecretdelivery.js';
import { ProjectSecretSync } from './controllers/projectsecretsync.js';
import { ClusterConnections, ClusterNotReadyError } from './clusters/connections.js';
import { ClusterConnector } from './clusters/connector.js';
import { startControllers, type Controller } from './controllers/manager.js';
import { HostRbac } from './host/rbac.js';
import { createApp } from './http/app.js';
import { MAX_HEADER_BYTES, answerClientErrors } from './http/clienterrors.js';
import { HandshakeTurns } from './http/handshaketurns.js';
import { ConnectionGuard, connectionServerOptions, type ConnectionLimits } from './http/connections.js';
import { ServingTls } from './http/servingtls.js';
import { GracefulShutdown } from './http/shutdown.js';
import { withTimeout } from './http/health.js';
import { lockDataDir } from './datadir-lock.js';
import { serverBuild } from './http/version.js';
import { writeKubeconfig } from './admin-kubeconfig.js';
import type { Logger } from './log.js';
import { allSinks, AuditLog, type AuditSink, type ForwardedStdout } from './observability/audit.js';
import { DEFAULT_POLICY, loadPolicyFile, PolicyEvaluator } from './observability/auditpolicy.js';
import { AuditWebhook } from './observability/auditwebhook.js';
import { KubeconfigError } from './host/kubeconfigfile.js';
import { Metrics, etcdObjectType, registryWatchCacheStats } from './observability/metrics.js';
import type { Dynamic } from './pki/reloading.js';
import { ensureServingCertificate } from './pki/selfsigned.js';
import { selfSignedHosts } from './datadir.js';
import { reloadingServingCertificate, type ServingPair } from './pki/servingcert.js';
import { loadDefinitions } from './registry/definitions.js';
import { Registry } from './registry/registry.js';
import type { ConnectCluster } from './registry/strategy.js';
import { startEmbeddedEtcd, type EmbeddedEtcd } from './storage/embedded-etcd.js';
import { Compactor } from './storage/compactor.js';
import { EtcdStorage, type EtcdStorageOptions } from './storage/etcd.js';
import { SIGNING_KEYS_RESOURCE, setUpEncryption, type Encryption } from './storage/encryption/setup.js';
import { SigningKeys } from './tokens/signingkeys.js';
import { installTracer } from './tracing.js';
import { loadTracingConfig } from './observability/tracingconfig.js';
import { Cluster } from './kinds/cluster/types.js';

export interface RunningServer {
  /** https://host:port, as clients on this machine reach it. */
  url: string;
  port: number;
  /** CA that verifies the serving certificate (when self-signed). */
  caPem?: string;
  /** Written when no --token-auth-file is given. */
  adminKubeconfig?: string;
  close(): Promise<void>;
}

/**
 * A worker of --workers: the primary holds the data dir's lock and runs the embedded etcd (their endpoints here, or
 * none with --etcd-servers), so that one machine has one of each however many workers serve.
 */
export interface WorkerOf {
  embeddedEtcdEndpoints?: string[];
  /** The primary's stdout, for audit events of --audit-log-path=-. */
  stdout?: ForwardedStdout;
}

export async function startServer(flags: Config, log: Logger, worker?: WorkerOf): Promise<RunningServer> {
  const config = complete(flags, log);
  const cleanups = new Cleanups(log);
  try {
    // First in, last out: an invalid file stops the start here, and the spans of the shutdown are sent too.
    if (config.tracingConfigFile) cleanups.add('stopping tracing', await startTracing(config.tracingConfigFile, log));
    // Before anything reads or writes the data dir (and before a leftover etcd on it may be stopped).
    if (!worker) {
      const lock = await lockDataDir(config.dataDir);
      cleanups.add('releasing the data dir', () => lock.release());
    }
    const metrics = new Metrics();
    const audit = startAudit(config, log, metrics, cleanups, worker);
    // What is stored is rewritten after a key rotation (start or reload), once the registry and signing keys exist.
    const { storage, encryption } = await startStorage(config, log, metrics, cleanups, worker, () => rewriteStale());
    // The stores call these only while serving; each is made below, as it reads the registry.
    const registry = new Registry(loadDefinitions(), storage, config.etcdPrefix, (msg, f) => log.warn(msg, f), {
      ownerDeletion: () => ownerDeletion,
      admission: () => admission?.chain,
      connectCluster: (name) => clusters.connect(name),
    });
    const address = new ServingAddress(config);
    const actions = new ServedActions();
    const signingKeys = startTokens(config, storage, encryption, registry, actions, address);
    // Before the start awaits again: an encryption reload (a timer) always finds what it rewrites.
    const rewriteStale = () => void rewriteStaleValues(storage, registry, signingKeys, log);
    await registry.start();
    metrics.watchCaches(registryWatchCacheStats(registry, () => storage.currentRevision()));
    if (encryption.configured) rewriteStale();
    cleanups.add('stopping the watch caches', () => registry.stop());
    const tls = await servingCertificate(config, log);
    cleanups.add('stopping the certificate reloads', async () => tls.stop());
    const host = await startHost(config, log, cleanups);
    const clusters = connectClusters(config, log, registry, host.cluster, actions);
    const admission = startAdmission(config, log, host.cluster, cleanups);
    const flowControl = startFlowControl(config, log, host.cluster, cleanups);
    const auth = setUpAuth(config, registry, host.cluster, host.clientCas, log);
    const ownerDeletion = ownerDeletionCheck(registry, auth.authorizer);
    // After the authorizers: the ProjectSecret sync asks them what a ProjectSecret's owner may read.
    runControllers(config, log, metrics, storage, registry, host.cluster, clusters.connector, auth, cleanups);
    const https = await serveHttps(config, log, cleanups, address, {
      registry,
      actions,
      auth,
      metrics,
      audit,
      flowControl,
      signingKeys,
      encryption,
      storage,
      tls: tls.pair,
      clientCas: host.clientCas,
    });
    const adminKubeconfig = announce(config, log, worker, address.url, auth.adminToken, tls.caPem);
    return { url: address.url, port: https.port, caPem: tls.caPem, adminKubeconfig, close: () => cleanups.close() };
  } catch (err) {
    await cleanups.close();
    throw err;
  }
}

/** The flags and what they name, read before anything starts: a plugin or file the server cannot take stops it here. */
interface CompletedConfig extends Config {
  admissionPlugins: ReturnType<typeof enabledPlugins>;
  admissionConfig: ReturnType<typeof loadAdmissionConfiguration>;
  auditPolicy: typeof DEFAULT_POLICY;
}

function complete(config: Config, log: Logger): CompletedConfig {
  return {
    ...config,
    admissionPlugins: enabledPlugins(config.enableAdmissionPlugins, config.disableAdmissionPlugins),
    admissionConfig: loadAdmissionConfiguration(config.admissionControlConfigFile),
    auditPolicy: config.auditPolicyFile
      ? loadPolicyFile(config.auditPolicyFile, (warning) => log.warn(warning, { file: config.auditPolicyFile }))
      : DEFAULT_POLICY,
  };
}

/** What the start has set going, undone in reverse: the HTTPS server first, the embedded etcd last, each logged. */
class Cleanups {
  private readonly steps: [string, () => Promise<void>][] = [];

  constructor(private readonly log: Logger) {}

  add(step: string, cleanup: () => Promise<void>): void {
    this.steps.push([step, cleanup]);
  }

  async close(): Promise<void> {
    for (const [step, cleanup] of this.steps.splice(0).reverse()) {
      await cleanup().then(
        () => this.log.info(`shutdown: ${step} done`),
        (err) => this.log.error(`shutdown: ${step} failed`, { error: String(err) }),
      );
    }
  }
}

/**
 * Where local clients reach this server, and the issuer of its tokens: the port is known once bound (--secure-port
 * 0 picks one), and with it the issuer unless --token-issuer names one.
 */
class ServingAddress {
  private readonly host: string;
  private port: number;
  private listening = false;

  constructor(private readonly config: Config) {
    this.host = clientHost(config.bindAddress);
    this.port = config.securePort;
  }

  bound(port: number): void {
    this.port = port;
    this.listening = true;
  }

  get hostPort(): string {
    return `${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  get url(): string {
    return `https://${this.hostPort}`;
  }

  get issuer(): string {
    return this.config.tokenIssuer ?? (this.listening ? this.url : '');
  }
}

function startAudit(config: CompletedConfig, log: Logger, metrics: Metrics, cleanups: Cleanups, worker?: WorkerOf) {
  const auditSinks = auditBackends(config, log, metrics, worker);
  if (!auditSinks.length) return undefined;
  const audit = { sink: allSinks(auditSinks), policy: new PolicyEvaluator(config.auditPolicy) };
  cleanups.add('closing the audit log and webhook', () => audit.sink.close());
  return audit;
}

/** etcd (external, or embedded under --data-dir), encryption at rest, the client, and the compactor. */
async function startStorage(
  config: Config,
  log: Logger,
  metrics: Metrics,
  cleanups: Cleanups,
  worker: WorkerOf | undefined,
  onEncryptionReload: () => void,
): Promise<{ storage: EtcdStorage; encryption: Encryption }> {
  let endpoints = worker?.embeddedEtcdEndpoints ?? config.etcdServers;
  if (!endpoints.length) {
    const etcd: EmbeddedEtcd = await startEmbeddedEtcd({ dataDir: config.dataDir, log: (msg) => log.info(msg) });
    cleanups.add('stopping the embedded etcd', () => etcd.stop());
    endpoints = etcd.endpoints;
    log.info('started embedded etcd', { endpoints, dataDir: config.dataDir });
  }
  const etcdPrefix = config.etcdPrefix;
  // Encryption at rest; an invalid file stops the start here.
  const encryption = await setUpEncryption({
    path: config.encryptionProviderConfig,
    defaultIn: config.etcdServers.length ? undefined : config.dataDir,
    reload: config.encryptionProviderConfigAutomaticReload,
    reloadIntervalMs: config.encryptionProviderConfigReloadIntervalMs,
    etcdPrefix,
    log,
    onReload: onEncryptionReload,
    onReloadResult: (ok) => metrics.encryptionConfigReload(ok),
  });
  if (encryption.configured) cleanups.add('stopping encryption at rest', async () => encryption.stop());
  const storage = new EtcdStorage({
    endpoints,
    tls: etcdTls(config),
    onCall: (operation, key, seconds, failed) =>
      metrics.etcdRequest(operation, etcdObjectType(etcdPrefix, key), seconds, failed),
    transformers: encryption.transformers,
    onUnreadable: (key, reason) =>
      log.error('a watched value cannot be read; the watch cache lists again', { key, reason }),
    onHealthChange: (healthy, reason) =>
      healthy
        ? log.info('etcd answers again; serving requests that need it')
        : log.error('etcd does not answer; requests that need it fail at once until it does', { reason }),
  });
  cleanups.add('closing the etcd client', () => storage.close());
  const compactor = new Compactor(storage, {
    intervalMs: config.etcdCompactionIntervalMs,
    log: (msg, fields) => log.info(msg, fields),
  });
  compactor.start();
  cleanups.add('stopping the compactor', async () => compactor.stop());
  return { storage, encryption };
}

/** The token signing keys, and the action that issues direct cluster endpoint tokens with them. */
function startTokens(
  config: Config,
  storage: EtcdStorage,
  encryption: Encryption,
  registry: Registry,
  actions: ServedActions,
  address: ServingAddress,
): SigningKeys {
  const signingKeys = new SigningKeys(storage, `${config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`, {
    rotationPeriodMs: config.tokenSigningKeyRotationPeriodMs,
    publishDelayMs: config.tokenSigningKeyPublishDelayMs,
    maxTokenTtlMs: config.tokenMaxTtlMs,
    transformer: encryption.transformers.forResource(SIGNING_KEYS_RESOURCE.group, SIGNING_KEYS_RESOURCE.resource),
  });
  actions.add(
    directClusterEndpointTokenAction(registry.definitions, {
      get issuer() {
        return address.issuer;
      },
      maxTtlSeconds: Math.floor(config.tokenMaxTtlMs / 1000),
      signer: () => signingKeys.signer().catch(signingKeysUnavailable),
    }),
  );
  return signingKeys;
}

/** The host cluster (none without a kubeconfig outside a pod) and the client CAs, some read from it. */
async function startHost(config: Config, log: Logger, cleanups: Cleanups) {
  const cluster = HostCluster.load({ kubeconfig: config.kubeconfig });
  const clientCas = await startClientCertificateAuthorities(config, cluster, log);
  cleanups.add('stopping the client CA reloads', async () => clientCas.stop());
  if (!cluster)
    log.info(
      'no host cluster configured: TokenReview, SubjectAccessReview, the access sync to host RBAC and connected Clusters (local, or through a config Secret) are off, and with them imports of virtual clusters and their kube configs',
    );
  return { cluster, clientCas };
}

/** How the stores and the actions reach a Cluster: through its config Secret, or the host itself. */
function connectClusters(
  config: Config,
  log: Logger,
  registry: Registry,
  host: HostCluster | undefined,
  actions: ServedActions,
): { connector: ClusterConnector; connect: ConnectCluster } {
  // Without a host cluster too: then a local Cluster, or one with a config Secret, is never Initialized.
  const connector = new ClusterConnector({ host, secretNamespace: config.clusterSecretNamespace });
  const connections = new ClusterConnections(registry.store(Cluster), connector);
  actions.add(importVirtualClusterAction(registry, connections, log));
  actions.add(kubeConfigAction(registry, connections, log, config.virtualClusterAllowedServers));
  const connect: ConnectCluster = async (name) => {
    try {
      return await connections.connection(name);
    } catch (err) {
      throw err instanceof ClusterNotReadyError ? err.toStatus() : err;
    }
  };
  return { connector, connect };
}

/** The admission chain, with a host cluster only (its webhooks and policies are the host's objects). */
function startAdmission(
  config: CompletedConfig,
  log: Logger,
  host: HostCluster | undefined,
  cleanups: Cleanups,
): HostAdmission | undefined {
  if (!host) return undefined;
  const admission = startHostAdmission(host, config.admissionPlugins, config.admissionConfig, (msg, fields) =>
    log.warn(msg, fields),
  );
  cleanups.add('stopping the admission informers', async () => admission.stop());
  log.info('admission plugins', { plugins: admission.chain.names });
  return admission;
}

/** API Priority and Fairness, unless --enable-priority-and-fairness=false (then the two in-flight limits). */
function startFlowControl(
  config: Config,
  log: Logger,
  host: HostCluster | undefined,
  cleanups: Cleanups,
): FlowControl | undefined {
  if (!config.enablePriorityAndFairness) return undefined;
  const flowControl = new FlowControl(
    config.maxRequestsInflight + config.maxMutatingRequestsInflight,
    log,
    Date.now,
    config.maxSeatsPerFlow,
  );
  const source = startFlowControlSource(flowControl, host, log);
  cleanups.add('stopping the priority and fairness informers', async () => source.stop());
  return flowControl;
}

/** The controllers, on the replica that holds the leader lease; and, at shutdown, the access keys' last activity. */
function runControllers(
  config: Config,
  log: Logger,
  metrics: Metrics,
  storage: EtcdStorage,
  registry: Registry,
  host: HostCluster | undefined,
  connector: ClusterConnector,
  auth: Auth,
  cleanups: Cleanups,
): void {
  const controllers = startControllers({
    leaseLock: (key) => storage.leaseLock(key),
    etcdPrefix: config.etcdPrefix,
    leaseDurationMs: config.leaderElectLeaseDurationMs,
    controllers: serverControllers(config, registry, storage, host, connector, auth.authorizer, log, metrics),
    log,
  });
  cleanups.add('stopping the controllers and releasing the leader lease', () => controllers.stop());
  metrics.leaderElection('controllers', () => controllers.isLeader());
  // Cleanups run in reverse: access key activity is still written first at shutdown, then the controllers stop.
  cleanups.add('writing access key activity', () => auth.stop());
}

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
async function serveHttps(
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
  const server: Server = createServer(
    { maxHeaderSize: MAX_HEADER_BYTES, ...connectionServerOptions(connectionLimits), ...servingTls.serverOptions() },
    app,
  );
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
    graceful.shutdown(server, { delayMs: config.shutdownDelayMs, drainMs, log }),
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
    metrics: parts.metrics,
    audit: parts.audit,
    alwaysAllowPaths: config.authorizationAlwaysAllowPaths,
    connections,
    log,
  };
}

/**
 * Once serving: the admin kubeconfig (with the embedded default's token and CA), the `serving` line saying where and
 * how to stop, and the schemas compiled in the background.
 */
function announce(
  config: Config,
  log: Logger,
  worker: WorkerOf | undefined,
  url: string,
  adminToken: string | undefined,
  caPem: string | undefined,
): string | undefined {
  let adminKubeconfig: string | undefined;
  if (adminToken && caPem) {
    adminKubeconfig = join(config.dataDir, 'admin.kubeconfig');
    writeKubeconfig(adminKubeconfig, { server: url, caPem, token: adminToken });
  }
  log.info('serving', {
    url,
    ...(adminKubeconfig ? { hint: `kubectl --kubeconfig ${adminKubeconfig} get sharedsecrets -A` } : {}),
    dataDir: resolvePath(config.dataDir),
    ...(config.etcdServers.length ? {} : { etcdData: resolvePath(config.dataDir, 'etcd') }),
    stop: `Ctrl-C (or kill -TERM ${worker ? process.ppid : process.pid}) stops the server; what is stored stays in ${config.etcdServers.length ? 'etcd' : resolvePath(config.dataDir)} for the next start`,
  });
  // In the background, so that the first write of each kind does not wait for its schema to compile.
  compileWaitingSchemas().catch((err: unknown) =>
    log.warn('compiling a schema failed; it is compiled again at its first use', { error: String(err) }),
  );
  return adminKubeconfig;
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

/** --tracing-config-file: the OpenTelemetry SDK is imported only then (no file, no cost). */
async function startTracing(path: string, log: Logger): Promise<() => Promise<void>> {
  const config = loadTracingConfig(path);
  const { createOtelTracer } = await import('./observability/otel.js');
  const otel = createOtelTracer({ config, serviceName: serverBuild.name, serviceVersion: serverBuild.version });
  const uninstall = installTracer(otel.tracer);
  log.info('tracing: spans are sent over OTLP/gRPC', { ...config });
  return async () => {
    uninstall();
    await otel.shutdown(TRACING_SHUTDOWN_MS);
  };
}

/** How long the spans still queued at shutdown may take to be sent (a collector that does not answer is left). */
const TRACING_SHUTDOWN_MS = 5000;

/** Writes again what an old encryption key or provider wrote, and logs how much (and what could not be read). */
async function rewriteStaleValues(
  storage: EtcdStorage,
  registry: Registry,
  signingKeys: SigningKeys,
  log: Logger,
): Promise<void> {
  try {
    const prefixes = [...registry.caches.values()].map((c) => c.prefix);
    let rewritten = 0;
    const unreadable: string[] = [];
    for (const prefix of prefixes) {
      const result = await storage.rewriteStale(prefix);
      rewritten += result.rewritten;
      unreadable.push(...result.unreadable);
    }
    await signingKeys.rewrite();
    if (unreadable.length)
      log.error('encryption at rest: these objects cannot be read with the keys configured and were not rewritten', {
        keys: unreadable,
      });
    log.info('encryption at rest: every stored object is written with the current write key', { rewritten });
  } catch (err) {
    log.error(
      'encryption at rest: rewriting stored objects with the current write key failed; it is tried again at the next start or reload',
      { error: (err as Error).message },
    );
  }
}

/**
 * What runs on the elected replica: the garbage collector, the ProjectSecret sync, the Clusters' health checks
 * (unless --cluster-health-interval is 0), and the access sync when there is a host cluster.
 */
function serverControllers(
  config: Config,
  registry: Registry,
  storage: EtcdStorage,
  host: HostCluster | undefined,
  connector: ClusterConnector,
  authorizer: Authorizer,
  log: Logger,
  metrics: Metrics,
): Controller[] {
  const info = (msg: string, fields?: Record<string, unknown>) => log.info(msg, fields);
  const workQueueMetrics = metrics.workQueues;
  const controllers: Controller[] = [
    {
      name: 'garbage-collector',
      run: (signal) => new GarbageCollector(registry, { log: info, workQueueMetrics }).run(signal),
    },
    {
      // Without a host cluster too: then an owner's access is its owner and access lists alone.
      name: 'projectsecret-sync',
      run: (signal) =>
        new ProjectSecretSync(registry, authorizer, {
          log: info,
          resyncIntervalMs: config.accessResyncPeriodMs,
          workQueueMetrics,
        }).run(signal),
    },
  ];
  if (config.clusterHealthIntervalMs > 0) {
    // Without a host cluster too: then the status of a local Cluster, or one with a config Secret, says so.
    controllers.push({
      name: 'cluster-health',
      run: (signal) =>
        new ClusterHealth(registry, connector, new ClusterUidHolders(storage, config.etcdPrefix), {
          intervalMs: config.clusterHealthIntervalMs,
          log: info,
          workQueueMetrics,
        }).run(signal),
    });
  }
  if (host) controllers.push(...hostControllers(config, registry, storage, host, log, metrics));
  return controllers;
}

/** What runs on the elected replica with a host cluster: the access sync, and the ProjectSecret delivery unless off. */
function hostControllers(
  config: Config,
  registry: Registry,
  storage: EtcdStorage,
  host: HostCluster,
  log: Logger,
  metrics: Metrics,
): Controller[] {
  const info = (msg: string, fields?: Record<string, unknown>) => log.info(msg, fields);
  const workQueueMetrics = metrics.workQueues;
  const controllers: Controller[] = [];
  const rbac = new HostRbac(host);
  controllers.push({
    name: 'access-sync',
    run: (signal) =>
      new AccessSync(registry, rbac, {
        log: info,
        resyncIntervalMs: config.accessResyncPeriodMs,
        workQueueMetrics,
      }).run(signal),
  });
  // One set of records for every run of the delivery: what storage did not take yet is still known to the next.
  const records = new DeliveryRecords(storage, config.etcdPrefix);
  if (config.projectSecretDelivery)
    controllers.push({
      name: 'projectsecret-delivery',
      run: (signal) =>
        new ProjectSecretDelivery(registry, host, records, {
          log: info,
          resyncIntervalMs: config.accessResyncPeriodMs,
          workQueueMetrics,
        }).run(signal),
    });
  return controllers;
}

/**
 * --audit-log-path (rotated) and --audit-webhook-config-file (batched); failures to write or send are logged, and
 * requests go on. A webhook kubeconfig that does not load stops the start.
 */
function auditBackends(config: Config, log: Logger, metrics: Metrics, worker?: WorkerOf): AuditSink[] {
  const sinks: AuditSink[] = [];
  if (config.auditLogPath)
    sinks.push(
      new AuditLog({
        path: config.auditLogPath,
        stdout: worker?.stdout,
        maxSizeBytes: config.auditLogMaxSizeBytes,
        maxBackups: config.auditLogMaxBackup,
        maxAgeDays: config.auditLogMaxAgeDays,
        onError: (err) => log.error('audit log write failed', { path: config.auditLogPath, error: err.message }),
        log,
        failed: metrics.auditLogFailed,
      }),
    );
  if (config.auditWebhookConfigFile) {
    try {
      sinks.push(
        new AuditWebhook({
          kubeconfigPath: config.auditWebhookConfigFile,
          initialBackoffMs: config.auditWebhookInitialBackoffMs,
          bufferSize: config.auditWebhookBatchBufferSize,
          maxBatchSize: config.auditWebhookBatchMaxSize,
          maxBatchWaitMs: config.auditWebhookBatchMaxWaitMs,
          throttle: config.auditWebhookBatchThrottleEnable
            ? { qps: config.auditWebhookBatchThrottleQps, burst: config.auditWebhookBatchThrottleBurst }
            : undefined,
          log,
          metrics: metrics.auditWebhook,
        }),
      );
    } catch (err) {
      if (err instanceof KubeconfigError)
        throw new Error(`--audit-webhook-config-file ${config.auditWebhookConfigFile}: ${err.message}`, {
          cause: err,
        });
      throw err;
    }
  }
  return sinks;
}

/** The etcd TLS files of the flags, read once (a rotated certificate needs a restart, as for kube-apiserver). */
function etcdTls(config: Config): EtcdStorageOptions['tls'] {
  if (!config.etcdCafile && !config.etcdCertfile) return undefined;
  const read = (file?: string) => (file ? readFileSync(file) : undefined);
  return { caPem: read(config.etcdCafile), certPem: read(config.etcdCertfile), keyPem: read(config.etcdKeyfile) };
}

/** etcd errors while reading or writing the signing keys, as a Status that names no key material. */
function signingKeysUnavailable(err: unknown): never {
  if (errors.isStatusError(err)) throw err;
  throw errors.serviceUnavailable(
    `the token signing keys cannot be read from etcd: ${(err as Error)?.name ?? 'error'}; try again`,
  );
}

/** --tls-cert-file/--tls-private-key-file, reloaded when they change; without them, the self-signed one. */
async function servingCertificate(
  config: Config,
  log: Logger,
): Promise<{ pair: Dynamic<ServingPair>; caPem?: string; stop(): void }> {
  if (config.tlsCertFile && config.tlsPrivateKeyFile) {
    const pair = reloadingServingCertificate({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile,
      intervalMs: config.tlsReloadIntervalMs,
      log,
    });
    pair.start();
    return { pair, stop: () => pair.stop() };
  }
  const pem = await ensureServingCertificate({ certDir: config.certDir, hosts: selfSignedHosts(config) });
  const pair = { cert: pem.certPem, key: pem.keyPem };
  return { pair: { current: () => pair, onChange: () => {} }, caPem: pem.caPem, stop: () => {} };
}

/** The address local clients dial: the bind address, or loopback when bound to every interface. */
function clientHost(bindAddress: string): string {
  if (bindAddress === '0.0.0.0') return '127.0.0.1';
  if (bindAddress === '::') return '::1';
  return bindAddress;
}
