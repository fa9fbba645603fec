import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileValidationRules, type ValidationRule } from '../../src/apimachinery/cel/rules.js';
import { errorString, fieldError, type FieldError } from '../../src/apimachinery/field.js';
import type { StructuralSchema } from '../../src/apimachinery/schema.js';
import { kinds as servedKinds } from '../../src/kinds/index.js';
import { defaultCrdDir, loadDefinitions } from '../../src/registry/definitions.js';

/** A resource schema whose spec has `rules` (and `specRules` at spec itself). */
function resource(spec: StructuralSchema, rootRules: ValidationRule[] = []): StructuralSchema {
  return {
    type: 'object',
    ...(rootRules.length ? { 'x-kubernetes-validations': rootRules } : {}),
    properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec },
  };
}

const SPEC: StructuralSchema = {
  type: 'object',
  properties: {
    min: { type: 'integer' },
    max: { type: 'integer' },
    mode: { type: 'string' },
    ratio: { type: 'number' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    ports: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: { type: 'object', properties: { name: { type: 'string' }, port: { type: 'integer' } } },
    },
    tags: { type: 'array', items: { type: 'string' } },
  },
};

function withRules(
  rules: ValidationRule[],
  at: Partial<Record<keyof typeof SPEC.properties & string, ValidationRule[]>> = {},
) {
  const properties = Object.fromEntries(
    Object.entries(SPEC.properties!).map(([name, s]) => {
      const extra = at[name as keyof typeof at];
      if (!extra) return [name, s];
      if (s.type === 'array') return [name, { ...s, items: { ...s.items, 'x-kubernetes-validations': extra } }];
      return [name, { ...s, 'x-kubernetes-validations': extra }];
    }),
  );
  return { ...SPEC, properties, 'x-kubernetes-validations': rules };
}

const obj = (spec: unknown, name = 'web') => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, labels: { a: 'b' } },
  spec,
});

function check(schema: StructuralSchema, value: unknown, old?: unknown, earlier: FieldError[] = []): string[] {
  return compileValidationRules(schema, 'spec.versions[0].schema.openAPIV3Schema')(value, old, earlier).map(
    errorString,
  );
}

