/**
 * The x-kubernetes-validations rules of a structural schema, as apiextensions-apiserver evaluates a CRD's
 * (pkg/apiserver/schema/cel/validation.go): CEL rules at any level with `self` the value there, transition rules
 * with `oldSelf` the value at the same path before an update (skipped when there is none), and kube's field errors
 * when a rule fails (`spec: Invalid value: "object": <message>`). Rules are compiled once, when the CRD is read;
 * one that does not compile is an error naming where it is in the schema.
 */
import type { CelInput } from '@bufbuild/cel';
import {
  compileAdmissionExpression,
  errorCause,
  evaluate,
  isCompileError,
  toCelValue,
  VALIDATION_BUDGET,
  type AdmissionActivation,
  type CompiledExpression,
  type CostBudget,
  type StaticType,
} from './cel.js';
import { jsonEqual } from '../equality.js';
import { Path, errorString, fieldError, type FieldError, type FieldErrorType } from '../field.js';
import type { StructuralSchema } from '../schema.js';
import { isPlainObject } from '../types.js';

/** One entry of x-kubernetes-validations (apiextensions/v1 ValidationRule). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/**
 * Checks an object (and, on update, the object it replaces) against the rules. `earlier` are the errors found
 * before: a wrong type, a missing required field, an unsupported value or a size beyond the limit stops the rules
 * from running, as in kube, with a note saying so. On update a rule that fails on a value the update leaves as it
 * was is a warning, added to `warnings`, not an error (kube's CRD validation ratcheting), unless it is a transition
 * rule.
 */
export type RulesValidator = (
  obj: unknown,
  old: unknown,
  earlier: readonly FieldError[],
  warnings?: string[],
) => FieldError[];

const RULE_FIELDS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const REASONS = new Set(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate']);

/** The schema errors after which kube does not run the rules (customresource strategy's hasBlockingErr). */
const BLOCKING: ReadonlySet<FieldErrorType> = new Set([
  'FieldValueNotSupported',
  'FieldValueRequired',
  'FieldValueTooLong',
  'FieldValueTooMany',
  'FieldValueTypeInvalid',
]);

/** celconfig.MaxEvaluatedMessageExpressionSizeBytes */
const MAX_MESSAGE_EXPRESSION_SIZE = 5 * 1024;

interface CompiledRule {
  readonly source: ValidationRule;
  readonly program: CompiledExpression;
  readonly message?: CompiledExpression;
  /** fieldPath, as field path segments below the rule's own path. */
  readonly fieldPath: readonly Segment[];
  /** Uses oldSelf: evaluated only on update, where the old value exists at the path. */
  readonly transition: boolean;
}

type Segment = { child: string } | { key: string };

/** The rules of one schema node and of the nodes under it that have any (kube's Validator). */
interface RuleNode {
  readonly schema: StructuralSchema;
  readonly rules: readonly CompiledRule[];
  readonly properties: ReadonlyMap<string, RuleNode>;
  readonly additionalProperties?: RuleNode;
  readonly items?: RuleNode;
  /** The root of a resource: `self.metadata` has only name and generateName. */
  readonly resourceRoot: boolean;
}

/** A rule that cannot be used; the message starts with where it is (`<at>.x-kubernetes-validations[0].rule`). */
export class RuleCompileError extends Error {}

/**
 * Compiles the rules of a resource's schema; `at` is where the schema is in its CRD. A validator that finds
 * nothing when the schema has no rules.
 */
export function compileValidationRules(schema: StructuralSchema, at: string): RulesValidator {
  const root = compileNode(schema, at, true, true);
  if (!root) return () => [];
  return (obj, old, earlier, warnings = []) => {
    if (earlier.some((e) => BLOCKING.has(e.type)))
      return [
        fieldError.invalid(
          '<nil>',
          null,
          'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
        ),
      ];
    const run: Run = { budget: { remaining: VALIDATION_BUDGET }, errs: [], warnings };
    validateNode(root, undefined, obj, old ?? undefined, false, run);
    return run.errs;
  };
}

function compileNode(
  schema: StructuralSchema,
  at: string,
  correlatable: boolean,
  resourceRoot: boolean,
): RuleNode | undefined {
  const declared = schema['x-kubernetes-validations'] ?? [];
  if (!Array.isArray(declared)) throw new RuleCompileError(`${at}.x-kubernetes-validations: must be a list of rules`);
  const rules = (declared as ValidationRule[]).map((rule, i) =>
    compileRule(rule, schema, `${at}.x-kubernetes-validations[${i}]`, correlatable, resourceRoot),
  );
  const mapCorrelatable = correlatable && schema['x-kubernetes-map-type'] !== 'atomic';
  const properties = new Map<string, RuleNode>();
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    const node = compileNode(child, `${at}.properties[${name}]`, mapCorrelatable, false);
    if (node) properties.set(name, node);
  }
  const additionalProperties = isPlainObject(schema.additionalProperties)
    ? compileNode(schema.additionalProperties as StructuralSchema, `${at}.additionalProperties`, mapCorrelatable, false)
    : undefined;
  // Only the items of a list-type map have an old value to compare with (kube correlates them by their keys).
  const items = schema.items
    ? compileNode(schema.items, `${at}.items`, correlatable && schema['x-kubernetes-list-type'] === 'map', false)
    : undefined;
  if (!rules.length && !properties.size && !additionalProperties && !items) return undefined;
  return { schema, rules, properties, additionalProperties, items, resourceRoot };
}

