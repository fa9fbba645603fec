/**
 * Which FlowSchema a request matches and which flow it is in, as kube's flowcontrol matching (apf_controller's
 * match and k8s.io/apiserver/pkg/util/flowcontrol/rule.go): the schemas are tried by matchingPrecedence, then name;
 * the first with a rule whose subjects include the user and whose resource rules (for a resource request) or
 * non-resource rules (for any other path) cover the request wins. Its distinguisher names the flow: the user's name
 * (ByUser), the namespace (ByNamespace), or nothing (one flow for the whole schema).
 */
import type { RequestInfo } from '../apimachinery/request.js';
import type { UserInfo } from '../apimachinery/user.js';
import {
  DEFAULT_MATCHING_PRECEDENCE,
  type FlowSchema,
  type NonResourcePolicyRule,
  type ResourcePolicyRule,
  type Subject,
} from './types.js';

/** What classification reads of a request (kube's RequestDigest). */
export interface RequestDigest {
  user: Pick<UserInfo, 'name' | 'groups'>;
  info: Pick<
    RequestInfo,
    'isResourceRequest' | 'verb' | 'apiGroup' | 'resource' | 'subresource' | 'namespace' | 'path'
  >;
}

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

/** kube's FlowSchemaSequence order: by matchingPrecedence, then by name. */
export function byPrecedence(a: FlowSchema, b: FlowSchema): number {
  const pa = a.spec.matchingPrecedence ?? DEFAULT_MATCHING_PRECEDENCE;
  const pb = b.spec.matchingPrecedence ?? DEFAULT_MATCHING_PRECEDENCE;
  if (pa !== pb) return pa - pb;
  const na = a.metadata.name ?? '';
  const nb = b.metadata.name ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}

export function matchesFlowSchema(fs: FlowSchema, digest: RequestDigest): boolean {
  return (fs.spec.rules ?? []).some(
    (rule) =>
      rule.subjects.some((s) => matchesSubject(s, digest.user)) &&
      (digest.info.isResourceRequest
        ? (rule.resourceRules ?? []).some((r) => matchesResourceRule(r, digest.info))
        : (rule.nonResourceRules ?? []).some((r) => matchesNonResourceRule(r, digest.info))),
  );
}

/** The flow the request belongs to within its schema. */
export function flowDistinguisher(fs: FlowSchema, digest: RequestDigest): string {
  switch (fs.spec.distinguisherMethod?.type) {
    case 'ByUser':
      return digest.user.name;
    case 'ByNamespace':
      return digest.info.namespace;
    default:
      return '';
  }
}

function matchesSubject(subject: Subject, user: RequestDigest['user']): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.user?.name === '*' || subject.user?.name === user.name;
    case 'Group':
      return subject.group?.name === '*' || (!!subject.group && user.groups.includes(subject.group.name));
    case 'ServiceAccount': {
      const sa = subject.serviceAccount;
      if (!sa || !user.name.startsWith(SERVICE_ACCOUNT_PREFIX)) return false;
      const [namespace, name, ...rest] = user.name.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
      if (rest.length || !namespace || !name) return false;
      return sa.namespace === namespace && (sa.name === '*' || sa.name === name);
    }
    default:
      return false;
  }
}

const has = (list: readonly string[] | undefined, value: string) =>
  !!list && (list.includes('*') || list.includes(value));

function matchesResourceRule(rule: ResourcePolicyRule, info: RequestDigest['info']): boolean {
  if (!has(rule.verbs, info.verb) || !has(rule.apiGroups, info.apiGroup)) return false;
  const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  if (!has(rule.resources, resource)) return false;
  // A request without a namespace is for a cluster-scoped object, or for a collection across all namespaces.
  if (!info.namespace) return !!rule.clusterScope;
  return has(rule.namespaces, info.namespace);
}

function matchesNonResourceRule(rule: NonResourcePolicyRule, info: RequestDigest['info']): boolean {
  if (!has(rule.verbs, info.verb)) return false;
  return rule.nonResourceURLs.some(
    (url) => url === '*' || url === info.path || (url.endsWith('/*') && info.path.startsWith(url.slice(0, -1))),
  );
}
