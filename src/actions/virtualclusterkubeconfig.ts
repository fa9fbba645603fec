/**
 * VirtualClusterInstanceKubeConfig: GET or POST `.../virtualclusterinstances/<name>/kubeconfig` answers a kube
 * config for the virtual cluster: its ingress endpoint as server, its CA, and a new client certificate and key
 * for the caller, issued by the virtual cluster itself (src/clusters/virtualcluster.ts). Nothing is stored; the key
 * exists only in the answer.
 *
 * The certificate names the caller (CN) and its groups (O), leaving out `system:` groups: those belong to the
 * management API (kube's client signer refuses system:masters, and system:authenticated is added by the virtual
 * cluster itself). A caller whose own name is a `system:` one (a host ServiceAccount, a node, a control plane
 * component) gets none: 403, since the certificate would make it that identity inside the virtual cluster.
 *
 * The virtual cluster is reached through the Cluster the instance names (spec.clusterRef.cluster): its connection
 * Secret `vc-<name>` is read there. A Cluster that is not Initialized is a 503 naming its reason (the Cluster's
 * message, which may name Secrets of the host cluster, goes to the log: the caller may not be one who may read the
 * Cluster). A Cluster that now reaches another physical cluster than the one the instance was created on
 * (status.clusterUID, kinds/virtualclusterinstance/placement.ts) is a 503 too: the virtual cluster of the same namespace and name
 * there is someone else's. Whatever else keeps the virtual cluster from being reached (its connection Secret
 * missing, without its key, not a usable kubeconfig, or the cluster refusing to read it; a server the allow-list
 * refuses, or an answer larger than the bound) is one 503 for the caller, so that the action tells nothing of
 * Secrets in the cluster's namespaces or of where the connection points; the detail goes to the server's log for
 * operators.
 *
 * Its kube configs rest on whoever imported it (status.importedBy) passing what the import checked, asked again for
 * every one (checkImporterHolds): of this server, that they may get the Cluster and that the project still allows it;
 * of the cluster, that they hold the virtual cluster. Access to the instance shares what its importer has, and ends
 * with it.
 *
 * An instance whose health check found it not Ready (status.phase, controllers/virtualclusterhealth.ts) is a 503
 * naming its reason, once the caller passed those checks (checkReady); so is one whose checks are overdue
 * (kinds/virtualclusterinstance/freshness.ts: none completed for 3 intervals), whatever its phase said.
 *
 * The connection may name a server the tenant runs, so each request's work is bounded (clusters/virtualcluster.ts), and
 * so is the number of requests at once: MAX_REQUESTS_PER_USER for one caller, MAX_REQUESTS in all (429 past them).
 */
import yaml from 'js-yaml';
import type { Authorizer } from '../apimachinery/authorizer.js';
import { Path, fieldError } from '../apimachinery/field.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import * as errors from '../apimachinery/status.js';
import { X509Certificate } from 'node:crypto';
import { humanDuration } from '../apimachinery/duration.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { KubeObject } from '../apimachinery/types.js';
import { isMaster, type UserInfo } from '../apimachinery/user.js';
import { jsonEqual } from '../apimachinery/equality.js';
import { ClusterNotReadyError, untilReady, type ClusterConnections } from '../clusters/connections.js';
import type { ClusterConnection } from '../clusters/connector.js';
import { HostClusterError, type HostCluster } from '../host/cluster.js';
import { ServerAllowList } from '../host/serverallowlist.js';
import {
  CertificateNotIssuedError,
  VirtualClusterConnectionError,
  connectVirtualCluster,
  issueClientCertificate,
  type VirtualCluster,
} from '../clusters/virtualcluster.js';
import { silentLogger, type Logger } from '../log.js';
import {
  connectionSecretWhere,
  holdsVirtualCluster,
  importerLostCluster,
  instanceClusterUid,
  instanceImporter,
  instanceRef,
} from '../kinds/virtualclusterinstance/placement.js';
import { asUserInfo, isRecordedAs, recordUser } from '../registry/recordeduser.js';
import type { Store } from '../registry/store.js';
import type { AuthorizeOther } from '../registry/strategy.js';
import type { Registry } from '../registry/registry.js';
import { answer, requestSchema, type Action, type ActionCall } from './action.js';
import { ConcurrencyLimit } from './concurrency.js';
import { CHECK_OVERDUE } from '../kinds/overdue.js';
import { instanceOverdue } from '../kinds/virtualclusterinstance/freshness.js';
import { NO_IMPORTER, READY } from '../kinds/virtualclusterinstance/health.js';
import { Project } from '../kinds/project/types.js';
import { VirtualClusterInstance } from '../kinds/virtualclusterinstance/types.js';

