/**
 * Wires the parts from a Config and runs them: etcd (external or embedded), storage, registry, auth, HTTPS. The flags
 * are completed here, and startServer takes the steps in order; each step is a module of src/startup/.
 */
import { ServedActions } from './actions/served.js';
import { rotateAccessKeyAction } from './actions/rotateaccesskey.js';
import { selfSubjectReviewAction } from './actions/selfsubjectreview.js';
import { enabledPlugins } from './admission/chain.js';
import { loadAdmissionConfiguration } from './admission/config.js';
import { ownerDeletionCheck } from './auth/ownerdeletion.js';
import { setUpAuth } from './auth/setup.js';
import type { Config } from './config.js';
import { lockDataDir } from './datadir-lock.js';
import type { Logger } from './log.js';
import { DEFAULT_POLICY, loadPolicyFile } from './observability/auditpolicy.js';
import { Metrics, registryWatchCacheStats } from './observability/metrics.js';
import { loadDefinitions } from './registry/definitions.js';
import { Registry } from './registry/registry.js';
import { ServingAddress } from './startup/address.js';
import { startAdmission } from './startup/admission.js';
import { announce } from './startup/announce.js';
import { startAudit } from './startup/audit.js';
import { Cleanups } from './startup/cleanups.js';
import { connectClusters } from './startup/clusters.js';
import { runControllers } from './startup/controllers.js';
import { startFlowControl } from './startup/flowcontrol.js';
import { startHost } from './startup/host.js';
import { serveHttps } from './startup/https.js';
import type { CompletedConfig, WorkerOf } from './startup/inputs.js';
import { servingCertificate } from './startup/servingcertificate.js';
import { rewriteStaleValues, startStorage } from './startup/storage.js';
import { startTokens } from './startup/tokens.js';
import { startTracing } from './startup/tracing.js';

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

// Defined beside the steps that read it (src/startup/ imports nothing of this file); exported here as before.
export type { WorkerOf };

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
      settings: {
        clusterHealthIntervalMs: config.clusterHealthIntervalMs,
        virtualClusterHealthIntervalMs: config.virtualClusterHealthIntervalMs,
        accessKeyMaxTtlSeconds: config.accessKeyMaxTtlSeconds,
        now: Date.now,
      },
    });
    const address = new ServingAddress(config);
    const actions = new ServedActions();
    actions.add(rotateAccessKeyAction(registry));
    actions.add(selfSubjectReviewAction());
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
    const auth = setUpAuth(config, registry, host.cluster, host.clientCas, log);
    // After the authorizers: the kube config flow asks them what an instance's importer may still get.
    const clusters = connectClusters(config, log, registry, host.cluster, actions, auth.authorizer, cleanups);
    const admission = startAdmission(config, log, host.cluster, cleanups);
    const flowControl = startFlowControl(config, log, host.cluster, cleanups);
    const ownerDeletion = ownerDeletionCheck(registry, auth.authorizer);
    // After the authorizers: the ProjectSecret sync asks them what a ProjectSecret's owner may read, and the virtual
    // clusters' health checks what an instance's importer may still get.
    runControllers(config, log, metrics, storage, registry, host.cluster, clusters, auth, cleanups);
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

/** Reads what the flags name (CompletedConfig) before anything starts. */
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
