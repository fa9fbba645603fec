/**
 * ValidatingAdmissionPolicy, as k8s.io/apiserver's policy/validating plugin: each of the host's policies whose
 * matchConstraints match the request is evaluated for each of its bindings that match too, with the binding's
 * params; its matchConditions, variables and validations are CEL (cel.ts). A validation that is false is a
 * decision with its message (messageExpression, else message, else `failed expression: <expression>`) and reason;
 * one that fails to evaluate is a denial under failurePolicy Fail and nothing under Ignore. The binding's
 * validationActions say what a denial does: Deny refuses the request with kube's message
 * (`ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>`, 422 unless the
 * validation names another reason), Warn adds a warning, Audit would annotate the audit event (no audit log here).
 */
import { ADMISSION_READY_TIMEOUT_MS, admissionForbidden, type AdmissionAttributes } from '../apimachinery/admission.js';
import type { CelInput } from '@bufbuild/cel';
import * as errors from '../apimachinery/status.js';
import {
  admissionActivation,
  compileAndEvaluate,
  VALIDATION_BUDGET,
  type AdmissionActivation,
  type AdmissionCelVariable,
  type CostBudget,
} from '../apimachinery/cel/cel.js';
import { evaluateMatchConditions } from './matchconditions.js';
import type { AdmissionPlugin } from './plugin.js';
import type { LabelSelectorSpec, MatchCondition, RuleWithOperations } from './webhookconfig.js';
import { matchesNamespaceSelector, matchesObjectSelector, ruleMatches, type MatchCriteria } from './webhookmatch.js';
import { inSpan } from '../tracing.js';

export const VALIDATING_ADMISSION_POLICY = 'ValidatingAdmissionPolicy';

interface NamedRule extends RuleWithOperations {
  resourceNames?: string[];
}

export interface MatchResources {
  namespaceSelector?: LabelSelectorSpec;
  objectSelector?: LabelSelectorSpec;
  resourceRules?: NamedRule[];
  excludeResourceRules?: NamedRule[];
}

export interface ParamKind {
  apiVersion?: string;
  kind?: string;
}

export interface ParamRef {
  name?: string;
  namespace?: string;
  selector?: LabelSelectorSpec;
  parameterNotFoundAction?: 'Allow' | 'Deny';
}

export interface ValidatingAdmissionPolicy {
  metadata: { name?: string };
  [field: string]: unknown;
  spec?: {
    failurePolicy?: 'Fail' | 'Ignore';
    paramKind?: ParamKind;
    matchConstraints?: MatchResources;
    matchConditions?: MatchCondition[];
    variables?: { name: string; expression: string }[];
    validations?: { expression: string; message?: string; messageExpression?: string; reason?: string }[];
    auditAnnotations?: { key: string; valueExpression: string }[];
  };
}

export interface ValidatingAdmissionPolicyBinding {
  metadata: { name?: string };
  [field: string]: unknown;
  spec?: {
    policyName?: string;
    paramRef?: ParamRef;
    matchResources?: MatchResources;
    validationActions?: ('Deny' | 'Warn' | 'Audit')[];
  };
}

export interface PolicySources {
  /** Resolves false when policies and bindings have not been listed once within `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  policies(): ValidatingAdmissionPolicy[];
  bindings(): ValidatingAdmissionPolicyBinding[];
  /** The host's namespace of that name (undefined when it has none). */
  namespace(name: string): Promise<{ metadata: { labels?: Record<string, string> } } | undefined>;
  /** The params a binding names for this request; [] when there are none; throws what keeps them from being read. */
  params(kind: ParamKind, ref: ParamRef, requestNamespace: string): Promise<unknown[]>;
}

/** Every variable a policy's expressions may use (kube: all of them; `authorizer` is refused by cel.ts). */
const POLICY_VARIABLES: readonly AdmissionCelVariable[] = [
  'object',
  'oldObject',
  'request',
  'params',
  'namespaceObject',
  'variables',
  'authorizer',
];
/** Where the Audit action records failed validations (kube's ValidatingAdmissionPolicy audit annotation). */
const VALIDATION_FAILURE_ANNOTATION = 'validation.policy.admission.k8s.io/validation_failure';
/** kube's MaxEvaluatedMessageExpressionSizeBytes. */
const MAX_MESSAGE_BYTES = 5 * 1024;

