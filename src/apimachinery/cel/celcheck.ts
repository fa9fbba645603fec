/**
 * The part of cel-go's type checker kube's admission relies on, which @bufbuild/cel (an evaluator only) lacks:
 * references to undeclared variables and functions, unknown fields of the typed `request`, calls no overload
 * accepts, mixed-type list and map literals, and the type an expression evaluates to, so that a matchCondition
 * giving a string, or `dyn` (`object.spec.enabled` rather than `object.spec.enabled == true`), is refused when it
 * is compiled, as kube refuses it. Types are tracked as coarsely as this needs: where cel-go would know more (the
 * element type of a list literal, say) this says `dyn`, and accepts what cel-go might refuse; never the reverse,
 * except for the type of the result.
 */
import { isCelError, plan, type CelEnv, type CelFunc, type CelType, type parse } from '@bufbuild/cel';
import { UNSUPPORTED_FUNCTIONS } from './cellibrary.js';

/** A parsed expression, and the nodes of its syntax tree (cel.expr's ParsedExpr, Expr and Constant). */
export type ParsedExpression = ReturnType<typeof parse>;
export type Expr = ParsedExpression['expr'];
type Constant = Extract<Expr['exprKind'], { case: 'constExpr' }>['value'];

/** A CEL type: a scalar, list or map by name ('int', 'list', ...), or one of the fixed object types below. */
export type StaticType = string | RecordType;

export interface RecordType {
  name: string;
  fields: Readonly<Record<string, StaticType>>;
}

export const DYN = 'dyn';
/** The type of what was already reported as an error: what is built on it is not reported again. */
const REPORTED = '!reported';

const GROUP_VERSION_KIND: RecordType = {
  name: 'kubernetes.GroupVersionKind',
  fields: { group: 'string', version: 'string', kind: 'string' },
};
const GROUP_VERSION_RESOURCE: RecordType = {
  name: 'kubernetes.GroupVersionResource',
  fields: { group: 'string', version: 'string', resource: 'string' },
};

/** kube's BuildRequestType: the AdmissionRequest fields CEL sees (no uid, object or oldObject). */
export const REQUEST_TYPE: RecordType = {
  name: 'kubernetes.AdmissionRequest',
  fields: {
    kind: GROUP_VERSION_KIND,
    resource: GROUP_VERSION_RESOURCE,
    subResource: 'string',
    requestKind: GROUP_VERSION_KIND,
    requestResource: GROUP_VERSION_RESOURCE,
    requestSubResource: 'string',
    name: 'string',
    namespace: 'string',
    operation: 'string',
    userInfo: {
      name: 'kubernetes.UserInfo',
      fields: { username: 'string', uid: 'string', groups: 'list', extra: 'map' },
    },
    dryRun: 'bool',
    options: DYN,
  },
};

export function typeName(t: StaticType): string {
  return typeof t === 'string' ? t : t.name;
}

/** A declared variable this server does not provide yet: referring to it is refused with `why`. */
export interface Unsupported {
  unsupported: string;
}

export interface CheckInput {
  source: string;
  parsed: ParsedExpression;
  variables: ReadonlyMap<string, StaticType | Unsupported>;
  /** The environment's functions, and the environment constant arguments are checked in. */
  functions: Iterable<CelFunc>;
  env: CelEnv;
}

/** The expression's type, or cel-go style messages (`ERROR: <input>:1:5: ...` and the line pointed at). */
export function checkExpression(input: CheckInput): { type: StaticType } | { errors: string[] } {
  const checker = new Checker(input);
  const type = checker.check(input.parsed.expr);
  return checker.errors.length ? { errors: checker.errors } : { type };
}

interface Signature {
  /** The type a method is called on; undefined for a function. */
  target: StaticType | undefined;
  args: StaticType[];
  result: StaticType;
}

/** The functions whose constant argument kube checks when compiling (ValidateRegexLiterals and the like). */
const LITERAL_FUNCTIONS = new Set(['matches', 'duration', 'timestamp']);

const TYPE_NAMES = new Set([
  'bool',
  'int',
  'uint',
  'double',
  'string',
  'bytes',
  'list',
  'map',
  'null_type',
  'type',
  'dyn',
]);

class Checker {
  readonly errors: string[] = [];
  private readonly signatures = new Map<string, Signature[]>();
  private readonly scopes: Map<string, StaticType>[] = [];

  constructor(private readonly input: CheckInput) {
    for (const f of input.functions) {
      const list = this.signatures.get(f.name) ?? [];
      list.push({
        target: f.target && fromCelType(f.target),
        args: f.arguments.map(fromCelType),
        result: fromCelType(f.result),
      });
      this.signatures.set(f.name, list);
    }
  }

