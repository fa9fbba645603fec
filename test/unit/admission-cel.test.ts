import { describe, expect, test } from '@jest/globals';
import { getConformanceSuite } from '@bufbuild/cel-spec/testdata/tests.js';
import {
  admissionActivation,
  compileAdmissionExpression,
  evaluate,
  isCompileError,
  MATCH_CONDITION_VARIABLES,
  MATCH_CONDITIONS_BUDGET,
  PER_CALL_LIMIT,
  type AdmissionActivation,
  type AdmissionCelVariable,
  type CompileOptions,
  type CompiledExpression,
} from '../../src/apimachinery/cel/cel.js';
import type { AdmissionAttributes } from '../../src/apimachinery/admission.js';

function attributes(overrides: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return {
    operation: 'CREATE',
    group: 'management.platform.sh',
    version: 'v1',
    kind: 'Project',
    resource: 'projects',
    subresource: '',
    namespace: 'team-a',
    name: 'web',
    object: {
      apiVersion: 'management.platform.sh/v1',
      kind: 'Project',
      metadata: { name: 'web', namespace: 'team-a', labels: { env: 'prod' } },
      spec: { replicas: 3, ratio: 0.5, enabled: true, regions: ['eu-west', 'us-east'] },
    },
    user: { name: 'alice', uid: 'u-1', groups: ['system:authenticated', 'team-a-admins'], extra: { scopes: ['x'] } },
    dryRun: false,
    warnings: [],
    auditAnnotations: {},
    ...overrides,
  };
}

function compiled(
  expression: string,
  vars: readonly AdmissionCelVariable[] = MATCH_CONDITION_VARIABLES,
  options?: CompileOptions,
): CompiledExpression {
  const result = compileAdmissionExpression(expression, vars, options);
  if (isCompileError(result)) throw new Error(`${expression}: ${result.error}`);
  return result;
}

function compileError(expression: string, vars: readonly AdmissionCelVariable[] = MATCH_CONDITION_VARIABLES): string {
  const result = compileAdmissionExpression(expression, vars);
  if (!isCompileError(result)) throw new Error(`${expression} compiled`);
  return result.error;
}

function run(expression: string, activation: AdmissionActivation = admissionActivation(attributes())): unknown {
  const result = evaluate(compiled(expression), activation);
  if ('error' in result) throw new Error(result.error);
  return result.value;
}

function runError(expression: string, activation: AdmissionActivation = admissionActivation(attributes())): string {
  const result = evaluate(compiled(expression), activation);
  if (!('error' in result)) throw new Error(`${expression} gave ${String(result.value)}`);
  return result.error;
}

describe('matchCondition expressions that compile and hold', () => {
  test.each([
    "object.metadata.name == 'web'",
    "object.metadata.labels['env'] == 'prod'",
    'has(object.spec.replicas) && !has(object.spec.paused)',
    'has(object.metadata.labels) && !has(object.metadata.annotations)',
    // JSON integers are CEL ints, other numbers doubles, as kube decodes them.
    'object.spec.replicas == 3 && type(object.spec.replicas) == int',
    'object.spec.ratio == 0.5 && type(object.spec.ratio) == double',
    'object.spec.replicas > 2.5',
    'object.spec.enabled == true',
    "object.spec.regions.exists(r, r.startsWith('eu-'))",
    'object.spec.regions.all(r, r.size() > 3)',
    "object.spec.regions.map(r, r.upperAscii()) == ['EU-WEST', 'US-EAST']",
    'oldObject == null',
    "request.operation == 'CREATE' && request.dryRun == false",
    "request.kind.group == 'management.platform.sh' && request.kind.version == 'v1' && request.kind.kind == 'Project'",
    "request.resource.resource == 'projects' && request.requestResource.resource == 'projects'",
    "request.requestKind.kind == 'Project'",
    "request.name == 'web' && request.namespace == 'team-a'",
    "request.userInfo.username == 'alice' && request.userInfo.uid == 'u-1'",
    "'team-a-admins' in request.userInfo.groups && !('system:masters' in request.userInfo.groups)",
    "request.userInfo.extra == {'scopes': ['x']}",
    'request.options == null',
  ])('%s', (expression) => {
    expect(run(expression)).toBe(true);
  });

  test('a condition that does not hold is false, not an error', () => {
    expect(run("object.metadata.name == 'db'")).toBe(false);
    expect(run("'system:masters' in request.userInfo.groups")).toBe(false);
  });

  test('on DELETE object is null and oldObject the stored object', () => {
    const attrs = attributes({ operation: 'DELETE', oldObject: attributes().object, object: undefined });
    const activation = admissionActivation(attrs);
    expect(run("object == null && oldObject.metadata.name == 'web'", activation)).toBe(true);
    expect(run("request.operation == 'DELETE'", activation)).toBe(true);
  });

  test('request.options is the operation options given', () => {
    const activation = admissionActivation(attributes(), {
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', fieldManager: 'kubectl' },
    });
    expect(run("request.options.fieldManager == 'kubectl'", activation)).toBe(true);
  });
});

