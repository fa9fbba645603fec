/**
 * A stand-in host Kubernetes API for tests, over HTTPS on a free loopback port, speaking the real REST paths
 * @kubernetes/client-node calls:
 *
 * - POST /apis/authentication.k8s.io/v1/tokenreviews: tokens registered with addToken;
 * - POST /apis/authorization.k8s.io/v1/subjectaccessreviews: a small RBAC evaluator over the stored Roles,
 *   ClusterRoles (with aggregationRule), RoleBindings and ClusterRoleBindings, plus system:masters;
 * - /apis/rbac.authorization.k8s.io/v1/...: create, get, list (labelSelector, fieldSelector), watch, update,
 *   patch (JSON, merge; strategic treated as merge), delete and deletecollection of those four kinds, namespaced
 *   and cluster-scoped, with one resourceVersion counter and kube's Status bodies (404, 409, 422);
 * - GET /api/v1/namespaces/<ns>, /api/v1/namespaces/<ns>/secrets/<name> and .../configmaps/<name>, seeded by the test;
 * - /apis/certificates.k8s.io/v1/certificatesigningrequests: create (generateName; kube's validation of request,
 *   usages, signerName, expirationSeconds; the certificatesubjectrestriction admission), get, list, delete, and
 *   get/PUT of the approval subresource. The caller becomes spec.username/groups (KUBECONFIG_USERNAME/GROUPS).
 *   Like a cluster's virtual-cluster API, it also runs kube-controller-manager's kubernetes.io/kube-apiserver-client
 *   signer: an Approved CSR for that signer gets status.certificate from the stand-in's own CA (the one its
 *   kubeconfig trusts) after csrSigningDelayMs, or a Failed condition when its usages do not fit a client
 *   certificate (kube checks those in the signer, not at create). CSRs for other signers are never signed.
 *
 * Every request needs the bearer token of the kubeconfig written at kubeconfigPath (kubeconfigText() has it as
 * text, to store as another cluster's Secret `vc-<name>`). `requests` logs what arrived (to test caching); setDown
 * simulates an outage. Not modelled: admission (objects may be created in namespaces that do not exist; approving
 * a CSR needs no `approve` permission on its signer), paging (limit is ignored), watch history compaction,
 * server-side apply; for CSRs: watch, selectors (both refused with 400, not ignored), update/patch of the object
 * and its status subresource, and requests with non-RSA keys (node-forge reads RSA only; kube accepts ECDSA and
 * Ed25519 too).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { fieldError, GoLiteral, Path, type FieldError } from '../../src/apimachinery/field.js';
import { parseFieldSelector, type FieldSelector } from '../../src/apimachinery/fields.js';
import { parseLabelSelector, type LabelSelector } from '../../src/apimachinery/labels.js';
import { applyJsonPatch, applyMergePatch } from '../../src/apimachinery/patch.js';
import * as errors from '../../src/apimachinery/status.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../src/apimachinery/validation.js';
import type { UserInfo } from '../../src/apimachinery/user.js';
import { writeKubeconfig } from '../../src/kubeconfig.js';
import { ensureServingCertificate } from '../../src/pki/selfsigned.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;
const RBAC_KINDS = {
  roles: { kind: 'Role', namespaced: true },
  rolebindings: { kind: 'RoleBinding', namespaced: true },
  clusterroles: { kind: 'ClusterRole', namespaced: false },
  clusterrolebindings: { kind: 'ClusterRoleBinding', namespaced: false },
} as const;
export type RbacResource = keyof typeof RBAC_KINDS;
const RESOURCE_OF_KIND: Record<string, RbacResource> = Object.fromEntries(Object.entries(RBAC_KINDS).map(([r, k]) => [k.kind, r as RbacResource]));

const CSR_GROUP = 'certificates.k8s.io';
const CSR_API_VERSION = `${CSR_GROUP}/v1`;
const CSR_GR = { group: CSR_GROUP, resource: 'certificatesigningrequests' };
const CSR_GK = { group: CSR_GROUP, kind: 'CertificateSigningRequest' };
/** The well-known signer of client certificates that kube-apiserver trusts; the only one the stand-in runs. */
export const KUBE_APISERVER_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
/**
 * Who the stand-in takes the holder of its kubeconfig token to be: the server's ServiceAccount, with the groups
 * kube gives ServiceAccount tokens. A created CSR's spec.username and spec.groups say this, as kube fills them from
 * the authenticated caller.
 */
export const KUBECONFIG_USERNAME = 'system:serviceaccount:platform:management-api';
export const KUBECONFIG_GROUPS: readonly string[] = ['system:serviceaccounts', 'system:serviceaccounts:platform', 'system:authenticated'];
const DEFAULT_CLUSTER_SIGNING_DURATION_SECONDS = 365 * 24 * 60 * 60;

/** Loose shapes: the stand-in stores what it is sent. */
export type KubeObj = { apiVersion?: string; kind?: string; metadata: Record<string, any>; [k: string]: any };
interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface SarSpec {
  user?: string;
  groups?: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  resourceAttributes?: { namespace?: string; verb?: string; group?: string; version?: string; resource?: string; subresource?: string; name?: string };
  nonResourceAttributes?: { path?: string; verb?: string };
}
export interface SarStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: RbacResource;
  object: KubeObj;
  /** The object before a MODIFIED, to tell selector transitions. */
  previous?: KubeObj;
}

interface Watcher {
  resource: RbacResource;
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
  res: ServerResponse;
}

export interface RequestRecord {
  method: string;
  path: string;
  /** The resource the path names (tokenreviews, roles, namespaces, ...), '' for others. */
  resource: string;
  /** The query string, with its '?' ('' for none): tells a watch from a list. */
  query: string;
}

export interface HostClusterOptions {
  /** How long the signer takes to issue an approved CSR's certificate; 0 by default, still asynchronous. */
  csrSigningDelayMs?: number;
  /** false: approved CSRs are never signed, as when the cluster's signer is not running (to test a bounded wait). */
  csrSigning?: boolean;
  /** The longest certificate the signer issues, as kube-controller-manager's --cluster-signing-duration (one year). */
  clusterSigningDurationSeconds?: number;
}

