/**
 * /apis/certificates.k8s.io/v1/certificatesigningrequests of the stand-in: create (generateName; kube's
 * PrepareForCreate, validation and certificatesubjectrestriction admission), get, list, delete, and get/PUT of the
 * approval subresource. The caller becomes spec.username/groups (KUBECONFIG_USERNAME/GROUPS). Watch and selectors
 * are refused with 400 (not ignored); update and patch of the object and its status are not modelled.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import forge from 'node-forge';
import { fieldError, Path } from '../../../src/apimachinery/field.js';
import * as errors from '../../../src/apimachinery/status.js';
import { KUBE_APISERVER_CLIENT_SIGNER } from './csrsigner.js';
import { decodeBytes, parseCsr, TRUE_ONLY_CONDITIONS, validateConditions, validateCsr } from './csrvalidation.js';
import { reply } from './http.js';
import { canonical, clone, now, type KubeObj, type ResourceVersions } from './objects.js';

const CSR_GROUP = 'certificates.k8s.io';
const CSR_API_VERSION = `${CSR_GROUP}/v1`;
const CSR_GR = { group: CSR_GROUP, resource: 'certificatesigningrequests' };
const CSR_GK = { group: CSR_GROUP, kind: 'CertificateSigningRequest' };
/** The path of every CSR request: name (absent for the collection), subresource. */
export const CSR_PATH =
  /^\/apis\/certificates\.k8s\.io\/v1\/certificatesigningrequests(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/;
export const CSR_RESOURCE = CSR_GR.resource;

/**
 * Who the stand-in takes the holder of its kubeconfig token to be: the server's ServiceAccount, with the groups
 * kube gives ServiceAccount tokens. A created CSR's spec.username and spec.groups say this, as kube fills them from
 * the authenticated caller.
 */
export const KUBECONFIG_USERNAME = 'system:serviceaccount:platform:management-api';
export const KUBECONFIG_GROUPS: readonly string[] = [
  'system:serviceaccounts',
  'system:serviceaccounts:platform',
  'system:authenticated',
];

const rfc3339 = (v: unknown) =>
  typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v).toISOString().replace(/\.\d{3}Z$/, 'Z') : v;

export class CertificateSigningRequests {
  private readonly stored = new Map<string, KubeObj>();

  /** `onUpdated` sees each approval that changed something (the signer reacts to it). */
  constructor(
    private readonly rv: ResourceVersions,
    private readonly onUpdated: (csr: KubeObj) => void,
  ) {}

  /** The stored CSR of that name (not a copy). */
  find(name: string): KubeObj | undefined {
    return this.stored.get(name);
  }

