/**
 * A stand-in host Kubernetes API for tests, over HTTPS on a free loopback port, speaking the real REST paths
 * @kubernetes/client-node calls:
 *
 * - POST /apis/authentication.k8s.io/v1/tokenreviews: tokens registered with addToken;
 * - POST /apis/authorization.k8s.io/v1/subjectaccessreviews: a small RBAC evaluator over the stored Roles,
 *   ClusterRoles (with aggregationRule), RoleBindings and ClusterRoleBindings, plus system:masters;
 * - /apis/rbac.authorization.k8s.io/v1/...: create, get, list (labelSelector, fieldSelector, limit and continue),
 *   watch, update,
 *   patch (JSON, merge; strategic treated as merge), delete and deletecollection of those four kinds, namespaced
 *   and cluster-scoped, with one resourceVersion counter and kube's Status bodies (404, 409, 422);
 * - /api/v1/[namespaces/<ns>/]secrets[/<name>]: the same verbs for core v1 Secrets, with kube's Secret rules: no
 *   create on PUT (404), `type` defaulted to Opaque and immutable, base64 `data` (400 as kube cannot decode it),
 *   key and size validation, `stringData` merged into `data`, `immutable: true`. The test's addSecret, put, get,
 *   list and remove go through the same store, so its seeding and edits are watch events too;
 * - GET /api/v1/namespaces/<ns> and .../configmaps/<name>, list of configmaps, list and watch of namespaces, all
 *   seeded by the test;
 * - GET, list and watch of /apis/flowcontrol.apiserver.k8s.io/v1 flowschemas and prioritylevelconfigurations,
 *   kube's built-in ones from the start (putFlowControl, removeFlowControl change them);
 * - GET /version: kube's version.Info, gitVersion from the option kubernetesVersion (v1.33.0 by default);
 * - /apis/certificates.k8s.io/v1/certificatesigningrequests: create (generateName; kube's validation of request,
 *   usages, signerName, expirationSeconds; the certificatesubjectrestriction admission), get, list, delete, and
 *   get/PUT of the approval subresource. The caller becomes spec.username/groups (KUBECONFIG_USERNAME/GROUPS).
 *   Like a cluster's virtual-cluster API, it also runs kube-controller-manager's kubernetes.io/kube-apiserver-client
 *   signer: an Approved CSR for that signer gets status.certificate from the stand-in's own CA (the one its
 *   kubeconfig trusts) after csrSigningDelayMs, or a Failed condition when its usages do not fit a client
 *   certificate (kube checks those in the signer, not at create). CSRs for other signers are never signed.
 *
 * Every request needs the bearer token of the kubeconfig written at kubeconfigPath (kubeconfigText() has it as
 * text, to store as another cluster's Secret `vc-<name>`), or one the option authenticateBearer takes, but for a
 * client certificate its CA signed (one its CSRs issued), which may GET /version and ask who it is
 * (hostcluster/clientcerts.ts). `requests` logs what arrived (to test caching); setDown
 * simulates an outage; onRequest refuses chosen requests (a 403 for a credential without rights, say). The
 * kube-system Namespace's uid is random, or the option kubeSystemUid (it identifies a physical cluster); endWatches
 * ends the open watches, as their timeout does in kube. Not modelled: admission (objects may be created in namespaces
 * that do not exist; approving a CSR needs no `approve` permission on its signer), paging of the other kinds' lists
 * (limit is ignored there), expired continue tokens, watch history compaction, server-side apply; for CSRs: watch,
 * selectors (both refused with 400, not ignored), update/patch of the object and its status subresource, and
 * requests with non-RSA keys (node-forge reads RSA only; kube accepts ECDSA and Ed25519 too).
 *
 * The parts live in hostcluster/, one job each: the shared object helpers and resourceVersion counter (objects),
 * the table of stored kinds (kinds: RBAC kinds and Secrets) with Secret rules (secretvalidation), their store
 * (objectstore), REST verbs (objectrest) and watches (watch), the RBAC authorizer (rbacauthorizer) and the review
 * APIs (reviews), CSRs (csrs), their validation (csrvalidation) and signer (csrsigner), the seeded namespaces and
 * configmaps (core), webhook configurations (admissionregistration), the request path (routes) and the HTTPS
 * listener (server).
 * This file puts them together behind the interface the tests use.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { writeKubeconfig } from '../../src/admin-kubeconfig.js';
import { ensureServingCertificate } from '../../src/pki/selfsigned.js';
import { AdmissionRegistration, type AdmissionResource } from './hostcluster/admissionregistration.js';
import { CoreObjects } from './hostcluster/core.js';
import { CertificateSigningRequests } from './hostcluster/csrs.js';
import { FlowControlObjects, type FlowControlResource } from './hostcluster/flowcontrol.js';
import { CsrSigner } from './hostcluster/csrsigner.js';
import { isRbac, type StoredResource } from './hostcluster/kinds.js';
import { objectRest } from './hostcluster/objectrest.js';
import { clone, ResourceVersions, type KubeObj } from './hostcluster/objects.js';
import { ObjectStore } from './hostcluster/objectstore.js';
import { evaluate, type SarSpec, type SarStatus } from './hostcluster/rbacauthorizer.js';
import type { TokenUser } from './hostcluster/reviews.js';
import { routes, type RequestRecord } from './hostcluster/routes.js';
import { HostServer } from './hostcluster/server.js';
import { WatchHub } from './hostcluster/watch.js';

export { KUBE_APISERVER_CLIENT_SIGNER } from './hostcluster/csrsigner.js';
export { KUBECONFIG_GROUPS, KUBECONFIG_USERNAME } from './hostcluster/csrs.js';
export type { AdmissionResource } from './hostcluster/admissionregistration.js';
export type { FlowControlResource } from './hostcluster/flowcontrol.js';
export type { KubeObj } from './hostcluster/objects.js';
export type { SarStatus } from './hostcluster/rbacauthorizer.js';
export type { RbacResource, StoredResource } from './hostcluster/kinds.js';
export type { RequestRecord } from './hostcluster/routes.js';

const DEFAULT_CLUSTER_SIGNING_DURATION_SECONDS = 365 * 24 * 60 * 60;

export interface HostClusterOptions {
  /** How long the signer takes to issue an approved CSR's certificate; 0 by default, still asynchronous. */
  csrSigningDelayMs?: number;
  /** Approved CSRs wait for releaseCsrSigning() (a request kept in flight as long as a test needs it). */
  csrSigningHeld?: boolean;
  /** false: approved CSRs are never signed, as when the cluster's signer is not running (to test a bounded wait). */
  csrSigning?: boolean;
  /** The longest certificate the signer issues, as kube-controller-manager's --cluster-signing-duration (one year). */
  clusterSigningDurationSeconds?: number;
  /** The uid of the kube-system Namespace; random by default. */
  kubeSystemUid?: string;
  /** GET /version's gitVersion (default v1.33.0). */
  kubernetesVersion?: string;
  /**
   * Bearer tokens besides the kubeconfig's: the user this names (a model of kube's JWT authenticator, kubejwt.ts,
   * say), or undefined to refuse with 401. Each request's record says who it named.
   */
  authenticateBearer?: (token: string) => Promise<string | undefined>;
}