export interface HostClusterStandIn {
  url: string;
  caPem: string;
  /** The bearer token of the kubeconfig (the server's own ServiceAccount, say). */
  token: string;
  kubeconfigPath: string;
  addToken(token: string, user: UserInfo & { audiences?: string[] }): void;
  removeToken(token: string): void;
  addNamespace(name: string, labels?: Record<string, string>): void;
  addSecret(namespace: string, name: string, data: Record<string, string>, type?: string): void;
  addConfigMap(namespace: string, name: string, data: Record<string, string>): void;
  /** Creates or replaces an RBAC object as an API write would (new resourceVersion, watch event); returns it. */
  put(obj: KubeObj): KubeObj;
  get(resource: RbacResource, namespace: string, name: string): KubeObj | undefined;
  list(resource: RbacResource, namespace?: string): KubeObj[];
  remove(resource: RbacResource, namespace: string, name: string): boolean;
  /** Answers SubjectAccessReviews instead of RBAC when it returns a status (to test denied, errors, ...). */
  onSubjectAccessReview?: (spec: SarSpec) => SarStatus | undefined;
  /** Called before an RBAC object is created or replaced through the API; throwing a StatusError refuses the write (say, as RBAC's escalation check would). */
  onRbacWrite?: (obj: KubeObj) => void;
  readonly requests: RequestRecord[];
  count(resource: string, method?: string): number;
  resetCounts(): void;
  /** 'refused' stops listening (connection refused, watches cut); 'unavailable' answers 503 to everything. */
  setDown(down: boolean, mode?: 'refused' | 'unavailable'): Promise<void>;
  /** The stored CertificateSigningRequests (copies), by name. */
  csrs(): KubeObj[];
  /** The kubeconfig of kubeconfigPath as YAML text: what a Secret `vc-<name>` key `config` holds for a virtual cluster. */
  kubeconfigText(): string;
  stop(): Promise<void>;
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const clone = <T>(v: T): T => structuredClone(v);

/** JSON with sorted keys, to tell a no-op write (which kube does not persist). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** metav1.LabelSelector (matchLabels, matchExpressions) as a predicate. */
function labelSelectorMatches(sel: any, labels: Record<string, string> = {}): boolean {
  for (const [k, v] of Object.entries<string>(sel?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const ok =
      e.operator === 'In' ? has && e.values?.includes(labels[e.key])
      : e.operator === 'NotIn' ? !has || !e.values?.includes(labels[e.key])
      : e.operator === 'Exists' ? has
      : e.operator === 'DoesNotExist' ? !has
      : false;
    if (!ok) return false;
  }
  return true;
}

// --- CertificateSigningRequests: kube's validation (pkg/apis/certificates/validation) and signer ---

// allValidUsages, in the sorted order Go's sets.List prints them.
const VALID_USAGES = [
  'signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment', 'cert sign', 'crl sign',
  'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing', 'email protection', 's/mime', 'ipsec end system',
  'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing', 'microsoft sgc', 'netscape sgc',
].sort();
// Approved, Denied and Failed may only be True.
const TRUE_ONLY_CONDITIONS = ['Approved', 'Denied', 'Failed'];
const CONDITION_STATUSES = ['False', 'True', 'Unknown'];
// kube's signer backdates notBefore for clock skew, and notAfter too unless the certificate is short-lived.
const SIGNER_BACKDATE_MS = 5 * 60 * 1000;
const SIGNER_SHORT_MS = 8 * 60 * 60 * 1000;

/** A []byte field as encoding/json reads it: padded standard base64, newlines skipped. Bad input is a decode error (400). */
function decodeBytes(field: string, value: unknown): Buffer {
  const bad = (why: string) => errors.badRequest(`CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: ${why}`);
  if (value === undefined || value === null) return Buffer.alloc(0);
  if (typeof value !== 'string') throw bad(`json: cannot unmarshal ${typeof value} into Go struct field ${field} of type []uint8`);
  const text = value.replace(/[\r\n]/g, '');
  const at = text.search(/[^A-Za-z0-9+/=]|=(?!=*$)/);
  if (at >= 0 || text.length % 4 !== 0) throw bad(`illegal base64 data at input byte ${at >= 0 ? at : text.length}`);
  return Buffer.from(text, 'base64');
}

/** kube's ParseCSR then CheckSignature; a string is the error, as kube words it where it can. */
function parseCsr(pem: Buffer): forge.pki.CertificateSigningRequest | string {
  const text = pem.toString('latin1');
  const block = /-----BEGIN ([^-\r\n]+)-----/.exec(text);
  if (!block || block[1] !== 'CERTIFICATE REQUEST') return 'PEM block type must be CERTIFICATE REQUEST';
  try {
    const csr = forge.pki.certificationRequestFromPem(text.slice(block.index), true);
    return csr.verify() ? csr : 'crypto/rsa: verification error';
  } catch (err) {
    const message = (err as Error).message;
    // Say so rather than pass for kube: a cluster would accept ECDSA and Ed25519 keys.
    return message.includes('OID is not RSA') ? `the stand-in reads RSA requests only (node-forge): ${message}` : `x509: ${message}`;
  }
}

/** ValidateSignerName (pkg/apis/core/validation). */
function validateSignerName(at: Path, signerName: string): FieldError[] {
  if (!signerName) return [fieldError.required(at)];
  const segments = signerName.split('/');
  if (segments.length !== 2) return [fieldError.invalid(at, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  const [domain, path] = segments;
  const errs: FieldError[] = [];
  if (domain.length > 253) errs.push(fieldError.tooLong(at, 253));
  for (const label of domain.split('.')) {
    const found = isDNS1123Label(label);
    if (!found.length) continue;
    errs.push(...found.map((e) => fieldError.invalid(at, domain, `validating label ${JSON.stringify(label)}: ${e}`)));
    break;
  }
  if (domain.split('.').length < 2) errs.push(fieldError.invalid(at, domain, 'should be a domain with at least two segments separated by dots'));
  for (const label of path.split('.')) {
    const found = isDNS1123Subdomain(label);
    if (!found.length) continue;
    errs.push(...found.map((e) => fieldError.invalid(at, path, `validating label ${JSON.stringify(label)}: ${e}`)));
    break;
  }
  return errs;
}

/** validateConditions: types set and unique, Approved/Denied/Failed only True, never both Approved and Denied. */
function validateConditions(conditions: any[]): FieldError[] {
  const errs: FieldError[] = [];
  const at = Path.root('status').child('conditions');
  const seen = new Set<string>();
  let approved = false;
  let denied = false;
  conditions.forEach((c, i) => {
    const type = c?.type ?? '';
    if (!type) errs.push(fieldError.required(at.index(i).child('type')));
    const allowed = TRUE_ONLY_CONDITIONS.includes(type) ? ['True'] : CONDITION_STATUSES;
    if (!c?.status) errs.push(fieldError.required(at.index(i).child('status')));
    else if (!allowed.includes(c.status)) errs.push(fieldError.notSupported(at.index(i).child('status'), c.status, allowed));
    if ((type === 'Approved' && denied) || (type === 'Denied' && approved)) {
      errs.push(fieldError.invalid(at.index(i).child('type'), type, 'Approved and Denied conditions are mutually exclusive'));
    }
    approved ||= type === 'Approved';
    denied ||= type === 'Denied';
    if (seen.has(type)) errs.push(fieldError.duplicate(at.index(i).child('type'), type));
    seen.add(type);
  });
  return errs;
}

/** validateCertificateSigningRequest for a create (the status is empty by then). */
function validateCsr(obj: KubeObj): FieldError[] {
  const errs: FieldError[] = [];
  const spec = Path.root('spec');
  if (!obj.metadata.name) errs.push(fieldError.required(Path.root('metadata').child('name'), 'name or generateName is required'));
  const parsed = parseCsr(decodeBytes('CertificateSigningRequestSpec.spec.request', obj.spec.request));
  // kube prints every byte of the request here ([]byte{0x2d, ...}); the stand-in abbreviates.
  if (typeof parsed === 'string') errs.push(fieldError.invalid(spec.child('request'), new GoLiteral('[]byte{...}'), parsed));
  const usages: unknown[] = Array.isArray(obj.spec.usages) ? obj.spec.usages : [];
  if (!usages.length) errs.push(fieldError.required(spec.child('usages')));
  usages.forEach((u, i) => {
    if (!VALID_USAGES.includes(u as string)) errs.push(fieldError.notSupported(spec.child('usages').index(i), u, VALID_USAGES));
  });
  usages.forEach((u, i) => {
    if (usages.indexOf(u) < i) errs.push(fieldError.duplicate(spec.child('usages').index(i), u));
  });
  const signerName = typeof obj.spec.signerName === 'string' ? obj.spec.signerName : '';
  if (signerName === 'kubernetes.io/legacy-unknown') {
    errs.push(fieldError.invalid(spec.child('signerName'), signerName, 'the legacy signerName is not allowed via this API version'));
  } else {
    errs.push(...validateSignerName(spec.child('signerName'), signerName));
  }
  const seconds = obj.spec.expirationSeconds;
  if (seconds !== undefined && seconds !== null && seconds < 600) {
    errs.push(fieldError.invalid(spec.child('expirationSeconds'), seconds, 'may not specify a duration less than 600 seconds (10 minutes)'));
  }
  return errs;
}

/** The signer's own check of kube-apiserver-client requests (validAPIServerClientUsages); kube fails the CSR on it. */
function clientUsagesError(usages: string[]): string | undefined {
  const bad = usages.find((u) => !['client auth', 'digital signature', 'key encipherment'].includes(u));
  if (bad !== undefined) return `invalid usage for client certificate: ${bad}`;
  if (!usages.includes('client auth')) return 'missing required usage for client certificate: client auth';
  return undefined;
}

const hasCondition = (csr: KubeObj, type: string) => (csr.status?.conditions ?? []).some((c: any) => c?.type === type && c?.status === 'True');
/** IsCertificateRequestApproved: Approved and not Denied. */
const isApproved = (csr: KubeObj) => hasCondition(csr, 'Approved') && !hasCondition(csr, 'Denied');
const rfc3339 = (v: unknown) => (typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v).toISOString().replace(/\.\d{3}Z$/, 'Z') : v);

/** 128-bit random serial, as kube's CA; positive DER INTEGER. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x40;
  return bytes.toString('hex');
}

interface SigningCa {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

/**
 * kube's CA Sign with PermissiveSigningPolicy: the request's subject, key and SANs; usages from spec.usages (for
 * this signer only client auth, digital signature and key encipherment get here); not a CA; validity backdated.
 */
function issueCertificate(csr: forge.pki.CertificateSigningRequest, usages: string[], ttlMs: number, ca: SigningCa): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = csr.publicKey as forge.pki.rsa.PublicKey;
  cert.serialNumber = randomSerial();
  const at = Date.now();
  cert.validity.notBefore = new Date(at - SIGNER_BACKDATE_MS);
  const notAfter = at + (ttlMs < SIGNER_SHORT_MS ? ttlMs : ttlMs - SIGNER_BACKDATE_MS);
  cert.validity.notAfter = new Date(Math.min(notAfter, ca.cert.validity.notAfter.getTime()));
  cert.setSubject(csr.subject.attributes);
  cert.setIssuer(ca.cert.subject.attributes);
  const keyUsage = { digitalSignature: usages.includes('digital signature'), keyEncipherment: usages.includes('key encipherment') };
  const extensions: any[] = [{ name: 'basicConstraints', cA: false, critical: true }];
  // Go leaves keyUsage out when no bit is set.
  if (keyUsage.digitalSignature || keyUsage.keyEncipherment) extensions.push({ name: 'keyUsage', critical: true, ...keyUsage });
  if (usages.includes('client auth')) extensions.push({ name: 'extKeyUsage', clientAuth: true });
  extensions.push({ name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() });
  const requested = (csr.getAttribute({ name: 'extensionRequest' }) as any)?.extensions ?? [];
  const san = requested.find((e: any) => e.name === 'subjectAltName');
  if (san) extensions.push({ name: 'subjectAltName', altNames: san.altNames });
  cert.setExtensions(extensions);
  cert.sign(ca.key, forge.md.sha256.create());
  // Go's PEM lines end in \n; forge writes \r\n.
  return forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');
}

// --- RBAC evaluation, as kube's rbac authorizer (RuleAllows and the helpers it uses) ---

const verbMatches = (r: PolicyRule, verb: string) => !!r.verbs?.some((v) => v === '*' || v === verb);
const groupMatches = (r: PolicyRule, group: string) => !!r.apiGroups?.some((g) => g === '*' || g === group);
const nameMatches = (r: PolicyRule, name: string) => !r.resourceNames?.length || r.resourceNames.includes(name);

function resourceMatches(r: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return !!r.resources?.some(
    (res) => res === '*' || res === combined || (!!subresource && res.length === subresource.length + 2 && res.startsWith('*/') && res.endsWith(subresource)),
  );
}

function urlMatches(r: PolicyRule, path: string): boolean {
  return !!r.nonResourceURLs?.some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))));
}

