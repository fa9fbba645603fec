import { describe, expect, test } from '@jest/globals';
import { goQuote, goStringSlice } from '../../src/apimachinery/golang/strconv.js';
import {
  isConfigMapKey,
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  isValidPathSegmentName,
  isValidPathSegmentPrefix,
  maskTrailingDash,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  regexError,
  validateNamespaceName,
  validatePathSegmentName,
} from '../../src/apimachinery/validation.js';

// The exact texts kube-apiserver 1.33 produces (apimachinery v0.33 pkg/util/validation/validation.go).
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QNAME_REGEX_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

const a = (n: number) => 'a'.repeat(n);

describe('regexError', () => {
  test('puts a double space before each "or", as Go does', () => {
    expect(regexError('msg', 'fmt', 'x', 'y', 'z')).toBe(
      "msg (e.g. 'x',  or 'y',  or 'z', regex used for validation is 'fmt')",
    );
    expect(regexError('msg', 'fmt', 'x')).toBe("msg (e.g. 'x', regex used for validation is 'fmt')");
    expect(regexError('msg', 'fmt')).toBe("msg (regex used for validation is 'fmt')");
  });
});

describe('isDNS1123Label', () => {
  test.each(['a', '0', 'abc', 'a-b', '123-abc', 'a--b', a(63), `${a(62)}0`])('valid: %s', (v) => {
    expect(isDNS1123Label(v)).toEqual([]);
  });
  test.each<[string, string[]]>([
    ['', [LABEL_MSG]],
    ['A', [LABEL_MSG]],
    ['Abc', [LABEL_MSG]],
    ['-a', [LABEL_MSG]],
    ['a-', [LABEL_MSG]],
    ['a_b', [LABEL_MSG]],
    ['a b', [LABEL_MSG]],
    ['a.b', ['must not contain dots']],
    ['my.name.example', ['must not contain dots']],
    ['.a', [LABEL_MSG]],
    [a(64), ['must be no more than 63 characters']],
    [`${a(40)}.${a(40)}`, ['must be no more than 63 characters', 'must not contain dots']],
    [`${a(63)}A`, ['must be no more than 63 characters', LABEL_MSG]],
  ])('invalid: %j', (v, msgs) => {
    expect(isDNS1123Label(v)).toEqual(msgs);
  });
  test('length is counted in UTF-8 bytes, like Go', () => {
    expect(isDNS1123Label('é'.repeat(32))).toEqual(['must be no more than 63 characters', LABEL_MSG]);
  });
});

describe('isDNS1123Subdomain', () => {
  const long253 = [a(63), a(63), a(63), a(61)].join('.');
  test.each(['a', 'a.b', 'example.com', 'a-b.c-d', '0.0', long253])('valid: %s', (v) => {
    expect(isDNS1123Subdomain(v)).toEqual([]);
  });
  test('253 is the limit', () => {
    expect(long253.length).toBe(253);
    expect(isDNS1123Subdomain(`${long253}a`)).toEqual(['must be no more than 253 characters']);
  });
  test.each<[string, string[]]>([
    ['', [SUBDOMAIN_MSG]],
    ['Example.com', [SUBDOMAIN_MSG]],
    ['a..b', [SUBDOMAIN_MSG]],
    ['a.', [SUBDOMAIN_MSG]],
    ['.a', [SUBDOMAIN_MSG]],
    ['a_b', [SUBDOMAIN_MSG]],
    ['a.-b', [SUBDOMAIN_MSG]],
    [`${a(254)}`, ['must be no more than 253 characters']],
    [`${a(253)}_`, ['must be no more than 253 characters', SUBDOMAIN_MSG]],
  ])('invalid: %j', (v, msgs) => {
    expect(isDNS1123Subdomain(v)).toEqual(msgs);
  });
});

describe('isDNS1035Label', () => {
  test('must start with a letter', () => {
    expect(isDNS1035Label('abc-123')).toEqual([]);
    expect(isDNS1035Label('1abc')).toEqual([DNS1035_MSG]);
  });
});

describe('isQualifiedName', () => {
  test.each([
    'simple',
    'now-with-dashes',
    '1-starts-with-num',
    '1234',
    'simple/simple',
    'now-with-dashes/simple',
    'now-with-dashes/now-with-dashes',
    'now.with.dots/simple',
    'now-with.dashes-and.dots/simple',
    '1-num.2-num/3-num',
    '1234/5678',
    '1.2.3.4/5678',
    'Uppercase_Is_OK_123',
    'example.com/Uppercase_Is_OK_123',
    'requests.storage-foo',
    a(63),
    `${a(253)}/${a(63)}`,
  ])('valid: %s', (v) => {
    expect(isQualifiedName(v)).toEqual([]);
  });

  test.each<[string, string[]]>([
    ['', ['name part must be non-empty', `name part ${QNAME_REGEX_MSG}`]],
    ['nospecialchars%^=@', [`name part ${QNAME_REGEX_MSG}`]],
    ['cantendwithadash-', [`name part ${QNAME_REGEX_MSG}`]],
    ['-cantstartwithadash-', [`name part ${QNAME_REGEX_MSG}`]],
    [
      'only/one/slash',
      [`a qualified name ${QNAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`],
    ],
    ['Example.com/abc', [`prefix part ${SUBDOMAIN_MSG}`]],
    ['example_com/abc', [`prefix part ${SUBDOMAIN_MSG}`]],
    ['/simple', ['prefix part must be non-empty']],
    ['example.com/', ['name part must be non-empty', `name part ${QNAME_REGEX_MSG}`]],
    [a(64), ['name part must be no more than 63 characters']],
    [`${a(254)}/abc`, ['prefix part must be no more than 253 characters']],
  ])('invalid: %j', (v, msgs) => {
    expect(isQualifiedName(v)).toEqual(msgs);
  });
});

