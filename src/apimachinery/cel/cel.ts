/**
 * CEL for admission, as kube-apiserver compiles and evaluates it for webhook matchConditions (and, later,
 * ValidatingAdmissionPolicy): the variables kube declares (`object`, `oldObject`, the typed `request`, ...),
 * kube's checks when an expression is compiled (undeclared names, unknown request fields, the type of the result),
 * kube's errors when it is evaluated (a missing key is an error, not false), and kube's cost limits. Built on
 * @bufbuild/cel, with the type checking (celcheck.ts), cost tracking (celcost.ts) and library functions
 * (cellibrary.ts) it lacks.
 */
import { celEnv, celType, isCelError, parse, plan, type CelEnv, type CelInput, type CelResult } from '@bufbuild/cel';
import type { AdmissionAttributes } from '../admission.js';
import {
  checkExpression,
  DYN,
  pointAt,
  REQUEST_TYPE,
  typeName,
  type StaticType,
  type Unsupported,
} from './celcheck.js';
import { children, CostTracker, costedEnv, countComprehensions, PER_CALL_LIMIT, trackingCost } from './celcost.js';
import { admissionFunctions, type CelOperators } from './cellibrary.js';

export { MATCH_CONDITIONS_BUDGET, PER_CALL_LIMIT, VALIDATION_BUDGET } from './celcost.js';
export type { RecordType, StaticType } from './celcheck.js';

/**
 * The variables kube declares for admission expressions, and `self` and `oldSelf` of a CRD's x-kubernetes-validations
 * rules; each use declares the ones it has.
 */
export type AdmissionCelVariable =
  'object' | 'oldObject' | 'request' | 'params' | 'namespaceObject' | 'variables' | 'authorizer' | 'self' | 'oldSelf';

/** The variables of a webhook's matchConditions (kube: no params; the authorizer, which this server lacks). */
export const MATCH_CONDITION_VARIABLES: readonly AdmissionCelVariable[] = [
  'object',
  'oldObject',
  'request',
  'authorizer',
];

/** A CEL type an expression may be required to give ('bool', 'string', 'null_type', ...), or 'any'. */
export type CelResultType = string;

export interface CompileOptions {
  /** The types the expression must evaluate to; kube's matchConditions and validations: ['bool'] (the default). */
  returnTypes?: readonly CelResultType[];
  /** Types of variables known better than `dyn` (a CRD rule's `self` is typed by its schema). */
  types?: Partial<Record<AdmissionCelVariable, StaticType>>;
}

export interface CompiledExpression {
  readonly expression: string;
  readonly returnTypes: readonly CelResultType[];
  /** The expression's type as checked ('bool', ... or 'dyn'). */
  readonly type: string;
  /** The declared variables the expression refers to (a CRD rule that uses `oldSelf` is a transition rule). */
  readonly references: ReadonlySet<AdmissionCelVariable>;
  /** @internal the planned program. */
  readonly program: (vars: Record<string, CelInput>) => CelResult;
}

/** Why an expression did not compile, as kube's Error.Detail says it ("compilation failed: ERROR: <input>:..."). */
export interface CompileError {
  readonly error: string;
}

export function isCompileError(c: CompiledExpression | CompileError): c is CompileError {
  return 'error' in c;
}

/** cel-go's limit on the size of an expression (ExpressionSizeCodePointLimit). */
export const EXPRESSION_SIZE_LIMIT = 100_000;
/** cel-go's parser recursion limit: how deeply an expression may nest. */
export const EXPRESSION_DEPTH_LIMIT = 250;

const AUTHORIZER_UNSUPPORTED: Unsupported = {
  unsupported:
    "'authorizer' is not supported by this server: the CEL authorizer library (authorizer.group(...).resource(...).check(...)) is not implemented",
};

