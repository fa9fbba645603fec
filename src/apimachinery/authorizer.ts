/**
 * What a request does and whether it may (kube's k8s.io/apiserver/pkg/authorization/authorizer): the shapes every
 * authorizer, the registry's rules that ask what else a caller may do, and the host cluster's SubjectAccessReview
 * share. Types only, low in the tree so that any layer may name them.
 */
import type { KubeObject } from './types.js';
import type { UserInfo } from './user.js';

/** What a request does, for authorization (kube's authorizer.Attributes). */
export interface Attributes {
  user: UserInfo;
  /** Resource verbs (get, list, watch, create, update, patch, delete, deletecollection) or the lowercase method. */
  verb: string;
  isResourceRequest: boolean;
  /** The path without the direct prefix: "/apis/management.platform.sh/v1/clusters". */
  path: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

export type Decision =
  | {
      decision: 'allow';
      /**
       * The object whose own grant allowed it, as read (consistently) for this decision: a get answers with it
       * rather than reading it again.
       */
      object?: KubeObject;
    }
  | { decision: 'deny' | 'noOpinion'; reason?: string };

/**
 * Decides on a request. One that cannot (its host or storage failed or timed out) throws, preferably a StatusError
 * saying what failed: a failure is never a deny or no opinion, which would end in a 403 claiming the caller may not.
 */
export interface Authorizer {
  authorize(attrs: Attributes): Promise<Decision>;
}