  /** Copies of the stored CSRs, by name. */
  all(): KubeObj[] {
    return clone([...this.stored.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)));
  }

  /** Stores a CSR with a new resourceVersion (an API write). */
  write(obj: KubeObj): KubeObj {
    const stored: KubeObj = { ...clone(obj), apiVersion: CSR_API_VERSION, kind: 'CertificateSigningRequest' };
    stored.metadata = { ...stored.metadata, resourceVersion: this.rv.next() };
    this.stored.set(stored.metadata.name, stored);
    return stored;
  }

  /** Answers one CSR request, its path already split by CSR_PATH. */
  handle(
    res: ServerResponse,
    method: string,
    body: any,
    name: string | undefined,
    subresource: string | undefined,
    q: URLSearchParams,
  ): void {
    if (name === undefined) {
      if (method === 'GET') return reply(res, 200, this.list(q));
      if (method === 'POST') return reply(res, 201, this.create(body));
      throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
    }
    if (subresource === 'approval') {
      if (method === 'GET') return reply(res, 200, this.get(name));
      if (method === 'PUT') return reply(res, 200, this.approve(name, body));
      throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
    }
    if (subresource !== undefined) throw errors.notFoundPath();
    if (method === 'GET') return reply(res, 200, this.get(name));
    if (method === 'DELETE') {
      const existing = this.get(name);
      this.stored.delete(name);
      this.rv.next();
      return reply(
        res,
        200,
        errors.successStatus({ name, group: CSR_GROUP, kind: CSR_GR.resource, uid: existing.metadata.uid }),
      );
    }
    // Update and patch of the object are not modelled: refused so a test notices.
    throw errors.methodNotSupported(CSR_GR, method.toLowerCase());
  }

  private get(name: string): KubeObj {
    const csr = this.stored.get(name);
    if (!csr) throw errors.notFound(CSR_GR, name);
    return csr;
  }

  private list(q: URLSearchParams): unknown {
    // Refused rather than ignored, so that a client relying on them fails here and not against a cluster.
    if (['true', '1'].includes(q.get('watch') ?? ''))
      throw errors.badRequest('the host-cluster stand-in does not serve watches of certificatesigningrequests');
    if (q.get('labelSelector') || q.get('fieldSelector'))
      throw errors.badRequest('the host-cluster stand-in does not filter certificatesigningrequests by selectors');
    const items = [...this.stored.values()]
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
      .map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
    return {
      kind: 'CertificateSigningRequestList',
      apiVersion: CSR_API_VERSION,
      metadata: { resourceVersion: this.rv.current() },
      items,
    };
  }

  /** In kube's order: decode, name, PrepareForCreate, validation, admission, then storage (AlreadyExists). */
  private create(body: any): KubeObj {
    if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
    if (body.kind && body.kind !== 'CertificateSigningRequest')
      throw errors.badRequest(`the kind ${body.kind} does not belong at this path`);
    const obj: KubeObj = { ...clone(body), metadata: { ...clone(body.metadata) }, spec: { ...clone(body.spec ?? {}) } };
    if (obj.spec.usages !== undefined && obj.spec.usages !== null && !Array.isArray(obj.spec.usages)) {
      throw errors.badRequest(
        'CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: spec.usages must be a list',
      );
    }
    const seconds = obj.spec.expirationSeconds;
    if (seconds !== undefined && seconds !== null && !Number.isInteger(seconds)) {
      throw errors.badRequest(
        'CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: spec.expirationSeconds must be an integer',
      );
    }
    delete obj.metadata.namespace; // cluster-scoped: kube clears it
    delete obj.metadata.resourceVersion;
    if (!obj.metadata.name && obj.metadata.generateName)
      obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
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
    const request = parseCsr(
      decodeBytes('CertificateSigningRequestSpec.spec.request', obj.spec.request),
    ) as forge.pki.CertificateSigningRequest;
    const orgs = request.subject.attributes.filter((a) => a.name === 'organizationName').map((a) => a.value);
    if (obj.spec.signerName === KUBE_APISERVER_CLIENT_SIGNER && orgs.includes('system:masters')) {
      throw errors.forbidden(
        CSR_GR,
        obj.metadata.name,
        `use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed`,
      );
    }
    if (this.stored.has(obj.metadata.name)) throw errors.alreadyExists(CSR_GR, obj.metadata.name);
    return this.write(obj);
  }

  /** The approval subresource: only status.conditions are taken from the body (kube's csrApprovalStrategy). */
  private approve(name: string, body: any): KubeObj {
    const existing = this.get(name);
    if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
    if (body.metadata.name !== name)
      throw errors.badRequest(
        `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
      );
    if (body.metadata.uid && body.metadata.uid !== existing.metadata.uid) {
      throw errors.conflict(
        CSR_GR,
        name,
        `Precondition failed: UID in precondition: ${body.metadata.uid}, UID in object meta: ${existing.metadata.uid}`,
      );
    }
    const wanted = body.metadata.resourceVersion;
    if (wanted && wanted !== existing.metadata.resourceVersion)
      throw errors.conflict(CSR_GR, name, errors.OBJECT_MODIFIED);
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
      if (count(conditions) < count(before))
        errs.push(
          fieldError.forbidden(
            Path.root('status').child('conditions'),
            `updates may not remove a condition of type ${JSON.stringify(type)}`,
          ),
        );
    }
    if (errs.length) throw errors.invalid(CSR_GK, name, errs);
    const updated: KubeObj = { ...clone(existing), status: { ...clone(existing.status ?? {}), conditions } };
    if (!conditions.length) delete updated.status.conditions;
    // kube persists nothing for a write that changes nothing.
    if (canonical(updated) === canonical(existing)) return existing;
    const stored = this.write(updated);
    this.onUpdated(stored);
    return stored;
  }
}
