/**
 * How the server reaches a Cluster, and what it asks to call it connected:
 *
 * - spec.networkPeer: the cluster dials in through a network overlay this server does not run, so nothing is
 *   reached and nothing pretends to be (phase "", reason WaitingForNetworkPeer);
 * - spec.local: the server's own host cluster (--kubeconfig or in-cluster), with its own credential;
 * - otherwise the kubeconfig in the host's Secret spec.config.secretNamespace (empty: --cluster-secret-namespace) /
 *   spec.config.secretName, key spec.config.key (default `config`), read again on each check so a rotated Secret
 *   counts at the next one (from a watched copy where the server may watch: configsecrets.ts), and parsed again
 *   only when its resourceVersion moved: the connection made from it, its TLS sessions and kept-alive connections,
 *   serve every check until then. The Secret is data someone wrote: only certificate, token and CA fields are used
 *   (storedkubeconfig.ts: never exec, files or proxies), answers are bounded, link-local addresses are refused.
 *
 * A cluster is connected when GET /version answers and the kube-system Namespace can be read: its uid names the
 * physical cluster (the same cluster under two Clusters has the same uid). What a check found is remembered: work
 * that can rest on a recent check (`connect`'s maxAgeMs: a virtual cluster's health check, a burst of kube configs)
 * takes it without asking the cluster again. Failures are ClusterConnectionErrors with
 * one CamelCase reason and a message that says what is wrong and what to do, read by anyone who may read the Cluster:
 * never a credential, never the Secret's contents, never the words of a cluster's answer (which may name this
 * server's identity); those go to the log.
 */
import { kubernetesVersionOf } from '../apimachinery/kubeversion.js';
import { isPlainObject } from '../apimachinery/types.js';
import { HostCluster, HostClusterError } from '../host/cluster.js';
import { ServerAllowList } from '../host/serverallowlist.js';
import { StoredKubeConfigError, kubeConfigFromData } from '../host/storedkubeconfig.js';
import type { Cluster } from '../kinds/cluster/types.js';
import { ConfigSecrets } from './configsecrets.js';

/** The key of the config Secret when spec.config.key is empty (upstream's default). */
export const DEFAULT_CONFIG_KEY = 'config';
/** Every request of a check is bounded by this long. */
export const CHECK_TIMEOUT_MS = 5_000;
/**
 * The most bytes read of one answer of a connected cluster. /version and a Namespace are well under a KiB; the
 * requests of later work (virtual clusters' Secrets, CSRs) stay within this as a virtual cluster's do.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** The longest version or uid taken from an answer (a kube uid is 36 characters, a version about 20). */
const MAX_FIELD = 128;

export type ClusterPhase = '' | 'Initialized' | 'Failed';

/** Why a Cluster is not connected: `reason` is one CamelCase word, `message` is for whoever reads the Cluster. */
export class ClusterConnectionError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    /** "" while nothing can be checked yet (a network peer), Failed otherwise. */
    readonly phase: ClusterPhase = 'Failed',
    /** The cluster answered, though it is not usable (say, a duplicate). */
    readonly online = false,
    /** For the log only: the underlying error's text. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ClusterConnectionError';
  }
}

/** A connected cluster: its API (bounded), the uid of its kube-system Namespace and its Kubernetes version. */
export interface ClusterConnection {
  api: HostCluster;
  kubeSystemUid: string;
  version: string;
}

export interface ClusterConnectorOptions {
  /** The host cluster (--kubeconfig, or in-cluster); undefined when the server has none. */
  host: HostCluster | undefined;
  /** Where config Secrets are read when spec.config.secretNamespace is empty (--cluster-secret-namespace). */
  secretNamespace: string;
  /** Which servers a config Secret may name; default: any but link-local addresses. */
  allowedServers?: ServerAllowList;
  /** Watch the Secrets of `secretNamespace` rather than read each at every check (configsecrets.ts); stop() ends it. */
  watchSecrets?: boolean;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

interface ConfigRef {
  namespace: string;
  name: string;
  key: string;
}

/** A connection made from a Secret, kept while the Secret stays as it was read (its resourceVersion). */
interface Cached {
  /** Which Secret and key (or the host), and its resourceVersion. */
  source: string;
  secretVersion: string;
  api: HostCluster;
}

/** The last check of a Cluster that connected, while the Cluster's spec stays as it was checked with. */
interface Checked {
  at: number;
  generation: number | undefined;
  connection: ClusterConnection;
}

export class ClusterConnector {
  private readonly allowedServers: ServerAllowList;
  private readonly secrets?: ConfigSecrets;
  private readonly now: () => number;
  /** By Cluster uid. */
  private readonly cache = new Map<string, Cached>();
  /** By Cluster uid. */
  private readonly checked = new Map<string, Checked>();

