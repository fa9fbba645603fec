/**
 * What kube-apiserver's webhook token authenticator (--authentication-token-webhook-config-file) does with a bearer
 * token, so that a test can hold the webhook config file docs/api.md gives against a real server. It follows
 * kubernetes/apiserver plugin/pkg/authenticator/token/webhook/webhook.go (AuthenticateToken, the v1 and v1beta1
 * reviewers), pkg/util/webhook (the rest client built from the kubeconfig), client-go's rest client (NewRESTClient:
 * the server URL's path is kept, as the exact path posted to, its query and fragment dropped) and
 * pkg/authentication/token/cache/cached_token_authenticator.go, with which kube-apiserver wraps it
 * (tokencache.New(webhook, false, ttl, ttl): --authentication-token-webhook-cache-ttl for both):
 *
 *   load:   the kubeconfig's current context: its cluster's `server` and `certificate-authority-data` (TLS trusting
 *           only that CA), its user's `token` or `client-certificate-data`/`client-key-data`.
 *   token:  a cached answer for (audiences, token) younger than the TTL is answered again without asking; else a
 *           TokenReview {spec: {token, audiences}} of the configured version is posted; an answer that is not 2xx is an
 *           error; with audiences asked, status.audiences (or, when empty, the implicit ones: those asked) must meet
 *           them, or the token is not authenticated; `authenticated: false` with `status.error` is an error.
 *   cache:  authenticated answers and refusals without an error are kept for the TTL; errors are not kept
 *           (cacheErrs false), so a refusal that says why is asked again at the next request.
 *
 * Not modelled: retries with backoff on 5xx and connection errors, the request timeout, singleflight of concurrent
 * lookups, and system:authenticated, which kube-apiserver adds after the authenticator.
 */
import { request } from 'node:https';
import yaml from 'js-yaml';

export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type WebhookResult =
  | { user: ReviewedUser; audiences?: string[] }
  /** Not authenticated without a reason (kube then tries its other authenticators, or answers 401). */
  | { unauthenticated: true }
  /** Not authenticated, or the webhook failed: kube logs this and answers 401. */
  | { error: string };

export interface WebhookOptions {
  /** --authentication-token-webhook-cache-ttl (kube's default: 2 minutes). */
  cacheTtlMs: number;
  /** --authentication-token-webhook-version: kube-apiserver's default is v1beta1; docs/api.md sets v1. */
  version?: 'v1' | 'v1beta1';
  /** The clock the cache reads (ms). */
  now?: () => number;
}

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; 'certificate-authority-data'?: string } }[];
  users: { name: string; user: { token?: string; 'client-certificate-data'?: string; 'client-key-data'?: string } }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
  'current-context': string;
}

export interface WebhookAuthenticator {
  authenticate(token: string, audiences?: string[]): Promise<WebhookResult>;
  /** How many TokenReviews were posted (cache misses). */
  readonly posted: number;
}

const b64 = (s: string | undefined) => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));

export function loadWebhookAuthenticator(kubeconfigYaml: string, opts: WebhookOptions): WebhookAuthenticator {
  const config = yaml.load(kubeconfigYaml) as Kubeconfig;
  const context = config.contexts.find((c) => c.name === config['current-context'])?.context;
  if (!context) throw new Error(`the kubeconfig has no context ${config['current-context']}`);
  const cluster = config.clusters.find((c) => c.name === context.cluster)?.cluster;
  const user = config.users.find((u) => u.name === context.user)?.user;
  if (!cluster || !user) throw new Error('the current context names a cluster or user the kubeconfig does not have');
  const url = new URL(cluster.server);
  if (url.protocol !== 'https:') throw new Error('the webhook server must be https');
  // client-go: the path is kept (path.Join drops a trailing slash), the query and fragment are not.
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const version = opts.version ?? 'v1';
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { result: WebhookResult; until: number }>();
  let posted = 0;

  const post = (body: unknown) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      if (user.token) headers.authorization = `Bearer ${user.token}`;
      const req = request(
        {
          host: url.hostname,
          port: url.port || 443,
          path,
          method: 'POST',
          headers,
          ca: b64(cluster['certificate-authority-data']),
          cert: b64(user['client-certificate-data']),
          key: b64(user['client-key-data']),
          servername: url.hostname === '127.0.0.1' ? undefined : url.hostname,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });

  async function review(token: string, audiences: string[]): Promise<WebhookResult> {
    posted += 1;
    const answer = await post({
      apiVersion: `authentication.k8s.io/${version}`,
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: { token, ...(audiences.length ? { audiences } : {}) },
      status: { user: {} },
    });
    if (answer.status < 200 || answer.status > 299)
      return { error: `webhook answered ${answer.status}: ${answer.body?.message ?? ''}` };
    const status = answer.body?.status ?? {};
    let auds: string[] | undefined;
    if (audiences.length) {
      const got: string[] = status.audiences?.length ? status.audiences : audiences;
      auds = audiences.filter((a) => got.includes(a));
      if (!auds.length) return { unauthenticated: true };
    }
    if (!status.authenticated) return status.error ? { error: status.error } : { unauthenticated: true };
    return { user: status.user, ...(auds ? { audiences: auds } : {}) };
  }

  return {
    get posted() {
      return posted;
    },
    async authenticate(token, audiences = []) {
      const key = JSON.stringify([audiences, token]);
      const hit = cache.get(key);
      if (hit && now() < hit.until) return hit.result;
      const result = await review(token, audiences);
      if (!('error' in result) && opts.cacheTtlMs > 0) cache.set(key, { result, until: now() + opts.cacheTtlMs });
      return result;
    },
  };
}