const VARIABLE_TYPES: Record<AdmissionCelVariable, StaticType | Unsupported> = {
  object: DYN,
  oldObject: DYN,
  params: DYN,
  namespaceObject: DYN,
  variables: DYN,
  request: REQUEST_TYPE,
  authorizer: AUTHORIZER_UNSUPPORTED,
  self: DYN,
  oldSelf: DYN,
};

const baseEnv: CelEnv = celEnv({ funcs: admissionFunctions(() => operators) });
const env = costedEnv(baseEnv);
// CEL's own equality and order, for the library functions (not charged apart: their caller was charged).
const operators: CelOperators = {
  equals: (a, b) => baseEnv.funcs.find('_==_')?.call(0, undefined, [a, b]) === true,
  less: (a, b) => {
    const less = baseEnv.funcs.find('_<_')?.call(0, undefined, [a, b]);
    if (typeof less !== 'boolean') throw new Error(`no ordering between ${celType(a)} and ${celType(b)}`);
    return less;
  },
  add: (a, b) => {
    const sum = baseEnv.funcs.find('_+_')?.call(0, undefined, [a, b]);
    if (sum === undefined || isCelError(sum))
      throw sum ?? new Error(`found no matching overload for '_+_' applied to '(${celType(a)}, ${celType(b)})'`);
    return sum;
  },
  matches: (text, pattern) => {
    const matched = baseEnv.funcs.find('matches')?.call(0, text, [pattern]);
    if (typeof matched !== 'boolean') throw matched ?? new Error('matches is not available');
    return matched;
  },
};

export function compileAdmissionExpression(
  expression: string,
  vars: readonly AdmissionCelVariable[],
  options: CompileOptions = {},
): CompiledExpression | CompileError {
  const returnTypes = options.returnTypes ?? ['bool'];
  const size = [...expression].length;
  if (size > EXPRESSION_SIZE_LIMIT)
    return failed(`expression code point size exceeds limit: size: ${size}, limit ${EXPRESSION_SIZE_LIMIT}`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(expression);
  } catch (err) {
    return failed(syntaxError(expression, err));
  }
  if (depth(parsed.expr, EXPRESSION_DEPTH_LIMIT) > EXPRESSION_DEPTH_LIMIT)
    return failed(`expression nesting exceeds the limit of ${EXPRESSION_DEPTH_LIMIT} levels`);
  const checked = checkExpression({
    source: expression,
    parsed,
    variables: new Map(vars.map((name) => [name, options.types?.[name] ?? VARIABLE_TYPES[name]])),
    functions: env.funcs,
    env: baseEnv,
  });
  if ('errors' in checked) return failed(checked.errors.join('\n'));
  const type = typeName(checked.type);
  if (!returnTypes.includes('any') && !returnTypes.includes(type)) return { error: mustEvaluateTo(returnTypes, type) };
  countComprehensions(parsed.expr);
  const program = plan(env, parsed) as CompiledExpression['program'];
  const references = new Set(
    identifiers(parsed.expr).filter((name): name is AdmissionCelVariable =>
      vars.includes(name as AdmissionCelVariable),
    ),
  );
  return { expression, returnTypes, type, references, program };
}

/** Expressions compiled once per text, variables and result types; bounded, since configurations come and go. */
const compiledOnce = new Map<string, CompiledExpression | CompileError>();
const COMPILED_LIMIT = 1000;

export function compileCached(
  expression: string,
  vars: readonly AdmissionCelVariable[],
  options: CompileOptions = {},
): CompiledExpression | CompileError {
  const key = `${vars.join(',')}\u0000${(options.returnTypes ?? []).join(',')}\u0000${expression}`;
  let c = compiledOnce.get(key);
  if (!c) {
    if (compiledOnce.size >= COMPILED_LIMIT) compiledOnce.clear();
    compiledOnce.set(key, (c = compileAdmissionExpression(expression, vars, options)));
  }
  return c;
}