interface Decision {
  message: string;
  reason?: string;
  /** The validation's index, when one failed (for the audit annotation). */
  expressionIndex?: number;
}

interface Denial extends Decision {
  policy: string;
  binding?: string;
}

export function validatingAdmissionPolicy(sources: PolicySources): AdmissionPlugin {
  return {
    name: VALIDATING_ADMISSION_POLICY,
    operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'],
    async validate(attrs: AdmissionAttributes): Promise<void> {
      if (!(await sources.ready(ADMISSION_READY_TIMEOUT_MS)))
        throw admissionForbidden(attrs, 'not yet ready to handle request');
      const denials: Denial[] = [];
      const audited: unknown[] = [];
      // The request's namespace, read once for every binding that gets as far as evaluating.
      let namespaceObject: unknown;
      const bindings = byName(sources.bindings());
      for (const policy of byName(sources.policies())) {
        const policyName = policy.metadata.name ?? '';
        const failClosed = policy.spec?.failurePolicy !== 'Ignore';
        const configError = (err: unknown, binding?: string) => {
          if (!failClosed) return;
          const what = binding ? 'binding' : 'policy';
          denials.push({ policy: policyName, binding, message: `failed to configure ${what}: ${errorText(err)}` });
        };
        try {
          if (!(await resourcesMatch(policy.spec?.matchConstraints ?? {}, attrs, sources, policyName, true))) continue;
        } catch (err) {
          configError(err);
          continue;
        }
        for (const binding of bindings.filter((b) => b.spec?.policyName === policyName)) {
          const bindingName = binding.metadata.name ?? '';
          let params: unknown[] = [null];
          try {
            const own = binding.spec?.matchResources;
            if (own && !(await resourcesMatch(own, attrs, sources, policyName, false))) continue;
            const { paramKind } = policy.spec ?? {};
            const ref = binding.spec?.paramRef;
            if (paramKind && ref) {
              params = await sources.params(paramKind, ref, attrs.namespace);
              if (!params.length) {
                if (ref.parameterNotFoundAction === 'Allow') continue;
                throw new Error('no params found for policy binding with `Deny` parameterNotFoundAction');
              }
            }
          } catch (err) {
            configError(err, bindingName);
            continue;
          }
          namespaceObject ??= attrs.namespace ? ((await sources.namespace(attrs.namespace)) ?? null) : null;
          // A span per binding evaluated (CEL), as a webhook call has one.
          const evaluated = { policy: policyName, binding: bindingName };
          await inSpan('Evaluate validating admission policy', evaluated, async () => {
            for (const param of params) {
              for (const decision of evaluatePolicy(policy, attrs, param, namespaceObject, failClosed)) {
                for (const action of binding.spec?.validationActions ?? []) {
                  if (action === 'Deny') denials.push({ ...decision, policy: policyName, binding: bindingName });
                  if (action === 'Audit')
                    audited.push({
                      message: decision.message,
                      policy: policyName,
                      binding: bindingName,
                      expressionIndex: decision.expressionIndex ?? 0,
                      validationActions: binding.spec?.validationActions ?? [],
                    });
                  if (action === 'Warn')
                    attrs.warnings.push(
                      `Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${decision.message}`,
                    );
                }
              }
            }
          });
        }
      }
      if (audited.length) attrs.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] = JSON.stringify(audited);
      if (denials.length) throw denied(attrs, denials[0]);
    },
  };
}

function byName<T extends { metadata: { name?: string } }>(items: T[]): T[] {
  return [...items].sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
}

/**
 * kube's matching.Matcher: the namespace and object selectors, a resource rule that matches (with resourceNames),
 * and no exclude rule that does. A binding without resourceRules matches every resource its policy does.
 */
async function resourcesMatch(
  match: MatchResources,
  attrs: AdmissionAttributes,
  sources: PolicySources,
  policy: string,
  rulesRequired: boolean,
): Promise<boolean> {
  const criteria: MatchCriteria = {
    rules: [],
    namespaceSelector: match.namespaceSelector ?? {},
    objectSelector: match.objectSelector ?? {},
    name: policy,
    label: `ValidatingAdmissionPolicy '${policy}'`,
  };
  const labels = async (ns: string) => (await sources.namespace(ns))?.metadata.labels ?? {};
  if (!(await matchesNamespaceSelector(criteria, attrs, labels))) return false;
  if (!matchesObjectSelector(criteria, attrs)) return false;
  const named = (rule: NamedRule) =>
    ruleMatches(rule, attrs) && (!rule.resourceNames?.length || rule.resourceNames.includes(attrs.name));
  if ((match.excludeResourceRules ?? []).some(named)) return false;
  if (!match.resourceRules?.length) return !rulesRequired;
  return match.resourceRules.some(named);
}

