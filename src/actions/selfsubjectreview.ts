/**
 * SelfSubjectReview: `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` answers the caller who this server
 * takes it for (status.userInfo: username, uid, groups, extra), as kube-apiserver does for `kubectl auth whoami`.
 * Every authenticated caller may ask (kube's system:basic-user), a scoped access key too: it learns only what it is.
 * Reached directly (the direct prefix or this server's URL): through kube-apiserver the group is kube's own, and
 * the answer is kube's. Nothing is stored.
 */
import type { KubeObject } from '../apimachinery/types.js';
import { answer, requestSchema, type Action, type ActionCall } from './action.js';

export const SELF_SUBJECT_REVIEW_GROUP = 'authentication.k8s.io';
export const SELF_SUBJECT_REVIEWS = 'selfsubjectreviews';

export function selfSubjectReviewAction(): Action {
  const action: Action = {
    group: SELF_SUBJECT_REVIEW_GROUP,
    version: 'v1',
    resource: SELF_SUBJECT_REVIEWS,
    subresource: '',
    kind: 'SelfSubjectReview',
    namespaced: false,
    verbs: ['create'],
    emptyBody: true,
    ignoresBody: true,
    schema: requestSchema({ status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }),
    async serve({ object, user }: ActionCall): Promise<KubeObject> {
      const userInfo: Record<string, unknown> = { username: user.name, groups: user.groups };
      if (user.uid) userInfo.uid = user.uid;
      if (user.extra && Object.keys(user.extra).length) userInfo.extra = user.extra;
      return answer(action, object?.metadata ?? {}, { status: { userInfo } });
    },
  };
  return action;
}