describe('a rule that does not hold', () => {
  test('is Invalid at its level with the schema type as value and kube’s default message', () => {
    const schema = resource(withRules([{ rule: 'self.min <= self.max' }]));
    expect(check(schema, obj({ min: 1, max: 2 }))).toEqual([]);
    expect(check(schema, obj({ min: 3, max: 2 }))).toEqual([
      'spec: Invalid value: "object": failed rule: self.min <= self.max',
    ]);
  });

  test('says its message, or its messageExpression', () => {
    const schema = resource(
      withRules([
        { rule: 'self.min <= self.max', message: ' min must not exceed max ' },
        { rule: "self.mode != 'off'", messageExpression: "'mode ' + self.mode + ' is not allowed'" },
      ]),
    );
    expect(check(schema, obj({ min: 3, max: 2, mode: 'off' }))).toEqual([
      'spec: Invalid value: "object": min must not exceed max',
      'spec: Invalid value: "object": mode off is not allowed',
    ]);
  });

  test('a messageExpression that fails, or gives an empty string or line breaks, falls back to the message', () => {
    const schema = resource(
      withRules([
        { rule: 'false', message: 'static one', messageExpression: "self.mode + ' is bad'" },
        { rule: 'false', message: 'static two', messageExpression: "'  '" },
        { rule: 'false', message: 'static three', messageExpression: "'a\\nb'" },
        { rule: 'false', messageExpression: "''" },
      ]),
    );
    expect(check(schema, obj({}))).toEqual([
      'spec: Invalid value: "object": static one',
      'spec: Invalid value: "object": static two',
      'spec: Invalid value: "object": static three',
      'spec: Invalid value: "object": failed rule: false',
    ]);
  });

  test.each([
    ['FieldValueForbidden', 'spec.mode: Forbidden: no mode'],
    ['FieldValueRequired', 'spec.mode: Required value: no mode'],
    ['FieldValueDuplicate', 'spec.mode: Duplicate value: "object"'],
    ['FieldValueInvalid', 'spec.mode: Invalid value: "object": no mode'],
  ])('reason %s at fieldPath .mode', (reason, text) => {
    const schema = resource(withRules([{ rule: 'false', message: 'no mode', reason, fieldPath: '.mode' }]));
    const errs = compileValidationRules(schema, 'x')(obj({}), undefined, []);
    expect(errs.map(errorString)).toEqual([text]);
    expect(errs[0].type).toBe(reason);
  });

  test('a fieldPath into a map names the key', () => {
    const schema = resource(withRules([{ rule: 'false', fieldPath: ".labels['team.io/x']" }]));
    expect(check(schema, obj({}))).toEqual(['spec.labels[team.io/x]: Invalid value: "object": failed rule: false']);
  });

  test('rules of map values, list items and fields are checked where they are, with the value there as self', () => {
    const schema = resource(
      withRules([], {
        labels: [{ rule: 'self.all(k, self[k] != "")', message: 'no empty label' }],
        tags: [{ rule: 'self.size() <= 3', message: 'tag too long' }],
        ports: [{ rule: 'self.port > 0 && self.port < 65536' }],
        ratio: [{ rule: 'self < 1.0 && type(self) == double' }],
      }),
    );
    expect(
      check(
        schema,
        obj({
          labels: { a: '' },
          tags: ['ok', 'toolong'],
          ports: [
            { name: 'http', port: 80 },
            { name: 'bad', port: 0 },
          ],
          ratio: 1,
        }),
      ),
    ).toEqual([
      'spec.labels: Invalid value: "object": no empty label',
      'spec.tags[1]: Invalid value: "string": tag too long',
      'spec.ports[1]: Invalid value: "object": failed rule: self.port > 0 && self.port < 65536',
      'spec.ratio: Invalid value: "number": failed rule: self < 1.0 && type(self) == double',
    ]);
  });

  test('rules of the root are at <nil>, and see only the name and generateName of metadata', () => {
    const schema = resource(SPEC, [{ rule: "self.metadata.name.startsWith('w') && self.kind == 'Widget'" }]);
    expect(check(schema, obj({}, 'web'))).toEqual([]);
    expect(check(schema, obj({}, 'api'))).toEqual([
      "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('w') && self.kind == 'Widget'",
    ]);
    expect(() => compileValidationRules(resource(SPEC, [{ rule: 'has(self.metadata.labels)' }]), 'at')).toThrow(
      /^at\.x-kubernetes-validations\[0\]\.rule: compilation failed: ERROR: <input>:1:1: undefined field 'labels'/,
    );
  });

  test('an error when evaluated is an Invalid cause naming the rule; the other rules still run', () => {
    const schema = resource(withRules([{ rule: "self.mode == 'on'" }, { rule: 'self.min < 0', message: 'negative' }]));
    expect(check(schema, obj({ min: 1 }))).toEqual([
      'spec: Invalid value: "object": no such key: mode evaluating rule: self.mode == \'on\'',
      'spec: Invalid value: "object": negative',
    ]);
  });

  test('a rule costing more than the per-call limit stops all rules, with kube’s message', () => {
    const schema = resource(
      withRules([
        { rule: 'self.tags.all(x, self.tags.all(y, self.tags.all(z, x + y + z != "")))', message: 'costly' },
        { rule: 'false', message: 'never reached' },
      ]),
    );
    const tags = Array.from({ length: 200 }, (_, i) => `t${i}`);
    expect(check(schema, obj({ tags }))).toEqual([
      'spec: Invalid value: "object": \'operation cancelled: actual cost limit exceeded\': no further validation rules will be run due to call cost exceeds limit for rule: costly',
    ]);
  });

  test('after a wrong type, a missing required field or an unsupported value the rules do not run, and kube says so', () => {
    const schema = resource(withRules([{ rule: 'false' }]));
    for (const earlier of [
      fieldError.typeInvalid('spec.min', 'string', 'x'),
      fieldError.required('metadata.name'),
      fieldError.notSupported('spec.mode', 'x', ['a']),
    ])
      expect(check(schema, obj({}), undefined, [earlier])).toEqual([
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
      ]);
    // An Invalid value does not stop them.
    expect(check(schema, obj({}), undefined, [fieldError.invalid('spec.mode', 'x', 'bad')])).toHaveLength(1);
    // A schema without rules has nothing to say.
    expect(check(resource(SPEC), obj({}), undefined, [fieldError.required('metadata.name')])).toEqual([]);
  });
});