function run(expression: string, returnTypes: string[], activation: AdmissionActivation, budget: CostBudget) {
  return compileAndEvaluate(expression, POLICY_VARIABLES, activation, budget, { returnTypes });
}

/** The decisions of one policy for one param (kube's validator.Validate): denials and failures only. */
function evaluatePolicy(
  policy: ValidatingAdmissionPolicy,
  attrs: AdmissionAttributes,
  param: unknown,
  namespaceObject: unknown,
  failClosed: boolean,
): Decision[] {
  const budget: CostBudget = { remaining: VALIDATION_BUDGET };
  const activation = admissionActivation(attrs, { params: param, namespaceObject });
  // matchConditions: any false skips the policy; otherwise an error is a failure.
  try {
    if (!evaluateMatchConditions(policy.spec?.matchConditions ?? [], POLICY_VARIABLES, activation, budget)) return [];
  } catch (err) {
    return failClosed ? [{ message: (err as Error).message }] : [];
  }
  // Variables in order, each seeing those before it; one that fails is left out (its users then fail).
  const variables = new Map<string, unknown>();
  for (const variable of policy.spec?.variables ?? []) {
    const result = run(
      variable.expression,
      ['any'],
      { ...activation, variables: new Map(variables) as CelInput },
      budget,
    );
    if (!('error' in result)) variables.set(variable.name, result.value);
  }
  activation.variables = variables as CelInput;
  const decisions: Decision[] = [];
  for (const [i, validation] of (policy.spec?.validations ?? []).entries()) {
    const result = run(validation.expression, ['bool'], activation, budget);
    if ('error' in result) {
      if (failClosed) decisions.push({ message: result.error, expressionIndex: i });
      continue;
    }
    if (result.value === true) continue;
    decisions.push({
      message: messageOf(validation, activation, budget),
      reason: validation.reason,
      expressionIndex: i,
    });
  }
  // auditAnnotations: `<policy>/<key>` set to a string value; null leaves it out.
  for (const annotation of policy.spec?.auditAnnotations ?? []) {
    const result = run(annotation.valueExpression, ['string', 'null_type'], activation, budget);
    if ('error' in result) {
      if (failClosed) decisions.push({ message: result.error });
    } else if (typeof result.value === 'string') {
      attrs.auditAnnotations[`${policy.metadata.name ?? ''}/${annotation.key}`] ??= result.value;
    }
  }
  return decisions;
}

function messageOf(
  validation: { expression: string; message?: string; messageExpression?: string },
  activation: AdmissionActivation,
  budget: CostBudget,
): string {
  if (validation.messageExpression) {
    const result = run(validation.messageExpression, ['string'], activation, budget);
    if (!('error' in result) && typeof result.value === 'string') {
      const text = result.value.trim();
      if (text && Buffer.byteLength(text) <= MAX_MESSAGE_BYTES && !text.includes('\n')) return text;
    }
  }
  if (validation.message?.trim()) return validation.message.trim();
  return `failed expression: ${validation.expression.trim()}`;
}

function errorText(err: unknown): string {
  return errors.isStatusError(err) ? (err.status.message ?? '') : err instanceof Error ? err.message : String(err);
}

/** kube's denial: admission.NewForbidden's message and details, with the decision's reason and its code. */
function denied(attrs: AdmissionAttributes, denial: Denial): errors.StatusError {
  const message = denial.binding
    ? `ValidatingAdmissionPolicy '${denial.policy}' with binding '${denial.binding}' denied request: ${denial.message}`
    : `ValidatingAdmissionPolicy '${denial.policy}' denied request: ${denial.message}`;
  const err = admissionForbidden(attrs, message);
  const reason = denial.reason || 'Invalid';
  err.status.reason = reason;
  err.status.code = REASON_CODES[reason] ?? 422;
  err.status.details = { ...err.status.details, causes: [{ message }] };
  return err;
}

const REASON_CODES: Record<string, number> = {
  Forbidden: 403,
  Unauthorized: 401,
  RequestEntityTooLarge: 413,
  Invalid: 422,
};