const VERSION = 'v1';
const KIND = 'VirtualClusterInstanceKubeConfig';
/** The spec's default certificate lifetime: one day. */
export const DEFAULT_CERTIFICATE_TTL_SECONDS = 86400;
/** The shortest lifetime a CertificateSigningRequest may ask for (kube's validation). */
export const MIN_CERTIFICATE_TTL_SECONDS = 600;
/** How long a request waits for the virtual cluster to sign. */
const SIGNING_TIMEOUT_MS = 10_000;
/**
 * Kube config requests served at once, per caller and in all. Each reads at most MAX_ANSWER_BYTES at a time from
 * the virtual cluster, which the JSON parser can turn into 20-30 times as much memory.
 */
export const MAX_REQUESTS_PER_USER = 2;
export const MAX_REQUESTS = 8;
/** Kubernetes' own identities, which no kube config is issued for. */
const SYSTEM_PREFIX = 'system:';
/** All a caller is told when the virtual cluster cannot be reached (see the top). */
export const CONNECTION_UNAVAILABLE =
  "the virtual cluster's connection is not available; is the virtual cluster running? (the server's log has the details)";

const schema = requestSchema({
  spec: { type: 'object', properties: { certificateTTL: { type: 'integer', format: 'int64' } } },
  status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
});

export function kubeConfigAction(
  registry: Registry,
  clusters: ClusterConnections,
  /** This server's authorizers, asked as the importer what the import asked (checkImporterHolds). */
  authorizer: Authorizer,
  log: Logger = silentLogger,
  /** --virtual-cluster-allowed-servers. */
  allowedServers: readonly string[] = [],
  /** --kubeconfig-max-certificate-ttl, in seconds; 0 for no limit. */
  maxCertificateTtlSeconds = 0,
): Action {
  const instances = registry.store(VirtualClusterInstance);
  const importer = { instances, projects: registry.store(Project), authorizer };
  const servers = new ServerAllowList(allowedServers, '--virtual-cluster-allowed-servers');
  const inFlight = new ConcurrencyLimit('kube config requests', {
    perUser: MAX_REQUESTS_PER_USER,
    total: MAX_REQUESTS,
  });
  const action: Action = {
    group: GROUP_NAME,
    version: VERSION,
    resource: 'virtualclusterinstances',
    subresource: 'kubeconfig',
    kind: KIND,
    namespaced: true,
    anyNamespace: true,
    verbs: ['create', 'get'],
    schema,
    // The certificate's lifetime: a misspelt field dropped unread would give a longer-lived credential than asked.
    restrictingFields: [['spec']],
    async serve(call: ActionCall): Promise<KubeObject> {
      const ttl = boundedTTL(certificateTTL(call), call, maxCertificateTtlSeconds);
      if (call.user.name.startsWith(SYSTEM_PREFIX)) {
        throw errors.forbidden(
          { group: GROUP_NAME, resource: 'virtualclusterinstances' },
          call.name,
          `User ${JSON.stringify(call.user.name)} cannot get a kube config: its certificate would carry this ${SYSTEM_PREFIX} identity into the virtual cluster; kube configs are issued to users, not to Kubernetes' own identities`,
        );
      }
      // Without a namespace the name matched no instance the caller may use (http/findnamespace.ts).
      if (!call.namespace) throw errors.notFound(instances.def.groupResource, call.name);
      const instance = await instances.get(call.namespace, call.name);
      const where = `VirtualClusterInstance ${call.namespace}/${call.name}`;
      const endpoint: string | undefined = instance.spec?.ingressEndpoint;
      if (!endpoint)
        throw errors.badRequest(
          `${where} has no ingress endpoint (spec.ingressEndpoint): a kube config is made only for a virtual cluster reachable through an ingress`,
        );
      const ref = instance.spec?.clusterRef ?? {};
      if (!ref.namespace)
        throw errors.badRequest(
          `${where} does not say where the virtual cluster runs (spec.clusterRef.namespace), so its connection cannot be found`,
        );
      // clusterRef.cluster is required on every write (kinds/virtualclusterinstance/validation.ts).
      const at = { cluster: ref.cluster!, namespace: ref.namespace };

      const kubeConfig = await inFlight.run(call.user.name, async () => {
        const cluster = await clusterOf(clusters, instance, where, log);
        await checkImporterHolds(cluster, importer, instance, call, where);
        checkReady(instance, where);
        const vc = await connect(cluster.api, at, ref.virtualCluster || call.name, servers, where, log);
        return withStatusErrors(where, log, async () => {
          const groups = call.user.groups.filter((g) => !g.startsWith('system:'));
          const cert = await issueClientCertificate(vc.api, {
            user: call.user.name,
            groups,
            expirationSeconds: ttl,
            timeoutMs: SIGNING_TIMEOUT_MS,
          });
          const rendered = renderKubeConfig(
            `platform_${call.namespace}_${call.name}`,
            endpoint,
            vc.caData,
            cert.certificatePem,
            cert.keyPem,
          );
          return { rendered, notAfter: notAfterOf(cert.certificatePem) };
        });
      });
      const metadata = { name: call.name, namespace: call.namespace };
      return answer(action, metadata, {
        spec: { certificateTTL: ttl },
        status: { kubeConfig: kubeConfig.rendered, certificateNotAfter: kubeConfig.notAfter },
      });
    },
  };
  return action;
}