describe('transition rules (oldSelf)', () => {
  const immutable: ValidationRule = { rule: 'self == oldSelf', message: 'mode is immutable' };

  test('are skipped on create and checked on update against the value before', () => {
    const schema = resource(withRules([], { mode: [immutable] }));
    expect(check(schema, obj({ mode: 'a' }))).toEqual([]);
    expect(check(schema, obj({ mode: 'a' }), obj({ mode: 'a' }))).toEqual([]);
    expect(check(schema, obj({ mode: 'b' }), obj({ mode: 'a' }))).toEqual([
      'spec.mode: Invalid value: "string": mode is immutable',
    ]);
    // No value before at that path: skipped (the field may be set once).
    expect(check(schema, obj({ mode: 'b' }), obj({}))).toEqual([]);
  });

  test('a rule may compare the two objects at any level', () => {
    const schema = resource(withRules([{ rule: 'self.max >= oldSelf.max', message: 'max may only grow' }]));
    expect(check(schema, obj({ max: 3 }), obj({ max: 2 }))).toEqual([]);
    expect(check(schema, obj({ max: 1 }), obj({ max: 2 }))).toEqual([
      'spec: Invalid value: "object": max may only grow',
    ]);
  });

  test('items of a list-type map are compared with the old item of the same keys', () => {
    const schema = resource(
      withRules([], { ports: [{ rule: 'self.port == oldSelf.port', message: 'port is fixed' }] }),
    );
    const before = obj({
      ports: [
        { name: 'http', port: 80 },
        { name: 'https', port: 443 },
      ],
    });
    expect(
      check(
        schema,
        obj({
          ports: [
            { name: 'https', port: 443 },
            { name: 'http', port: 80 },
            { name: 'new', port: 1 },
          ],
        }),
        before,
      ),
    ).toEqual([]);
    expect(check(schema, obj({ ports: [{ name: 'https', port: 8443 }] }), before)).toEqual([
      'spec.ports[0]: Invalid value: "object": port is fixed',
    ]);
  });
});

describe('ratcheting: on update, a value left as it was may keep breaking a rule, with a warning', () => {
  const schema = resource(
    withRules([{ rule: 'self.min <= self.max', message: 'min exceeds max' }], {
      mode: [{ rule: "self != 'off'", message: 'off is gone' }],
      tags: [{ rule: 'self.size() <= 3', message: 'tag too long' }],
    }),
  );
  const run = (value: unknown, old: unknown) => {
    const warnings: string[] = [];
    const errors = compileValidationRules(schema, 'x')(value, old, [], warnings).map(errorString);
    return { errors, warnings };
  };

  test('unchanged values: warnings only', () => {
    const old = obj({ min: 3, max: 2, mode: 'off', tags: ['toolong'] });
    expect(run(obj({ min: 3, max: 2, mode: 'off', tags: ['toolong'] }), old)).toEqual({
      errors: [],
      warnings: [
        'spec: Invalid value: "object": min exceeds max',
        'spec.mode: Invalid value: "string": off is gone',
        'spec.tags[0]: Invalid value: "string": tag too long',
      ],
    });
  });

  test('a changed value is checked as on create; the values under it that did not change are ratcheted', () => {
    const old = obj({ min: 3, max: 2, mode: 'off', tags: ['toolong'] });
    expect(run(obj({ min: 4, max: 2, mode: 'off', tags: ['toolong', 'alsolong'] }), old)).toEqual({
      errors: [
        'spec: Invalid value: "object": min exceeds max',
        // Items of a list that is not a map have no old item: they go with the list, which changed.
        'spec.tags[0]: Invalid value: "string": tag too long',
        'spec.tags[1]: Invalid value: "string": tag too long',
      ],
      warnings: ['spec.mode: Invalid value: "string": off is gone'],
    });
  });

  test('on create nothing is ratcheted', () => {
    expect(run(obj({ min: 0, max: 1, mode: 'off' }), undefined)).toEqual({
      errors: ['spec.mode: Invalid value: "string": off is gone'],
      warnings: [],
    });
  });

  test('transition rules are never ratcheted', () => {
    const immutable = resource(withRules([{ rule: 'self.max == oldSelf.max', message: 'max is fixed' }]));
    const warnings: string[] = [];
    expect(
      compileValidationRules(immutable, 'x')(obj({ max: 1, min: 0 }), obj({ max: 2, min: 0 }), [], warnings).map(
        errorString,
      ),
    ).toEqual(['spec: Invalid value: "object": max is fixed']);
    expect(warnings).toEqual([]);
  });
});

