/** Command-line flags (named like kube-apiserver's) into one typed configuration. */
import { isIP } from 'node:net';
import { join } from 'node:path';
import { parseGoDuration } from './apimachinery/duration.js';
import { GROUP_NAME } from './apimachinery/group.js';
import { isDNS1123Label, isDNS1123Subdomain } from './apimachinery/validation.js';
import { usableCores } from './cpus.js';

export interface Config {
  etcdServers: string[];
  /** CA bundle (PEM) that verifies etcd's serving certificate; unset: plain http, or the system roots for https. */
  etcdCafile?: string;
  /** Client certificate and key (PEM) presented to etcd. */
  etcdCertfile?: string;
  etcdKeyfile?: string;
  etcdPrefix: string;
  dataDir: string;
  bindAddress: string;
  securePort: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir: string;
  tlsSans: string[];
  tokenAuthFile?: string;
  /** 0 disables compaction. */
  etcdCompactionIntervalMs: number;
  /** At most one status.lastActivity write per access key per this long. */
  accessKeyActivityMinIntervalMs: number;
  /** How often pending access key activity is looked at (and written when due). */
  accessKeyActivityTickMs: number;
  /** CA bundle (PEM) that signs the front proxy's client certificate; unset: X-Remote-* headers are never trusted. */
  requestheaderClientCaFile?: string;
  /** Common names the front proxy's certificate may have; empty: any name signed by the CA. */
  requestheaderAllowedNames: string[];
  requestheaderUsernameHeaders: string[];
  requestheaderUidHeaders: string[];
  requestheaderGroupHeaders: string[];
  requestheaderExtraHeadersPrefix: string[];
  /** CA bundle (PEM) for client certificates: CN is the user, O the groups. */
  clientCaFile?: string;
  /** The host cluster (TokenReview, SubjectAccessReview, RBAC); unset: in-cluster config when in a pod. */
  kubeconfig?: string;
  /**
   * Where virtual cluster connections (stored data) may point: address ranges, addresses and DNS names; empty: any
   * address but the link-local ones (host/serverallowlist.ts).
   */
  virtualClusterAllowedServers: string[];
  /** Admission plugins named on (all are on by default) and off; admission runs only with a host cluster. */
  enableAdmissionPlugins: string[];
  disableAdmissionPlugins: string[];
  /** kube's AdmissionConfiguration file: the plugins' own configuration (the webhooks' credentials). */
  admissionControlConfigFile?: string;
  authenticationTokenWebhookCacheTtlMs: number;
  authorizationWebhookCacheAuthorizedTtlMs: number;
  authorizationWebhookCacheUnauthorizedTtlMs: number;
  /** How long the controllers' leader holds its etcd lease without renewing it (whole seconds, at least 1 s). */
  leaderElectLeaseDurationMs: number;
  /** How often every SharedSecret and Cluster is reconciled with the host's RBAC again, besides watching. */
  accessResyncPeriodMs: number;
  /** How often every Cluster's connection is checked (and its Secret read again); 0: never (no status is written). */
  clusterHealthIntervalMs: number;
  /** With a host cluster: each ProjectSecret kept as a Secret in its project namespace there. */
  projectSecretDelivery: boolean;
  /** Where a Cluster's config Secret is looked for when its spec.config.secretNamespace is empty. */
  clusterSecretNamespace: string;
  /** The `iss` of direct cluster endpoint tokens and the issuer of the OpenID discovery; unset: this server's URL. */
  tokenIssuer?: string;
  /** The longest lifetime of a direct cluster endpoint token. */
  tokenMaxTtlMs: number;
  /** How long a token signing key signs before a new one takes over. */
  tokenSigningKeyRotationPeriodMs: number;
  /** How long a new signing key is published in the JWKS before it signs. */
  tokenSigningKeyPublishDelayMs: number;
  /**
   * Requests (other than watches and those of system:masters) served at once: read-only and mutating. With API
   * Priority and Fairness, their sum is the seats shared among the priority levels.
   */
  maxRequestsInflight: number;
  /** The most seats one flow holds at once in a level that queues (0: no bound but the level's). */
  maxSeatsPerFlow: number;
  maxMutatingRequestsInflight: number;
  /** API Priority and Fairness in place of the two in-flight limits (kube's --enable-priority-and-fairness). */
  enablePriorityAndFairness: boolean;
  /** A request other than a watch not answered within this long gets 504 Timeout (0: no deadline). */
  requestTimeoutMs: number;
  /**
   * How long after its deadline a request may still take to end (its answer still being written) before its
   * response and connection are cut. No flag: kube cuts at the deadline itself (src/http/deadline.ts).
   */
  responseGraceMs: number;
  /** Watches without timeoutSeconds end after a random time between this and twice this (seconds). */
  minRequestTimeoutSeconds: number;
  /**
   * Connection deadlines, without flags (kube-apiserver fixes its own): how long the TLS handshake and each
   * request's headers may take, how long a connection may wait after its handshake before it sends the first byte
   * of a request, and how long a keep-alive connection may wait for its next request (see src/http/connections.ts).
   */
  readHeaderTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  /**
   * How many connections that have not had a request authenticated are taken on at once, in all and from one
   * source address; how many more may wait for room, and for how long (see src/http/connections.ts).
   */
  maxUnauthenticatedConnections: number;
  maxUnauthenticatedConnectionsPerSource: number;
  maxWaitingConnections: number;
  connectionWaitTimeoutMs: number;
  /** After SIGTERM, /readyz fails at once but requests are still served this long before the listener closes. */
  shutdownDelayMs: number;
  /** Do not read the front proxy's settings from kube-system/extension-apiserver-authentication. */
  authenticationSkipLookup: boolean;
  /** klog's --v: 0 errors, warnings and lifecycle; 3 adds a line per request; 4 adds debug lines. */
  verbosity: number;
  /** Processes serving the port (node:cluster); 1: this process serves alone, as before --workers. */
  workers: number;
  /** Non-resource paths anyone may GET without authorization (and without credentials); a trailing '*' is a prefix. */
  authorizationAlwaysAllowPaths: string[];
  /** Where audit events are written as JSON lines ('-': stdout); unset: no audit log. */
  auditLogPath?: string;
  /** Size at which the audit log is rotated (bytes; 0: never rotated). */
  auditLogMaxSizeBytes: number;
  /** Rotated audit logs kept (0: all). */
  auditLogMaxBackup: number;
  /** Days a rotated audit log is kept (0: no age limit). */
  auditLogMaxAgeDays: number;
  /** kube's audit.k8s.io/v1 Policy; unset: every request at Metadata (observability/auditpolicy.ts). */
  auditPolicyFile?: string;
  /** A kubeconfig naming the audit webhook; unset: no webhook. */
  auditWebhookConfigFile?: string;
  /** Only kube's batch mode is served. */
  auditWebhookMode: 'batch';
  /** The wait before a failed batch is sent again (kube: 10s), growing 1.5 times each try. */
  auditWebhookInitialBackoffMs: number;
  auditWebhookBatchBufferSize: number;
  auditWebhookBatchMaxSize: number;
  auditWebhookBatchMaxWaitMs: number;
  auditWebhookBatchThrottleEnable: boolean;
  auditWebhookBatchThrottleQps: number;
  auditWebhookBatchThrottleBurst: number;
  /** EncryptionConfiguration file (encryption at rest); unset: the embedded default's, or none with external etcd. */
  encryptionProviderConfig?: string;
  /** TracingConfiguration file (OpenTelemetry over OTLP/gRPC); unset: no tracing, and nothing of it loaded. */
  tracingConfigFile?: string;
  /** Watch that file and put a changed, valid one in force without a restart. */
  encryptionProviderConfigAutomaticReload: boolean;
  /** How often the file is looked at when reloading (kube: 1m). */
  encryptionProviderConfigReloadIntervalMs: number;
  /**
   * How often the serving certificate, the client CA files and the extension-apiserver-authentication ConfigMap are
   * read again, besides watching the files' directories (kube: 1m).
   */
  tlsReloadIntervalMs: number;
}

