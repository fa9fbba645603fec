/** Authenticators tried in order (kube's union): the first that recognises the request's credentials decides. */
import type { UserInfo } from '../apimachinery/user.js';
import { AuthenticationError, bearerToken, type Authenticator } from './types.js';

export function unionAuthenticator(...authenticators: Authenticator[]): Authenticator {
  return {
    async authenticate(req): Promise<UserInfo | undefined> {
      let failure: AuthenticationError | undefined;
      for (const authenticator of authenticators) {
        try {
          const user = await authenticator.authenticate(req);
          if (user) return user;
        } catch (err) {
          if (!(err instanceof AuthenticationError)) throw err;
          failure ??= err;
        }
      }
      if (failure) throw failure;
      // A bearer token nobody recognises is a failed login, never an anonymous request.
      if (bearerToken(req) !== undefined) throw new AuthenticationError();
      return undefined;
    },
  };
}
