/**
 * Who may do what, composed from the configuration: the authenticators in kube's order (first that recognises
 * the credentials decides) and the authorizers' union. The one place that knows every auth piece.
 */
import type { Config } from '../config.js';
import type { Registry } from '../registry/registry.js';
import { ADMIN_USER, ensureAdminToken } from './admin-token.js';
import { discoveryAuthorizer, mastersAuthorizer, unionAuthorizer } from './authorizer.js';
import { ObjectAccessAuthorizer } from './objectaccess.js';
import { readTokenFile, TokenAuthenticator } from './token-file.js';
import type { Attributes, Authenticator, Authorizer } from './types.js';
import { unionAuthenticator } from './union.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';

export interface Auth {
  authenticator: Authenticator;
  authorizer: Authorizer;
  visibleTo: (attrs: Attributes) => ((obj: KubeObject) => boolean) | undefined;
  /** The embedded default's admin token (only without --token-auth-file). */
  adminToken?: string;
  stop(): Promise<void>;
}

export function setUpAuth(config: Config, registry: Registry): Auth {
  const tokens = config.tokenAuthFile ? readTokenFile(config.tokenAuthFile) : new Map<string, UserInfo>();
  const adminToken = config.tokenAuthFile ? undefined : ensureAdminToken(config.dataDir);
  if (adminToken) tokens.set(adminToken, ADMIN_USER);

  const objectAccess = new ObjectAccessAuthorizer(async (attrs) => {
    const store = registry.lookup(attrs.apiGroup, attrs.apiVersion, attrs.resource);
    return store?.get(attrs.namespace || undefined, attrs.name).catch(() => undefined);
  });

  return {
    authenticator: unionAuthenticator(new TokenAuthenticator(tokens)),
    authorizer: unionAuthorizer(mastersAuthorizer, discoveryAuthorizer, objectAccess),
    visibleTo: (attrs) => objectAccess.visibleTo(attrs),
    adminToken,
    stop: async () => {},
  };
}
