/**
 * The stand-in's answer to a SubjectAccessReview, as kube's RBAC authorizer gives it (RuleAllows and the helpers it
 * uses) over the stored Roles, ClusterRoles (aggregationRule computed on the fly), RoleBindings and
 * ClusterRoleBindings, plus system:masters.
 */
import type { KubeObj } from './objects.js';
import type { ObjectStore } from './objectstore.js';

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
export interface SarSpec {
  user?: string;
  groups?: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    version?: string;
    resource?: string;
    subresource?: string;
    name?: string;
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}
export interface SarStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/** metav1.LabelSelector (matchLabels, matchExpressions) as a predicate. */
function labelSelectorMatches(sel: any, labels: Record<string, string> = {}): boolean {
  for (const [k, v] of Object.entries<string>(sel?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const ok =
      e.operator === 'In'
        ? has && e.values?.includes(labels[e.key])
        : e.operator === 'NotIn'
          ? !has || !e.values?.includes(labels[e.key])
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

const verbMatches = (r: PolicyRule, verb: string) => !!r.verbs?.some((v) => v === '*' || v === verb);
const groupMatches = (r: PolicyRule, group: string) => !!r.apiGroups?.some((g) => g === '*' || g === group);
const nameMatches = (r: PolicyRule, name: string) => !r.resourceNames?.length || r.resourceNames.includes(name);

function resourceMatches(r: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return !!r.resources?.some(
    (res) =>
      res === '*' ||
      res === combined ||
      (!!subresource && res.length === subresource.length + 2 && res.startsWith('*/') && res.endsWith(subresource)),
  );
}

function urlMatches(r: PolicyRule, path: string): boolean {
  return !!r.nonResourceURLs?.some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

function ruleAllows(spec: SarSpec, r: PolicyRule): boolean {
  const ra = spec.resourceAttributes;
  if (ra) {
    return (
      verbMatches(r, ra.verb ?? '') &&
      groupMatches(r, ra.group ?? '') &&
      resourceMatches(r, ra.resource ?? '', ra.subresource ?? '') &&
      nameMatches(r, ra.name ?? '')
    );
  }
  const nra = spec.nonResourceAttributes ?? {};
  return verbMatches(r, nra.verb ?? '') && urlMatches(r, nra.path ?? '');
}

function subjectMatches(s: Subject, spec: SarSpec, bindingNamespace: string): boolean {
  if (s.kind === 'User') return s.name === spec.user;
  if (s.kind === 'Group') return !!spec.groups?.includes(s.name);
  if (s.kind === 'ServiceAccount')
    return spec.user === `system:serviceaccount:${s.namespace || bindingNamespace}:${s.name}`;
  return false;
}

/** The rules a binding's roleRef grants (none for a role that does not exist). */
function rulesOf(store: ObjectStore, kind: string, name: string, namespace: string): PolicyRule[] {
  if (kind === 'Role') return store.find('roles', namespace, name)?.rules ?? [];
  if (kind !== 'ClusterRole') return [];
  const role = store.find('clusterroles', '', name);
  if (!role) return [];
  const selectors: unknown[] = role.aggregationRule?.clusterRoleSelectors ?? [];
  if (!selectors.length) return role.rules ?? [];
  // The aggregation controller's effect, computed on the fly.
  const aggregated = store
    .objectsOf('clusterroles')
    .filter((r) => r !== role && selectors.some((s) => labelSelectorMatches(s, r.metadata.labels)));
  return [...(role.rules ?? []), ...aggregated.flatMap((r) => r.rules ?? [])];
}

/** Allowed (with kube's reason naming the binding) when a binding of one of the subject's identities grants it. */
export function evaluate(store: ObjectStore, spec: SarSpec): SarStatus {
  if (spec.groups?.includes('system:masters')) return { allowed: true };
  const ns = spec.resourceAttributes?.namespace ?? '';
  const bindings: Array<[string, KubeObj]> = store
    .objectsOf('clusterrolebindings')
    .map((b) => ['ClusterRoleBinding', b]);
  if (spec.resourceAttributes && ns)
    bindings.push(...store.objectsOf('rolebindings', ns).map((b): [string, KubeObj] => ['RoleBinding', b]));
  for (const [bindingKind, b] of bindings) {
    const bindingNs = b.metadata.namespace ?? '';
    const subject = (b.subjects as Subject[] | undefined)?.find((s) => subjectMatches(s, spec, bindingNs));
    if (!subject) continue;
    if (rulesOf(store, b.roleRef.kind, b.roleRef.name, bindingNs).some((r) => ruleAllows(spec, r))) {
      const where = bindingNs ? `${b.metadata.name}/${bindingNs}` : b.metadata.name;
      const to =
        subject.kind === 'ServiceAccount'
          ? `ServiceAccount "${subject.name}/${subject.namespace || bindingNs}"`
          : `${subject.kind} "${subject.name}"`;
      return {
        allowed: true,
        reason: `RBAC: allowed by ${bindingKind} "${where}" of ${b.roleRef.kind} "${b.roleRef.name}" to ${to}`,
      };
    }
  }
  return { allowed: false };
}
