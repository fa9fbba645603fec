/**
 * The token issuer's OpenID discovery, as kube-apiserver publishes its service-account issuer: the configuration
 * at /.well-known/openid-configuration and the public keys at /openid/v1/jwks, so that connected clusters verify
 * direct cluster endpoint tokens offline. Both are public: they hold nothing secret, and verifiers have no
 * credentials of this server.
 */
import type { Request, Response } from 'express';
import type { JWK } from 'jose';

export const OIDC_CONFIGURATION_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/openid/v1/jwks';
export const OIDC_PATHS = [OIDC_CONFIGURATION_PATH, JWKS_PATH];

export interface OidcOptions {
  issuer: string;
  /** The published keys, read fresh (another replica may have just added one). */
  jwks(): Promise<{ keys: JWK[] }>;
  /** How long verifiers may cache the answers: less than a new key is published before it signs. */
  maxAgeSeconds: number;
}

/** How long one replica reuses a JWKS read, so that anonymous callers cannot turn each request into an etcd read. */
const JWKS_REUSE_MS = 1000;

export function oidcHandler(opts: OidcOptions): (req: Request, res: Response, path: string) => Promise<void> {
  // Read per request: the default issuer (this server's URL) is known only once the port is bound.
  const configuration = () => ({
    issuer: opts.issuer,
    jwks_uri: `${opts.issuer}${JWKS_PATH}`,
    response_types_supported: ['id_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['ES256'],
  });
  let last: { at: number; body: Promise<string> } | undefined;
  const jwksBody = () => {
    if (!last || Date.now() - last.at > JWKS_REUSE_MS) {
      const body = opts.jwks().then((set) => JSON.stringify(set));
      last = { at: Date.now(), body };
      body.catch(() => (last = undefined));
    }
    return last.body;
  };
  return async (_req, res, path) => {
    res.setHeader('Cache-Control', `public, max-age=${opts.maxAgeSeconds}`);
    if (path === OIDC_CONFIGURATION_PATH) {
      res.status(200).type('application/json').send(JSON.stringify(configuration()));
      return;
    }
    const body = await jwksBody();
    res.status(200).type('application/jwk-set+json').send(body);
  };
}