function compileRule(
  rule: ValidationRule,
  schema: StructuralSchema,
  at: string,
  correlatable: boolean,
  resourceRoot: boolean,
): CompiledRule {
  const fail = (field: string, why: string): never => {
    throw new RuleCompileError(`${field ? `${at}.${field}` : at}: ${why}`);
  };
  if (!isPlainObject(rule)) fail('', 'must be an object with a rule');
  for (const field of Object.keys(rule)) if (!RULE_FIELDS.has(field)) fail(field, 'unknown field');
  if (typeof rule.rule !== 'string' || !rule.rule.trim()) fail('rule', 'Required value');
  if (rule.reason !== undefined && !REASONS.has(rule.reason))
    fail(
      'reason',
      `Unsupported value: "${rule.reason}": supported values: ${[...REASONS].map((r) => `"${r}"`).join(', ')}`,
    );
  if (rule.message !== undefined && /[\n\r]/.test(rule.message))
    fail('message', 'message must not contain line breaks');
  if (rule.optionalOldSelf === true)
    fail(
      'optionalOldSelf',
      "not supported by this server: an optional oldSelf needs CEL's optional types (oldSelf.hasValue(), oldSelf.orValue()), which it does not have",
    );
  const self = selfType(schema, resourceRoot);
  const types = { self, oldSelf: self };
  const program = compileAdmissionExpression(rule.rule, ['self', 'oldSelf'], { types });
  if (isCompileError(program)) return fail('rule', program.error);
  const transition = program.references.has('oldSelf');
  if (transition && !correlatable)
    fail(
      'rule',
      'oldSelf cannot be used on the uncorrelatable portion of the schema (a list item that is not in a list-type map, or under an atomic map)',
    );
  let message: CompiledExpression | undefined;
  if (rule.messageExpression !== undefined) {
    const compiled = compileAdmissionExpression(rule.messageExpression, ['self', 'oldSelf'], {
      types,
      returnTypes: ['string'],
    });
    if (isCompileError(compiled)) return fail('messageExpression', compiled.error);
    message = compiled;
  }
  let fieldPath: Segment[] = [];
  if (rule.fieldPath !== undefined) {
    const parsed = parseFieldPath(rule.fieldPath, schema);
    if (typeof parsed === 'string') return fail('fieldPath', `Invalid value: "${rule.fieldPath}": ${parsed}`);
    fieldPath = parsed;
  }
  return { source: rule, program, message, fieldPath, transition };
}

/**
 * The CEL type of the values a schema allows (kube's SchemaDeclType): objects with properties as records, so a
 * rule naming a field the schema lacks does not compile; maps and lists without their element types.
 */
function selfType(schema: StructuralSchema, resourceRoot = false): StaticType {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true || schema['x-kubernetes-int-or-string'] === true)
    return 'dyn';
  switch (schema.type) {
    case 'object': {
      if (!schema.properties) return isPlainObject(schema.additionalProperties) ? 'map' : 'dyn';
      const fields: Record<string, StaticType> = {};
      for (const [name, child] of Object.entries(schema.properties)) fields[name] = selfType(child);
      // At the root of a resource, rules see the object's name and generateName of its metadata (kube's WithTypeAndObjectMeta).
      if (resourceRoot) {
        fields.apiVersion = 'string';
        fields.kind = 'string';
        fields.metadata = { name: 'object', fields: { name: 'string', generateName: 'string' } };
      }
      return { name: 'object', fields };
    }
    case 'array':
      return 'list';
    case 'string':
      return 'string';
    case 'integer':
      return 'int';
    case 'number':
      return 'double';
    case 'boolean':
      return 'bool';
    default:
      return 'dyn';
  }
}