describe('expressions refused when compiled, with the reason', () => {
  test('a syntax error points at where it is', () => {
    expect(compileError("'asdf'.contains('x'")).toBe(
      "compilation failed: ERROR: <input>:1:7: Syntax error: found . but expecting end of input\n | 'asdf'.contains('x'\n | ......^",
    );
  });

  test('an undeclared variable, as kube words it', () => {
    expect(compileError('object.foo < invalid.x')).toBe(
      "compilation failed: ERROR: <input>:1:14: undeclared reference to 'invalid' (in container '')\n | object.foo < invalid.x\n | .............^",
    );
    // params exists only where declared (a policy with a paramKind), not for webhooks.
    expect(compileError('object.foo == params.x')).toContain("undeclared reference to 'params'");
    expect(compiled('object.foo == params.x', ['object', 'params']).type).toBe('bool');
  });

  test('request is typed: an unknown field is refused', () => {
    for (const [expression, field] of [
      ["request.foo1 == 'nope'", 'foo1'],
      ["request.resource.foo2 == 'nope'", 'foo2'],
      ["request.requestKind.foo3 == 'nope'", 'foo3'],
      ["request.userInfo.foo5 == 'nope'", 'foo5'],
    ])
      expect(compileError(expression)).toContain(`undefined field '${field}'`);
    expect(compileError('request.uid == "x"')).toContain("undefined field 'uid'");
    expect(compileError('request.object == null')).toContain("undefined field 'object'");
  });

  test('an operator applied to types it does not take', () => {
    expect(compileError("1 < 'asdf'")).toContain("found no matching overload for '_<_' applied to '(int, string)'");
    expect(compileError('request.name == 1')).toContain(
      "found no matching overload for '_==_' applied to '(string, int)'",
    );
    expect(compileError('request.name.startsWith(1)')).toContain(
      "found no matching overload for 'startsWith' applied to 'string.(int)'",
    );
    expect(compileError("[1, 'a'].size() == 2")).toContain("expected type 'int' but found 'string'");
  });

  test('a matchCondition must evaluate to bool, and dyn is not bool', () => {
    expect(compileError('object.spec.enabled')).toBe('must evaluate to bool but got dyn');
    expect(compileError('request.name')).toBe('must evaluate to bool but got string');
    expect(compileError('object.spec.replicas + 1 > 2 ? 1 : 0')).toBe('must evaluate to bool but got int');
    expect(compiled('object.spec.enabled == true').type).toBe('bool');
    // Other uses say what they allow.
    expect(compiled('request.name', MATCH_CONDITION_VARIABLES, { returnTypes: ['string'] }).type).toBe('string');
  });

  test('the authorizer is declared but not supported here', () => {
    const error = compileError("authorizer.group('').resource('projects').check('create').allowed()");
    expect(error).toContain("'authorizer' is not supported by this server");
    // Reported once, not again for each method called on it.
    expect(error.match(/ERROR:/g)).toHaveLength(1);
    // Where it is not declared at all, kube's own words.
    expect(compileError("authorizer.group('') != null", ['object', 'oldObject', 'request'])).toContain(
      "undeclared reference to 'authorizer'",
    );
  });

  test("a function of one of kube's libraries this server lacks says so", () => {
    expect(compileError("url(object.spec.endpoint).getHostname() == 'x'")).toContain(
      "function 'url' (URL library, in Kubernetes' CEL environment) is not supported by this server",
    );
    expect(compileError("quantity(object.spec.cpu).isGreaterThan(quantity('1'))")).toContain(
      "function 'quantity' (quantity library, in Kubernetes' CEL environment) is not supported by this server",
    );
    expect(compileError('optional.of(1) == optional.none()')).toContain(
      "function 'optional.of' (optional types, in Kubernetes' CEL environment) is not supported by this server",
    );
    // Said once, not again for the comprehension's variables.
    const twoVariables = compileError('object.spec.regions.all(i, r, r != "")');
    expect(twoVariables).toContain("function 'all' (two-variable comprehensions, in Kubernetes' CEL environment)");
    expect(twoVariables.match(/ERROR:/g)).toHaveLength(1);
    expect(compileError("object.?spec.orValue('') == ''")).toContain(
      'optional field selection, .? and [?, is not supported by this server',
    );
    expect(compileError('nosuch(1) == 1')).toContain("undeclared reference to 'nosuch'");
  });

  test('constant regular expressions and durations are checked', () => {
    expect(compileError("request.name.matches('[')")).toContain('invalid matches argument: error parsing regexp');
    expect(compileError("duration('1x') > duration('1s')")).toContain('invalid duration argument');
    expect(compiled("duration('1h') > duration('1s')").type).toBe('bool');
  });

  test('an expression too long, or nested too deeply', () => {
    const long = `request.name == '${'x'.repeat(100_000)}'`;
    expect(compileError(long)).toBe(
      `compilation failed: expression code point size exceeds limit: size: ${long.length}, limit 100000`,
    );
    expect(compileError(`${'['.repeat(300)}true${']'.repeat(300)}.size() == 1`)).toContain(
      'nesting exceeds the limit of 250',
    );
    expect(compileError(`${'('.repeat(10_000)}true${')'.repeat(10_000)}`)).toContain('nesting exceeds the limit');
  });
});