/** compileCached then evaluate: an expression that does not compile is an error of its evaluation. */
export function compileAndEvaluate(
  expression: string,
  vars: readonly AdmissionCelVariable[],
  activation: AdmissionActivation,
  budget: CostBudget,
  options: CompileOptions = {},
): EvaluationResult | CompileError {
  const c = compileCached(expression, vars, options);
  return isCompileError(c) ? c : evaluate(c, activation, budget);
}

/** The values of an evaluation's variables, CEL values made once per request (see admissionActivation). */
export type AdmissionActivation = Partial<Record<AdmissionCelVariable, CelInput>>;

/** What a request's expressions may spend together (kube's runtime budget); each evaluation takes its cost. */
export interface CostBudget {
  remaining: number;
}

export type EvaluationResult =
  | { value: unknown; cost: number }
  /** `budgetExhausted`: kube stops evaluating the request's remaining expressions. */
  | { error: string; cost: number; budgetExhausted?: true };

/**
 * Evaluates a compiled expression, with kube's errors: a missing key or a type error is an error (never false),
 * a result of a type the expression may not give is an error, and so is a cost beyond PER_CALL_LIMIT or beyond
 * what remains of `budget` (which is then reduced by the cost).
 */
export function evaluate(
  compiled: CompiledExpression,
  activation: AdmissionActivation,
  budget?: CostBudget,
): EvaluationResult {
  const byBudget = budget !== undefined && budget.remaining < PER_CALL_LIMIT;
  const tracker = new CostTracker(byBudget ? Math.max(0, budget.remaining) : PER_CALL_LIMIT);
  const vars: Record<string, CelInput> = {};
  for (const name of Object.keys(VARIABLE_TYPES) as AdmissionCelVariable[]) vars[name] = activation[name] ?? null;
  const value = trackingCost(tracker, () => compiled.program(vars));
  const cost = tracker.cost;
  if (budget) budget.remaining -= Math.min(cost, budget.remaining);
  const resultedIn = (why: string) => `expression '${compiled.expression}' resulted in error: ${why}`;
  if (tracker.exceeded) {
    if (byBudget)
      return {
        error: 'validation failed due to running out of cost budget, no further validation rules will be run',
        cost,
        budgetExhausted: true,
      };
    return { error: resultedIn('operation cancelled: actual cost limit exceeded'), cost };
  }
  if (isCelError(value)) return { error: resultedIn(kubeMessage(value.message)), cost };
  const type = celType(value).name;
  if (!compiled.returnTypes.includes('any') && !compiled.returnTypes.includes(type))
    return { error: resultedIn(mustEvaluateTo(compiled.returnTypes, type)), cost };
  return { value, cost };
}

/**
 * An evaluation's error without the admission wording around it ("expression '<e>' resulted in error: "), for
 * callers that word it their own way (a CRD's rules: "<cause> evaluating rule: <rule>").
 */
export function errorCause(compiled: CompiledExpression, error: string): string {
  const resultedIn = `expression '${compiled.expression}' resulted in error: `;
  return error.startsWith(resultedIn) ? error.slice(resultedIn.length) : error;
}

/** Options of the operation, for `request.options` (CreateOptions, UpdateOptions, DeleteOptions). */
export interface ActivationInputs {
  options?: unknown;
  params?: unknown;
  namespaceObject?: unknown;
}

/**
 * The variables for a request's expressions, as kube makes them: object and oldObject (null when absent: oldObject
 * on CREATE, object on DELETE) and the AdmissionRequest (CreateAdmissionRequest converted to unstructured, so
 * empty strings and lists are left out as its omitempty fields are: `request.namespace` of a cluster-scoped object
 * is no such key).
 */
