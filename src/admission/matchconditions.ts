/**
 * A webhook's matchConditions, as kube's matchconditions.Matcher evaluates them (CEL, cel.ts): any condition false
 * skips the webhook, whatever errors the others had; otherwise an error (one that does not compile here, or fails
 * to evaluate) is the answer, which the webhook's failurePolicy then decides. Expressions are compiled once per
 * text and shared; the conditions of one webhook share kube's cost budget.
 */
import type { AdmissionAttributes } from '../apimachinery/admission.js';
import {
  admissionActivation,
  compileAdmissionExpression,
  evaluate,
  isCompileError,
  MATCH_CONDITION_VARIABLES,
  MATCH_CONDITIONS_BUDGET,
  type CompiledExpression,
  type CompileError,
} from '../apimachinery/cel/cel.js';
import type { Webhook } from './webhookconfig.js';

/** Compiled expressions by their text; bounded, since configurations come and go. */
const compiled = new Map<string, CompiledExpression | CompileError>();
const COMPILED_LIMIT = 1000;

function compile(expression: string): CompiledExpression | CompileError {
  let c = compiled.get(expression);
  if (!c) {
    if (compiled.size >= COMPILED_LIMIT) compiled.clear();
    compiled.set(expression, (c = compileAdmissionExpression(expression, MATCH_CONDITION_VARIABLES)));
  }
  return c;
}

/** True: call the webhook; false: skip it. Throws the conditions' errors (utilerrors.NewAggregate's text). */
export function matchConditionsHold(hook: Webhook, attrs: AdmissionAttributes): boolean {
  const activation = admissionActivation(attrs);
  const budget = { remaining: MATCH_CONDITIONS_BUDGET };
  const errs: string[] = [];
  for (const condition of hook.matchConditions) {
    const c = compile(condition.expression);
    if (isCompileError(c)) {
      errs.push(c.error);
      continue;
    }
    const result = evaluate(c, activation, budget);
    if ('error' in result) {
      errs.push(result.error);
      if (result.budgetExhausted) break;
    } else if (result.value === false) return false;
  }
  if (errs.length) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
  return true;
}