  constructor(private readonly opts: ClusterConnectorOptions) {
    this.allowedServers = opts.allowedServers ?? new ServerAllowList([], 'Cluster config Secrets');
    this.now = opts.now ?? Date.now;
    if (opts.host)
      this.secrets = new ConfigSecrets(opts.host, {
        watchedNamespace: opts.watchSecrets ? opts.secretNamespace : undefined,
        timeoutMs: CHECK_TIMEOUT_MS,
        log: opts.log,
        now: this.now,
      });
  }

  /**
   * Connects to `cluster` and checks it (see the top); throws a ClusterConnectionError saying why not. A check that
   * connected less than `maxAgeMs` ago, with the Cluster's spec as it is now, is its answer (0: ask the cluster).
   */
  async connect(cluster: Cluster, maxAgeMs = 0): Promise<ClusterConnection> {
    const uid = cluster.metadata.uid ?? '';
    const last = this.checked.get(uid);
    if (last && last.generation === cluster.metadata.generation && this.now() - last.at < maxAgeMs)
      return last.connection;
    this.checked.delete(uid);
    const connection = await this.check(cluster);
    this.checked.set(uid, { at: this.now(), generation: cluster.metadata.generation, connection });
    return connection;
  }

  /** Stops watching the config Secrets. */
  stop(): void {
    this.secrets?.stop();
  }

  private async check(cluster: Cluster): Promise<ClusterConnection> {
    const api = await this.api(cluster);
    const who = cluster.spec?.local === true ? 'the host cluster' : 'the cluster';
    const credential =
      cluster.spec?.local === true
        ? "this server's own credential"
        : `the credential of ${describe(this.ref(cluster))}`;
    const version = await probe(who, credential, () =>
      api.request<unknown>('reading /version', 'GET', '/version', { timeoutMs: CHECK_TIMEOUT_MS }),
    );
    const namespace = await probe(who, credential, () =>
      api.request<unknown>('reading Namespace kube-system', 'GET', '/api/v1/namespaces/kube-system', {
        timeoutMs: CHECK_TIMEOUT_MS,
      }),
    );
    const uid = isPlainObject(namespace) && isPlainObject(namespace.metadata) ? namespace.metadata.uid : undefined;
    if (typeof uid !== 'string' || !uid || uid.length > MAX_FIELD)
      throw new ClusterConnectionError(
        'ClusterUID',
        `${who} answered, but its kube-system Namespace has no uid, which identifies the cluster: is this a Kubernetes API server?`,
        'Failed',
        true,
      );
    return { api, kubeSystemUid: uid, version: kubernetesVersionOf(version) };
  }

  /** Forgets what was kept for a Cluster that is gone. */
  forget(clusterUid: string): void {
    this.cache.delete(clusterUid);
    this.checked.delete(clusterUid);
  }

  /** The API of `cluster`, before anything is asked of it. */
  private async api(cluster: Cluster): Promise<HostCluster> {
    const spec = cluster.spec ?? {};
    if (spec.networkPeer === true)
      throw new ClusterConnectionError(
        'WaitingForNetworkPeer',
        'the cluster connects through a network overlay (spec.networkPeer) that this server does not run; it is not checked until it can be reached another way (spec.config or spec.local)',
        '',
      );
    const host = this.opts.host;
    if (spec.local === true) {
      if (!host)
        throw new ClusterConnectionError(
          'NoHostCluster',
          'a local Cluster is the host cluster of this server, and this server has none: start it with --kubeconfig (or run it in a pod of that cluster)',
        );
      return host;
    }
    const ref = this.ref(cluster);
    if (!host)
      throw new ClusterConnectionError(
        'NoHostCluster',
        `the config ${describe(ref)} is read from this server's host cluster, and this server has none: start it with --kubeconfig (or run it in a pod of that cluster)`,
      );
    return this.fromSecret(cluster.metadata.uid ?? '', ref);
  }

  private ref(cluster: Cluster): ConfigRef {
    const config = cluster.spec?.config ?? {};
    return {
      namespace: config.secretNamespace || this.opts.secretNamespace,
      name: config.secretName ?? '',
      key: config.key || DEFAULT_CONFIG_KEY,
    };
  }