interface FlagSpec {
  name: string;
  arg: string;
  help: string;
  apply: (config: Config, value: string) => void;
}

const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export const FLAGS: FlagSpec[] = [
  {
    name: 'etcd-servers',
    arg: 'urls',
    help: 'Comma-separated etcd client URLs. Without it a local etcd is started under --data-dir and stopped on exit.',
    apply: (c, v) => (c.etcdServers = list(v)),
  },
  {
    name: 'etcd-cafile',
    arg: 'file',
    help: "CA bundle (PEM) that verifies the etcd servers' certificates (with https:// --etcd-servers).",
    apply: (c, v) => (c.etcdCafile = v),
  },
  {
    name: 'etcd-certfile',
    arg: 'file',
    help: "Client certificate (PEM) presented to etcd, for etcd's --client-cert-auth; needs --etcd-keyfile.",
    apply: (c, v) => (c.etcdCertfile = v),
  },
  {
    name: 'etcd-keyfile',
    arg: 'file',
    help: 'Private key (PEM) of --etcd-certfile.',
    apply: (c, v) => (c.etcdKeyfile = v),
  },
  {
    name: 'etcd-prefix',
    arg: 'string',
    help: 'Prefix of every etcd key (default "/registry").',
    apply: (c, v) => (c.etcdPrefix = v.replace(/\/+$/, '')),
  },
  {
    name: 'etcd-compaction-interval',
    arg: 'duration',
    help: 'How often etcd history is compacted, like kube-apiserver (default 5m; 0 disables). Units: ms, s, m, h.',
    apply: (c, v) => (c.etcdCompactionIntervalMs = duration('etcd-compaction-interval', v)),
  },
  {
    name: 'access-key-activity-interval',
    arg: 'duration',
    help: 'Access key use is written to status.lastActivity at most this often per key, off the request path (default 1m).',
    apply: (c, v) => (c.accessKeyActivityMinIntervalMs = duration('access-key-activity-interval', v)),
  },
  {
    name: 'data-dir',
    arg: 'dir',
    help: 'Where the embedded etcd, the admin token and kubeconfig, and generated certificates are kept (default ".data").',
    apply: (c, v) => (c.dataDir = v),
  },
  {
    name: 'bind-address',
    arg: 'ip',
    help: 'Address to listen on for HTTPS (default "0.0.0.0").',
    apply: (c, v) => (c.bindAddress = v),
  },
  {
    name: 'secure-port',
    arg: 'port',
    help: 'Port to serve HTTPS on (default 8443; 0 picks a free port).',
    apply: (c, v) => (c.securePort = port(v)),
  },
  {
    name: 'tls-cert-file',
    arg: 'file',
    help: 'Serving certificate (PEM, may hold the chain). Without it a self-signed one is made in --cert-dir.',
    apply: (c, v) => (c.tlsCertFile = v),
  },
  {
    name: 'tls-private-key-file',
    arg: 'file',
    help: 'Private key of --tls-cert-file (PEM).',
    apply: (c, v) => (c.tlsPrivateKeyFile = v),
  },
  {
    name: 'cert-dir',
    arg: 'dir',
    help: 'Where the self-signed CA and serving certificate are kept and reused (default "<data-dir>/certs").',
    apply: (c, v) => (c.certDir = v),
  },
  {
    name: 'tls-sans',
    arg: 'names',
    help: 'Extra DNS names and IPs for the self-signed serving certificate, comma-separated (localhost and 127.0.0.1 are always in).',
    apply: (c, v) => (c.tlsSans = list(v)),
  },
  {
    name: 'token-auth-file',
    arg: 'file',
    help: 'Static bearer tokens, CSV lines token,user,uid,"group1,group2". Without it an admin token and <data-dir>/admin.kubeconfig are made.',
    apply: (c, v) => (c.tokenAuthFile = v),
  },
  {
    name: 'requestheader-client-ca-file',
    arg: 'file',
    help: "CA bundle (PEM) that signs the front proxy's client certificate (kube-apiserver's --proxy-client-cert-file). The identity headers below are trusted only on connections presenting such a certificate; without this flag they are ignored.",
    apply: (c, v) => (c.requestheaderClientCaFile = v),
  },
  {
    name: 'requestheader-allowed-names',
    arg: 'names',
    help: 'Common names the front proxy\'s client certificate may have, comma-separated (for example "front-proxy-client"). Empty: any certificate signed by --requestheader-client-ca-file.',
    apply: (c, v) => (c.requestheaderAllowedNames = list(v)),
  },
  {
    name: 'requestheader-username-headers',
    arg: 'headers',
    help: 'Headers holding the user name, comma-separated; the first non-empty one wins (default "X-Remote-User").',
    apply: (c, v) => (c.requestheaderUsernameHeaders = list(v)),
  },
  {
    name: 'requestheader-uid-headers',
    arg: 'headers',
    help: 'Headers holding the user\'s uid, comma-separated; the first non-empty one wins (default "X-Remote-Uid").',
    apply: (c, v) => (c.requestheaderUidHeaders = list(v)),
  },
  {
    name: 'requestheader-group-headers',
    arg: 'headers',
    help: 'Headers holding the user\'s groups, comma-separated; every value of each counts (default "X-Remote-Group").',
    apply: (c, v) => (c.requestheaderGroupHeaders = list(v)),
  },
  {
    name: 'requestheader-extra-headers-prefix',
    arg: 'prefixes',
    help: 'Header prefixes for extra user information, comma-separated; the rest of the header name, lowercased and %-decoded, is the key (default "X-Remote-Extra-").',
    apply: (c, v) => (c.requestheaderExtraHeadersPrefix = list(v)),
  },
  {
    name: 'authentication-skip-lookup',
    arg: 'bool',
    help: "Without --requestheader-client-ca-file, the front proxy's settings (and the client CA) are read from the ConfigMap kube-system/extension-apiserver-authentication of the host cluster at start, as aggregated API servers do; true skips that (default false).",
    apply: (c, v) => (c.authenticationSkipLookup = bool('authentication-skip-lookup', v)),
  },
  {
    name: 'client-ca-file',
    arg: 'file',
    help: 'CA bundle (PEM) for clients that connect directly with a certificate: its common name is the user name, its organizations the groups.',
    apply: (c, v) => (c.clientCaFile = v),
  },
  {
    name: 'kubeconfig',
    arg: 'file',
    help: 'Kubeconfig of the host cluster, asked to review bearer tokens (TokenReview) and to authorize requests (SubjectAccessReview), and holding RBAC. Default: the in-cluster configuration when running in a pod, else no host cluster.',
    apply: (c, v) => (c.kubeconfig = v),
  },
  {
    name: 'virtual-cluster-allowed-servers',
    arg: 'servers',
    help: "Where a virtual cluster's connection (the Secret vc-<name>, which tenants may write) may point, comma-separated: address ranges (10.0.0.0/8, fd00::/8), addresses, and DNS names (svc.cluster.local allows that name and every name under it). The addresses a name resolves to are checked as each connection is made. Link-local addresses (169.254.0.0/16, fe80::/10, where cloud metadata services answer) and fd00:ec2::254 are refused unless a listed range lies inside them. Default: any other address.",
    apply: (c, v) => (c.virtualClusterAllowedServers = allowedServers('virtual-cluster-allowed-servers', v)),
  },
  {
    name: 'enable-admission-plugins',
    arg: 'names',
    help: 'Admission plugins to run besides those on by default (comma-separated). This server has NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionPolicy and ValidatingAdmissionWebhook, all on by default; admission runs only with a host cluster.',
    apply: (c, v) => (c.enableAdmissionPlugins = list(v)),
  },
  {
    name: 'disable-admission-plugins',
    arg: 'names',
    help: 'Admission plugins not to run, though on by default (comma-separated), e.g. NamespaceLifecycle.',
    apply: (c, v) => (c.disableAdmissionPlugins = list(v)),
  },
  {
    name: 'admission-control-config-file',
    arg: 'file',
    help: "kube-apiserver's AdmissionConfiguration (apiserver.config.k8s.io/v1, YAML or JSON): for MutatingAdmissionWebhook and ValidatingAdmissionWebhook a WebhookAdmissionConfiguration whose kubeConfigFile (an absolute path) holds the credentials presented to webhooks, chosen by the webhook's host:port, *.domain or *.",
    apply: (c, v) => (c.admissionControlConfigFile = v),
  },
  {
    name: 'authentication-token-webhook-cache-ttl',
    arg: 'duration',
    help: 'How long TokenReview answers, accepted or rejected, are cached (default 10s; 0 disables).',
    apply: (c, v) => (c.authenticationTokenWebhookCacheTtlMs = duration('authentication-token-webhook-cache-ttl', v)),
  },
  {
    name: 'authorization-webhook-cache-authorized-ttl',
    arg: 'duration',
    help: 'How long allowed SubjectAccessReview answers are cached (default 10s; 0 disables).',
    apply: (c, v) =>
      (c.authorizationWebhookCacheAuthorizedTtlMs = duration('authorization-webhook-cache-authorized-ttl', v)),
  },
  {
    name: 'authorization-webhook-cache-unauthorized-ttl',
    arg: 'duration',
    help: 'How long SubjectAccessReview answers that do not allow are cached (default 10s; 0 disables).',
    apply: (c, v) =>
      (c.authorizationWebhookCacheUnauthorizedTtlMs = duration('authorization-webhook-cache-unauthorized-ttl', v)),
  },
  {
    name: 'leader-elect-lease-duration',
    arg: 'duration',
    help: 'The controllers (garbage collector and the others) run on one replica at a time, the holder of an etcd lease of this length; when it dies another replica takes over within about this long (default 10s, at least 1s).',
    apply: (c, v) =>
      (c.leaderElectLeaseDurationMs = atLeast(
        'leader-elect-lease-duration',
        duration('leader-elect-lease-duration', v),
        1000,
      )),
  },
  {
    name: 'access-resync-period',
    arg: 'duration',
    help: 'Besides watching both sides, every SharedSecret, Cluster and ProjectSecret is compared with its Roles and bindings in the host cluster this often, and generated RBAC whose source is gone is removed; as often, every synced ProjectSecret is compared with its SharedSecret and whether its owner may still get it (default 5m, at least 1s).',
    apply: (c, v) =>
      (c.accessResyncPeriodMs = atLeast('access-resync-period', duration('access-resync-period', v), 1000)),
  },
  {
    name: 'project-secret-delivery',
    arg: 'bool',
    help: 'With a host cluster: keep each ProjectSecret as a Secret of the same name in its project namespace there, for workloads to mount (needs get, list, watch, create, update and delete on Secrets in the host; the chart grants them with projectSecrets.delivery). false: ProjectSecrets stay in this API only (default true).',
    apply: (c, v) => (c.projectSecretDelivery = bool('project-secret-delivery', v)),
  },
  {
    name: 'cluster-health-interval',
    arg: 'duration',
    help: "How often every Cluster is checked: its config Secret read again, then GET /version and the kube-system Namespace's uid on the cluster, each request bounded by the smaller of 5s and this; status.phase, reason, message and online say the outcome. A Cluster is also checked when it changes. 0: no checks, and no status is written (default 30s).",
    apply: (c, v) => (c.clusterHealthIntervalMs = duration('cluster-health-interval', v)),
  },
  {
    name: 'cluster-secret-namespace',
    arg: 'namespace',
    help: 'The namespace of the host cluster where a Cluster\'s config Secret is read when its spec.config.secretNamespace is empty: the namespace the server runs in (the Helm chart sets it to the release namespace; default "default").',
    apply: (c, v) => (c.clusterSecretNamespace = dns1123Label('cluster-secret-namespace', v)),
  },
  {
    name: 'max-requests-inflight',
    arg: 'int',
    help: 'With --enable-priority-and-fairness (the default), this and --max-mutating-requests-inflight are summed into the seats shared among the priority levels (the sum must be positive). Without it: read-only requests served at once; past it 429 TooManyRequests with Retry-After (watches and system:masters are not counted; default 400, 0 for no limit).',
    apply: (c, v) => (c.maxRequestsInflight = count('max-requests-inflight', v)),
  },
  {
    name: 'max-mutating-requests-inflight',
    arg: 'int',
    help: 'Summed with --max-requests-inflight as above; without --enable-priority-and-fairness, mutating requests (create, update, patch, delete) served at once; past it 429 as above (default 200, 0 for no limit).',
    apply: (c, v) => (c.maxMutatingRequestsInflight = count('max-mutating-requests-inflight', v)),
  },
  {
    name: 'enable-priority-and-fairness',
    arg: 'bool',
    help: "API Priority and Fairness: requests are classified by FlowSchemas into priority levels (the host cluster's flowcontrol.apiserver.k8s.io/v1 objects, or kube's built-in ones without a host cluster), each with its share of the server's seats and fair queues per user or namespace. false: the two in-flight limits instead (default true).",
    apply: (c, v) => (c.enablePriorityAndFairness = bool('enable-priority-and-fairness', v)),
  },
  {
    name: 'max-seats-per-flow',
    arg: 'int',
    help: "With --enable-priority-and-fairness: the most seats one flow (a FlowSchema's user or namespace) may hold at once in a priority level that queues; its other requests wait in its queues even while the level has seats free, and one wider than this runs when the flow holds none. A request waiting on the host or a cluster does not count meanwhile. Each worker is one thread: more of one flow's requests at once only lengthen every other flow's wait. 0: no bound but the level's, as kube-apiserver (default 1).",
    apply: (c, v) => (c.maxSeatsPerFlow = count('max-seats-per-flow', v)),
  },
  {
    name: 'request-timeout',
    arg: 'duration',
    help: 'A request is answered 504 Timeout when not done within this long; a client may ask for less with ?timeout=. Watches are not limited by it (default 1m; 0: no deadline).',
    apply: (c, v) => (c.requestTimeoutMs = duration('request-timeout', v)),
  },
  {
    name: 'min-request-timeout',
    arg: 'int',
    help: 'A watch that does not set timeoutSeconds ends after a random time between this many seconds and twice as long, so clients do not all re-watch at once (default 1800, at least 1).',
    apply: (c, v) =>
      (c.minRequestTimeoutSeconds =
        atLeast('min-request-timeout', count('min-request-timeout', v) * 1000, 1000) / 1000),
  },
  {
    name: 'max-unauthenticated-connections',
    arg: 'int',
    help: "Connections taken on at once (their TLS handshake, then until a request on them is authenticated) that have not yet had a request authenticated; a verified client certificate (the front proxy's) counts as authenticated. Connections beyond it wait for room, unread (default 500).",
    apply: (c, v) => (c.maxUnauthenticatedConnections = positive('max-unauthenticated-connections', v)),
  },
  {
    name: 'max-unauthenticated-connections-per-source',
    arg: 'int',
    help: 'Of --max-unauthenticated-connections, how many one source (an IPv4 address, an IPv6 /64) may have; its others wait for room. When the whole bound is taken, room that frees goes to the waiting source that holds the fewest (default 25).',
    apply: (c, v) =>
      (c.maxUnauthenticatedConnectionsPerSource = positive('max-unauthenticated-connections-per-source', v)),
  },
  {
    name: 'max-waiting-connections',
    arg: 'int',
    help: 'Connections that may wait, unread, for room within the two bounds above; past it the newest of the source with the most waiting is closed (default 1000; 0: those beyond the bounds are closed at once).',
    apply: (c, v) => (c.maxWaitingConnections = count('max-waiting-connections', v)),
  },
  {
    name: 'connection-wait-timeout',
    arg: 'duration',
    help: 'How long a connection may wait for that room before it is closed, unanswered; once taken on, its TLS handshake has 32s as any (default 10s, the TLS handshake timeout of Go clients: one that waited longer has given up).',
    apply: (c, v) => (c.connectionWaitTimeoutMs = nonZeroDuration('connection-wait-timeout', v)),
  },
  {
    name: 'shutdown-delay-duration',
    arg: 'duration',
    help: 'On SIGTERM /readyz fails at once, and requests are still served this long (so load balancers and kube-apiserver stop sending first); then the listener closes, watches end and requests in flight get up to --request-timeout to finish (default 0s).',
    apply: (c, v) => (c.shutdownDelayMs = duration('shutdown-delay-duration', v)),
  },
  {
    name: 'workers',
    arg: 'int|auto',
    help: "Processes that serve the port, each with its own watch cache and etcd watch as a replica has; the controllers run in one at a time (leader election). `auto`: the cores this process may use (the cgroup's CPU limit, else the machine's). A worker that dies is started again; SIGTERM drains them all. 1 serves in this process alone (default 1).",
    apply: (c, v) => (c.workers = workers(v)),
  },
  {
    name: 'token-issuer',
    arg: 'url',
    help: "The issuer (iss) of direct cluster endpoint tokens: an https URL under which /.well-known/openid-configuration and /openid/v1/jwks of this server are reached, as connected clusters verify tokens (default: this server's URL).",
    apply: (c, v) => (c.tokenIssuer = issuerUrl(v)),
  },
  {
    name: 'token-max-ttl',
    arg: 'duration',
    help: 'The longest lifetime of a direct cluster endpoint token; a longer spec.ttl is shortened to it, with a warning (default 24h, at least 1m).',
    apply: (c, v) => (c.tokenMaxTtlMs = atLeast('token-max-ttl', duration('token-max-ttl', v), 60_000)),
  },
  {
    name: 'token-signing-key-rotation-period',
    arg: 'duration',
    help: 'Token signing keys are replaced this often; a replaced key stays published until the last token it signed has expired (default 168h, at least 1s).',
    apply: (c, v) =>
      (c.tokenSigningKeyRotationPeriodMs = atLeast(
        'token-signing-key-rotation-period',
        duration('token-signing-key-rotation-period', v),
        1000,
      )),
  },
  {
    name: 'token-signing-key-publish-delay',
    arg: 'duration',
    help: 'A new signing key is published at /openid/v1/jwks this long before it signs, so verifiers that cache the keys know it first; the JWKS may be cached half as long (default 10m).',
    apply: (c, v) => (c.tokenSigningKeyPublishDelayMs = duration('token-signing-key-publish-delay', v)),
  },
  {
    name: 'v',
    arg: 'int',
    help: "Log verbosity, 0 to 10 as klog's: 0 logs errors, warnings and lifecycle events (every 5xx answer is an error line at any level); 3 and more add one line per request (request id, user, verb, resource, namespace, name, code, latency, user agent), as kube-apiserver does at 3; 4 and more add debug lines (default 0).",
    apply: (c, v) => (c.verbosity = verbosity(v)),
  },
  {
    name: 'authorization-always-allow-paths',
    arg: 'paths',
    help: 'Non-resource paths anyone may GET, without credentials or authorization, comma-separated; a trailing * makes a prefix, as in "/metrics*" (default "/healthz,/readyz,/livez"; add /metrics for an anonymous Prometheus scrape). /version and the OpenID documents are always public.',
    apply: (c, v) => (c.authorizationAlwaysAllowPaths = allowPaths(v)),
  },
  {
    name: 'audit-log-path',
    arg: 'file',
    help: 'Write audit events (audit.k8s.io/v1 Event: who did what to which object and the answer; bodies only where --audit-policy-file asks for them) as JSON lines to this file, or "-" for stdout. Lines the file (its disk) or stdout (its reader) has not taken yet are held, at most 64 MiB of them; past it events are dropped, counted in apiserver_audit_error_total{plugin="log"} and logged. Unset: no audit log.',
    apply: (c, v) => (c.auditLogPath = v),
  },
  {
    name: 'audit-log-maxsize',
    arg: 'int',
    help: 'Megabytes an audit log file may reach before it is rotated to <name>-<UTC timestamp>.<ext> beside it (default 100; 0: never rotated).',
    apply: (c, v) => (c.auditLogMaxSizeBytes = count('audit-log-maxsize', v) * 1024 * 1024),
  },
  {
    name: 'audit-log-maxbackup',
    arg: 'int',
    help: 'Rotated audit log files kept; older ones are removed (default 10; 0: all are kept).',
    apply: (c, v) => (c.auditLogMaxBackup = count('audit-log-maxbackup', v)),
  },
  {
    name: 'audit-log-maxage',
    arg: 'int',
    help: 'Days a rotated audit log file is kept, by the timestamp in its name (default 0: no age limit).',
    apply: (c, v) => (c.auditLogMaxAgeDays = count('audit-log-maxage', v)),
  },
  {
    name: 'audit-policy-file',
    arg: 'file',
    help: "Which requests are audited and how much of them, as kube-apiserver's audit.k8s.io/v1 Policy (YAML or JSON): rules by user, group, verb, resource, namespace or non-resource URL give the level None, Metadata, Request (with the body sent) or RequestResponse (with the answer too) and the stages left out; fields no client ever reads (access keys and their hashes, issued tokens, connector data) are never in a body. A file kube would refuse stops the start. Unset: every request at Metadata, without the RequestReceived stage.",
    apply: (c, v) => (c.auditPolicyFile = v),
  },
  {
    name: 'audit-webhook-config-file',
    arg: 'file',
    help: 'A kubeconfig naming a receiver to which audit events are POSTed in batches (audit.k8s.io/v1 EventList), besides the log file; failed batches are sent again (see --audit-webhook-initial-backoff). Unset: no webhook.',
    apply: (c, v) => (c.auditWebhookConfigFile = v),
  },
  {
    name: 'audit-webhook-mode',
    arg: 'string',
    help: "How events are sent to the webhook: batch (the default and only mode served: requests never wait for the webhook; kube's blocking and blocking-strict are refused).",
    apply: (c, v) => {
      if (v !== 'batch')
        throw new FlagError(
          `--audit-webhook-mode must be batch (got ${JSON.stringify(v)}): this server does not make requests wait for the webhook, so blocking and blocking-strict are not served`,
        );
      c.auditWebhookMode = v;
    },
  },
  {
    name: 'audit-webhook-initial-backoff',
    arg: 'duration',
    help: 'The wait before a batch the webhook failed (a network error, 429 or 5xx) is sent again, 1.5 times longer each time, five tries in all (default 10s).',
    apply: (c, v) => (c.auditWebhookInitialBackoffMs = nonZeroDuration('audit-webhook-initial-backoff', v)),
  },
  {
    name: 'audit-webhook-batch-buffer-size',
    arg: 'int',
    help: 'Events the webhook holds at most: waiting, in batches waiting to be sent or sent again, and in flight; and 64 MiB of their JSON at most, however few they are. An event past either is dropped, counted in apiserver_audit_error_total{plugin="buffered"} and logged (default 10000).',
    apply: (c, v) => (c.auditWebhookBatchBufferSize = positive('audit-webhook-batch-buffer-size', v)),
  },
  {
    name: 'audit-webhook-batch-max-size',
    arg: 'int',
    help: 'Events in one batch at most (default 400).',
    apply: (c, v) => (c.auditWebhookBatchMaxSize = positive('audit-webhook-batch-max-size', v)),
  },
  {
    name: 'audit-webhook-batch-max-wait',
    arg: 'duration',
    help: 'How long events wait for a batch to fill before it is sent anyway (default 30s).',
    apply: (c, v) => (c.auditWebhookBatchMaxWaitMs = nonZeroDuration('audit-webhook-batch-max-wait', v)),
  },
  {
    name: 'audit-webhook-batch-throttle-enable',
    arg: 'bool',
    help: 'Whether batches are sent at most --audit-webhook-batch-throttle-qps a second (default true).',
    apply: (c, v) => (c.auditWebhookBatchThrottleEnable = bool('audit-webhook-batch-throttle-enable', v)),
  },
  {
    name: 'audit-webhook-batch-throttle-qps',
    arg: 'float',
    help: 'Batches sent a second at most, on average (default 10).',
    apply: (c, v) => (c.auditWebhookBatchThrottleQps = positiveNumber('audit-webhook-batch-throttle-qps', v)),
  },
  {
    name: 'audit-webhook-batch-throttle-burst',
    arg: 'int',
    help: 'Batches sent at once at most when none were for a while (default 15).',
    apply: (c, v) => (c.auditWebhookBatchThrottleBurst = positive('audit-webhook-batch-throttle-burst', v)),
  },
  {
    name: 'encryption-provider-config',
    arg: 'file',
    help: `EncryptionConfiguration (apiserver.config.k8s.io/v1, YAML or JSON) saying how objects are encrypted in etcd, as kube-apiserver's: resources such as sharedsecrets.${GROUP_NAME}, ownedaccesskeys.${GROUP_NAME}, signingkeys.${GROUP_NAME} (the token signing keys) or *.${GROUP_NAME}, each with providers aescbc, aesgcm, secretbox, kms (v2) or identity; the first provider writes, all read. Default with the embedded etcd: <data-dir>/encryption-config.yaml, made on first start with a random secretbox key; with --etcd-servers: none (stored in clear).`,
    apply: (c, v) => (c.encryptionProviderConfig = v),
  },
  {
    name: 'encryption-provider-config-automatic-reload',
    arg: 'bool',
    help: 'Look at --encryption-provider-config every minute and put a changed file in force without a restart; an invalid file is logged and the previous configuration kept (default false).',
    apply: (c, v) =>
      (c.encryptionProviderConfigAutomaticReload = bool('encryption-provider-config-automatic-reload', v)),
  },
  {
    name: 'tracing-config-file',
    arg: 'file',
    help: 'File with apiserver tracing configuration: a TracingConfiguration (apiserver.config.k8s.io/v1, YAML or JSON) with endpoint (an OTLP/gRPC collector, default localhost:4317) and samplingRatePerMillion (default 0: only requests whose caller sampled them, with a traceparent header). Spans are sent over OTLP/gRPC without TLS, as kube-apiserver does. Unset: no tracing.',
    apply: (c, v) => (c.tracingConfigFile = v),
  },
];

