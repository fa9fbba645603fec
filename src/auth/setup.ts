/**
 * Who may do what, composed from the configuration: the authenticators in kube's order (first that recognises
 * the credentials decides) and the authorizers' union. The one place that knows every auth piece.
 */
import type { Attributes, Authorizer } from '../apimachinery/authorizer.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import { isStatusError } from '../apimachinery/status.js';
import type { Config } from '../config.js';
import type { HostCluster } from '../host/cluster.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { ADMIN_USER, ensureAdminToken } from './admin-token.js';
import { discoveryAuthorizer, selfReviewAuthorizer, mastersAuthorizer, unionAuthorizer } from './authorizer.js';
import { AccessKeyAuthenticator } from './accesskeys.js';
import { ActivityRecorder, lastActivityWriter } from './activity.js';
import type { ClientCertificateAuthorities } from './clientcas.js';
import { ObjectAccessAuthorizer } from './objectaccess.js';
import { SubjectAccessReviewAuthorizer } from './subjectaccessreview.js';
import { TokenReviewAuthenticator } from './tokenreview.js';
import { tokenReviewAuthorizer } from './directtokenreview.js';
import { readTokenFile, TokenAuthenticator } from './token-file.js';
import type { Authenticator } from './types.js';
import { unionAuthenticator } from './union.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import { OwnedAccessKey } from '../kinds/ownedaccesskey/types.js';

export interface Auth {
  authenticator: Authenticator;
  authorizer: Authorizer;
  visibleTo: (attrs: Attributes) => ((obj: KubeObject) => boolean) | undefined;
  /** The embedded default's admin token (only without --token-auth-file). */
  adminToken?: string;
  /** The access keys (with a watch cache): asked whether what was issued to a key's value still stands. */
  accessKeys?: AccessKeyAuthenticator;
  stop(): Promise<void>;
}

export function setUpAuth(
  config: Config,
  registry: Registry,
  host: HostCluster | undefined,
  clientCas: ClientCertificateAuthorities,
  log?: Logger,
): Auth {
  const warn = (msg: string, fields?: Record<string, unknown>) => log?.warn(msg, fields);
  const tokens = config.tokenAuthFile ? readTokenFile(config.tokenAuthFile) : new Map<string, UserInfo>();
  const adminToken = config.tokenAuthFile ? undefined : ensureAdminToken(config.dataDir);
  if (adminToken) tokens.set(adminToken, ADMIN_USER);

  // No object is no grant; a read that fails (etcd slow or down) is the authorizer's failure, never "no grant".
  const objectAccess = new ObjectAccessAuthorizer(async (attrs) => {
    const store = registry.lookup(attrs.apiGroup, attrs.apiVersion, attrs.resource);
    return store?.get(attrs.namespace || undefined, attrs.name).catch((err: unknown) => {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    });
  });

  // kube's order: front proxy headers, client certificates, then bearer tokens (the host's TokenReview last,
  // since it refuses any token it does not know).
  // Both follow their CA as it changes (clientcas.ts).
  const authenticators: Authenticator[] = [clientCas.frontProxy, clientCas.clientCert];

  // Access keys: looked up by hash in the watch cache; their use recorded off the request path.
  const keyStore = registry.store(OwnedAccessKey);
  const cache = registry.caches.get(GROUP_NAME);
  let accessKeys: AccessKeyAuthenticator | undefined;
  let recorder: ActivityRecorder | undefined;
  if (cache) {
    recorder = new ActivityRecorder({
      write: lastActivityWriter(keyStore),
      minIntervalMs: config.accessKeyActivityMinIntervalMs,
      tickMs: config.accessKeyActivityTickMs,
    });
    accessKeys = new AccessKeyAuthenticator({
      cache,
      prefix: `${config.etcdPrefix}/${GROUP_NAME}/ownedaccesskeys/`,
      recorder,
      isNamespaced: (group, resource) =>
        registry.definitions.find((d) => d.group === group && d.plural === resource)?.namespaced,
    });
    accessKeys.start();
  }
  // Static tokens first: they are cheaper to recognise than a key not yet in the index.
  authenticators.push(new TokenAuthenticator(tokens));
  if (accessKeys) authenticators.push(accessKeys);
  if (host) {
    const review = new TokenReviewAuthenticator(host, {
      cacheTtlMs: config.authenticationTokenWebhookCacheTtlMs,
      log: warn,
    });
    // A disabled or expired access key is refused here; it must never be sent on to the host cluster.
    const keys = accessKeys;
    authenticators.push({
      authenticate: async (req) => (keys?.recognises(req) ? undefined : review.authenticate(req)),
    });
  }

  const authorizers: Authorizer[] = [mastersAuthorizer, discoveryAuthorizer, selfReviewAuthorizer, objectAccess];
  if (host) {
    authorizers.push(
      new SubjectAccessReviewAuthorizer(host, {
        allowTtlMs: config.authorizationWebhookCacheAuthorizedTtlMs,
        denyTtlMs: config.authorizationWebhookCacheUnauthorizedTtlMs,
        log: warn,
      }),
    );
  }

  return {
    authenticator: unionAuthenticator(...authenticators),
    // The TokenReview webhook's POST is allowed by a grant on the Cluster it reviews for (directtokenreview.ts).
    authorizer: tokenReviewAuthorizer(unionAuthorizer(...authorizers)),
    visibleTo: (attrs) => objectAccess.visibleTo(attrs),
    adminToken,
    accessKeys,
    stop: async () => {
      accessKeys?.stop();
      await recorder?.close();
    },
  };
}