describe('errors when evaluated are errors, never false', () => {
  test('a missing key', () => {
    expect(runError('object.spec.missing == 1')).toBe(
      "expression 'object.spec.missing == 1' resulted in error: no such key: missing",
    );
    // CEL's || and && absorb an error only when the other side decides.
    expect(runError('object.spec.missing == 1 || false')).toContain('no such key: missing');
    expect(run('object.spec.missing == 1 || true')).toBe(true);
  });

  test('oldObject is null on CREATE: reading it is an error', () => {
    expect(runError("oldObject.metadata.name == 'web'")).toContain('resulted in error');
    expect(run("oldObject == null || oldObject.metadata.name == 'web'")).toBe(true);
  });

  test('empty request fields are absent, as in kube (omitempty)', () => {
    const clusterScoped = admissionActivation(attributes({ namespace: '', subresource: '' }));
    expect(runError("request.namespace == ''", clusterScoped)).toContain('no such key: namespace');
    expect(run('!has(request.namespace) && !has(request.subResource)', clusterScoped)).toBe(true);
    const noUid = admissionActivation(attributes({ user: { name: 'bob', groups: ['system:authenticated'] } }));
    expect(run('!has(request.userInfo.uid) && !has(request.userInfo.extra)', noUid)).toBe(true);
  });

  test('a type error, and arithmetic errors', () => {
    expect(runError('object.metadata.name + 1 == 2')).toContain("found no matching overload for '_+_'");
    expect(runError('object.spec.replicas / 0 == 1')).toContain('divide by zero');
    expect(runError("object.spec.regions[5] == 'x'")).toContain('resulted in error');
  });
});