/** A value as a rule sees it: numbers of a `number` field are doubles even when they are whole (as in kube). */
function toSelf(value: unknown, schema: StructuralSchema | undefined): CelInput {
  if (schema?.type === 'number' && typeof value === 'number') return value;
  if (Array.isArray(value)) return value.map((item) => toSelf(item, schema?.items));
  if (isPlainObject(value))
    return new Map(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, toSelf(v, childSchema(schema, k))]),
    );
  return toCelValue(value);
}

function childSchema(schema: StructuralSchema | undefined, key: string): StructuralSchema | undefined {
  return (
    schema?.properties?.[key] ??
    (isPlainObject(schema?.additionalProperties) ? (schema!.additionalProperties as StructuralSchema) : undefined)
  );
}

/** The root's value for its rules: metadata reduced to name and generateName. */
function rootSelf(obj: Record<string, unknown>, schema: StructuralSchema): CelInput {
  const { metadata, ...rest } = obj;
  const value = toSelf(rest, schema) as Map<string, CelInput>;
  if (isPlainObject(metadata)) {
    const meta = new Map<string, CelInput>();
    for (const field of ['name', 'generateName'])
      if (typeof metadata[field] === 'string') meta.set(field, metadata[field] as string);
    value.set('metadata', meta);
  }
  return value;
}

/** ValidFieldPath: `.a.b`, `['a.b']`, `.data['key']`, checked against the schema (a map's keys are `[key]`). */
function parseFieldPath(text: string, schema: StructuralSchema): Segment[] | string {
  const segments: Segment[] = [];
  let at: StructuralSchema | undefined = schema;
  const token = /\.([^.[\]]+)|\['((?:[^'\\]|\\.)*)'\]/y;
  let pos = 0;
  while (pos < text.length) {
    token.lastIndex = pos;
    const m = token.exec(text);
    if (!m) return `expected [ or . at "${text.slice(pos)}"`;
    pos = token.lastIndex;
    const name = m[1] ?? m[2].replace(/\\(.)/g, '$1');
    if (at?.properties) {
      if (!at.properties[name]) return 'does not refer to a valid field';
      segments.push({ child: name });
      at = at.properties[name];
    } else if (isPlainObject(at?.additionalProperties)) {
      segments.push({ key: name });
      at = at!.additionalProperties as StructuralSchema;
    } else return 'does not refer to a valid field';
  }
  return segments;
}

/** kube's field path of a node; undefined at the root, which errors print as `<nil>`. */
type At = Path | undefined;

const child = (at: At, name: string): Path => (at ? at.child(name) : Path.root(name));
const key = (at: At, k: string): Path => (at ?? Path.root('')).key(k);
const shown = (at: At): string => (at ? String(at) : '<nil>');

/** One evaluation of an object's rules: what it may spend, and what it found. */
interface Run {
  readonly budget: CostBudget;
  readonly errs: FieldError[];
  readonly warnings: string[];
}

/**
 * Whether to go on: false once the budget is spent or a rule's cost went beyond the limit (kube stops there).
 * `parentUnchanged`: the nearest value above with an old value to compare with is as it was (for ratcheting).
 */
function validateNode(
  node: RuleNode,
  at: At,
  value: unknown,
  old: unknown,
  parentUnchanged: boolean,
  run: Run,
): boolean {
  if (value === null || value === undefined) return true;
  const unchanged = old !== undefined ? jsonEqual(value, old) : parentUnchanged;
  if (!validateRules(node, at, value, old, unchanged, run)) return false;
  if (Array.isArray(value)) {
    if (!node.items) return true;
    const oldItem = listMapCorrelation(node.schema, old);
    for (const [i, item] of value.entries())
      if (!validateNode(node.items, (at ?? Path.root('')).index(i), item, oldItem(item), unchanged, run)) return false;
    return true;
  }
  if (!isPlainObject(value)) return true;
  const oldMap = isPlainObject(old) && node.schema['x-kubernetes-map-type'] !== 'atomic' ? old : undefined;
  for (const [k, v] of Object.entries(value)) {
    const sub = node.properties.get(k);
    if (sub && !validateNode(sub, child(at, k), v, oldMap?.[k], unchanged, run)) return false;
    if (node.additionalProperties && !node.schema.properties?.[k])
      if (!validateNode(node.additionalProperties, key(at, k), v, oldMap?.[k], unchanged, run)) return false;
  }
  return true;
}

/** The old item with the same keys, for the items of a list-type map; nothing for other lists. */
function listMapCorrelation(schema: StructuralSchema, old: unknown): (item: unknown) => unknown {
  const keys = schema['x-kubernetes-list-map-keys'] as string[] | undefined;
  if (schema['x-kubernetes-list-type'] !== 'map' || !keys?.length || !Array.isArray(old)) return () => undefined;
  const same = (a: unknown, b: unknown) =>
    isPlainObject(a) && isPlainObject(b) && keys.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
  return (item) => old.find((o) => same(o, item));
}