export function admissionActivation(attrs: AdmissionAttributes, inputs: ActivationInputs = {}): AdmissionActivation {
  const kind = { group: attrs.group, version: attrs.version, kind: attrs.kind };
  const resource = { group: attrs.group, version: attrs.version, resource: attrs.resource };
  const user = attrs.user;
  const request = omitEmpty({
    kind,
    resource,
    subResource: attrs.subresource,
    requestKind: kind,
    requestResource: resource,
    requestSubResource: attrs.subresource,
    name: attrs.name,
    namespace: attrs.namespace,
    operation: attrs.operation,
    userInfo: omitEmpty({ username: user.name, uid: user.uid, groups: user.groups, extra: user.extra }),
    dryRun: attrs.dryRun,
  });
  return {
    object: toCelValue(attrs.object ?? null),
    oldObject: toCelValue(attrs.oldObject ?? null),
    request: toCelValue({ ...request, options: inputs.options ?? null }),
    params: toCelValue(inputs.params ?? null),
    namespaceObject: toCelValue(inputs.namespaceObject ?? null),
  };
}

/**
 * A JSON value as CEL sees an unstructured object: objects as maps, arrays as lists, and numbers as int when they
 * are integers within int64 (kube decodes JSON numbers without a fraction or exponent to int64), else double.
 */
export function toCelValue(json: unknown): CelInput {
  if (json === null || json === undefined) return null;
  if (typeof json === 'number') return Number.isInteger(json) && Math.abs(json) < 2 ** 63 ? BigInt(json) : json;
  if (typeof json === 'string' || typeof json === 'boolean') return json;
  if (Array.isArray(json)) return json.map(toCelValue);
  if (typeof json === 'object')
    return new Map(
      Object.entries(json)
        .filter(([, value]) => value !== undefined)
        .map(([key, value]) => [key, toCelValue(value)]),
    );
  return null;
}

/** The names an expression refers to as variables (comprehension variables included: callers look up theirs). */
function identifiers(e: Parameters<typeof children>[0]): string[] {
  if (e.exprKind.case === 'identExpr') return [e.exprKind.value.name];
  return children(e).flatMap(identifiers);
}

function omitEmpty(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0)),
  );
}

function failed(detail: string): CompileError {
  return { error: `compilation failed: ${detail}` };
}

function mustEvaluateTo(returnTypes: readonly string[], got: string): string {
  return returnTypes.length === 1
    ? `must evaluate to ${returnTypes[0]} but got ${got}`
    : `must evaluate to one of [${returnTypes.join(' ')}] but got ${got}`;
}

/** The parser's error (`<input>:1:3: found + but expecting end of input`) in cel-go's form. */
function syntaxError(source: string, err: unknown): string {
  if (err instanceof RangeError) return `expression nesting exceeds the limit of ${EXPRESSION_DEPTH_LIMIT} levels`;
  const message = err instanceof Error ? err.message : String(err);
  const at = /^<input>:(\d+):(\d+): (.*)$/s.exec(message);
  // kube has CEL's optional types (`x.?y`, `[?x]`); @bufbuild/cel's parser does not.
  const optional = /\.\?|\[\?/.test(source)
    ? ' (optional field selection, .? and [?, is not supported by this server)'
    : '';
  if (!at) return `ERROR: <input>: Syntax error: ${message}${optional}`;
  const lines = source.split('\n');
  const line = Math.min(Number(at[1]), lines.length);
  const offset = lines.slice(0, line - 1).reduce((sum, l) => sum + l.length + 1, 0) + Number(at[2]) - 1;
  return pointAt(source, offset, `Syntax error: ${at[3]}${optional}`);
}

/** How deeply the tree nests, counted no further than just past `limit`. */
function depth(e: Parameters<typeof children>[0], limit: number): number {
  if (limit < 0) return 1;
  let deepest = 0;
  for (const child of children(e)) deepest = Math.max(deepest, depth(child, limit - 1));
  return deepest + 1;
}

/** @bufbuild/cel's messages where kube's (cel-go's) say the same thing otherwise. */
function kubeMessage(message: string): string {
  const missing = /^field not found: (.*)$/.exec(message);
  return missing ? `no such key: ${missing[1]}` : message;
}
