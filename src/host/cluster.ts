/**
 * The host Kubernetes cluster, the one place that reaches it (through @kubernetes/client-node): TokenReview for
 * bearer tokens, SubjectAccessReview for authorization, and typed API clients for whatever else needs it (RBAC).
 * Configured by --kubeconfig, else the in-cluster service account when running in a pod, else there is none.
 * Every call has a bounded timeout; failures are HostClusterErrors whose messages never carry credentials.
 */
import {
  ApiException,
  AuthenticationV1Api,
  AuthorizationV1Api,
  createConfiguration,
  KubeConfig,
  ServerConfiguration,
  type Configuration,
  type Middleware,
  type V1SubjectAccessReviewSpec,
} from '@kubernetes/client-node';
import type { Attributes } from '../apimachinery/authorizer.js';
import type { UserInfo } from '../apimachinery/user.js';

export const DEFAULT_HOST_TIMEOUT_MS = 5_000;

export interface HostClusterOptions {
  /** Path of a kubeconfig file (--kubeconfig). */
  kubeconfig?: string;
  /** Per-request timeout of reviews and of api() clients (default 5 s). */
  timeoutMs?: number;
}

export interface TokenReviewResult {
  authenticated: boolean;
  user?: UserInfo;
  /** The audiences the token is good for, when the host says. */
  audiences?: string[];
  /** Why the token was not accepted, when the host says. */
  error?: string;
}

export interface SubjectAccessReviewResult {
  allowed: boolean;
  denied: boolean;
  reason: string;
  evaluationError?: string;
}

/** The host cluster could not be asked: unreachable, timed out, or it answered with an error status. */
export class HostClusterError extends Error {
  constructor(
    message: string,
    /** The HTTP status when the host answered; undefined for network errors and timeouts. */
    readonly code?: number,
  ) {
    super(message);
    this.name = 'HostClusterError';
  }
}

export type ApiClass<T> = new (config: Configuration) => T;

export class HostCluster {
  /**
   * The host cluster as configured: the kubeconfig file when given, else the in-cluster configuration when
   * KUBERNETES_SERVICE_HOST is set (running in a pod), else undefined. A kubeconfig that does not load throws.
   * The --kubeconfig file is the operator's own, trusted as kubectl trusts it (exec plugins, files); kubeconfigs
   * read from stored data go through storedkubeconfig.ts instead.
   */
  static load(opts: HostClusterOptions = {}, env: NodeJS.ProcessEnv = process.env): HostCluster | undefined {
    const kc = new KubeConfig();
    if (opts.kubeconfig) {
      try {
        kc.loadFromFile(opts.kubeconfig);
      } catch (err) {
        throw new Error(`--kubeconfig ${opts.kubeconfig}: ${(err as Error).message}`, { cause: err });
      }
      if (!kc.getCurrentCluster())
        throw new Error(`--kubeconfig ${opts.kubeconfig}: no current context with a cluster`);
    } else if (env.KUBERNETES_SERVICE_HOST) {
      kc.loadFromCluster();
    } else {
      return undefined;
    }
    return new HostCluster(kc, opts);
  }

  private readonly timeoutMs: number;
  private readonly clients = new Map<ApiClass<unknown>, unknown>();

  constructor(
    /** The loaded configuration, for clients client-node builds from it (Watch, informers, KubernetesObjectApi). */
    readonly kubeConfig: KubeConfig,
    opts: Pick<HostClusterOptions, 'timeoutMs'> = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_HOST_TIMEOUT_MS;
  }

  /** The API server URL of the current context. */
  get server(): string {
    return this.kubeConfig.getCurrentCluster()?.server ?? '';
  }

  /**
   * A typed client (e.g. `host.api(RbacAuthorizationV1Api)`) whose every request is aborted after `timeoutMs`
   * (default: the cluster's; 0 for none, e.g. for long lists). Clients with the default timeout are reused.
   */
  api<T>(Api: ApiClass<T>, opts: { timeoutMs?: number } = {}): T {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const shared = timeoutMs === this.timeoutMs;
    if (shared && this.clients.has(Api)) return this.clients.get(Api) as T;
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('host cluster: no current cluster in the kubeconfig');
    const timeout: Middleware = {
      pre: async (ctx) => {
        if (timeoutMs > 0) ctx.setSignal(AbortSignal.timeout(timeoutMs));
        return ctx;
      },
      post: async (res) => res,
    };
    const client = new Api(
      createConfiguration({
        baseServer: new ServerConfiguration(cluster.server, {}),
        authMethods: { default: this.kubeConfig },
        promiseMiddleware: [timeout],
      }),
    );
    if (shared) this.clients.set(Api, client);
    return client;
  }