function validateRules(node: RuleNode, at: At, value: unknown, old: unknown, unchanged: boolean, run: Run): boolean {
  const { budget, errs } = run;
  if (!node.rules.length) return true;
  // kube's value of a rule's error is the schema's type ("" where it has none: int-or-string, unknown fields kept).
  const type = node.schema.type ?? '';
  if (budget.remaining <= 0) {
    errs.push(fieldError.invalid(shown(at), type, OUT_OF_BUDGET));
    return false;
  }
  const selfOf = (v: unknown) =>
    node.resourceRoot && isPlainObject(v) ? rootSelf(v, node.schema) : toSelf(v, node.schema);
  const activation: AdmissionActivation = { self: selfOf(value) };
  const hasOld = old !== null && old !== undefined;
  if (hasOld && node.rules.some((r) => r.transition)) activation.oldSelf = selfOf(old);
  for (const rule of node.rules) {
    // Transition rules compare with the value before; on create, or where there was none, they are skipped.
    if (rule.transition && !hasOld) continue;
    const result = evaluate(rule.program, activation, budget);
    if ('error' in result) {
      const cause = errorCause(rule.program, result.error);
      if (result.budgetExhausted) {
        errs.push(fieldError.invalid(shown(at), type, OUT_OF_BUDGET));
        return false;
      }
      if (cause.startsWith('operation cancelled: actual cost limit exceeded')) {
        errs.push(
          fieldError.invalid(
            shown(at),
            type,
            `'${cause}': no further validation rules will be run due to call cost exceeds limit for rule: ${ruleErrorString(rule.source)}`,
          ),
        );
        return false;
      }
      const detail = cause.startsWith('no such overload')
        ? `'${cause}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleErrorString(rule.source)}`
        : `${cause} evaluating rule: ${ruleErrorString(rule.source)}`;
      errs.push(fieldError.invalid(shown(at), type, detail));
      continue;
    }
    if (result.value === true) continue;
    const path = rule.fieldPath.reduce<At>((p, s) => ('child' in s ? child(p, s.child) : key(p, s.key)), at);
    let detail = ruleMessageOrDefault(rule.source);
    if (rule.message) {
      const message = evaluateMessage(rule.message, activation, budget);
      if ('stop' in message) {
        errs.push(fieldError.invalid(shown(path), type, message.stop));
        return false;
      }
      if (message.text !== undefined) detail = message.text;
    }
    const error = failure(shown(path), type, detail, rule.source.reason);
    // Ratcheting: a value the update did not change may keep breaking a rule it broke before (transition rules
    // compare with the value before, and are never ratcheted).
    if (!rule.transition && unchanged) run.warnings.push(errorString(error));
    else errs.push(error);
  }
  return true;
}

const OUT_OF_BUDGET = 'validation failed due to running out of cost budget, no further validation rules will be run';

/** evalMessageExpression: the message, or none (the static one is used), or why no further rule may run. */
function evaluateMessage(
  message: CompiledExpression,
  activation: AdmissionActivation,
  budget: CostBudget,
): { text?: string } | { stop: string } {
  const result = evaluate(message, activation, budget);
  if ('error' in result) {
    const cause = errorCause(message, result.error);
    if (result.budgetExhausted)
      return {
        stop: 'messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run',
      };
    if (cause.startsWith('operation cancelled: actual cost limit exceeded'))
      return {
        stop: `no further validation rules will be run due to call cost exceeds limit for messageExpression: ${JSON.stringify(message.expression)}`,
      };
    return {};
  }
  const text = String(result.value).trim();
  if (!text || text.includes('\n') || Buffer.byteLength(text) > MAX_MESSAGE_EXPRESSION_SIZE) return {};
  return { text };
}

function failure(at: string, type: string, detail: string, reason: string | undefined): FieldError {
  switch (reason) {
    case 'FieldValueForbidden':
      return fieldError.forbidden(at, detail);
    case 'FieldValueRequired':
      return fieldError.required(at, detail);
    case 'FieldValueDuplicate':
      return fieldError.duplicate(at, type);
    default:
      return fieldError.invalid(at, type, detail);
  }
}

function ruleMessageOrDefault(rule: ValidationRule): string {
  return rule.message ? rule.message.trim() : `failed rule: ${ruleErrorString(rule)}`;
}

function ruleErrorString(rule: ValidationRule): string {
  return (rule.message || rule.rule).trim();
}