function ruleAllows(spec: SarSpec, r: PolicyRule): boolean {
  const ra = spec.resourceAttributes;
  if (ra) {
    return verbMatches(r, ra.verb ?? '') && groupMatches(r, ra.group ?? '') && resourceMatches(r, ra.resource ?? '', ra.subresource ?? '') && nameMatches(r, ra.name ?? '');
  }
  const nra = spec.nonResourceAttributes ?? {};
  return verbMatches(r, nra.verb ?? '') && urlMatches(r, nra.path ?? '');
}

function subjectMatches(s: Subject, spec: SarSpec, bindingNamespace: string): boolean {
  if (s.kind === 'User') return s.name === spec.user;
  if (s.kind === 'Group') return !!spec.groups?.includes(s.name);
  if (s.kind === 'ServiceAccount') return spec.user === `system:serviceaccount:${s.namespace || bindingNamespace}:${s.name}`;
  return false;
}

export async function startHostCluster(opts: HostClusterOptions = {}): Promise<HostClusterStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'host-cluster-'));
  const pki = await ensureServingCertificate({ certDir: join(dir, 'certs'), hosts: [] });
  // The signer uses the CA that serves the API, as a cluster whose kubeconfig trusts the CA it signs clients with.
  const ca: SigningCa = {
    cert: forge.pki.certificateFromPem(readFileSync(join(dir, 'certs', 'ca.crt'), 'utf8')),
    key: forge.pki.privateKeyFromPem(readFileSync(join(dir, 'certs', 'ca.key'), 'utf8')) as forge.pki.rsa.PrivateKey,
  };
  const signingDurationMs = (opts.clusterSigningDurationSeconds ?? DEFAULT_CLUSTER_SIGNING_DURATION_SECONDS) * 1000;
  const csrStore = new Map<string, KubeObj>();
  const timers = new Set<NodeJS.Timeout>();
  const token = `standin-${randomUUID()}`;
  const tokens = new Map<string, UserInfo & { audiences?: string[] }>();
  const namespaces = new Map<string, KubeObj>();
  const secrets = new Map<string, KubeObj>();
  const configMaps = new Map<string, KubeObj>();
  const objects = new Map<string, KubeObj>();
  const history: WatchEvent[] = [];
  const watchers = new Set<Watcher>();
  const requests: RequestRecord[] = [];
  let rv = 1;
  let mode: 'up' | 'refused' | 'unavailable' = 'up';

  const keyOf = (resource: string, ns: string, name: string) => `${resource}/${ns}/${name}`;
  const gr = (resource: string) => ({ group: RBAC_KINDS[resource as RbacResource] ? RBAC_GROUP : '', resource });

  function objectsOf(resource: RbacResource, namespace?: string): KubeObj[] {
    return [...objects.entries()]
      .filter(([k, o]) => k.startsWith(`${resource}/`) && (namespace === undefined || o.metadata.namespace === namespace))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, o]) => o);
  }

  // --- writes: every one bumps the resourceVersion and reaches the watchers ---

  function record(type: WatchEvent['type'], resource: RbacResource, object: KubeObj, previous?: KubeObj): void {
    const ev: WatchEvent = { rv: Number(object.metadata.resourceVersion), type, resource, object: clone(object), previous: previous && clone(previous) };
    history.push(ev);
    for (const w of watchers) deliver(w, ev);
  }

  function store(resource: RbacResource, obj: KubeObj, previous?: KubeObj): KubeObj {
    const { kind, namespaced } = RBAC_KINDS[resource];
    const ns = namespaced ? obj.metadata.namespace ?? '' : '';
    const stored: KubeObj = { ...clone(obj), apiVersion: RBAC_API_VERSION, kind };
    stored.metadata = { ...stored.metadata };
    if (namespaced) stored.metadata.namespace = ns;
    else delete stored.metadata.namespace;
    stored.metadata.uid = previous?.metadata.uid ?? stored.metadata.uid ?? randomUUID();
    stored.metadata.creationTimestamp = previous?.metadata.creationTimestamp ?? now();
    delete stored.metadata.generateName;
    if (previous) {
      // kube persists nothing, and sends no event, for a write that changes nothing.
      const same = canonical({ ...stored, metadata: { ...stored.metadata, resourceVersion: '' } }) === canonical({ ...previous, metadata: { ...previous.metadata, resourceVersion: '' } });
      if (same) return previous;
    }
    stored.metadata.resourceVersion = String(++rv);
    objects.set(keyOf(resource, ns, stored.metadata.name), stored);
    record(previous ? 'MODIFIED' : 'ADDED', resource, stored, previous);
    return stored;
  }

  function drop(resource: RbacResource, existing: KubeObj): KubeObj {
    objects.delete(keyOf(resource, existing.metadata.namespace ?? '', existing.metadata.name));
    const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: String(++rv) } };
    record('DELETED', resource, gone);
    return gone;
  }

  function validate(resource: RbacResource, obj: KubeObj, previous?: KubeObj): void {
    const { kind } = RBAC_KINDS[resource];
    const gk = { group: RBAC_GROUP, kind };
    const name = obj.metadata?.name ?? '';
    if (resource.endsWith('bindings')) {
      if (!obj.roleRef?.kind || !obj.roleRef?.name) {
        throw errors.invalid(gk, name, [{ type: 'FieldValueRequired', field: 'roleRef', value: undefined, detail: '' }]);
      }
      if (previous && canonical(previous.roleRef) !== canonical(obj.roleRef)) {
        throw errors.invalid(gk, name, [{ type: 'FieldValueInvalid', field: 'roleRef', value: obj.roleRef, detail: 'cannot change roleRef' }]);
      }
    }
  }

  // --- watch ---

  function matches(w: Watcher, o: KubeObj): boolean {
    if (w.namespace !== undefined && o.metadata.namespace !== w.namespace) return false;
    return w.labels.matches(o.metadata.labels ?? {}) && w.fields.matches({ 'metadata.name': o.metadata.name ?? '', 'metadata.namespace': o.metadata.namespace ?? '' });
  }

  function send(w: Watcher, type: string, object: KubeObj): void {
    if (!w.res.writableEnded) w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  function deliver(w: Watcher, ev: WatchEvent): void {
    if (ev.resource !== w.resource) return;
    const after = matches(w, ev.object);
    if (ev.type !== 'MODIFIED') {
      if (after) send(w, ev.type, ev.object);
      return;
    }
    const before = ev.previous ? matches(w, ev.previous) : false;
    if (before && after) send(w, 'MODIFIED', ev.object);
    else if (after) send(w, 'ADDED', ev.object);
    else if (before) send(w, 'DELETED', ev.object);
  }

  function watch(req: IncomingMessage, res: ServerResponse, resource: RbacResource, namespace: string | undefined, q: URLSearchParams): void {
    const w: Watcher = { resource, namespace, labels: parseLabelSelector(q.get('labelSelector')), fields: parseFieldSelector(q.get('fieldSelector')), res };
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const from = q.get('resourceVersion');
    if (from && from !== '0') {
      for (const ev of history) if (ev.rv > Number(from)) deliver(w, ev);
    } else {
      for (const o of objectsOf(resource, namespace)) if (matches(w, o)) send(w, 'ADDED', o);
    }
    watchers.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const done = () => {
      watchers.delete(w);
      if (timer) clearTimeout(timer);
    };
    res.on('close', done);
    req.on('close', done);
  }

  // --- RBAC REST ---

  function rbac(req: IncomingMessage, res: ServerResponse, body: any, resource: RbacResource, namespace: string | undefined, name: string | undefined, q: URLSearchParams): void {
    const { kind, namespaced } = RBAC_KINDS[resource];
    // Cluster-scoped kinds have no namespaced path; namespaced kinds are only listed and watched across namespaces.
    if (!namespaced && namespace !== undefined) throw errors.notFoundPath();
    if (namespaced && namespace === undefined && (name !== undefined || req.method !== 'GET')) throw errors.notFoundPath();
    const ns = namespace ?? '';
    const existing = name !== undefined ? objects.get(keyOf(resource, ns, name)) : undefined;
    const method = req.method ?? 'GET';

    if (name === undefined) {
      if (method === 'GET' && ['true', '1'].includes(q.get('watch') ?? '')) return watch(req, res, resource, namespace, q);
      if (method === 'GET' || method === 'DELETE') {
        const labels = parseLabelSelector(q.get('labelSelector'));
        const fields = parseFieldSelector(q.get('fieldSelector'));
        let items = objectsOf(resource, namespace).filter(
          (o) => labels.matches(o.metadata.labels ?? {}) && fields.matches({ 'metadata.name': o.metadata.name, 'metadata.namespace': o.metadata.namespace ?? '' }),
        );
        if (method === 'DELETE') items = items.map((o) => drop(resource, o));
        // Items of a typed list carry no kind/apiVersion, as kube-apiserver sends them.
        const listItems = items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
        return reply(res, 200, { kind: `${kind}List`, apiVersion: RBAC_API_VERSION, metadata: { resourceVersion: String(rv) }, items: listItems });
      }
      if (method === 'POST') {
        if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
        if (body.kind && body.kind !== kind) throw errors.badRequest(`the kind ${body.kind} does not belong at this path`);
        if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
          throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
        }
        const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
        if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
        if (!obj.metadata.name) {
          throw errors.invalid({ group: RBAC_GROUP, kind }, '', [{ type: 'FieldValueRequired', field: 'metadata.name', value: undefined, detail: 'name or generateName is required' }]);
        }
        if (objects.has(keyOf(resource, ns, obj.metadata.name))) throw errors.alreadyExists(gr(resource), obj.metadata.name);
        delete obj.metadata.resourceVersion;
        api.onRbacWrite?.(obj);
        validate(resource, obj);
        return reply(res, 201, store(resource, obj));
      }
      throw errors.methodNotSupported(gr(resource), method.toLowerCase());
    }

    if (method === 'GET') {
      if (!existing) throw errors.notFound(gr(resource), name);
      return reply(res, 200, existing);
    }
    if (method === 'PUT') {
      if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
      if (body.metadata.name !== name) throw errors.badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
      if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      const wanted = body.metadata.resourceVersion;
      if (existing && wanted && wanted !== existing.metadata.resourceVersion) throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      if (!existing && wanted) throw errors.notFound(gr(resource), name);
      const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
      api.onRbacWrite?.(obj);
      validate(resource, obj, existing);
      // RBAC kinds may be created by PUT (AllowCreateOnUpdate).
      return reply(res, existing ? 200 : 201, store(resource, obj, existing));
    }
    if (method === 'PATCH') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
      let patched: any;
      if (type === 'application/json-patch+json') patched = applyJsonPatch(clone(existing), body);
      else if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json') patched = applyMergePatch(clone(existing), body);
      else throw errors.unsupportedMediaType(['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json']);
      if (patched?.metadata?.name !== name) throw errors.badRequest('the patch may not change the name');
      const wanted = patched.metadata.resourceVersion;
      if (wanted && wanted !== existing.metadata.resourceVersion) throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      validate(resource, patched, existing);
      return reply(res, 200, store(resource, patched, existing));
    }
    if (method === 'DELETE') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const pre = body?.preconditions ?? {};
      if (pre.uid && pre.uid !== existing.metadata.uid) {
        throw errors.conflict(gr(resource), name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`);
      }
      if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
        throw errors.conflict(gr(resource), name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`);
      }
      drop(resource, existing);
      return reply(res, 200, errors.successStatus({ name, group: RBAC_GROUP, kind: resource, uid: existing.metadata.uid }));
    }
    throw errors.methodNotSupported(gr(resource), method.toLowerCase());
  }

  // --- CertificateSigningRequests ---

  function storeCsr(obj: KubeObj): KubeObj {
    const stored: KubeObj = { ...clone(obj), apiVersion: CSR_API_VERSION, kind: 'CertificateSigningRequest' };
    stored.metadata = { ...stored.metadata, resourceVersion: String(++rv) };
    csrStore.set(stored.metadata.name, stored);
    return stored;
  }

  function getCsr(name: string): KubeObj {
    const csr = csrStore.get(name);
    if (!csr) throw errors.notFound(CSR_GR, name);
    return csr;
  }

  function listCsrs(q: URLSearchParams): unknown {
    // Refused rather than ignored, so that a client relying on them fails here and not against a cluster.
    if (['true', '1'].includes(q.get('watch') ?? '')) throw errors.badRequest('the host-cluster stand-in does not serve watches of certificatesigningrequests');
    if (q.get('labelSelector') || q.get('fieldSelector')) throw errors.badRequest('the host-cluster stand-in does not filter certificatesigningrequests by selectors');
    const items = [...csrStore.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)).map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
    return { kind: 'CertificateSigningRequestList', apiVersion: CSR_API_VERSION, metadata: { resourceVersion: String(rv) }, items };
  }

  /** In kube's order: decode, name, PrepareForCreate, validation, admission, then storage (AlreadyExists). */
  function createCsr(body: any): KubeObj {
    if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
    if (body.kind && body.kind !== 'CertificateSigningRequest') throw errors.badRequest(`the kind ${body.kind} does not belong at this path`);
    const obj: KubeObj = { ...clone(body), metadata: { ...clone(body.metadata) }, spec: { ...clone(body.spec ?? {}) } };
    if (obj.spec.usages !== undefined && obj.spec.usages !== null && !Array.isArray(obj.spec.usages)) {
      throw errors.badRequest('CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: spec.usages must be a list');
    }
    const seconds = obj.spec.expirationSeconds;
    if (seconds !== undefined && seconds !== null && !Number.isInteger(seconds)) {
      throw errors.badRequest('CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: spec.expirationSeconds must be an integer');
    }
    delete obj.metadata.namespace; // cluster-scoped: kube clears it
    delete obj.metadata.resourceVersion;
    if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
    obj.metadata.uid = randomUUID();
    obj.metadata.creationTimestamp = now();
    // PrepareForCreate: the requester is whoever called, and nobody creates a pre-approved (or pre-signed) request.
    delete obj.spec.uid;
    delete obj.spec.extra;
    obj.spec.username = KUBECONFIG_USERNAME;
    obj.spec.groups = [...KUBECONFIG_GROUPS];
    obj.status = {};
    const errs = validateCsr(obj);
    if (errs.length) throw errors.invalid(CSR_GK, obj.metadata.name ?? '', errs);
    // The certificatesubjectrestriction admission plugin, on by default.
    const request = parseCsr(decodeBytes('CertificateSigningRequestSpec.spec.request', obj.spec.request)) as forge.pki.CertificateSigningRequest;
    const orgs = request.subject.attributes.filter((a) => a.name === 'organizationName').map((a) => a.value);
    if (obj.spec.signerName === KUBE_APISERVER_CLIENT_SIGNER && orgs.includes('system:masters')) {
      throw errors.forbidden(CSR_GR, obj.metadata.name, `use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed`);
    }
    if (csrStore.has(obj.metadata.name)) throw errors.alreadyExists(CSR_GR, obj.metadata.name);
    return storeCsr(obj);
  }

  /** The approval subresource: only status.conditions are taken from the body (kube's csrApprovalStrategy). */
  function approve(name: string, body: any): KubeObj {
    const existing = getCsr(name);
    if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
    if (body.metadata.name !== name) throw errors.badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
    if (body.metadata.uid && body.metadata.uid !== existing.metadata.uid) {
      throw errors.conflict(CSR_GR, name, `Precondition failed: UID in precondition: ${body.metadata.uid}, UID in object meta: ${existing.metadata.uid}`);
    }
    const wanted = body.metadata.resourceVersion;
    if (wanted && wanted !== existing.metadata.resourceVersion) throw errors.conflict(CSR_GR, name, errors.OBJECT_MODIFIED);
    const before: any[] = existing.status?.conditions ?? [];
    const conditions: any[] = Array.isArray(body.status?.conditions) ? clone(body.status.conditions) : [];
    // populateConditionTimestamps: keep the transition time of a condition that did not change.
    const at = now();
    for (const c of conditions) {
      if (!c || typeof c !== 'object') continue;
      c.lastUpdateTime = rfc3339(c.lastUpdateTime) || at;
      const same = before.find((o) => o.type === c.type && o.status === c.status && o.lastTransitionTime);
      c.lastTransitionTime = rfc3339(c.lastTransitionTime) || same?.lastTransitionTime || at;
    }
    const errs = validateConditions(conditions);
    for (const type of TRUE_ONLY_CONDITIONS) {
      const count = (list: any[]) => list.filter((c) => c?.type === type).length;
      if (count(conditions) < count(before)) errs.push(fieldError.forbidden(Path.root('status').child('conditions'), `updates may not remove a condition of type ${JSON.stringify(type)}`));
    }
    if (errs.length) throw errors.invalid(CSR_GK, name, errs);
    const updated: KubeObj = { ...clone(existing), status: { ...clone(existing.status ?? {}), conditions } };
    if (!conditions.length) delete updated.status.conditions;
    // kube persists nothing for a write that changes nothing.
    if (canonical(updated) === canonical(existing)) return existing;
    const stored = storeCsr(updated);
    scheduleSigning(stored);
    return stored;
  }

  function later(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  }

  /** kube-controller-manager's csrsigning-kube-apiserver-client controller, reacting to an approval. */
  function scheduleSigning(csr: KubeObj): void {
    if (opts.csrSigning === false || csr.spec?.signerName !== KUBE_APISERVER_CLIENT_SIGNER) return;
    later(() => sign(csr.metadata.name, csr.metadata.uid), opts.csrSigningDelayMs ?? 0);
  }

  function sign(name: string, uid: string): void {
    const csr = csrStore.get(name);
    if (!csr || csr.metadata.uid !== uid || !isApproved(csr) || hasCondition(csr, 'Failed') || csr.status?.certificate) return;
    // The controller writes through the API: while that is down it retries, as its work queue would.
    if (mode !== 'up') return later(() => sign(name, uid), 100);
    const next = clone(csr);
    next.status = { ...(next.status ?? {}) };
    const usages: string[] = csr.spec.usages ?? [];
    const usageError = clientUsagesError(usages);
    if (usageError) {
      const at = now();
      next.status.conditions = [
        ...(next.status.conditions ?? []),
        { type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message: usageError, lastUpdateTime: at, lastTransitionTime: at },
      ];
    } else {
      const request = parseCsr(decodeBytes('CertificateSigningRequestSpec.spec.request', csr.spec.request)) as forge.pki.CertificateSigningRequest;
      // The requested duration is honoured up to the cluster's maximum (validation keeps it >= 600 s).
      const requestedMs = typeof csr.spec.expirationSeconds === 'number' ? csr.spec.expirationSeconds * 1000 : signingDurationMs;
      const pem = issueCertificate(request, usages, Math.min(requestedMs, signingDurationMs), ca);
      next.status.certificate = Buffer.from(pem).toString('base64');
    }
    storeCsr(next);
  }

  function certificateSigningRequests(res: ServerResponse, method: string, body: any, name: string | undefined, subresource: string | undefined, q: URLSearchParams): void {
    if (name === undefined) {
      if (method === 'GET') return reply(res, 200, listCsrs(q));
      if (method === 'POST') return reply(res, 201, createCsr(body));
      throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
    }
    if (subresource === 'approval') {
      if (method === 'GET') return reply(res, 200, getCsr(name));
      if (method === 'PUT') return reply(res, 200, approve(name, body));
      throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
    }
    if (subresource !== undefined) throw errors.notFoundPath();
    if (method === 'GET') return reply(res, 200, getCsr(name));
    if (method === 'DELETE') {
      const existing = getCsr(name);
      csrStore.delete(name);
      ++rv;
      return reply(res, 200, errors.successStatus({ name, group: CSR_GROUP, kind: CSR_GR.resource, uid: existing.metadata.uid }));
    }
    // Update and patch of the object are not modelled: refused so a test notices.
    throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
  }

  // --- reviews ---

  function tokenReview(body: any): unknown {
    const reviewed = body?.spec?.token;
    const user = typeof reviewed === 'string' ? tokens.get(reviewed) : undefined;
    const wanted: string[] = body?.spec?.audiences ?? [];
    let status: Record<string, unknown>;
    if (!user) status = { user: {}, authenticated: false, error: 'invalid bearer token' };
    else if (wanted.length && user.audiences && !user.audiences.some((a) => wanted.includes(a))) {
      status = { user: {}, authenticated: false, error: 'token audiences are invalid for the target audiences' };
    } else {
      const groups = user.groups.includes('system:authenticated') ? user.groups : [...user.groups, 'system:authenticated'];
      status = {
        authenticated: true,
        user: { username: user.name, ...(user.uid ? { uid: user.uid } : {}), groups, ...(user.extra ? { extra: user.extra } : {}) },
        audiences: wanted.length ? wanted.filter((a) => !user.audiences || user.audiences.includes(a)) : user.audiences ?? [],
      };
    }
    return { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec: body?.spec ?? {}, status };
  }

  function rulesOf(kind: string, name: string, namespace: string): PolicyRule[] {
    if (kind === 'Role') return objects.get(keyOf('roles', namespace, name))?.rules ?? [];
    if (kind !== 'ClusterRole') return [];
    const role = objects.get(keyOf('clusterroles', '', name));
    if (!role) return [];
    const selectors: unknown[] = role.aggregationRule?.clusterRoleSelectors ?? [];
    if (!selectors.length) return role.rules ?? [];
    // The aggregation controller's effect, computed on the fly.
    const aggregated = objectsOf('clusterroles').filter((r) => r !== role && selectors.some((s) => labelSelectorMatches(s, r.metadata.labels)));
    return [...(role.rules ?? []), ...aggregated.flatMap((r) => r.rules ?? [])];
  }

  function evaluate(spec: SarSpec): SarStatus {
    if (spec.groups?.includes('system:masters')) return { allowed: true };
    const ns = spec.resourceAttributes?.namespace ?? '';
    const bindings: Array<[string, KubeObj]> = objectsOf('clusterrolebindings').map((b) => ['ClusterRoleBinding', b]);
    if (spec.resourceAttributes && ns) bindings.push(...objectsOf('rolebindings', ns).map((b): [string, KubeObj] => ['RoleBinding', b]));
    for (const [bindingKind, b] of bindings) {
      const bindingNs = b.metadata.namespace ?? '';
      const subject = (b.subjects as Subject[] | undefined)?.find((s) => subjectMatches(s, spec, bindingNs));
      if (!subject) continue;
      if (rulesOf(b.roleRef.kind, b.roleRef.name, bindingNs).some((r) => ruleAllows(spec, r))) {
        const where = bindingNs ? `${b.metadata.name}/${bindingNs}` : b.metadata.name;
        const to = subject.kind === 'ServiceAccount' ? `ServiceAccount "${subject.name}/${subject.namespace || bindingNs}"` : `${subject.kind} "${subject.name}"`;
        return { allowed: true, reason: `RBAC: allowed by ${bindingKind} "${where}" of ${b.roleRef.kind} "${b.roleRef.name}" to ${to}` };
      }
    }
    return { allowed: false };
  }

  function subjectAccessReview(body: any): unknown {
    const spec: SarSpec = body?.spec ?? {};
    if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
      throw errors.invalid({ group: 'authorization.k8s.io', kind: 'SubjectAccessReview' }, '', [
        { type: 'FieldValueRequired', field: 'spec.resourceAttributes', value: undefined, detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified' },
      ]);
    }
    const status = api.onSubjectAccessReview?.(spec) ?? evaluate(spec);
    return { kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status };
  }

  // --- HTTP ---

  function reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function readBody(req: IncomingMessage): Promise<any> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw errors.badRequest('the request body is not JSON');
    }
  }

  const RBAC_PATH = /^\/apis\/rbac\.authorization\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?(roles|rolebindings|clusterroles|clusterrolebindings)(?:\/([^/]+))?\/?$/;
  const CSR_PATH = /^\/apis\/certificates\.k8s\.io\/v1\/certificatesigningrequests(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://host');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const rbacMatch = RBAC_PATH.exec(path);
    const csrMatch = CSR_PATH.exec(path);
    const resource = rbacMatch?.[2] ?? (csrMatch ? CSR_GR.resource : undefined) ?? /\/(tokenreviews|subjectaccessreviews|secrets|configmaps|namespaces)(?:\/[^/]+)?$/.exec(path)?.[1] ?? '';
    requests.push({ method, path, resource, query: url.search });
    if (mode === 'unavailable') throw errors.serviceUnavailable('the host cluster is down (stand-in)');
    if (req.headers.authorization !== `Bearer ${token}`) throw errors.unauthorized();
    const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? await readBody(req) : undefined;

    if (rbacMatch) {
      const [, ns, res2, name] = rbacMatch;
      return rbac(req, res, body, res2 as RbacResource, ns === undefined ? undefined : decodeURIComponent(ns), name === undefined ? undefined : decodeURIComponent(name), url.searchParams);
    }
    if (csrMatch) {
      const [, name, subresource] = csrMatch;
      return certificateSigningRequests(res, method, body, name === undefined ? undefined : decodeURIComponent(name), subresource, url.searchParams);
    }
    if (method === 'POST' && path === '/apis/authentication.k8s.io/v1/tokenreviews') return reply(res, 201, tokenReview(body));
    if (method === 'POST' && path === '/apis/authorization.k8s.io/v1/subjectaccessreviews') return reply(res, 201, subjectAccessReview(body));
    let m = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const ns = namespaces.get(decodeURIComponent(m[1]));
      if (!ns) throw errors.notFound({ group: '', resource: 'namespaces' }, decodeURIComponent(m[1]));
      return reply(res, 200, ns);
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const secret = secrets.get(`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`);
      if (!secret) throw errors.notFound({ group: '', resource: 'secrets' }, decodeURIComponent(m[2]));
      return reply(res, 200, secret);
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const cm = configMaps.get(`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`);
      if (!cm) throw errors.notFound({ group: '', resource: 'configmaps' }, decodeURIComponent(m[2]));
      return reply(res, 200, cm);
    }
    throw errors.notFoundPath();
  }

  const server: Server = createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    handle(req, res).catch((err) => {
      if (res.headersSent) return res.end();
      const status = errors.isStatusError(err) ? err.status : errors.internalError(err).status;
      reply(res, status.code, status);
    });
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const close = () => new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    for (const w of watchers) w.res.end();
    server.close(() => resolve());
    server.closeAllConnections();
  });

  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(dir, 'host.kubeconfig');
  writeKubeconfig(kubeconfigPath, { server: url, caPem: pki.caPem, token });
  const kubeconfigText = readFileSync(kubeconfigPath, 'utf8');

  const api: HostClusterStandIn = {
    url,
    caPem: pki.caPem,
    token,
    kubeconfigPath,
    requests,
    addToken: (t, user) => void tokens.set(t, clone(user)),
    removeToken: (t) => void tokens.delete(t),
    addNamespace(name, labels = {}) {
      namespaces.set(name, {
        kind: 'Namespace',
        apiVersion: 'v1',
        metadata: { name, uid: randomUUID(), resourceVersion: String(++rv), creationTimestamp: now(), labels: { 'kubernetes.io/metadata.name': name, ...labels } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      });
    },
    addSecret(namespace, name, data, type = 'Opaque') {
      secrets.set(`${namespace}/${name}`, {
        kind: 'Secret',
        apiVersion: 'v1',
        metadata: { name, namespace, uid: randomUUID(), resourceVersion: String(++rv), creationTimestamp: now() },
        type,
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      });
    },
    addConfigMap(namespace, name, data) {
      configMaps.set(`${namespace}/${name}`, {
        kind: 'ConfigMap',
        apiVersion: 'v1',
        metadata: { name, namespace, uid: randomUUID(), resourceVersion: String(++rv), creationTimestamp: now() },
        data: { ...data },
      });
    },
    put(obj) {
      const resource = RESOURCE_OF_KIND[obj.kind ?? ''];
      if (!resource) throw new Error(`the stand-in stores Role, ClusterRole, RoleBinding and ClusterRoleBinding, not ${obj.kind}`);
      const ns = RBAC_KINDS[resource].namespaced ? obj.metadata.namespace ?? 'default' : '';
      const withNs = { ...obj, metadata: { ...obj.metadata, namespace: ns } };
      const previous = objects.get(keyOf(resource, ns, obj.metadata.name));
      validate(resource, withNs, previous);
      return clone(store(resource, withNs, previous));
    },
    get: (resource, namespace, name) => clone(objects.get(keyOf(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name))),
    list: (resource, namespace) => clone(objectsOf(resource, namespace)),
    remove(resource, namespace, name) {
      const existing = objects.get(keyOf(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name));
      if (existing) drop(resource, existing);
      return !!existing;
    },
    count: (resource, method) => requests.filter((r) => r.resource === resource && (!method || r.method === method)).length,
    resetCounts: () => void requests.splice(0),
    async setDown(down, how = 'refused') {
      if (!down) {
        if (mode === 'refused') await listen(port);
        mode = 'up';
        return;
      }
      mode = how;
      if (how === 'refused') await close();
    },
    csrs: () => clone([...csrStore.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))),
    kubeconfigText: () => kubeconfigText,
    async stop() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return api;
}
