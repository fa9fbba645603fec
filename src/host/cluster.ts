/**
 * A Kubernetes cluster this server reaches (the host, a virtual cluster, a connected cluster), through
 * @kubernetes/client-node (kuberequest.ts): TokenReview for bearer tokens, SubjectAccessReview for authorization,
 * and JSON requests and watches for whatever else needs it (RBAC, Secrets). The host is configured by --kubeconfig,
 * else the in-cluster service account when running in a pod, else there is none.
 * Every call has a bounded timeout; failures are HostClusterErrors whose messages never carry credentials.
 */
import type { Attributes } from '../apimachinery/authorizer.js';
import type { UserInfo } from '../apimachinery/user.js';
import {
  inClusterConnection,
  kubeConnectionOf,
  loadKubeconfigFile,
  type HostConnection,
  type KubeConnection,
} from './kubeconfigfile.js';
import { KubeRequests, type KubeRequestsOptions, type RequestOptions, type WatchEvent } from './kuberequest.js';

export { AnswerTooLargeError, HostClusterError } from './kuberequest.js';
export type { KubeStatus, WatchEvent } from './kuberequest.js';

export const DEFAULT_HOST_TIMEOUT_MS = 5_000;

export interface HostClusterOptions {
  /** Path of a kubeconfig file (--kubeconfig). */
  kubeconfig?: string;
  /** Per-request timeout (default 5 s). */
  timeoutMs?: number;
  /** The clock for re-reading a token file (tests move it). */
  now?: () => number;
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

/** The fields of authentication.k8s.io/v1 TokenReview this server reads. */
interface TokenReview {
  status?: {
    authenticated?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
    audiences?: string[];
    error?: string;
  };
}

/** authorization.k8s.io/v1 SubjectAccessReview's spec, and the status fields this server reads. */
export interface SubjectAccessReviewSpec {
  user?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  resourceAttributes?: Record<string, string>;
  nonResourceAttributes?: { path: string; verb: string };
}
interface SubjectAccessReview {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

export class HostCluster {
  /**
   * The host cluster as configured: the kubeconfig file when given, else the in-cluster configuration when
   * KUBERNETES_SERVICE_HOST is set (running in a pod), else undefined. A kubeconfig that does not load throws.
   * The --kubeconfig file is the operator's own, loaded by the client as client-go would (its files read, its
   * credential plugins run); kubeconfigs read from stored data go through storedkubeconfig.ts instead.
   */
  static load(opts: HostClusterOptions = {}, env: NodeJS.ProcessEnv = process.env): HostCluster | undefined {
    let conn: KubeConnection | undefined;
    if (opts.kubeconfig) {
      try {
        conn = loadKubeconfigFile(opts.kubeconfig);
      } catch (err) {
        throw new Error(`--kubeconfig ${opts.kubeconfig}: ${(err as Error).message}`, { cause: err });
      }
    } else {
      conn = inClusterConnection(env);
    }
    return conn && new HostCluster(conn, opts);
  }

  private readonly client: KubeRequests;

  /**
   * The operator's host cluster is trusted: its answers are not bounded (an object is bounded by kube itself; the
   * lists of RBAC objects grow with the platform). Clusters that stored data names get `maxResponseBytes` and
   * `allowedServers` (virtualcluster.ts). A HostConnection (storedkubeconfig.ts) is handed to the client as its
   * fields, never as a kubeconfig it would parse.
   */
  constructor(
    connection: HostConnection | KubeConnection,
    opts: Pick<HostClusterOptions, 'timeoutMs' | 'now'> &
      Pick<KubeRequestsOptions, 'maxResponseBytes' | 'allowedServers'> = {},
  ) {
    const conn = 'kubeConfig' in connection ? connection : kubeConnectionOf(connection);
    this.client = new KubeRequests(conn, { ...opts, timeoutMs: opts.timeoutMs ?? DEFAULT_HOST_TIMEOUT_MS });
  }

  /** The API server URL of the current context. */
  get server(): string {
    return this.client.server;
  }

  /**
   * `method path` (e.g. `GET /api/v1/namespaces/a/secrets/b`) with an optional JSON body; the parsed answer.
   * Throws a HostClusterError naming `what` (e.g. "reading Secret a/b") when the host cannot or will not answer.
   */
  request<T>(what: string, method: string, path: string, opts?: RequestOptions): Promise<T> {
    return this.client.request<T>(what, method, path, opts);
  }

  /** A watch of `path` (a collection) with `query`; see KubeRequests.watch. */
  watch(
    what: string,
    path: string,
    query: Record<string, string | undefined>,
    onEvent: (event: WatchEvent) => void,
    done: (err?: unknown) => void,
    accept?: string,
  ): Promise<{ stop(): void }> {
    return this.client.watch(what, path, query, onEvent, done, accept);
  }

  /** POST /apis/authentication.k8s.io/v1/tokenreviews. Throws HostClusterError when the host cannot answer. */
  async tokenReview(token: string, audiences?: string[]): Promise<TokenReviewResult> {
    const review = await this.request<TokenReview>(
      'TokenReview',
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(audiences?.length ? { audiences } : {}) },
        },
      },
    );
    const status = review?.status ?? {};
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
    const review = await this.request<SubjectAccessReview>(
      'SubjectAccessReview',
      'POST',
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: subjectAccessReviewSpec(attrs),
        },
      },
    );
    const status = review?.status;
    const result: SubjectAccessReviewResult = {
      allowed: !!status?.allowed,
      denied: !!status?.denied,
      reason: status?.reason ?? '',
    };
    if (status?.evaluationError) result.evaluationError = status.evaluationError;
    return result;
  }
}

/** The spec kube's webhook authorizer sends: resourceAttributes or nonResourceAttributes, and the user. */
export function subjectAccessReviewSpec(attrs: Attributes): SubjectAccessReviewSpec {
  const spec: SubjectAccessReviewSpec = { user: attrs.user.name, groups: attrs.user.groups };
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