export interface HostClusterStandIn {
  url: string;
  caPem: string;
  /** The bearer token of the kubeconfig (the server's own ServiceAccount, say). */
  token: string;
  kubeconfigPath: string;
  addToken(token: string, user: UserInfo & { audiences?: string[] }): void;
  removeToken(token: string): void;
  /** Creates (or relabels) a namespace: phase Active, a watch event. */
  addNamespace(name: string, labels?: Record<string, string>): void;
  /** Marks a namespace as being deleted (phase Terminating), as its DELETE does. */
  terminateNamespace(name: string): void;
  /** Removes a namespace, as the namespace controller does once it is empty. */
  removeNamespace(name: string): void;
  /**
   * Creates or replaces a Secret as an API write would (kube's Secret rules, a watch event); `data` in plain text
   * (stored base64-encoded, as the API sends it), `type` Opaque by default.
   */
  addSecret(namespace: string, name: string, data: Record<string, string>, type?: string): void;
  addConfigMap(namespace: string, name: string, data: Record<string, string>): void;
  /** Creates or replaces a webhook configuration (admissionregistration.k8s.io/v1) as an API write would. */
  putAdmission(resource: AdmissionResource, obj: KubeObj): KubeObj;
  removeAdmission(resource: AdmissionResource, name: string): void;
  /** Creates or replaces a FlowSchema or PriorityLevelConfiguration (kube's built-in ones are there from the start). */
  putFlowControl(resource: FlowControlResource, obj: KubeObj): KubeObj;
  removeFlowControl(resource: FlowControlResource, name: string): void;
  /**
   * Creates or replaces an RBAC object or a Secret (its kind says which; `data` base64 as the API has it) as an API
   * write would: validated, a new resourceVersion and a watch event unless nothing changed; returns it.
   */
  put(obj: KubeObj): KubeObj;
  /** A copy of a stored RBAC object or Secret. */
  get(resource: StoredResource, namespace: string, name: string): KubeObj | undefined;
  list(resource: StoredResource, namespace?: string): KubeObj[];
  /** Deletes as an API delete would (a watch event); false when there was nothing to delete. */
  remove(resource: StoredResource, namespace: string, name: string): boolean;
  /** Answers SubjectAccessReviews instead of RBAC when it returns a status (to test denied, errors, ...). */
  onSubjectAccessReview?: (spec: SarSpec) => SarStatus | undefined;
  /** Called with each authenticated request (and its parsed body) before it is served; throwing a StatusError answers with it. */
  onRequest?: (method: string, path: string, body?: any) => void;
  /** The uid of the kube-system Namespace. */
  readonly kubeSystemUid: string;
  /** Called before an RBAC object (not a Secret) is created or replaced through the API; throwing a StatusError refuses the write (say, as RBAC's escalation check would). */
  onRbacWrite?: (obj: KubeObj) => void;
  readonly requests: RequestRecord[];
  count(resource: string, method?: string): number;
  resetCounts(): void;
  /** 'refused' stops listening (connection refused, watches cut); 'unavailable' answers 503 to everything. */
  setDown(down: boolean, mode?: 'refused' | 'unavailable'): Promise<void>;
  /** Ends every open watch, as kube-apiserver does when a watch's time is up: clients list (or watch) again. */
  endWatches(): void;
  /** The stored CertificateSigningRequests (copies), by name. */
  csrs(): KubeObj[];
  /** Signs the approved CSRs held, and from now on signs as before, until holdCsrSigning(). */
  releaseCsrSigning(): void;
  /** From now on approved CSRs wait for releaseCsrSigning(), as with csrSigningHeld. */
  holdCsrSigning(): void;
  /** The kubeconfig of kubeconfigPath as YAML text: what a Secret `vc-<name>` key `config` holds for a virtual cluster. */
  kubeconfigText(): string;
  stop(): Promise<void>;
}

