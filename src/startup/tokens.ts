/** The tokens step: the signing keys of direct cluster endpoint tokens, and the action that issues them. */
import { directClusterEndpointTokenAction } from '../actions/directclusterendpointtoken.js';
import type { ServedActions } from '../actions/served.js';
import * as errors from '../apimachinery/status.js';
import type { Config } from '../config.js';
import type { Registry } from '../registry/registry.js';
import type { EtcdStorage } from '../storage/etcd.js';
import { SIGNING_KEYS_RESOURCE, type Encryption } from '../storage/encryption/setup.js';
import { SigningKeys } from '../tokens/signingkeys.js';
import type { ServingAddress } from './address.js';

/** The token signing keys, and the action that issues direct cluster endpoint tokens with them. */
export function startTokens(
  config: Config,
  storage: EtcdStorage,
  encryption: Encryption,
  registry: Registry,
  actions: ServedActions,
  address: ServingAddress,
): SigningKeys {
  const signingKeys = new SigningKeys(storage, `${config.etcdPrefix}/signingkeys/direct-cluster-endpoint-tokens`, {
    rotationPeriodMs: config.tokenSigningKeyRotationPeriodMs,
    publishDelayMs: config.tokenSigningKeyPublishDelayMs,
    maxTokenTtlMs: config.tokenMaxTtlMs,
    transformer: encryption.transformers.forResource(SIGNING_KEYS_RESOURCE.group, SIGNING_KEYS_RESOURCE.resource),
  });
  actions.add(
    directClusterEndpointTokenAction(registry.definitions, {
      get issuer() {
        return address.issuer;
      },
      maxTtlSeconds: Math.floor(config.tokenMaxTtlMs / 1000),
      signer: () => signingKeys.signer().catch(signingKeysUnavailable),
    }),
  );
  return signingKeys;
}

/** etcd errors while reading or writing the signing keys, as a Status that names no key material. */
export function signingKeysUnavailable(err: unknown): never {
  if (errors.isStatusError(err)) throw err;
  throw errors.serviceUnavailable(
    `the token signing keys cannot be read from etcd: ${(err as Error)?.name ?? 'error'}; try again`,
  );
}