  check(e: Expr): StaticType {
    const kind = e.exprKind;
    switch (kind.case) {
      case 'constExpr':
        return constType(kind.value);
      case 'identExpr':
        return this.ident(e, kind.value.name);
      case 'selectExpr': {
        const operand = kind.value.operand;
        if (!operand) return DYN;
        const type = this.check(operand);
        const field = this.field(e, type, kind.value.field);
        return kind.value.testOnly ? 'bool' : field;
      }
      case 'callExpr':
        return this.call(e, kind.value.function, kind.value.target, kind.value.args);
      case 'listExpr':
        this.homogeneous(kind.value.elements, 'list element');
        return 'list';
      case 'structExpr': {
        const entries = kind.value.entries;
        if (kind.value.messageName) {
          for (const entry of entries) if (entry.value) this.check(entry.value);
          return kind.value.messageName;
        }
        this.homogeneous(
          entries.flatMap((entry) => (entry.keyKind.case === 'mapKey' ? [entry.keyKind.value] : [])),
          'map key',
        );
        this.homogeneous(
          entries.flatMap((entry) => (entry.value ? [entry.value] : [])),
          'map value',
        );
        return 'map';
      }
      case 'comprehensionExpr': {
        const c = kind.value;
        if (!c.iterRange || !c.accuInit || !c.loopCondition || !c.loopStep || !c.result) return DYN;
        const range = this.check(c.iterRange);
        if (typeof range !== 'string' || !['list', 'map', DYN, REPORTED].includes(range))
          this.error(c.iterRange, `expression of type '${typeName(range)}' cannot be range of a comprehension`);
        const accu = this.check(c.accuInit);
        const scope = new Map<string, StaticType>([
          [c.accuVar, accu],
          [c.iterVar, DYN],
        ]);
        if (c.iterVar2) scope.set(c.iterVar2, DYN);
        this.scopes.push(scope);
        try {
          this.check(c.loopCondition);
          this.check(c.loopStep);
          scope.delete(c.iterVar);
          if (c.iterVar2) scope.delete(c.iterVar2);
          return this.check(c.result);
        } finally {
          this.scopes.pop();
        }
      }
      default:
        return DYN;
    }
  }

