/**
 * Whether a webhook is called for a request, as k8s.io/apiserver's webhook/generic ShouldCallHook decides before
 * any call: one of its rules matches the operation, group, version, resource and subresource and the scope; its
 * namespaceSelector matches the labels of the request's namespace (cluster-scoped objects always pass); its
 * objectSelector matches the object's or the old object's labels. (matchConditions come after these.)
 */
import type { AdmissionAttributes } from '../apimachinery/admission.js';
import { parseLabelSelector, type LabelSelector } from '../apimachinery/labels.js';
import * as errors from '../apimachinery/status.js';
import type { LabelSelectorSpec, RuleWithOperations } from './webhookconfig.js';

/** What decides whether a webhook (or a policy, or a binding) concerns a request. */
export interface MatchCriteria {
  rules: RuleWithOperations[];
  namespaceSelector: LabelSelectorSpec;
  objectSelector: LabelSelectorSpec;
  /** Names it in errors: `webhook "x"`. */
  name: string;
  label?: string;
}

export function matchesRules(hook: MatchCriteria, attrs: AdmissionAttributes): boolean {
  return hook.rules.some((rule) => ruleMatches(rule, attrs));
}

export function ruleMatches(rule: RuleWithOperations, attrs: AdmissionAttributes): boolean {
  const has = (list: string[] | undefined, value: string) => !!list && (list.includes('*') || list.includes(value));
  return (
    has(rule.operations, attrs.operation) &&
    has(rule.apiGroups, attrs.group) &&
    has(rule.apiVersions, attrs.version) &&
    resourceMatches(rule.resources ?? [], attrs.resource, attrs.subresource) &&
    scopeMatches(rule.scope, attrs.namespace)
  );
}

/**
 * `res/sub` entries: `*` as either part matches any, so `res/*` is the object and all its subresources (kube splits
 * it into `res` and `*`); a bare `res` is only the object itself.
 */
function resourceMatches(resources: string[], resource: string, subresource: string): boolean {
  return resources.some((entry) => {
    const slash = entry.indexOf('/');
    const [res, sub] = slash < 0 ? [entry, ''] : [entry.slice(0, slash), entry.slice(slash + 1)];
    return (res === '*' || res === resource) && (sub === '*' || sub === subresource);
  });
}

function scopeMatches(scope: RuleWithOperations['scope'], namespace: string): boolean {
  if (!scope || scope === '*') return true;
  return scope === 'Namespaced' ? namespace !== '' : namespace === '';
}

export function matchesObjectSelector(hook: MatchCriteria, attrs: AdmissionAttributes): boolean {
  const selector = labelSelectorOf(hook.objectSelector, labelOf(hook));
  if (selector.empty()) return true;
  return [attrs.object, attrs.oldObject].some((o) => !!o && selector.matches(o.metadata?.labels ?? {}));
}

/** `namespaceLabels` answers the labels of a namespace (undefined when the host has none of that name). */
export async function matchesNamespaceSelector(
  hook: MatchCriteria,
  attrs: AdmissionAttributes,
  namespaceLabels: (name: string) => Promise<Record<string, string> | undefined>,
): Promise<boolean> {
  if (!attrs.namespace) return true;
  const selector = labelSelectorOf(hook.namespaceSelector, labelOf(hook));
  if (selector.empty()) return true;
  const labels = await namespaceLabels(attrs.namespace);
  if (!labels) throw errors.notFound({ group: '', resource: 'namespaces' }, attrs.namespace);
  return selector.matches(labels);
}

/** metav1.LabelSelector as a selector (kube's LabelSelectorAsSelector); one that does not parse is an internal error. */
export function labelSelectorOf(spec: LabelSelectorSpec, label: string): LabelSelector {
  const terms = Object.entries(spec.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of spec.matchExpressions ?? []) {
    if (operator === 'In' || operator === 'NotIn') {
      if (!values.length) throw invalidSelector(label, `operator ${operator} of ${key} requires non-empty values`);
      terms.push(`${key} ${operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`);
    } else if (operator === 'Exists') terms.push(key);
    else if (operator === 'DoesNotExist') terms.push(`!${key}`);
    else throw invalidSelector(label, `${JSON.stringify(operator)} is not a valid label selector operator`);
  }
  try {
    return parseLabelSelector(terms.join(','));
  } catch (err) {
    throw invalidSelector(label, (err as Error).message);
  }
}

function labelOf(hook: MatchCriteria): string {
  return hook.label ?? `webhook ${JSON.stringify(hook.name)}`;
}

function invalidSelector(label: string, why: string): errors.StatusError {
  return errors.internalError(new Error(`${label}: invalid label selector: ${why}`));
}
