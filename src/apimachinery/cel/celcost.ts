/**
 * The runtime cost of a CEL evaluation, bounded as kube bounds it (cel-go's cost tracking, with kube's
 * PerCallLimit per expression and a budget per request). @bufbuild/cel tracks no cost, so it is counted at the
 * two places evaluation can spend time without end: every function call (charged before it runs by the size of
 * what it is given, and after by the size of what it made), and every comprehension (charged for its range, and
 * for each iteration by the size of the loop's body), through calls inserted into the syntax tree. Everything
 * else an evaluation does is bounded by the size of the expression. The counts are not cel-go's to the unit:
 * a call costs 1, plus a tenth of the length of each string, or the size of each list or map, it is given or
 * returns (all of a value's nested content when it is compared for equality); an iteration costs the number of
 * nodes of the loop's body that are not such calls. Appending to a list is charged by the size of the result, so
 * map() and filter() cost the square of the list's length (cel-go appends in place: kube allows longer lists).
 */
import { isCelList, isCelMap, type CelEnv, type CelFunc, type CelResult, type CelValue } from '@bufbuild/cel';
import type { Expr } from './celcheck.js';

/** kube's PerCallLimit: the most one expression may cost. */
export const PER_CALL_LIMIT = 1_000_000;
/** kube's RuntimeCELCostBudgetMatchConditions: what all of one webhook's matchConditions may cost together. */
export const MATCH_CONDITIONS_BUDGET = 2_500_000;
/** kube's RuntimeCELCostBudget: what a ValidatingAdmissionPolicyBinding's expressions may cost per request. */
export const VALIDATION_BUDGET = 10_000_000;

/**
 * Thrown from around a function, not inside it: @bufbuild/cel turns what a function throws into a CEL error, which
 * `||` or `&&` could absorb; this unwinds the whole evaluation instead.
 */
export class CostLimitExceeded extends Error {
  constructor() {
    super('operation cancelled: actual cost limit exceeded');
  }
}

export class CostTracker {
  cost = 0;
  exceeded = false;

  constructor(readonly limit: number) {}

  get remaining(): number {
    return this.limit - this.cost;
  }

  add(units: number): void {
    this.cost += units;
    if (this.cost > this.limit) {
      this.exceeded = true;
      throw new CostLimitExceeded();
    }
  }
}

// Evaluation is synchronous: the tracker of the evaluation under way is the one its functions charge.
let current: CostTracker | undefined;

export function trackingCost<T>(tracker: CostTracker, evaluate: () => T): T {
  const outer = current;
  current = tracker;
  try {
    return evaluate();
  } finally {
    current = outer;
  }
}

const TICK = '@admission.tick';
const RANGE = '@admission.range';

/** Functions that compare whole values: they are charged for all the values hold. */
const DEEP = new Set([
  '_==_',
  '_!=_',
  '@in',
  'indexOf',
  'lastIndexOf',
  'sets.contains',
  'sets.equivalent',
  'sets.intersects',
]);
/** Functions that look at no more than the values themselves (`+` is charged for what it makes). */
const FLAT = new Set(['size', 'type', 'dyn', '_+_']);

/** The environment, its functions charging the evaluation's tracker, and the two counting calls added. */
export function costedEnv(env: CelEnv): CelEnv {
  const inner = env.funcs;
  const groups = new Map<string, FuncGroup>([
    [TICK, counter(TICK, (args) => Number(args[1]))],
    [RANGE, counter(RANGE, (args) => 1 + shallowSize(args[0]))],
  ]);
  const funcs = {
    [Symbol.iterator]: () => inner[Symbol.iterator](),
    find(name: string): FuncGroup | undefined {
      let group = groups.get(name);
      if (!group) {
        const found = inner.find(name);
        if (!found) return undefined;
        group = charged(found);
        groups.set(name, group);
      }
      return group;
    },
  };
  // The environment's own namespace and registry, with these functions.
  return Object.create(env, { funcs: { value: funcs } }) as CelEnv;
}

type FuncGroup = NonNullable<ReturnType<CelEnv['funcs']['find']>>;

/** A call that charges `units` and gives back its first argument. */
function counter(name: string, units: (args: CelValue[]) => number): FuncGroup {
  return {
    name,
    *[Symbol.iterator](): IterableIterator<CelFunc> {},
    call(_id: number, _target: CelValue | undefined, args: CelValue[]): CelResult {
      current?.add(units(args));
      return args[0];
    },
  };
}

