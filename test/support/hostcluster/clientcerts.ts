/**
 * Client certificates, as kube-apiserver's x509 authenticator takes them: a certificate that chains to the stand-in's
 * CA (the one its CSR signer signs with) names the user (CN) and its groups (O). Such a user may do what every
 * authenticated user may in kube (system:public-info-viewer, system:basic-user): GET /version, and ask who it is
 * (SelfSubjectReview, `kubectl auth whoami`); anything else is 403, as the stand-in models no RBAC for them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';

export interface CertificateUser {
  username: string;
  groups: string[];
}

/** The user a verified client certificate names, if the request came with one. */
export function certificateUser(req: IncomingMessage): CertificateUser | undefined {
  const socket = req.socket as TLSSocket;
  if (!socket.authorized) return undefined;
  const subject = socket.getPeerCertificate()?.subject;
  const cn = subject?.CN;
  if (typeof cn !== 'string' || !cn) return undefined;
  const o = subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username: cn, groups: [...groups, 'system:authenticated'] };
}

export function serveCertificateUser(
  res: ServerResponse,
  user: CertificateUser,
  method: string,
  path: string,
  version: () => Record<string, string>,
): void {
  if (method === 'GET' && path === '/version') return reply(res, 200, version());
  if (method === 'POST' && path === '/apis/authentication.k8s.io/v1/selfsubjectreviews')
    return reply(res, 201, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      metadata: { creationTimestamp: null },
      status: { userInfo: user },
    });
  throw errors.forbidden(undefined, '', `User ${JSON.stringify(user.username)} may not ${method} ${path} (stand-in)`);
}
