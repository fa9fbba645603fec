/**
 * The stand-in's request path: log the request, answer 503 while "unavailable", require the kubeconfig's bearer
 * token (or one the test's authenticateBearer takes, or a client certificate of the stand-in's CA, for the little
 * clientcerts.ts serves), read the JSON body, and hand the request to the part that serves its REST path (404 for
 * any other path).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import type { AdmissionRegistration } from './admissionregistration.js';
import { certificateUser, serveCertificateUser } from './clientcerts.js';
import type { CoreObjects } from './core.js';
import { CSR_PATH, CSR_RESOURCE, type CertificateSigningRequests } from './csrs.js';
import type { FlowControlObjects } from './flowcontrol.js';
import { readBody, reply } from './http.js';
import { matchObjectPath, type ObjectPath } from './objectrest.js';
import type { SarSpec, SarStatus } from './rbacauthorizer.js';
import { subjectAccessReview, tokenReview, type TokenUser } from './reviews.js';

export interface RequestRecord {
  method: string;
  path: string;
  /** The resource the path names (tokenreviews, roles, secrets, namespaces, ...), '' for others. */
  resource: string;
  /** The query string, with its '?' ('' for none): tells a watch from a list. */
  query: string;
  /** The W3C trace context the request carried, if any. */
  traceparent?: string;
  /** The Accept header, if any (metadata only, say). */
  accept?: string;
  /** Who a bearer token of `authenticateBearer` named (absent for the kubeconfig's token). */
  user?: string;
}

export interface Routes {
  /** Where each request is logged as it arrives. */
  requests: RequestRecord[];
  unavailable: () => boolean;
  /** The one bearer token the stand-in accepts. */
  token: string;
  tokens: ReadonlyMap<string, TokenUser>;
  /** Bearer tokens besides `token`: the user's name, or undefined to refuse (401). */
  authenticateBearer?: (token: string) => Promise<string | undefined>;
  decide: (spec: SarSpec) => SarStatus;
  /** The REST verbs of the stored kinds (RBAC kinds, Secrets). */
  objects: (req: IncomingMessage, res: ServerResponse, body: any, target: ObjectPath, q: URLSearchParams) => void;
  csrs: CertificateSigningRequests;
  core: CoreObjects;
  admission: AdmissionRegistration;
  flowcontrol: FlowControlObjects;
  /** GET /version's answer (kube's version.Info). */
  version: () => Record<string, string>;
  /** Refuses a request before it is served, when it throws (a StatusError: 403, say); `body` as it came (parsed). */
  onRequest: () => ((method: string, path: string, body?: any) => void) | undefined;
}

export function routes(r: Routes) {
  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://host');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const objectMatch = matchObjectPath(path);
    const csrMatch = CSR_PATH.exec(path);
    const resource =
      objectMatch?.resource ??
      (csrMatch ? CSR_RESOURCE : undefined) ??
      /\/(tokenreviews|subjectaccessreviews|configmaps|namespaces|mutatingwebhookconfigurations|validatingwebhookconfigurations|validatingadmissionpolicies|validatingadmissionpolicybindings|flowschemas|prioritylevelconfigurations)(?:\/[^/]+)?$/.exec(
        path,
      )?.[1] ??
      '';
    const traceparent = req.headers.traceparent as string | undefined;
    const accept = req.headers.accept;
    const record: RequestRecord = {
      method,
      path,
      resource,
      query: url.search,
      ...(traceparent ? { traceparent } : {}),
      ...(accept ? { accept } : {}),
    };
    r.requests.push(record);
    if (r.unavailable()) throw errors.serviceUnavailable('the host cluster is down (stand-in)');
    const byCertificate = req.headers.authorization === undefined ? certificateUser(req) : undefined;
    if (byCertificate) {
      // kubectl sends its SelfSubjectReview as protobuf; nothing in it is needed.
      req.resume();
      return serveCertificateUser(res, byCertificate, method, path, r.version);
    }
    if (req.headers.authorization !== `Bearer ${r.token}`) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const user = bearer && r.authenticateBearer ? await r.authenticateBearer(bearer) : undefined;
      if (!user) throw errors.unauthorized();
      record.user = user;
    }
    const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? await readBody(req) : undefined;
    r.onRequest()?.(method, path, body);
    if (method === 'GET' && path === '/version') return reply(res, 200, r.version());

    if (objectMatch) return r.objects(req, res, body, objectMatch, url.searchParams);
    if (csrMatch) {
      const [, name, subresource] = csrMatch;
      return r.csrs.handle(
        res,
        method,
        body,
        name === undefined ? undefined : decodeURIComponent(name),
        subresource,
        url.searchParams,
      );
    }
    if (method === 'POST' && path === '/apis/authentication.k8s.io/v1/tokenreviews')
      return reply(res, 201, tokenReview(r.tokens, body));
    if (method === 'POST' && path === '/apis/authorization.k8s.io/v1/subjectaccessreviews')
      return reply(res, 201, subjectAccessReview(body, r.decide));
    if (r.core.handle(req, res, method, path, url.searchParams)) return;
    if (r.admission.handle(req, res, method, path, url.searchParams)) return;
    if (r.flowcontrol.handle(req, res, method, path, url.searchParams)) return;
    throw errors.notFoundPath();
  };
}
