/**
 * Who is asking: the shapes authenticators share (kube's authentication/authenticator). The user and authorizer
 * shapes every layer may name live in apimachinery/user.ts and apimachinery/authorizer.ts.
 */
import type { IncomingMessage } from 'node:http';

import { ACCESS_KEY_USE, UNAUTHENTICATED_GROUP, type AccessKeyUse, type UserInfo } from '../apimachinery/user.js';

export const ANONYMOUS_USER: UserInfo = { name: 'system:anonymous', groups: [UNAUTHENTICATED_GROUP] };

/**
 * Returns the user when the request carries credentials this authenticator understands and they are good;
 * undefined when it carries none of its kind. Credentials of its kind that are bad throw AuthenticationError.
 */
export interface Authenticator {
  authenticate(req: IncomingMessage): Promise<Authenticated | undefined>;
}

/**
 * What an authenticator has to tell the client about its credential (e.g. that an access key expires soon), sent
 * with the answer as `Warning` headers: beside the user, never part of who it is (a symbol, so no copy of the user
 * into a review, an audit event or a log line carries it).
 */
export const CREDENTIAL_WARNINGS = Symbol('credential warnings');

/** A user as an authenticator answers it, with what to tell the client about the credential. */
export type Authenticated = UserInfo & { [CREDENTIAL_WARNINGS]?: string[]; [ACCESS_KEY_USE]?: AccessKeyUse };

/** Bad credentials: a 401 whose message is this error's (kube's plain "Unauthorized" unless there is more to say). */
export class AuthenticationError extends Error {
  constructor(message = 'Unauthorized') {
    super(message);
  }
}

export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}