describe('rules that cannot be used stop the start, saying where they are', () => {
  const at = 'spec.versions[0].schema.openAPIV3Schema';
  test.each<[string, ValidationRule, RegExp]>([
    [
      'a syntax error',
      { rule: 'self.min <' },
      /properties\[spec\]\.x-kubernetes-validations\[0\]\.rule: compilation failed: ERROR: <input>:1:10: Syntax error/,
    ],
    ['a field the schema lacks', { rule: 'self.nope > 1' }, /\.rule: compilation failed: .*undefined field 'nope'/],
    ['a result that is not bool', { rule: 'self.min' }, /\.rule: must evaluate to bool but got int/],
    ['an empty rule', { rule: ' ' }, /\.rule: Required value/],
    ['an unknown reason', { rule: 'true', reason: 'Nope' }, /\.reason: Unsupported value: "Nope"/],
    [
      'a fieldPath to no field',
      { rule: 'true', fieldPath: '.nope' },
      /\.fieldPath: Invalid value: "\.nope": does not refer to a valid field/,
    ],
    [
      'a message with a line break',
      { rule: 'true', message: 'a\nb' },
      /\.message: message must not contain line breaks/,
    ],
    [
      'a messageExpression that is not a string',
      { rule: 'true', messageExpression: 'self.min' },
      /\.messageExpression: must evaluate to string but got int/,
    ],
    ['optionalOldSelf', { rule: 'true', optionalOldSelf: true }, /\.optionalOldSelf: not supported by this server/],
    ['a misspelt field', { rule: 'true', mesage: 'typo' } as ValidationRule, /\[0\]\.mesage: unknown field/],
  ])('%s', (_what, rule, expected) => {
    expect(() => compileValidationRules(resource(withRules([rule])), at)).toThrow(expected);
  });

  test('oldSelf where no old value can be found (items of a list that is not a map)', () => {
    const schema = resource(withRules([], { tags: [{ rule: 'self == oldSelf' }] }));
    expect(() => compileValidationRules(schema, at)).toThrow(
      /properties\[spec\]\.properties\[tags\]\.items\.x-kubernetes-validations\[0\]\.rule: oldSelf cannot be used on the uncorrelatable portion of the schema/,
    );
  });

  test('a CRD file with a bad rule is named when the definitions are loaded', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crds-'));
    const cluster = readFileSync(join(defaultCrdDir, 'management.platform.sh_clusters.yaml'), 'utf8');
    writeFileSync(
      join(dir, 'clusters.yaml'),
      cluster.replace("self.config.secretName != ''", 'self.config.secretName !='),
    );
    expect(() => loadDefinitions(dir)).toThrow(
      /^clusters\.yaml: invalid x-kubernetes-validations rule: spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\[spec\]\.x-kubernetes-validations\[0\]\.rule: compilation failed: ERROR: <input>:1:\d+: Syntax error/,
    );
  });
});

describe("the Cluster CRD's rule", () => {
  const validate = loadDefinitions().find((d) => d.kind === 'Cluster')!.validationRules;
  const cluster = (spec: unknown) => ({
    apiVersion: 'management.platform.sh/v1',
    kind: 'Cluster',
    metadata: { name: 'c' },
    spec,
  });
  test.each([{ local: true }, { networkPeer: true }, { config: { secretName: 'kc' } }])(
    '%j needs nothing more',
    (spec) => {
      expect(validate(cluster(spec), undefined, [])).toEqual([]);
    },
  );
  test.each([
    {},
    { local: false, networkPeer: false, config: { secretNamespace: 'x' } },
    { config: { secretName: '' } },
  ])('%j is Required at spec.config.secretName', (spec) => {
    expect(validate(cluster(spec), undefined, []).map(errorString)).toEqual([
      'spec.config.secretName: Required value: the secret holding the connection config is required unless spec.local or spec.networkPeer is true',
    ]);
  });
});

describe('the owner and access rules of every kind with them', () => {
  const kinds = loadDefinitions().filter((d) => d.schema.properties?.spec?.properties?.owner);
  const object = (kind: string, spec: unknown) => ({
    apiVersion: 'management.platform.sh/v1',
    kind,
    metadata: { name: 'x' },
    spec,
  });

  // The kinds whose strategy is an owned kind's (kinds/owned.ts), from the one list of kinds.
  const OWNED = servedKinds
    .filter((k) => k.strategy.access)
    .map((k) => k.ref.kind)
    .sort();

  test('are in the Cluster, Project, ProjectSecret, SharedSecret and VirtualClusterInstance CRDs', () => {
    expect(kinds.map((d) => d.kind).sort()).toEqual(OWNED);
  });

  test.each(OWNED)('%s: an owner is a user or a team, and each access entry names a user or a team', (kind) => {
    const def = kinds.find((d) => d.kind === kind)!;
    // The kinds' own rules (a Cluster's config, a VirtualClusterInstance's clusterRef) are left out of this.
    const errs = (spec: Record<string, unknown>) =>
      def
        .validationRules(object(kind, { local: true, ...spec }), undefined, [])
        .map(errorString)
        .filter((e) => !e.startsWith('spec.config'));
    expect(errs({ owner: { user: 'u' }, access: [{ verbs: ['get'], teams: ['t'] }] })).toEqual([]);
    expect(errs({ owner: { user: 'u', team: '' }, access: [{ verbs: ['get'], users: ['u'], teams: [] }] })).toEqual([]);
    expect(
      errs({ owner: { user: 'u', team: 't' }, access: [{ verbs: ['get'] }, { verbs: ['get'], users: [] }] }),
    ).toEqual([
      'spec.owner.team: Forbidden: may not be set together with user: an owner is either a user or a team',
      'spec.access[0].users: Required value: at least one user or team is required',
      'spec.access[1].users: Required value: at least one user or team is required',
    ]);
  });
});