function dns1123Label(flag: string, value: string): string {
  const problems = isDNS1123Label(value);
  if (problems.length) throw new FlagError(`--${flag} must be a namespace name: ${problems.join('; ')}`);
  return value;
}

function workers(value: string): number {
  if (value === 'auto') return usableCores();
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 64)
    throw new FlagError(`--workers must be a whole number from 1 to 64, or auto (got ${JSON.stringify(value)})`);
  return n;
}

function verbosity(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 10)
    throw new FlagError(`--v must be a whole number from 0 to 10 (got ${JSON.stringify(value)})`);
  return n;
}

/** Address ranges (CIDR), addresses and DNS names, lowercased; anything else is refused by name. */
function allowedServers(flag: string, value: string): string[] {
  return list(value).map((entry) => {
    const [address, prefix, ...rest] = entry.split('/');
    const version = isIP(address);
    const max = version === 4 ? 32 : 128;
    if (version && !rest.length && (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= max)))
      return entry.toLowerCase();
    const name = entry.toLowerCase().replace(/\.$/, '');
    if (!entry.includes('/') && !isIP(name) && isDNS1123Subdomain(name).length === 0) return name;
    throw new FlagError(
      `--${flag} takes address ranges (10.0.0.0/8), addresses (10.1.2.3) and DNS names (svc.cluster.local, which allows every name under it), comma-separated (got ${JSON.stringify(entry)})`,
    );
  });
}