describe('isValidLabelValue', () => {
  test.each([
    '',
    'simple',
    'now-with-dashes',
    '1-starts-with-num',
    'end-with-num-1',
    '1234',
    'Uppercase_Is_OK_123',
    'a.b',
    a(63),
  ])('valid: %j', (v) => {
    expect(isValidLabelValue(v)).toEqual([]);
  });
  test.each<[string, string[]]>([
    ['nospecialchars%^=@', [LABEL_VALUE_MSG]],
    ['Tama-nui-te-rā.is.Māori.sun', [LABEL_VALUE_MSG]],
    ['\\backslashes\\are\\bad', [LABEL_VALUE_MSG]],
    ['-starts-with-dash', [LABEL_VALUE_MSG]],
    ['ends-with-dash-', [LABEL_VALUE_MSG]],
    ['.starts.with.dot', [LABEL_VALUE_MSG]],
    ['a/b', [LABEL_VALUE_MSG]],
    [a(64), ['must be no more than 63 characters']],
  ])('invalid: %j', (v, msgs) => {
    expect(isValidLabelValue(v)).toEqual(msgs);
  });
});

describe('isConfigMapKey', () => {
  test.each(['a', 'A', 'key.name', 'KEY_NAME', 'key-name', '.a', '.dotfile', a(253)])('valid: %j', (v) => {
    expect(isConfigMapKey(v)).toEqual([]);
  });
  test.each<[string, string[]]>([
    ['', [CONFIG_KEY_MSG]],
    ['a/b', [CONFIG_KEY_MSG]],
    ['a b', [CONFIG_KEY_MSG]],
    ['.', ["must not be '.'"]],
    ['..', ["must not be '..'"]],
    ['..a', ["must not start with '..'"]],
    [a(254), ['must be no more than 253 characters']],
  ])('invalid: %j', (v, msgs) => {
    expect(isConfigMapKey(v)).toEqual(msgs);
  });
});

describe('path segment names', () => {
  test.each<[string, string[]]>([
    ['a', []],
    ['a.b', []],
    ['...', []],
    ['.', ["may not be '.'"]],
    ['..', ["may not be '..'"]],
    ['a/b', ["may not contain '/'"]],
    ['a%b', ["may not contain '%'"]],
    ['a/%b', ["may not contain '/'", "may not contain '%'"]],
  ])('isValidPathSegmentName(%j)', (v, msgs) => {
    expect(isValidPathSegmentName(v)).toEqual(msgs);
  });
  test('prefixes are not checked for exact matches', () => {
    expect(isValidPathSegmentPrefix('.')).toEqual([]);
    expect(isValidPathSegmentPrefix('a/')).toEqual(["may not contain '/'"]);
    expect(validatePathSegmentName('..', true)).toEqual([]);
    expect(validatePathSegmentName('..', false)).toEqual(["may not be '..'"]);
  });
});

describe('name functions', () => {
  test('maskTrailingDash replaces the last two characters with "a", like Go', () => {
    expect(maskTrailingDash('foo-')).toBe('foa');
    expect(maskTrailingDash('foo')).toBe('foo');
    expect(maskTrailingDash('a-')).toBe('a');
    expect(maskTrailingDash('-')).toBe('a');
  });

  test('generateName "foo-" is a valid prefix but not a valid name', () => {
    expect(nameIsDNSSubdomain('foo-', true)).toEqual([]);
    expect(nameIsDNSSubdomain('foo-', false)).toEqual([SUBDOMAIN_MSG]);
    expect(nameIsDNSLabel('foo-', true)).toEqual([]);
    expect(nameIsDNSLabel('foo-', false)).toEqual([LABEL_MSG]);
  });

  test('a prefix still has to be otherwise valid', () => {
    expect(nameIsDNSSubdomain('Foo-', true)).toEqual([SUBDOMAIN_MSG]);
    expect(nameIsDNSSubdomain('foo--', true)).toEqual([]);
    expect(nameIsDNSSubdomain('foo.-', true)).toEqual([]); // masked to "fooa": Go's quirk
    expect(nameIsDNSSubdomain(`${a(253)}-`, true)).toEqual([]); // 254 chars, masked to 253
    expect(nameIsDNSSubdomain(`${a(254)}-`, true)).toEqual(['must be no more than 253 characters']);
  });

  test('uppercase names are invalid', () => {
    expect(nameIsDNSSubdomain('MyName', false)).toEqual([SUBDOMAIN_MSG]);
    expect(nameIsDNSLabel('MyName', false)).toEqual([LABEL_MSG]);
  });

  test('validateNamespaceName is a DNS label check', () => {
    expect(validateNamespaceName('kube-system', false)).toEqual([]);
    expect(validateNamespaceName('a.b', false)).toEqual(['must not contain dots']);
    expect(validateNamespaceName(a(64), false)).toEqual(['must be no more than 63 characters']);
  });
});

describe('Go printing helpers', () => {
  test('goQuote escapes as strconv.Quote does', () => {
    expect(goQuote('abc')).toBe('"abc"');
    expect(goQuote('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(goQuote('\n\t\x07\x01\x7f')).toBe('"\\n\\t\\a\\x01\\x7f"');
    expect(goQuote('é\u00a0')).toBe('"é\\u00a0"');
  });
  test('goStringSlice is %#v of a []string', () => {
    expect(goStringSlice(['x', 'y'])).toBe('[]string{"x", "y"}');
    expect(goStringSlice([])).toBe('[]string{}');
  });
});