/** What checkImporterHolds reads and asks in this server. */
interface ImporterChecks {
  instances: Store<VirtualClusterInstance>;
  projects: Store<Project>;
  authorizer: Authorizer;
}

/**
 * The instance's kube configs rest on its importer (status.importedBy) passing what the import checked, asked again
 * for each one: once the importer may no longer get the instance's Cluster here, its project no longer allows that
 * Cluster, or the importer may no longer get the virtual cluster's connection Secret there, nobody gets a kube config
 * through the instance (403), whatever its owner and access entries grant; system:masters are not asked about, as at
 * import. An instance stored before importers were recorded gives one only to a caller who has the virtual cluster.
 */
async function checkImporterHolds(
  cluster: ClusterConnection,
  { instances, projects, authorizer }: ImporterChecks,
  instance: VirtualClusterInstance,
  call: ActionCall,
  where: string,
): Promise<void> {
  const importer = instanceImporter(instance);
  // The importer asking is asked about as they are now, and recorded so (their groups may have changed since).
  const asked = importer && isRecordedAs(importer, call.user);
  if (asked) await refreshImporter(instances, instance, call.user);
  const holder = importer && !asked ? asUserInfo(importer) : call.user;
  if (isMaster(call.user) || isMaster(holder)) return;
  if (importer) {
    // As the import asked: of this server's authorizers, without the restriction of the caller's credential.
    const authorize: AuthorizeOther = (attrs) => authorizer.authorize({ ...attrs, user: holder });
    const lost = await importerLostCluster(projects, instance, { user: holder, authorize });
    if (lost)
      throw errors.forbidden(
        { group: GROUP_NAME, resource: 'virtualclusterinstances' },
        call.name,
        `no kube config is issued through ${where}: its kube configs rest on what its import checked, and ${lost}`,
      );
  }
  const { cluster: clusterName, namespace, virtualCluster } = instanceRef(instance);
  const ref = { cluster: clusterName, namespace, virtualCluster };
  if (await holdsVirtualCluster(cluster, ref, holder, 'a kube config')) return;
  const secret = connectionSecretWhere(ref);
  throw errors.forbidden(
    { group: GROUP_NAME, resource: 'virtualclusterinstances' },
    call.name,
    importer
      ? `no kube config is issued through ${where}: its kube configs rest on its importer's hold of the virtual cluster (status.importedBy, User ${JSON.stringify(importer.username)}), and that user may no longer get its connection Secret ${secret}; someone who has the virtual cluster may import it again`
      : `User ${JSON.stringify(call.user.name)} cannot get a kube config through ${where}: it was stored before importers were recorded (status.importedBy), so a kube config is issued only to someone who has the virtual cluster (who may get its connection Secret ${secret})`,
  );
}

