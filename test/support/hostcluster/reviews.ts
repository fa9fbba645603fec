/**
 * The stand-in's review APIs: POST /apis/authentication.k8s.io/v1/tokenreviews (the tokens the test registered,
 * with their audiences) and POST /apis/authorization.k8s.io/v1/subjectaccessreviews (the test's hook first, else
 * the RBAC evaluation).
 */
import * as errors from '../../../src/apimachinery/status.js';
import type { UserInfo } from '../../../src/apimachinery/user.js';
import type { SarSpec, SarStatus } from './rbacauthorizer.js';

/** A token's user as the test registered it, with the audiences it is valid for (any when absent). */
export type TokenUser = UserInfo & { audiences?: string[] };

export function tokenReview(tokens: ReadonlyMap<string, TokenUser>, body: any): unknown {
  const reviewed = body?.spec?.token;
  const user = typeof reviewed === 'string' ? tokens.get(reviewed) : undefined;
  const wanted: string[] = body?.spec?.audiences ?? [];
  let status: Record<string, unknown>;
  if (!user) status = { user: {}, authenticated: false, error: 'invalid bearer token' };
  else if (wanted.length && user.audiences && !user.audiences.some((a) => wanted.includes(a))) {
    status = { user: {}, authenticated: false, error: 'token audiences are invalid for the target audiences' };
  } else {
    const groups = user.groups.includes('system:authenticated')
      ? user.groups
      : [...user.groups, 'system:authenticated'];
    status = {
      authenticated: true,
      user: {
        username: user.name,
        ...(user.uid ? { uid: user.uid } : {}),
        groups,
        ...(user.extra ? { extra: user.extra } : {}),
      },
      audiences: wanted.length
        ? wanted.filter((a) => !user.audiences || user.audiences.includes(a))
        : (user.audiences ?? []),
    };
  }
  return {
    kind: 'TokenReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: body?.spec ?? {},
    status,
  };
}

/** `decide` answers the review's spec (once kube's validation has passed). */
export function subjectAccessReview(body: any, decide: (spec: SarSpec) => SarStatus): unknown {
  const spec: SarSpec = body?.spec ?? {};
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    throw errors.invalid({ group: 'authorization.k8s.io', kind: 'SubjectAccessReview' }, '', [
      {
        type: 'FieldValueRequired',
        field: 'spec.resourceAttributes',
        value: undefined,
        detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified',
      },
    ]);
  }
  const status = decide(spec);
  return {
    kind: 'SubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status,
  };
}