  private async fromSecret(clusterUid: string, ref: ConfigRef): Promise<HostCluster> {
    const where = describe(ref);
    let secret: unknown;
    try {
      secret = await this.secrets!.get(ref.namespace, ref.name, `reading ${where}`);
    } catch (err) {
      throw secretError(err, ref, where);
    }
    const meta = isPlainObject(secret) && isPlainObject(secret.metadata) ? secret.metadata : {};
    const secretVersion = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '';
    const source = `${ref.namespace}/${ref.name}/${ref.key}`;
    const cached = this.cache.get(clusterUid);
    if (cached && secretVersion && cached.secretVersion === secretVersion && cached.source === source)
      return cached.api;

    const data = isPlainObject(secret) && isPlainObject(secret.data) ? secret.data : {};
    const value = data[ref.key];
    if (typeof value !== 'string' || !value)
      throw new ClusterConnectionError(
        'InvalidConfig',
        `${where} has no key ${JSON.stringify(ref.key)} (spec.config.key; default ${JSON.stringify(DEFAULT_CONFIG_KEY)}): put the cluster's kubeconfig under that key`,
      );
    let api: HostCluster;
    try {
      const connection = kubeConfigFromData(Buffer.from(value, 'base64').toString('utf8'));
      api = new HostCluster(connection, {
        maxResponseBytes: MAX_ANSWER_BYTES,
        allowedServers: this.allowedServers,
        timeoutMs: CHECK_TIMEOUT_MS,
      });
    } catch (err) {
      const why = err instanceof StoredKubeConfigError ? err.message : 'it is not a kubeconfig this server can use';
      throw new ClusterConnectionError(
        'InvalidConfig',
        `${where}, key ${JSON.stringify(ref.key)} (spec.config.key): ${why}`,
        'Failed',
        false,
        String((err as Error)?.message ?? err),
      );
    }
    if (secretVersion) this.cache.set(clusterUid, { source, secretVersion, api });
    return api;
  }
}

const describe = (ref: ConfigRef) =>
  `the Secret ${ref.namespace}/${ref.name} (spec.config.secretNamespace/secretName) in the host cluster`;

/** A failed read of the config Secret, in the host cluster. */
function secretError(err: unknown, ref: ConfigRef, where: string): ClusterConnectionError {
  const detail = String((err as Error)?.message ?? err);
  if (!(err instanceof HostClusterError))
    return new ClusterConnectionError('InvalidConfig', `${where} cannot be read`, 'Failed', false, detail);
  if (err.code === 404)
    return new ClusterConnectionError(
      'ConfigSecretNotFound',
      `${where} does not exist: create it from the cluster's kubeconfig (kubectl -n ${ref.namespace} create secret generic ${ref.name} --from-file=${ref.key}=<kubeconfig file>)`,
      'Failed',
      false,
      detail,
    );
  if (err.code === 403)
    return new ClusterConnectionError(
      'ConfigSecretForbidden',
      `this server may not read ${where}: grant it get on that Secret (the Helm chart's rbac.clusterSecrets)`,
      'Failed',
      false,
      detail,
    );
  return new ClusterConnectionError(
    'HostUnavailable',
    `the host cluster did not answer ${err.code === undefined ? '' : `(HTTP ${err.code}) `}when ${where} was read; it is read again at the next check`,
    'Failed',
    false,
    detail,
  );
}

/** One request of a check; its failure as the reason a person can act on. */
async function probe<T>(who: string, credential: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const detail = String((err as Error)?.message ?? err);
    if (!(err instanceof HostClusterError))
      throw new ClusterConnectionError('Unreachable', `${who} cannot be reached`, 'Failed', false, detail);
    switch (err.code) {
      case undefined:
        throw new ClusterConnectionError(
          'Unreachable',
          `${who} did not answer within ${CHECK_TIMEOUT_MS / 1000}s, or could not be connected to (is its API server running, and reachable from this server at the address of its kubeconfig?); the server's log has the details`,
          'Failed',
          false,
          detail,
        );
      case 401:
        throw new ClusterConnectionError(
          'Unauthorized',
          `${who} does not accept ${credential} (HTTP 401): it may have expired or been revoked; renew it`,
          'Failed',
          true,
          detail,
        );
      case 403:
        throw new ClusterConnectionError(
          'Forbidden',
          `${credential} may not read /version and the Namespace kube-system of ${who} (HTTP 403): grant it get on namespaces`,
          'Failed',
          true,
          detail,
        );
      case 404:
        throw new ClusterConnectionError(
          'ClusterUID',
          `${who} has no kube-system Namespace (HTTP 404), whose uid identifies the cluster: is this a Kubernetes API server?`,
          'Failed',
          true,
          detail,
        );
      default:
        throw new ClusterConnectionError(
          'Unavailable',
          `${who} answered HTTP ${err.code}; it is checked again at the next interval`,
          'Failed',
          true,
          detail,
        );
    }
  }
}