/**
 * An instance its health check found not Ready (controllers/virtualclusterhealth.ts) is a 503 naming its reason:
 * asked after the checks a caller must pass (the Cluster, the importer's hold), so that nobody who may not get a kube
 * config learns its health, and before anything is asked of the virtual cluster. Its message stays on the instance,
 * which the caller may not be allowed to read. An instance not checked yet (or with the checks off) is the flow's own
 * to find out, and so is one whose check has nobody to rest on (no importer recorded): the caller's hold was asked.
 * One whose checks are overdue (kinds/virtualclusterinstance/freshness.ts) is a 503 whatever its phase said, with
 * the overdue message: the server's own, naming only times and the last check's phase and reason.
 */
function checkReady(instance: VirtualClusterInstance, where: string): void {
  // Before the phase: an overdue status may say anything, and that no check has confirmed it lately is the news.
  const overdue = instanceOverdue(instance);
  if (overdue)
    throw errors.serviceUnavailable(
      `${where} is not ready (${CHECK_OVERDUE}): ${String(overdue.message)}; try again once a check completes and its status.phase is Ready`,
    );
  const { phase, reason } = instance.status ?? {};
  if (!phase || phase === READY || reason === NO_IMPORTER) return;
  throw errors.serviceUnavailable(
    `${where} is not ready (${reason || phase}): its virtual cluster did not pass its last health check; try again once its status.phase is Ready`,
  );
}

/** Records the importer as they are now, when that differs from the record (a status write as the server). */
async function refreshImporter(
  instances: Store<VirtualClusterInstance>,
  read: VirtualClusterInstance,
  user: UserInfo,
): Promise<void> {
  const now = recordUser(user);
  if (jsonEqual(now, read.status?.importedBy)) return;
  await instances
    .update(
      read.metadata.namespace,
      read.metadata.name!,
      {
        patch: (obj) => {
          // Another instance of that name since, or another importer: not this record to refresh.
          const stored = instanceImporter(obj);
          if (obj.metadata.uid !== read.metadata.uid || !stored || !isRecordedAs(stored, user)) return obj;
          obj.status = { ...obj.status, importedBy: now };
          return obj;
        },
      },
      'status',
      { fieldManager: 'kubeconfig' },
    )
    .catch((err) => {
      if (!errors.isStatusError(err, 'NotFound')) throw err;
    });
}

/** spec.certificateTTL of a POST, the certificateTTL query parameter of a GET; 0 asks for no lifetime. */
function certificateTTL(call: ActionCall): number {
  let ttl: unknown = DEFAULT_CERTIFICATE_TTL_SECONDS;
  if (call.verb === 'create') {
    // The action's schema checked the request: spec, when given, is an object whose certificateTTL is an integer.
    const spec = call.object?.spec as { certificateTTL?: number } | undefined;
    ttl = spec?.certificateTTL ?? ttl;
  } else if (call.query.has('certificateTTL')) {
    const text = call.query.get('certificateTTL')!;
    if (!/^\d+$/.test(text))
      throw errors.badRequest(
        `the certificateTTL query parameter must be a whole number of seconds (got ${JSON.stringify(text)})`,
      );
    ttl = Number(text);
  }
  const n = ttl as number;
  if (n !== 0 && n < MIN_CERTIFICATE_TTL_SECONDS) {
    const at = Path.root('spec').child('certificateTTL');
    throw errors.invalid({ group: GROUP_NAME, kind: KIND }, call.name, [
      fieldError.invalid(
        at,
        n,
        `must be 0 (the virtual cluster's signing duration) or at least ${MIN_CERTIFICATE_TTL_SECONDS} seconds, the shortest a certificate signing request may ask for`,
      ),
    ]);
  }
  return n;
}

/**
 * --kubeconfig-max-certificate-ttl: outside system:masters a longer lifetime becomes the maximum (a Warning says so),
 * and 0, the virtual cluster's own signing duration (often a year), is refused: a certificate cannot be revoked.
 */