describe('functions', () => {
  test.each([
    "'ABC'.lowerAscii() == 'abc' && 'abc'.upperAscii() == 'ABC'",
    "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab'",
    "'hello'.startsWith('he') && 'hello'.endsWith('lo') && 'hello'.contains('ell')",
    "'aaa'.replace('a', 'b') == 'bbb' && 'aaa'.replace('a', 'b', 1) == 'baa' && 'ab'.replace('', '-') == '-a-b-'",
    "' x '.trim() == 'x' && 'hello'.substring(1, 3) == 'el' && 'hello'.indexOf('l') == 2 && 'hello'.charAt(1) == 'e'",
    "'%s has %d'.format(['web', 3]) == 'web has 3'".replace("['web', 3]", "['web', dyn(3)]"),
    "'web-1'.matches('^[a-z]+-[0-9]$') && matches('web', 'w')",
    '[1, 2, 3].isSorted() && ![2, 1].isSorted()',
    '[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0 && [1u, 2u].sum() == 3u',
    "[duration('1m'), duration('1s')].sum() == duration('61s')",
    "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ['b', 'a'].min() == 'a'",
    '[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(5) == -1',
    'sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])',
    'sets.equivalent([1, 2, 2], [2, 1]) && sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])',
    '[1, 2, 3].filter(x, x > 1) == [2, 3] && [1, 2, 3].exists_one(x, x == 2)',
    "size('abc') == 3 && int('12') == 12 && string(12) == '12' && double(1) == 1.0",
    "timestamp('2024-01-01T00:00:00Z') + duration('1h') > timestamp('2024-01-01T00:30:00Z')",
  ])('%s', (expression) => {
    expect(run(expression)).toBe(true);
  });

  test('min of an empty list, or a sum too large for an int, is an error', () => {
    expect(runError('[].min() == 1')).toContain('min called on empty list');
    expect(runError('[9223372036854775807, 1].sum() == 0')).toContain('overflow');
  });
});