function allowPaths(value: string): string[] {
  const paths = list(value);
  for (const p of paths) {
    if (!p.startsWith('/') || p.slice(0, -1).includes('*')) {
      throw new FlagError(
        `--authorization-always-allow-paths takes paths such as /healthz, with at most a trailing * (got ${JSON.stringify(p)})`,
      );
    }
  }
  return paths;
}

/** An issuer is an https URL without query or fragment (as kube's --service-account-issuer for discovery). */
function issuerUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new FlagError(
      `--token-issuer must be an https URL such as https://platform.example.com (got ${JSON.stringify(value)})`,
    );
  }
  if (url.protocol !== 'https:' || url.search || url.hash || url.username || url.password) {
    throw new FlagError(
      `--token-issuer must be an https URL without credentials, query or fragment (got ${JSON.stringify(value)})`,
    );
  }
  return value.replace(/\/+$/, '');
}

function atLeast(flag: string, ms: number, min: number): number {
  if (ms < min) throw new FlagError(`--${flag} must be at least ${min / 1000}s (got ${ms}ms)`);
  return ms;
}

/** Go-style durations as kube-apiserver's flags take them: "5m", "30s", "1h30m", "250ms", "0". */
export function duration(flag: string, value: string): number {
  const ms = parseGoDuration(value);
  if (ms === undefined)
    throw new FlagError(`--${flag} must be a duration such as 5m, 30s or 1h (got ${JSON.stringify(value)})`);
  if (ms < 0) throw new FlagError(`--${flag} must not be negative (got ${JSON.stringify(value)})`);
  return ms;
}