function boundedTTL(ttl: number, call: ActionCall, maxSeconds: number): number {
  if (!maxSeconds || isMaster(call.user)) return ttl;
  const max = `${maxSeconds} seconds (${humanDuration(maxSeconds * 1000)}, --kubeconfig-max-certificate-ttl)`;
  if (ttl === 0)
    throw errors.invalid({ group: GROUP_NAME, kind: KIND }, call.name, [
      fieldError.invalid(
        Path.root('spec').child('certificateTTL'),
        0,
        `0 (the virtual cluster's own signing duration) is for system:masters only: a certificate cannot be revoked, so this server issues ones of at most ${max}`,
      ),
    ]);
  if (ttl <= maxSeconds) return ttl;
  call.warnings.push(
    `spec.certificateTTL: set to ${maxSeconds}, the longest life of a kube config's certificate outside system:masters (${max}); ${ttl} was asked for`,
  );
  return maxSeconds;
}

/** The certificate's notAfter, RFC 3339 with whole seconds; undefined when it cannot be read. */
function notAfterOf(pem: string): string | undefined {
  try {
    return nowRFC3339(new Date(new X509Certificate(pem).validTo));
  } catch {
    return undefined;
  }
}

/**
 * The connection of the Cluster the instance names, if Initialized and still the physical cluster the instance was
 * created on (see the top); else a 503, the details logged.
 */
async function clusterOf(
  clusters: ClusterConnections,
  instance: VirtualClusterInstance,
  where: string,
  log: Logger,
): Promise<ClusterConnection> {
  const name = instanceRef(instance).cluster;
  let cluster: ClusterConnection;
  try {
    cluster = await clusters.connection(name);
  } catch (err) {
    if (!(err instanceof ClusterNotReadyError)) throw err;
    log.warn('no connection to a Cluster for a kube config', {
      instance: where,
      cluster: name,
      reason: err.reason,
      message: err.message,
    });
    throw errors.serviceUnavailable(
      `Cluster ${JSON.stringify(name)}, where the virtual cluster runs, is not ready (${err.reason}); try again ${untilReady(err.reason)}`,
    );
  }
  const uid = instanceClusterUid(instance);
  if (uid && uid !== cluster.kubeSystemUid) {
    log.warn('a Cluster reaches another physical cluster than the one an instance was created on', {
      instance: where,
      cluster: name,
      recorded: uid,
      reached: cluster.kubeSystemUid,
    });
    throw errors.serviceUnavailable(
      `Cluster ${JSON.stringify(name)} now connects to another physical cluster than the one ${where} was created on (its kube-system uid differs, status.clusterUID), so its virtual cluster is not there; an administrator may connect the Cluster to that cluster again`,
    );
  }
  return cluster;
}

/** The virtual cluster's connection; any failure to read or use it is the one 503, its detail logged. */
async function connect(
  cluster: HostCluster,
  ref: { cluster: string; namespace: string },
  name: string,
  servers: ServerAllowList,
  where: string,
  log: Logger,
): Promise<VirtualCluster> {
  try {
    return await connectVirtualCluster(cluster, ref.namespace, name, servers, `Cluster ${JSON.stringify(ref.cluster)}`);
  } catch (err) {
    if (!(err instanceof VirtualClusterConnectionError || err instanceof HostClusterError)) throw err;
    log.warn('no connection to a virtual cluster for a kube config', { instance: where, reason: err.message });
    throw errors.serviceUnavailable(CONNECTION_UNAVAILABLE);
  }
}

/**
 * Failures of the virtual cluster to sign as Statuses: refused 500, slow 504; not answering is the connection's
 * 503 (its detail, which names where the connection points, logged).
 */
async function withStatusErrors<T>(where: string, log: Logger, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CertificateNotIssuedError)
      throw err.timedOut ? errors.timeout(err.message) : errors.internalError(new Error(err.message));
    if (err instanceof HostClusterError) {
      log.warn('the virtual cluster did not answer a kube config request', { instance: where, reason: err.message });
      throw errors.serviceUnavailable(CONNECTION_UNAVAILABLE);
    }
    throw err;
  }
}

function renderKubeConfig(
  name: string,
  server: string,
  caData: string,
  certificatePem: string,
  keyPem: string,
): string {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  return yaml.dump(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name, cluster: { server, 'certificate-authority-data': caData } }],
      users: [{ name, user: { 'client-certificate-data': b64(certificatePem), 'client-key-data': b64(keyPem) } }],
      contexts: [{ name, context: { cluster: name, user: name } }],
      'current-context': name,
    },
    { lineWidth: -1 },
  );
}