  /** POST /apis/authentication.k8s.io/v1/tokenreviews. Throws HostClusterError when the host cannot answer. */
  async tokenReview(token: string, audiences?: string[]): Promise<TokenReviewResult> {
    const review = await this.call('TokenReview', () =>
      this.api(AuthenticationV1Api).createTokenReview({
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(audiences?.length ? { audiences } : {}) },
        },
      }),
    );
    const status = review.status ?? {};
    const result: TokenReviewResult = { authenticated: !!status.authenticated };
    if (status.error) result.error = status.error;
    if (status.audiences) result.audiences = status.audiences;
    // Like kube's webhook authenticator: a token for none of the requested audiences is not accepted.
    if (
      result.authenticated &&
      audiences?.length &&
      status.audiences &&
      !status.audiences.some((a) => audiences.includes(a))
    ) {
      return {
        authenticated: false,
        error: `token audiences ${JSON.stringify(status.audiences)} are invalid for the target audiences ${JSON.stringify(audiences)}`,
      };
    }
    if (result.authenticated) {
      const u = status.user ?? {};
      const user: UserInfo = { name: u.username ?? '', groups: u.groups ?? [] };
      if (u.uid) user.uid = u.uid;
      if (u.extra && Object.keys(u.extra).length) user.extra = u.extra;
      if (!user.name) return { authenticated: false, error: 'the token review named no user' };
      result.user = user;
    }
    return result;
  }

  /** POST /apis/authorization.k8s.io/v1/subjectaccessreviews. Throws HostClusterError when the host cannot answer. */
  async subjectAccessReview(attrs: Attributes): Promise<SubjectAccessReviewResult> {
    const review = await this.call('SubjectAccessReview', () =>
      this.api(AuthorizationV1Api).createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: subjectAccessReviewSpec(attrs),
        },
      }),
    );
    const status = review.status;
    const result: SubjectAccessReviewResult = {
      allowed: !!status?.allowed,
      denied: !!status?.denied,
      reason: status?.reason ?? '',
    };
    if (status?.evaluationError) result.evaluationError = status.evaluationError;
    return result;
  }

  /** Runs a request of one of the api() clients; failures become HostClusterErrors. */
  async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw hostError(what, err, this.timeoutMs);
    }
  }
}

/** The spec kube's webhook authorizer sends: resourceAttributes or nonResourceAttributes, and the user. */
export function subjectAccessReviewSpec(attrs: Attributes): V1SubjectAccessReviewSpec {
  const spec: V1SubjectAccessReviewSpec = { user: attrs.user.name, groups: attrs.user.groups };
  if (attrs.user.uid) spec.uid = attrs.user.uid;
  if (attrs.user.extra && Object.keys(attrs.user.extra).length) spec.extra = attrs.user.extra;
  if (attrs.isResourceRequest) {
    const ra: Record<string, string> = {};
    const fields: Array<[string, string]> = [
      ['namespace', attrs.namespace],
      ['verb', attrs.verb],
      ['group', attrs.apiGroup],
      ['version', attrs.apiVersion],
      ['resource', attrs.resource],
      ['subresource', attrs.subresource],
      ['name', attrs.name],
    ];
    for (const [k, v] of fields) if (v) ra[k] = v;
    spec.resourceAttributes = ra;
  } else {
    spec.nonResourceAttributes = { path: attrs.path, verb: attrs.verb };
  }
  return spec;
}

/** A short message: the operation, the HTTP status and the Status message, or the network failure. */
function hostError(what: string, err: unknown, timeoutMs: number): HostClusterError {
  if (err instanceof ApiException) {
    let detail = '';
    try {
      const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      if (body && typeof body.message === 'string') detail = `: ${body.message}`;
    } catch {
      // not a Status body
    }
    return new HostClusterError(`${what}: the host cluster answered HTTP ${err.code}${detail}`, err.code);
  }
  const e = err as { name?: string; type?: string; code?: string; message?: string };
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError' || e?.type === 'aborted') {
    return new HostClusterError(`${what}: the host cluster did not answer within ${timeoutMs}ms`);
  }
  return new HostClusterError(`${what}: cannot reach the host cluster: ${e?.code ?? e?.message ?? String(err)}`);
}
