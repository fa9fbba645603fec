import { describe, expect, test } from '@jest/globals';
import {
  checkFieldSelector,
  escapeFieldValue,
  objectFields,
  parseFieldSelector,
  parseSupportedFieldSelector,
} from '../../src/apimachinery/fields.js';
import { parseLabelSelector } from '../../src/apimachinery/labels.js';
import { statusOf } from '../support/errors.js';

// Texts from apimachinery v0.33 pkg/util/validation (note Go's double space before each "or").
const QNAME_REGEX_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

function labelError(text: string): string {
  const err = statusOf(() => parseLabelSelector(text));
  expect(err.code).toBe(400);
  expect(err.reason).toBe('BadRequest');
  expect(err.status).toMatchObject({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code: 400,
    reason: 'BadRequest',
  });
  return err.message;
}

function fieldErrorText(text: string, supported = false): string {
  const err = statusOf(() => (supported ? parseSupportedFieldSelector(text) : parseFieldSelector(text)));
  expect(err.code).toBe(400);
  expect(err.reason).toBe('BadRequest');
  return err.message;
}

describe('label selector: parsing and printing', () => {
  test.each([
    ['', ''],
    ['   ', ''],
    ['a=b', 'a=b'],
    ['a==b', 'a==b'],
    ['a!=b', 'a!=b'],
    [' a = b ', 'a=b'],
    ['a=', 'a='],
    ['a', 'a'],
    ['!a', '!a'],
    ['a>1', 'a>1'],
    ['a<10', 'a<10'],
    ['x in (b,a)', 'x in (a,b)'],
    ['x in (a, b, a)', 'x in (a,b)'],
    ['x notin (a)', 'x notin (a)'],
    ['x in ()', 'x in ()'],
    ['x in (,a)', 'x in (,a)'],
    ['x in (a,)', 'x in (,a)'],
    ['x in (b,,c)', 'x in (,b,c)'],
    ['in in (in,notin)', 'in in (in,notin)'],
    ['notin notin (notin)', 'notin notin (notin)'],
    ['b=1,a,!c', 'a,b=1,!c'],
    ['example.com/tier=web,app.kubernetes.io/name in (x)', 'app.kubernetes.io/name in (x),example.com/tier=web'],
    ['a=b\t,\nc', 'a=b,c'],
  ])('%j prints as %j', (text, printed) => {
    const sel = parseLabelSelector(text);
    expect(sel.toString()).toBe(printed);
    expect(sel.empty()).toBe(printed === '');
  });

  test('null and undefined mean everything', () => {
    expect(parseLabelSelector(undefined).empty()).toBe(true);
    expect(parseLabelSelector(null).matches({ a: 'b' })).toBe(true);
  });

  test('requirements carry Go operator names and sorted values', () => {
    expect(parseLabelSelector('z notin (b,a),a>3,!m,k').requirements).toEqual([
      { key: 'a', operator: 'gt', values: ['3'] },
      { key: 'k', operator: 'exists', values: [] },
      { key: 'm', operator: '!', values: [] },
      { key: 'z', operator: 'notin', values: ['a', 'b'] },
    ]);
  });

  test('requiresExactMatch pins =, == and single-value in', () => {
    expect(parseLabelSelector('a=x').requiresExactMatch('a')).toBe('x');
    expect(parseLabelSelector('a==x').requiresExactMatch('a')).toBe('x');
    expect(parseLabelSelector('a in (x)').requiresExactMatch('a')).toBe('x');
    expect(parseLabelSelector('a in (x,y)').requiresExactMatch('a')).toBeUndefined();
    expect(parseLabelSelector('a!=x').requiresExactMatch('a')).toBeUndefined();
    expect(parseLabelSelector('b=x').requiresExactMatch('a')).toBeUndefined();
  });
});

describe('label selector: matching', () => {
  const cases: [string, Record<string, string> | undefined, boolean][] = [
    ['', undefined, true],
    ['', { a: 'b' }, true],
    ['a=b', { a: 'b' }, true],
    ['a=b', { a: 'c' }, false],
    ['a=b', {}, false],
    ['a=b', undefined, false],
    ['a==b', { a: 'b' }, true],
    ['a=', { a: '' }, true],
    ['a=', {}, false],
    ['a!=b', {}, true],
    ['a!=b', { a: 'b' }, false],
    ['a!=b', { a: 'c' }, true],
    ['x in (a,b)', { x: 'a' }, true],
    ['x in (a,b)', { x: 'c' }, false],
    ['x in (a,b)', {}, false],
    ['x in ()', { x: '' }, true],
    ['x notin (a,b)', {}, true],
    ['x notin (a,b)', { x: 'a' }, false],
    ['x notin (a,b)', { x: 'c' }, true],
    ['a', { a: '' }, true],
    ['a', { b: '' }, false],
    ['!a', { b: '' }, true],
    ['!a', { a: 'x' }, false],
    ['a>1', { a: '2' }, true],
    ['a>1', { a: '1' }, false],
    ['a>1', { a: 'x' }, false],
    ['a>1', {}, false],
    ['a<1', { a: '-5' }, true],
    ['a<1', { a: '+0' }, true],
    ['a>9223372036854775806', { a: '9223372036854775807' }, true],
    ['a<1', { a: '9223372036854775808' }, false], // does not fit int64
    ['a=b,c', { a: 'b', c: '' }, true],
    ['a=b,c', { a: 'b' }, false],
    ['a=b,!c', { a: 'b' }, true],
    ['toString', { toString: 'x' }, true],
    ['toString', {}, false],
  ];
  test.each(cases)('%j on %j is %j', (text, labels, expected) => {
    expect(parseLabelSelector(text).matches(labels)).toBe(expected);
  });
});