describe('cost', () => {
  function withList(length: number): AdmissionActivation {
    const attrs = attributes();
    return admissionActivation({
      ...attrs,
      object: { ...attrs.object!, spec: { items: Array.from({ length }, (_, i) => i), text: 'x'.repeat(length) } },
    });
  }

  test('an expression costing more than the per-call limit stops with kube’s error', () => {
    const activation = withList(10_000);
    const expression = 'object.spec.items.all(x, object.spec.items.all(y, x + y >= 0))';
    const started = Date.now();
    const result = evaluate(compiled(expression), activation);
    expect(result).toEqual({
      error: `expression '${expression}' resulted in error: operation cancelled: actual cost limit exceeded`,
      cost: expect.any(Number),
    });
    expect(result.cost).toBeGreaterThan(PER_CALL_LIMIT);
    expect(result.cost).toBeLessThan(PER_CALL_LIMIT * 1.1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('iterations are counted even where the body calls nothing', () => {
    const ten = '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]';
    let expression = 'true';
    for (const v of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) expression = `${ten}.all(${v}, ${expression})`;
    expect(runError(expression)).toContain('actual cost limit exceeded');
  });

  test('work on long strings and deep comparisons is counted by their size', () => {
    const activation = withList(100_000);
    expect(runError("object.spec.items.all(i, !object.spec.text.contains('y'))", activation)).toContain(
      'actual cost limit exceeded',
    );
    expect(runError('object.spec.items.all(i, object.spec.items == object.spec.items)', activation)).toContain(
      'actual cost limit exceeded',
    );
    // A replacement is charged for the string it would make, before making it.
    expect(runError("object.spec.text.replace('', object.spec.text).size() > 0", activation)).toContain(
      'actual cost limit exceeded',
    );
  });

  test('an ordinary expression costs little, and the same every time', () => {
    const expression = compiled("object.spec.regions.exists(r, r.startsWith('us-'))");
    const first = evaluate(expression, admissionActivation(attributes()));
    expect(first).toEqual({ value: true, cost: expect.any(Number) });
    expect(first.cost).toBeLessThan(100);
    expect(evaluate(expression, admissionActivation(attributes())).cost).toBe(first.cost);
  });

  test('a request’s budget is shared by its expressions, and running out stops them', () => {
    const activation = withList(100_000);
    const expression = compiled('object.spec.items.all(x, x >= 0)');
    const budget = { remaining: MATCH_CONDITIONS_BUDGET };
    const results = [1, 2, 3, 4, 5].map(() => evaluate(expression, activation, budget));
    expect(results.slice(0, 4).map((r) => 'value' in r && r.value)).toEqual([true, true, true, true]);
    expect(results[4]).toEqual({
      error: 'validation failed due to running out of cost budget, no further validation rules will be run',
      cost: expect.any(Number),
      budgetExhausted: true,
    });
    expect(budget.remaining).toBe(0);
  });
});

describe('a sample of the CEL conformance tests', () => {
  // The sections of cel-spec's conformance data that use only what kube's environment has; the expressions are
  // the ones without variables. Mixed-type literals are refused when compiled, as kube's
  // HomogeneousAggregateLiterals refuses them, and protobuf wrapper types are not declared in kube's environment.
  const SECTIONS = [
    'basic',
    'comparisons',
    'conversions',
    'fp_math',
    'integer_math',
    'lists',
    'logic',
    'macros',
    'string',
  ];
  type Suite = ReturnType<typeof getConformanceSuite>;
  type Test = Suite['tests'][number];
  function* walk(suite: { name: string; suites: Suite[]; tests: Test[] }, path: string): Generator<[string, Test]> {
    for (const t of suite.tests) yield [`${path}/${t.name}`, t];
    for (const sub of suite.suites) yield* walk(sub, `${path}/${sub.name}`);
  }
  const cases: [string, Test][] = [];
  for (const section of getConformanceSuite().suites.filter((s) => SECTIONS.includes(s.name)))
    for (const [name, t] of walk(section, section.name)) {
      const o = t.original;
      if (o.typeEnv.length || Object.keys(o.bindings).length || o.disableCheck || o.checkOnly || o.container) continue;
      if (o.disableMacros || o.expr.includes('google.protobuf.')) continue;
      cases.push([name, t]);
    }

  test(`${SECTIONS.join(', ')}: the expected value or error`, () => {
    expect(cases.length).toBeGreaterThan(500);
    const wrong: string[] = [];
    for (const [name, t] of cases) {
      const o = t.original;
      const result = compileAdmissionExpression(o.expr, [], { returnTypes: ['any'] });
      if (isCompileError(result)) {
        if (!result.error.includes('expected type')) wrong.push(`${name}: ${o.expr}: ${result.error}`);
        continue;
      }
      const got = evaluate(result, {});
      const matcher = o.resultMatcher;
      if (matcher.case === 'evalError') {
        if (!('error' in got)) wrong.push(`${name}: ${o.expr}: no error`);
      } else if (matcher.case === 'value' && matcher.value.kind.case === 'boolValue') {
        if (!('value' in got) || got.value !== matcher.value.kind.value)
          wrong.push(`${name}: ${o.expr}: ${'value' in got ? String(got.value) : got.error}`);
      } else if ('error' in got) wrong.push(`${name}: ${o.expr}: ${got.error}`);
    }
    expect(wrong).toEqual([]);
  });
});