/**
 * A Role and RoleBinding in `namespace` that let `users` get the Secret `vc-<virtualCluster>` there: the virtual
 * cluster's connection, which a tenant must be allowed to get to import the virtual cluster. Replaces an earlier
 * grant of the same Secret.
 */
export function grantConnectionSecret(
  host: HostClusterStandIn,
  namespace: string,
  virtualCluster: string,
  users: string[],
): void {
  const rules = [{ apiGroups: [''], resources: ['secrets'], resourceNames: [`vc-${virtualCluster}`], verbs: ['get'] }];
  grantRole(host, namespace, `get-vc-${virtualCluster}`, rules, users);
}

/** A Role `name` in `namespace` with `rules`, and a RoleBinding of it to `users`; replaces earlier ones of that name. */
export function grantRole(
  host: HostClusterStandIn,
  namespace: string,
  name: string,
  rules: object[],
  users: string[],
): void {
  host.put({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace }, rules });
  host.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: users.map((user) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user })),
  });
}

export async function startHostCluster(opts: HostClusterOptions = {}): Promise<HostClusterStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'host-cluster-'));
  const pki = await ensureServingCertificate({ certDir: join(dir, 'certs'), hosts: [] });
  const token = `standin-${randomUUID()}`;
  const tokens = new Map<string, TokenUser>();
  const requests: RequestRecord[] = [];
  let mode: 'up' | 'refused' | 'unavailable' = 'up';

  const rv = new ResourceVersions();
  const watches = new WatchHub();
  const objects = new ObjectStore(rv, watches);
  const core = new CoreObjects(rv, watches);
  const admission = new AdmissionRegistration(rv, watches);
  const flowcontrol = new FlowControlObjects(rv, watches);
  // The namespaces every cluster starts with.
  const kubeSystemUid = opts.kubeSystemUid ?? randomUUID();
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
    core.addNamespace(ns, {}, ns === 'kube-system' ? kubeSystemUid : undefined);
  const gitVersion = opts.kubernetesVersion ?? 'v1.33.0';
  const [major, minor] = /^v(\d+)\.(\d+)/.exec(gitVersion)?.slice(1) ?? ['', ''];
  const csrs = new CertificateSigningRequests(rv, (csr) => signer.schedule(csr));
  const signer = new CsrSigner({
    // The signer uses the CA that serves the API, as a cluster whose kubeconfig trusts the CA it signs clients with.
    ca: {
      cert: forge.pki.certificateFromPem(readFileSync(join(dir, 'certs', 'ca.crt'), 'utf8')),
      keyPem: readFileSync(join(dir, 'certs', 'ca.key'), 'utf8'),
    },
    enabled: opts.csrSigning !== false,
    delayMs: opts.csrSigningDelayMs ?? 0,
    held: opts.csrSigningHeld ?? false,
    maxDurationMs: (opts.clusterSigningDurationSeconds ?? DEFAULT_CLUSTER_SIGNING_DURATION_SECONDS) * 1000,
    csrs,
    isUp: () => mode === 'up',
  });
  const handle = routes({
    requests,
    unavailable: () => mode === 'unavailable',
    token,
    tokens,
    authenticateBearer: opts.authenticateBearer,
    decide: (spec) => api.onSubjectAccessReview?.(spec) ?? evaluate(objects, spec),
    objects: objectRest({
      rv,
      store: objects,
      watches,
      onWrite: (resource) => (isRbac(resource) ? api.onRbacWrite : undefined),
      // Only for Secrets: tests of the RBAC kinds put Roles in namespaces they never add.
      admitCreate: (resource, namespace) => (resource === 'secrets' ? core.admitCreateIn(namespace) : undefined),
    }),
    csrs,
    core,
    admission,
    flowcontrol,
    version: () => ({ major, minor, gitVersion, platform: 'linux/amd64' }),
    onRequest: () => api.onRequest,
  });
  const server = new HostServer(pki, handle, () => watches.endAll());

  await server.listen(0);
  const port = server.port;
  const url = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(dir, 'host.kubeconfig');
  writeKubeconfig(kubeconfigPath, { server: url, caPem: pki.caPem, token });
  const kubeconfigText = readFileSync(kubeconfigPath, 'utf8');

  const api: HostClusterStandIn = {
    url,
    caPem: pki.caPem,
    token,
    kubeconfigPath,
    kubeSystemUid,
    requests,
    addToken: (t, user) => void tokens.set(t, clone(user)),
    removeToken: (t) => void tokens.delete(t),
    addNamespace: (name, labels) => core.addNamespace(name, labels),
    terminateNamespace: (name) => core.terminateNamespace(name),
    removeNamespace: (name) => {
      // As kube's namespace controller: the namespace's Secrets go first (a DELETED event each).
      for (const secret of objects.objectsOf('secrets', name)) objects.drop('secrets', secret);
      core.removeNamespace(name);
    },
    addSecret: (namespace, name, data, type) =>
      void objects.put({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        type,
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      }),
    addConfigMap: (namespace, name, data) => core.addConfigMap(namespace, name, data),
    putAdmission: (resource, obj) => admission.put(resource, obj),
    removeAdmission: (resource, name) => admission.remove(resource, name),
    putFlowControl: (resource, obj) => flowcontrol.put(resource, obj),
    removeFlowControl: (resource, name) => flowcontrol.remove(resource, name),
    put: (obj) => objects.put(obj),
    get: (resource, namespace, name) => objects.get(resource, namespace, name),
    list: (resource, namespace) => clone(objects.objectsOf(resource, namespace)),
    remove: (resource, namespace, name) => objects.remove(resource, namespace, name),
    count: (resource, method) =>
      requests.filter((r) => r.resource === resource && (!method || r.method === method)).length,
    resetCounts: () => void requests.splice(0),
    async setDown(down, how = 'refused') {
      if (!down) {
        if (mode === 'refused') await server.listen(port);
        mode = 'up';
        return;
      }
      mode = how;
      if (how === 'refused') await server.close();
    },
    endWatches: () => watches.endAll(),
    csrs: () => csrs.all(),
    releaseCsrSigning: () => signer.release(),
    holdCsrSigning: () => signer.hold(),
    kubeconfigText: () => kubeconfigText,
    async stop() {
      signer.stop();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return api;
}