function count(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new FlagError(`--${flag} must be a whole number, 0 or more (got ${JSON.stringify(value)})`);
  return n;
}

function nonZeroDuration(flag: string, value: string): number {
  const ms = duration(flag, value);
  if (ms === 0) throw new FlagError(`--${flag} must be longer than 0 (got ${JSON.stringify(value)})`);
  return ms;
}

function positive(flag: string, value: string): number {
  const n = count(flag, value);
  if (n === 0) throw new FlagError(`--${flag} must be 1 or more (got ${JSON.stringify(value)})`);
  return n;
}

function positiveNumber(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new FlagError(`--${flag} must be a number above 0 (got ${JSON.stringify(value)})`);
  return n;
}

function bool(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new FlagError(`--${flag} must be true or false (got ${JSON.stringify(value)})`);
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new FlagError(`--secure-port must be a port number from 0 to 65535, not ${JSON.stringify(value)}`);
  return n;
}

export class FlagError extends Error {}

export function defaultConfig(): Config {
  return {
    etcdServers: [],
    etcdPrefix: '/registry',
    dataDir: '.data',
    bindAddress: '0.0.0.0',
    securePort: 8443,
    certDir: '',
    tlsSans: [],
    virtualClusterAllowedServers: [],
    enableAdmissionPlugins: [],
    disableAdmissionPlugins: [],
    etcdCompactionIntervalMs: 5 * 60_000,
    accessKeyActivityMinIntervalMs: 60_000,
    accessKeyActivityTickMs: 5_000,
    requestheaderAllowedNames: [],
    requestheaderUsernameHeaders: ['X-Remote-User'],
    requestheaderUidHeaders: ['X-Remote-Uid'],
    requestheaderGroupHeaders: ['X-Remote-Group'],
    requestheaderExtraHeadersPrefix: ['X-Remote-Extra-'],
    authenticationTokenWebhookCacheTtlMs: 10_000,
    authorizationWebhookCacheAuthorizedTtlMs: 10_000,
    authorizationWebhookCacheUnauthorizedTtlMs: 10_000,
    leaderElectLeaseDurationMs: 10_000,
    accessResyncPeriodMs: 5 * 60_000,
    clusterHealthIntervalMs: 30_000,
    projectSecretDelivery: true,
    clusterSecretNamespace: 'default',
    tokenMaxTtlMs: 24 * 3600_000,
    tokenSigningKeyRotationPeriodMs: 7 * 24 * 3600_000,
    tokenSigningKeyPublishDelayMs: 10 * 60_000,
    authenticationSkipLookup: false,
    maxRequestsInflight: 400,
    maxSeatsPerFlow: 1,
    maxMutatingRequestsInflight: 200,
    enablePriorityAndFairness: true,
    requestTimeoutMs: 60_000,
    // Enough for an answer handed over just before the deadline to reach a client that reads it.
    responseGraceMs: 10_000,
    minRequestTimeoutSeconds: 1800,
    shutdownDelayMs: 0,
    // kube-apiserver's ReadHeaderTimeout ("just shy of requestTimeoutUpperBound") and IdleTimeout (that of Go's
    // http.DefaultTransport, so clients close idle connections first).
    readHeaderTimeoutMs: 32_000,
    idleTimeoutMs: 90_000,
    // No kube equivalent: far more than clients that authenticate at once have open, and few enough that a flood's
    // sockets and TLS buffers stay small until the header deadline frees them.
    maxUnauthenticatedConnections: 500,
    // A twentieth of the bound: it takes twenty sources to fill it (eleven did at 50), so a new client finds room
    // while a few flood; and far more than one client handshakes at once. Those beyond it wait, not refused.
    maxUnauthenticatedConnectionsPerSource: 25,
    // kube-apiserver serves 600 requests at once (--max-requests-inflight 400 plus --max-mutating-requests-inflight
    // 200), which a client of this HTTP/1.1 server makes on as many connections: one client that opens them all
    // together waits, none is closed.
    maxWaitingConnections: 1000,
    // Go's TLSHandshakeTimeout (client-go's, http.DefaultTransport's): a connection waiting longer is one its
    // client has given up on.
    connectionWaitTimeoutMs: 10_000,
    // No kube equivalent: clients send their request as soon as the handshake is done; a connection that does not
    // is what a flood holds longest.
    firstByteTimeoutMs: 10_000,
    verbosity: 0,
    // 1 until workers are proven by the benchmark and the chart sizes them (issue 31); `auto` takes every core.
    workers: 1,
    authorizationAlwaysAllowPaths: ['/healthz', '/readyz', '/livez'],
    auditLogMaxSizeBytes: 100 * 1024 * 1024,
    auditLogMaxBackup: 10,
    auditLogMaxAgeDays: 0,
    auditWebhookMode: 'batch',
    auditWebhookInitialBackoffMs: 10_000,
    auditWebhookBatchBufferSize: 10_000,
    auditWebhookBatchMaxSize: 400,
    auditWebhookBatchMaxWaitMs: 30_000,
    auditWebhookBatchThrottleEnable: true,
    auditWebhookBatchThrottleQps: 10,
    auditWebhookBatchThrottleBurst: 15,
    encryptionProviderConfigAutomaticReload: false,
    encryptionProviderConfigReloadIntervalMs: 60_000,
    tlsReloadIntervalMs: 60_000,
  };
}

