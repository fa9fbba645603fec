/** Who is asking, and may they: the shapes authenticators and authorizers share. */
import type { IncomingMessage } from 'node:http';

import type { UserInfo } from '../apimachinery/user.js';

export { AUTHENTICATED_GROUP, MASTERS_GROUP, type UserInfo } from '../apimachinery/user.js';
export const ANONYMOUS_USER: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

/**
 * Returns the user when the request carries credentials this authenticator understands and they are good;
 * undefined when it carries none of its kind. Credentials of its kind that are bad throw AuthenticationError.
 */
export interface Authenticator {
  authenticate(req: IncomingMessage): Promise<UserInfo | undefined>;
}

/** Bad credentials: a 401 whose message is this error's (kube's plain "Unauthorized" unless there is more to say). */
export class AuthenticationError extends Error {
  constructor(message = 'Unauthorized') {
    super(message);
  }
}

/** What a request does, for authorization (kube's authorizer.Attributes). */
export interface Attributes {
  user: UserInfo;
  /** Resource verbs (get, list, watch, create, update, patch, delete, deletecollection) or the lowercase method. */
  verb: string;
  isResourceRequest: boolean;
  /** The path without the direct prefix: "/apis/management.platform.sh/v1/clusters". */
  path: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

export type Decision = { decision: 'allow' } | { decision: 'deny' | 'noOpinion'; reason?: string };

export interface Authorizer {
  authorize(attrs: Attributes): Promise<Decision>;
}

export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}