describe('label selector: errors are 400 with kube’s text', () => {
  test.each([
    ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['a,', "found '', expected: identifier after ','"],
    ['a,,b', "found ',', expected: identifier after ','"],
    [',a', "found ',', expected: !, identifier, or 'end of string'"],
    ['=a', "found '=', expected: !, identifier, or 'end of string'"],
    ['(a)', "found '(', expected: !, identifier, or 'end of string'"],
    ['a=b c', "found 'c', expected: ',' or 'end of string'"],
    ['a=b)', "found ')', expected: ',' or 'end of string'"],
    ['!a=b', "found '=', expected: ',' or 'end of string'"],
    ['!', "unable to parse requirement: found '', expected: identifier"],
    ['!!a', "unable to parse requirement: found '!', expected: identifier"],
    ['a>=1', "unable to parse requirement: found '=', expected: identifier"],
    ['a=(b)', "unable to parse requirement: found '(', expected: identifier"],
    ['a===b', "unable to parse requirement: found '=', expected: identifier"],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a notin', "unable to parse requirement: found '' expected: '('"],
    ['a in (b c)', "unable to parse requirement: found 'c', expected: ',' or ')'"],
    ['a in (b', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['a in (=', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
    ['a in (b,=)', "unable to parse requirement: found '=', expected: ',', or identifier"],
    [
      'a>b',
      `unable to parse requirement: values[0]: Invalid value: "b": for 'Gt', 'Lt' operators, the value must be an integer`,
    ],
    // a negative number parses as an integer but is not a valid label value
    ['a<-10', `unable to parse requirement: values[0][a]: Invalid value: "-10": ${LABEL_VALUE_MSG}`],
    [
      'a<1.5',
      `unable to parse requirement: values[0]: Invalid value: "1.5": for 'Gt', 'Lt' operators, the value must be an integer`,
    ],
    [
      'a>-x',
      `unable to parse requirement: [values[0]: Invalid value: "-x": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: "-x": ${LABEL_VALUE_MSG}]`,
    ],
    ['a=-b', `unable to parse requirement: values[0][a]: Invalid value: "-b": ${LABEL_VALUE_MSG}`],
    ['a in (ok,b_)', `unable to parse requirement: values[0][a]: Invalid value: "b_": ${LABEL_VALUE_MSG}`],
    ['a in (ok,_b)', `unable to parse requirement: values[0][a]: Invalid value: "_b": ${LABEL_VALUE_MSG}`],
    [
      'a=' + 'v'.repeat(64),
      `unable to parse requirement: values[0][a]: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
    ],
    ['-a', `unable to parse requirement: <nil>: Invalid value: "-a": name part ${QNAME_REGEX_MSG}`],
    ['a_=b', `unable to parse requirement: <nil>: Invalid value: "a_": name part ${QNAME_REGEX_MSG}`],
    ['!a.', `unable to parse requirement: <nil>: Invalid value: "a.": name part ${QNAME_REGEX_MSG}`],
    [
      'k'.repeat(64),
      `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`,
    ],
    [
      'Example.com/a=b',
      `unable to parse requirement: <nil>: Invalid value: "Example.com/a": prefix part ${SUBDOMAIN_MSG}`,
    ],
    ['/a', `unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty`],
    [
      'a/=b',
      `unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; name part ${QNAME_REGEX_MSG}`,
    ],
    [
      'a/b/c=d',
      `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name ${QNAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ],
  ])('%j', (text, message) => {
    expect(labelError(text)).toBe(message);
  });
});

describe('field selector: parsing', () => {
  test('empty selectors match everything', () => {
    for (const text of ['', null, undefined, ',', '=', ',=,']) {
      const sel = parseFieldSelector(text);
      expect(sel.empty()).toBe(true);
      expect(sel.matches({ 'metadata.name': 'x' })).toBe(true);
      expect(sel.requirements).toEqual([]);
    }
  });

  test('=, == and != with terms in Go’s sorted order', () => {
    const sel = parseFieldSelector('metadata.namespace!=kube-system,metadata.name==a,b=');
    expect(sel.requirements).toEqual([
      { field: 'b', operator: '=', value: '' },
      { field: 'metadata.name', operator: '=', value: 'a' },
      { field: 'metadata.namespace', operator: '!=', value: 'kube-system' },
    ]);
    expect(sel.toString()).toBe('b=,metadata.name=a,metadata.namespace!=kube-system');
    expect(sel.empty()).toBe(false);
  });

  test('the first operator splits the term', () => {
    expect(parseFieldSelector('a!=b').requirements).toEqual([{ field: 'a', operator: '!=', value: 'b' }]);
    expect(parseFieldSelector('a==b').requirements).toEqual([{ field: 'a', operator: '=', value: 'b' }]);
    expect(parseFieldSelector('a!b=c').requirements).toEqual([{ field: 'a!b', operator: '=', value: 'c' }]);
    expect(parseFieldSelector('=b').requirements).toEqual([{ field: '', operator: '=', value: 'b' }]);
  });

  test('backslash escapes in values', () => {
    expect(parseFieldSelector('metadata.name=a\\,b').requirements).toEqual([
      { field: 'metadata.name', operator: '=', value: 'a,b' },
    ]);
    expect(parseFieldSelector('x=a\\=b').exactMatch('x')).toBe('a=b');
    expect(parseFieldSelector('x=a\\\\b').exactMatch('x')).toBe('a\\b');
    expect(parseFieldSelector('x=\\,\\=\\\\').exactMatch('x')).toBe(',=\\');
    // an escaped comma does not split terms
    const sel = parseFieldSelector('y=c,x=a\\,b');
    expect(sel.requirements.map((r) => [r.field, r.value])).toEqual([
      ['x', 'a,b'],
      ['y', 'c'],
    ]);
    expect(sel.toString()).toBe('x=a\\,b,y=c');
    expect(escapeFieldValue('a,b=c\\d')).toBe('a\\,b\\=c\\\\d');
  });

  test('exactMatch gives the value of the first = or == term on the field', () => {
    expect(parseFieldSelector('metadata.name=foo').exactMatch('metadata.name')).toBe('foo');
    expect(parseFieldSelector('metadata.name==foo').exactMatch('metadata.name')).toBe('foo');
    expect(parseFieldSelector('metadata.name!=foo').exactMatch('metadata.name')).toBeUndefined();
    expect(parseFieldSelector('metadata.namespace=ns').exactMatch('metadata.name')).toBeUndefined();
    expect(parseFieldSelector('metadata.name=b,metadata.name=a').exactMatch('metadata.name')).toBe('a');
    expect(parseFieldSelector('metadata.name=').exactMatch('metadata.name')).toBe('');
  });

  test.each([
    ['foo', "invalid selector: 'foo'; can't understand 'foo'"],
    ['a=b,foo', "invalid selector: 'a=b,foo'; can't understand 'foo'"],
    ['a=b,!c', "invalid selector: 'a=b,!c'; can't understand '!c'"],
    ['x=a\\b', 'invalid field selector: invalid escape sequence: \\b'],
    ['x=a\\', 'invalid field selector: invalid escape sequence: \\'],
    ['x=a=b', 'invalid field selector: unescaped character in value: 61'],
    ['x===a', 'invalid field selector: unescaped character in value: 61'],
    ['x!==a', 'invalid field selector: unescaped character in value: 61'],
  ])('%j is a 400: %s', (text, message) => {
    expect(fieldErrorText(text)).toBe(message);
  });
});

describe('field selector: matching and supported fields', () => {
  const secret = { metadata: { name: 'db', namespace: 'team-a' } };
  const cluster = { metadata: { name: 'prod' } };

  test('objectFields gives metadata.name and metadata.namespace', () => {
    expect(objectFields(secret)).toEqual({ 'metadata.name': 'db', 'metadata.namespace': 'team-a' });
    expect(objectFields(cluster)).toEqual({ 'metadata.name': 'prod', 'metadata.namespace': '' });
  });

  test.each([
    ['metadata.name=db', secret, true],
    ['metadata.name=db', cluster, false],
    ['metadata.name!=db', cluster, true],
    ['metadata.name=db,metadata.namespace=team-a', secret, true],
    ['metadata.name=db,metadata.namespace=team-b', secret, false],
    ['metadata.namespace!=team-a', secret, false],
    ['metadata.namespace=', cluster, true],
    ['metadata.namespace=default', cluster, false],
  ])('%j on %j is %j', (text, obj, expected) => {
    expect(parseSupportedFieldSelector(text).matches(objectFields(obj))).toBe(expected);
  });

  test('a field the object lacks reads as ""', () => {
    expect(parseFieldSelector('spec.x=').matches({})).toBe(true);
    expect(parseFieldSelector('spec.x!=').matches({})).toBe(false);
  });

  test('only metadata.name and metadata.namespace are known', () => {
    expect(fieldErrorText('spec.x=1', true)).toBe(
      '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    // the first unknown term in sorted order is named
    expect(fieldErrorText('status.phase=a,spec.x=1,metadata.name=a', true)).toBe(
      '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    expect(fieldErrorText('=x', true)).toBe(
      '"" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
    // parse errors come first
    expect(fieldErrorText('spec.x', true)).toBe("invalid selector: 'spec.x'; can't understand 'spec.x'");
    const sel = parseFieldSelector('metadata.namespace=a,metadata.name=b');
    expect(checkFieldSelector(sel)).toBe(sel);
    expect(parseSupportedFieldSelector('').empty()).toBe(true);
  });
});