  private ident(e: Expr, name: string): StaticType {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const type = this.scopes[i].get(name);
      if (type !== undefined) return type;
    }
    const declared = this.input.variables.get(name);
    if (declared !== undefined) {
      if (typeof declared === 'object' && 'unsupported' in declared) {
        this.error(e, declared.unsupported);
        return REPORTED;
      }
      return declared;
    }
    if (TYPE_NAMES.has(name)) return 'type';
    this.error(e, `undeclared reference to '${name}' (in container '')`);
    return REPORTED;
  }

  private field(e: Expr, type: StaticType, field: string): StaticType {
    if (type === REPORTED) return REPORTED;
    if (typeof type === 'object') {
      const fieldType = type.fields[field];
      if (fieldType === undefined) this.error(e, `undefined field '${field}'`);
      return fieldType ?? DYN;
    }
    if (type === DYN || type === 'map') return DYN;
    this.error(e, `type '${type}' does not support field selection`);
    return DYN;
  }

  private call(e: Expr, name: string, target: Expr | undefined, args: Expr[]): StaticType {
    // A qualified function name (`sets.contains(...)`) reads like a call on a variable.
    const qualified = target && qualifiedName(target);
    if (qualified !== undefined && !this.isVariable(qualified)) {
      const full = `${qualified}.${name}`;
      if (this.signatures.has(full))
        return this.resolve(
          e,
          full,
          undefined,
          args.map((arg) => this.check(arg)),
        );
      if (UNSUPPORTED_FUNCTIONS.has(full)) return this.unsupported(e, full);
    }
    const targetType = target ? this.check(target) : undefined;
    if (targetType === REPORTED) return REPORTED;
    // Before the arguments, which may be a comprehension's variables (all(k, v, ...)).
    if (!this.signatures.has(name) && UNSUPPORTED_FUNCTIONS.has(name)) return this.unsupported(e, name);
    const argTypes = args.map((arg) => this.check(arg));
    if (argTypes.includes(REPORTED)) return REPORTED;
    switch (name) {
      case '_&&_':
      case '_||_':
      case '!_':
        if (argTypes.some((t) => t !== 'bool' && t !== DYN)) this.noOverload(e, name, undefined, argTypes);
        return 'bool';
      case '@not_strictly_false':
        return 'bool';
      case '_?_:_': {
        const [cond, a, b] = argTypes;
        if (cond !== 'bool' && cond !== DYN) this.noOverload(e, name, undefined, argTypes);
        if (typeName(a) === typeName(b)) return a;
        if (a !== DYN && b !== DYN && a !== 'null_type' && b !== 'null_type')
          this.noOverload(e, name, undefined, argTypes);
        return DYN;
      }
      case '_[_]':
      case '_[?_]':
        return DYN;
      case '_==_':
      case '_!=_': {
        const [a, b] = argTypes;
        if (concrete(a) && concrete(b) && typeName(a) !== typeName(b) && !(a === 'map' && typeof b === 'object'))
          this.noOverload(e, name, undefined, argTypes);
        return 'bool';
      }
    }
    this.literal(e, name, target, args);
    return this.resolve(e, name, targetType, argTypes);
  }

  /** kube's literal validators: a constant regex, duration or timestamp must be valid when compiled. */
  private literal(e: Expr, name: string, target: Expr | undefined, args: Expr[]): void {
    const arg = args[0];
    const method = name === 'matches';
    if (!LITERAL_FUNCTIONS.has(name) || args.length !== 1 || (target !== undefined) !== method) return;
    if (arg.exprKind.case !== 'constExpr' || arg.exprKind.value.constantKind.case !== 'stringValue') return;
    // The call itself when it is all constant; for matches(), the pattern applied to an empty string.
    const result = method
      ? this.input.env.funcs.find(name)?.call(0, '', [arg.exprKind.value.constantKind.value])
      : plan(this.input.env, e)();
    if (result !== undefined && isCelError(result)) this.error(arg, `invalid ${name} argument: ${result.message}`);
  }

  private resolve(e: Expr, name: string, target: StaticType | undefined, args: StaticType[]): StaticType {
    const candidates = (this.signatures.get(name) ?? []).filter(
      (s) => (s.target !== undefined) === (target !== undefined),
    );
    if (!candidates.length) {
      if (UNSUPPORTED_FUNCTIONS.has(name)) return this.unsupported(e, name);
      this.error(e, `undeclared reference to '${name}' (in container '')`);
      return REPORTED;
    }
    const all = target === undefined ? args : [target, ...args];
    const matching = candidates.filter((s) => {
      const params = s.target === undefined ? s.args : [s.target, ...s.args];
      return params.length === all.length && params.every((p, i) => fits(all[i], p));
    });
    if (!matching.length) {
      this.noOverload(e, name, target, args);
      return DYN;
    }
    const results = new Set(matching.map((s) => typeName(s.result)));
    return results.size === 1 ? matching[0].result : DYN;
  }

  private unsupported(e: Expr, name: string): StaticType {
    const library = UNSUPPORTED_FUNCTIONS.get(name);
    this.error(e, `function '${name}' (${library}, in Kubernetes' CEL environment) is not supported by this server`);
    return REPORTED;
  }

  private isVariable(name: string): boolean {
    return this.input.variables.has(name) || this.scopes.some((scope) => scope.has(name));
  }

  private homogeneous(elements: Expr[], what: string): void {
    let first: StaticType | undefined;
    for (const element of elements) {
      const type = this.check(element);
      if (!concrete(type)) continue;
      if (first === undefined) first = type;
      else if (typeName(first) !== typeName(type))
        this.error(element, `expected type '${typeName(first)}' but found '${typeName(type)}' (${what})`);
    }
  }

  private noOverload(e: Expr, name: string, target: StaticType | undefined, args: StaticType[]): void {
    const on = target === undefined ? '' : `${typeName(target)}.`;
    this.error(e, `found no matching overload for '${name}' applied to '${on}(${args.map(typeName).join(', ')})'`);
  }

  private error(e: Expr, message: string): void {
    const offset = this.input.parsed.sourceInfo?.positions[String(e.id)] ?? 0;
    this.errors.push(pointAt(this.input.source, offset, message));
  }
}

/** cel-go's error form: `ERROR: <input>:line:column: message`, the line, and a caret under the column. */
export function pointAt(source: string, offset: number, message: string): string {
  const before = [...source.slice(0, offset)];
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.filter((c) => c === '\n').length + 1;
  const column = before.length - lineStart;
  const text = source.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${column + 1}: ${message}\n | ${text}\n | ${'.'.repeat(column)}^`;
}

function qualifiedName(e: Expr): string | undefined {
  if (e.exprKind.case === 'identExpr') return e.exprKind.value.name;
  if (e.exprKind.case === 'selectExpr' && !e.exprKind.value.testOnly && e.exprKind.value.operand) {
    const parent = qualifiedName(e.exprKind.value.operand);
    return parent === undefined ? undefined : `${parent}.${e.exprKind.value.field}`;
  }
  return undefined;
}

function constType(c: Constant): StaticType {
  switch (c.constantKind.case) {
    case 'boolValue':
      return 'bool';
    case 'int64Value':
      return 'int';
    case 'uint64Value':
      return 'uint';
    case 'doubleValue':
      return 'double';
    case 'stringValue':
      return 'string';
    case 'bytesValue':
      return 'bytes';
    case 'nullValue':
      return 'null_type';
    default:
      return DYN;
  }
}

function fromCelType(t: CelType): StaticType {
  return t.kind === 'list' || t.kind === 'map' ? t.kind : t.name;
}

/** A type known well enough to refuse a mismatch: not dyn, and not null (which CEL compares with anything). */
function concrete(t: StaticType): boolean {
  return t !== DYN && t !== 'null_type' && t !== REPORTED;
}

function fits(actual: StaticType, param: StaticType): boolean {
  if (actual === DYN || actual === REPORTED || param === DYN) return true;
  return actual === param;
}