/** Parses `--flag=value` and `--flag value`; returns undefined when help was asked for. */
export function parseFlags(argv: string[]): Config | undefined {
  const config = defaultConfig();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return undefined;
    const match = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new FlagError(`unexpected argument ${JSON.stringify(arg)}`);
    const spec = FLAGS.find((f) => f.name === match[1]);
    if (!spec) throw new FlagError(`unknown flag: --${match[1]}`);
    // Booleans stand alone (`--flag` = true), as Go's flag package takes them; `--flag=false` turns one off.
    const value = match[2] ?? (spec.arg === 'bool' ? 'true' : argv[++i]);
    if (value === undefined) throw new FlagError(`flag needs an argument: --${spec.name}`);
    spec.apply(config, value);
  }
  if (!config.certDir) config.certDir = join(config.dataDir, 'certs');
  if (!!config.tlsCertFile !== !!config.tlsPrivateKeyFile)
    throw new FlagError('--tls-cert-file and --tls-private-key-file go together');
  if (!!config.etcdCertfile !== !!config.etcdKeyfile)
    throw new FlagError('--etcd-certfile and --etcd-keyfile go together');
  if (config.enablePriorityAndFairness && config.maxRequestsInflight + config.maxMutatingRequestsInflight <= 0)
    throw new FlagError(
      '--max-requests-inflight plus --max-mutating-requests-inflight must be positive with --enable-priority-and-fairness (their sum is the seats shared among the priority levels); set either, or --enable-priority-and-fairness=false for no limit',
    );
  // Each worker would write and rotate the same file on its own, and lose lines to the others' rotations.
  if (config.workers > 1 && config.auditLogPath && config.auditLogPath !== '-')
    throw new FlagError(
      `--audit-log-path ${config.auditLogPath} with --workers ${config.workers}: the workers cannot share one rotated file; use --audit-log-path=- (stdout) or --audit-webhook-config-file, or --workers=1`,
    );
  if (config.encryptionProviderConfigAutomaticReload && !config.encryptionProviderConfig)
    throw new FlagError('--encryption-provider-config-automatic-reload must be set with --encryption-provider-config');
  return config;
}

export function helpText(): string {
  const rows = FLAGS.map((f) => `  --${f.name} ${f.arg}\n      ${f.help}`);
  return `Usage: node dist/main.js [flags]\n       node dist/main.js snapshot save|restore ... (backups of its etcd; \`snapshot\` alone says how)\n\nThe ${GROUP_NAME}/v1 API server.\n\nFlags:\n${rows.join('\n')}\n  -h, --help\n      Show this help.\n`;
}
