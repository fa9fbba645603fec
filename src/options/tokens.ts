/** Direct cluster endpoint tokens: their issuer, their lifetime, and their signing keys' rotation. */
import { FlagError, type Options } from './flag.js';
import { atLeast, duration } from './values.js';

export interface TokensConfig {
  /** The `iss` of direct cluster endpoint tokens and the issuer of the OpenID discovery; unset: this server's URL. */
  tokenIssuer?: string;
  /** The longest lifetime of a direct cluster endpoint token. */
  tokenMaxTtlMs: number;
  /** How long a token signing key signs before a new one takes over. */
  tokenSigningKeyRotationPeriodMs: number;
  /** How long a new signing key is published in the JWKS before it signs. */
  tokenSigningKeyPublishDelayMs: number;
}

export const tokensOptions: Options<TokensConfig> = {
  concern: 'tokens',
  flags: [
    {
      name: 'token-issuer',
      arg: 'url',
      help: "The issuer (iss) of direct cluster endpoint tokens: an https URL under which /.well-known/openid-configuration and /openid/v1/jwks of this server are reached, as connected clusters verify tokens (default: this server's URL).",
      apply: (c, v) => (c.tokenIssuer = issuerUrl(v)),
    },
    {
      name: 'token-max-ttl',
      arg: 'duration',
      default: '24h',
      help: 'The longest lifetime of a direct cluster endpoint token; a longer spec.ttl is shortened to it, with a warning ({default}, at least 1m).',
      apply: (c, v) => (c.tokenMaxTtlMs = atLeast('token-max-ttl', duration('token-max-ttl', v), 60_000)),
    },
    {
      name: 'token-signing-key-rotation-period',
      arg: 'duration',
      default: '168h',
      help: 'Token signing keys are replaced this often; a replaced key stays published until the last token it signed has expired ({default}, at least 1s).',
      apply: (c, v) =>
        (c.tokenSigningKeyRotationPeriodMs = atLeast(
          'token-signing-key-rotation-period',
          duration('token-signing-key-rotation-period', v),
          1000,
        )),
    },
    {
      name: 'token-signing-key-publish-delay',
      arg: 'duration',
      default: '10m',
      help: 'A new signing key is published at /openid/v1/jwks this long before it signs, so verifiers that cache the keys know it first; the JWKS may be cached half as long ({default}).',
      apply: (c, v) => (c.tokenSigningKeyPublishDelayMs = duration('token-signing-key-publish-delay', v)),
    },
  ],
};

/** An issuer is an https URL without query or fragment (as kube's --service-account-issuer for discovery). */
function issuerUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new FlagError(
      `--token-issuer must be an https URL such as https://platform.example.com (got ${JSON.stringify(value)})`,
    );
  }
  if (url.protocol !== 'https:' || url.search || url.hash || url.username || url.password) {
    throw new FlagError(
      `--token-issuer must be an https URL without credentials, query or fragment (got ${JSON.stringify(value)})`,
    );
  }
  return value.replace(/\/+$/, '');
}
