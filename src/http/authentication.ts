/**
 * The authentication filter (kube's WithAuthentication): the authenticators' union says who asks. Bad credentials
 * are 401; none at all are 401 too, except on a public path, which is served to system:anonymous. Every
 * authenticated user is in system:authenticated.
 */
import type { NextFunction, Request, Response } from 'express';
import { requestContext } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { AUTHENTICATED_GROUP } from '../apimachinery/user.js';
import {
  ANONYMOUS_USER,
  AuthenticationError,
  CREDENTIAL_WARNINGS,
  type Authenticated,
  type Authenticator,
} from '../auth/types.js';
import { withWarnings } from './responses.js';
import type { ConnectionGuard } from './connections.js';

export function authenticate(
  authenticator: Authenticator,
  isPublic: (path: string) => boolean,
  connections?: Pick<ConnectionGuard, 'authenticated'>,
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const context = requestContext(req);
    let user: Authenticated | undefined;
    try {
      user = await authenticator.authenticate(req);
    } catch (err) {
      if (err instanceof AuthenticationError) throw errors.unauthorized(err.message);
      throw err;
    }
    if (user) {
      const { [CREDENTIAL_WARNINGS]: warnings, ...who } = user;
      if (warnings?.length) withWarnings(res, warnings);
      const groups = who.groups.includes(AUTHENTICATED_GROUP) ? who.groups : [...who.groups, AUTHENTICATED_GROUP];
      context.user = { ...who, groups };
      connections?.authenticated(req, user.name);
    } else if (isPublic(context.info.path)) {
      context.user = ANONYMOUS_USER;
    } else {
      throw errors.unauthorized();
    }
    context.authenticated?.();
    next();
  };
}