function charged(group: FuncGroup): FuncGroup {
  const size = DEEP.has(group.name) ? deepSize : FLAT.has(group.name) ? () => 0 : shallowSize;
  return {
    name: group.name,
    [Symbol.iterator]: () => group[Symbol.iterator](),
    call(id: number, target: CelValue | undefined, args: CelValue[]): CelResult | undefined {
      const tracker = current;
      if (!tracker) return group.call(id, target, args);
      let units = 1;
      for (const value of target === undefined ? args : [target, ...args])
        // A key is looked up in a map, not compared with all it holds.
        units += isCelMap(value) && group.name === '@in' ? 0 : size(value, tracker.remaining - units);
      // A replacement may make a string far longer than those it is given: charged before it is made.
      if (group.name === 'replace' && typeof target === 'string' && typeof args[1] === 'string')
        units += Math.ceil(((target.length + 1) * args[1].length) / 10);
      tracker.add(units);
      const result = group.call(id, target, args);
      if (result !== undefined) tracker.add(shallowSize(result as CelValue));
      return result;
    },
  };
}

function shallowSize(value: CelValue): number {
  if (typeof value === 'string') return Math.ceil(value.length / 10);
  if (value instanceof Uint8Array) return Math.ceil(value.length / 10);
  if (isCelList(value) || isCelMap(value)) return value.size;
  return 0;
}

/** All a value holds, counted no further than `cap` (beyond it, the evaluation stops anyway). */
function deepSize(value: CelValue, cap: number): number {
  let size = shallowSize(value);
  if (isCelList(value)) {
    for (const item of value) {
      if (size > cap) break;
      size += deepSize(item, cap - size);
    }
  } else if (isCelMap(value)) {
    for (const [key, item] of value) {
      if (size > cap) break;
      size += shallowSize(key as CelValue) + deepSize(item, cap - size);
    }
  }
  return size;
}

/**
 * The syntax tree with its comprehensions counted: their range is passed through RANGE, and their loop condition,
 * evaluated before each iteration, through TICK with the size of the loop's body. Changes `expr` in place.
 */
export function countComprehensions(expr: Expr): Expr {
  let nextId = maxId(expr) + 1n;
  const call = (fn: string, args: Expr[]): Expr =>
    ({
      $typeName: 'cel.expr.Expr',
      id: nextId++,
      exprKind: { case: 'callExpr', value: { $typeName: 'cel.expr.Expr.Call', function: fn, args } },
    }) as Expr;
  const int = (n: number): Expr =>
    ({
      $typeName: 'cel.expr.Expr',
      id: nextId++,
      exprKind: {
        case: 'constExpr',
        value: { $typeName: 'cel.expr.Constant', constantKind: { case: 'int64Value', value: BigInt(n) } },
      },
    }) as Expr;
  const visit = (e: Expr): void => {
    for (const child of children(e)) visit(child);
    if (e.exprKind.case !== 'comprehensionExpr') return;
    const c = e.exprKind.value;
    if (!c.iterRange || !c.loopCondition || !c.loopStep) return;
    c.iterRange = call(RANGE, [c.iterRange]);
    c.loopCondition = call(TICK, [c.loopCondition, int(uncharged(c.loopStep))]);
  };
  visit(expr);
  return expr;
}

export function children(e: Expr): Expr[] {
  const kind = e.exprKind;
  switch (kind.case) {
    case 'selectExpr':
      return kind.value.operand ? [kind.value.operand] : [];
    case 'callExpr':
      return [...(kind.value.target ? [kind.value.target] : []), ...kind.value.args];
    case 'listExpr':
      return kind.value.elements;
    case 'structExpr':
      return kind.value.entries.flatMap((entry) => [
        ...(entry.keyKind.case === 'mapKey' ? [entry.keyKind.value] : []),
        ...(entry.value ? [entry.value] : []),
      ]);
    case 'comprehensionExpr': {
      const c = kind.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].filter((x): x is Expr => !!x);
    }
    default:
      return [];
  }
}

/** Operators the evaluator runs itself, not through the (charged) functions. */
const BUILT_IN = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '_[?_]', '@not_strictly_false']);

/** The nodes of a loop's body that no function call charges for (the calls themselves are charged when made). */
function uncharged(e: Expr): number {
  const charged = e.exprKind.case === 'callExpr' && !BUILT_IN.has(e.exprKind.value.function);
  return (charged ? 0 : 1) + children(e).reduce((sum, child) => sum + uncharged(child), 0);
}

function maxId(e: Expr): bigint {
  return children(e).reduce((max, child) => {
    const id = maxId(child);
    return id > max ? id : max;
  }, e.id);
}
