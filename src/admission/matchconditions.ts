/**
 * matchConditions, as kube's matchconditions.Matcher evaluates them (CEL): any condition false skips the webhook or
 * policy, whatever errors the others had; otherwise an error (one that does not compile here, or fails to evaluate)
 * is the answer, which the failurePolicy then decides. The conditions share the cost budget they are given.
 */
import type { AdmissionAttributes } from '../apimachinery/admission.js';
import {
  admissionActivation,
  compileAndEvaluate,
  MATCH_CONDITION_VARIABLES,
  MATCH_CONDITIONS_BUDGET,
  type AdmissionActivation,
  type AdmissionCelVariable,
  type CostBudget,
} from '../apimachinery/cel/cel.js';
import type { MatchCondition, Webhook } from './webhookconfig.js';

/** True: every condition holds; false: one does not. Throws the conditions' errors (utilerrors.NewAggregate's text). */
export function evaluateMatchConditions(
  conditions: readonly MatchCondition[],
  vars: readonly AdmissionCelVariable[],
  activation: AdmissionActivation,
  budget: CostBudget,
): boolean {
  const errs: string[] = [];
  for (const condition of conditions) {
    const result = compileAndEvaluate(condition.expression, vars, activation, budget);
    if ('error' in result) {
      errs.push(result.error);
      if ('budgetExhausted' in result && result.budgetExhausted) break;
    } else if (result.value === false) return false;
  }
  if (errs.length) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
  return true;
}

/** A webhook's matchConditions, with kube's variables and budget for them. */
export function matchConditionsHold(hook: Webhook, attrs: AdmissionAttributes): boolean {
  return evaluateMatchConditions(hook.matchConditions, MATCH_CONDITION_VARIABLES, admissionActivation(attrs), {
    remaining: MATCH_CONDITIONS_BUDGET,
  });
}
