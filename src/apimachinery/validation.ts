/**
 * String checks from apimachinery as kube-apiserver 1.33 (k8s.io/apimachinery v0.33) has them:
 * pkg/util/validation/validation.go, pkg/api/validation/generic.go and pkg/api/validation/path/name.go.
 *
 * Each check returns the list of messages Go returns (empty when the value is valid); callers turn each
 * message into its own field.Invalid, as Go does. The message texts are copied verbatim, including the
 * double space that RegexError puts between examples ("'MyName',  or 'my.name'").
 *
 * Lengths are measured in UTF-8 bytes, like Go's len(); messages still say "characters" because 1.33's
 * MaxLenError does (1.34+ moved these into api/validate/content and say "bytes").
 */

/** Go's len() of a string: its UTF-8 byte length (a lone surrogate counts as U+FFFD, 3 bytes, as Go's decoder makes it). */
export function byteLength(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

// ---------------------------------------------------------------------------------------------
// Message builders (validation.go)
// ---------------------------------------------------------------------------------------------

/** validation.MaxLenError: 1.33 wording ("characters"; 1.34+ says "bytes"). */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** validation.RegexError, including Go's double space before each " or ". */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) out += ' or ';
    out += `'${example}', `;
  });
  return `${out}regex used for validation is '${fmt}')`;
}

/** validation.EmptyError. */
export function emptyError(): string {
  return 'must be non-empty';
}

/** validation.InclusiveRangeError. */
export function inclusiveRangeError(lo: number, hi: number): string {
  return `must be between ${lo} and ${hi}, inclusive`;
}

function prefixEach(msgs: string[], prefix: string): string[] {
  return msgs.map((m) => prefix + m);
}

function anchored(fmt: string): RegExp {
  return new RegExp(`^(?:${fmt})$`);
}

// ---------------------------------------------------------------------------------------------
// Qualified names and label values
// ---------------------------------------------------------------------------------------------

const qnameCharFmt = '[A-Za-z0-9]';
const qnameExtCharFmt = '[-A-Za-z0-9_.]';
export const qualifiedNameFmt = `(${qnameCharFmt}${qnameExtCharFmt}*)?${qnameCharFmt}`;
const qualifiedNameErrMsg =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const QUALIFIED_NAME_MAX_LENGTH = 63;
const qualifiedNameRegexp = anchored(qualifiedNameFmt);

/**
 * validation.IsQualifiedName: an optional DNS-subdomain prefix and '/', then a name of at most 63
 * characters. Used for label keys, annotation keys (lowercased first) and finalizers.
 */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  switch (parts.length) {
    case 1:
      name = parts[0];
      break;
    case 2: {
      const prefix = parts[0];
      name = parts[1];
      if (prefix.length === 0) {
        errs.push(`prefix part ${emptyError()}`);
      } else {
        const msgs = isDNS1123Subdomain(prefix);
        if (msgs.length !== 0) errs.push(...prefixEach(msgs, 'prefix part '));
      }
      break;
    }
    default:
      return [
        `a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}` +
          " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      ];
  }
  if (name.length === 0) {
    errs.push(`name part ${emptyError()}`);
  } else if (byteLength(name) > QUALIFIED_NAME_MAX_LENGTH) {
    errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  }
  if (!qualifiedNameRegexp.test(name)) {
    errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  }
  return errs;
}

export const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const LABEL_VALUE_MAX_LENGTH = 63;
const labelValueRegexp = anchored(labelValueFmt);

/** validation.IsValidLabelValue. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!labelValueRegexp.test(value))
    errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// DNS names
// ---------------------------------------------------------------------------------------------

export const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelErrMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
export const DNS1123_LABEL_MAX_LENGTH = 63;
const dns1123LabelRegexp = anchored(dns1123LabelFmt);

export const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrorMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const dns1123SubdomainRegexp = anchored(dns1123SubdomainFmt);

/**
 * validation.IsDNS1123Label. A value that is a valid subdomain but not a valid label (i.e. it has dots)
 * gets the short "must not contain dots" instead of the regex message, as in Go.
 */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!dns1123LabelRegexp.test(value)) {
    if (dns1123SubdomainRegexp.test(value)) {
      // A valid subdomain but not a valid label: since length was checked already, it must be dots.
      errs.push('must not contain dots');
    } else {
      errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, 'my-name', '123-abc'));
    }
  }
  return errs;
}

/** validation.IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!dns1123SubdomainRegexp.test(value))
    errs.push(regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, 'example.com'));
  return errs;
}

export const dns1035LabelFmt = '[a-z]([-a-z0-9]*[a-z0-9])?';
const dns1035LabelErrMsg =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
export const DNS1035_LABEL_MAX_LENGTH = 63;
const dns1035LabelRegexp = anchored(dns1035LabelFmt);

/** validation.IsDNS1035Label. */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!dns1035LabelRegexp.test(value)) errs.push(regexError(dns1035LabelErrMsg, dns1035LabelFmt, 'my-name', 'abc-123'));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// ConfigMap / Secret keys
// ---------------------------------------------------------------------------------------------

const configMapKeyFmt = '[-._a-zA-Z0-9]+';
const configMapKeyErrMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const configMapKeyRegexp = anchored(configMapKeyFmt);

function hasChDirPrefix(value: string): string[] {
  if (value === '.') return ["must not be '.'"];
  if (value === '..') return ["must not be '..'"];
  if (value.startsWith('..')) return ["must not start with '..'"];
  return [];
}

/** validation.IsConfigMapKey: a valid key for a ConfigMap or Secret. */
export function isConfigMapKey(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!configMapKeyRegexp.test(value))
    errs.push(regexError(configMapKeyErrMsg, configMapKeyFmt, 'key.name', 'KEY_NAME', 'key-name'));
  errs.push(...hasChDirPrefix(value));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Path segments (pkg/api/validation/path/name.go)
// ---------------------------------------------------------------------------------------------

/** path.NameMayNotBe */
export const NAME_MAY_NOT_BE: readonly string[] = ['.', '..'];
/** path.NameMayNotContain */
export const NAME_MAY_NOT_CONTAIN: readonly string[] = ['/', '%'];

/** path.IsValidPathSegmentName: the name can be used as one segment of a REST path or storage key. */
export function isValidPathSegmentName(name: string): string[] {
  for (const illegal of NAME_MAY_NOT_BE) {
    if (name === illegal) return [`may not be '${illegal}'`];
  }
  return isValidPathSegmentPrefix(name);
}

/** path.IsValidPathSegmentPrefix: no exact-match check, since a suffix may make the name valid. */
export function isValidPathSegmentPrefix(name: string): string[] {
  const errs: string[] = [];
  for (const illegal of NAME_MAY_NOT_CONTAIN) {
    if (name.includes(illegal)) errs.push(`may not contain '${illegal}'`);
  }
  return errs;
}

/** path.ValidatePathSegmentName: a ValidateNameFunc. */
export function validatePathSegmentName(name: string, prefix: boolean): string[] {
  return prefix ? isValidPathSegmentPrefix(name) : isValidPathSegmentName(name);
}

// ---------------------------------------------------------------------------------------------
// Name functions (pkg/api/validation/generic.go)
// ---------------------------------------------------------------------------------------------

/**
 * ValidateNameFunc: `prefix` is true when the value is a generateName (a random suffix will be
 * appended). Returns one message per problem.
 */
export type ValidateNameFunc = (name: string, prefix: boolean) => string[];

/**
 * generic.go maskTrailingDash: Go replaces the LAST TWO characters with "a" when the value ends in
 * '-' (`name[:len(name)-2] + "a"`), so "foo-" is checked as "foa". For the one-character value "-"
 * Go would slice out of range and panic (a 500); here it becomes "a".
 */
export function maskTrailingDash(name: string): string {
  if (name.endsWith('-')) return name.slice(0, Math.max(0, name.length - 2)) + 'a';
  return name;
}

/** generic.NameIsDNSSubdomain: the name of most resources. */
export function nameIsDNSSubdomain(name: string, prefix: boolean): string[] {
  return isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
}

/** generic.NameIsDNSLabel. */
export function nameIsDNSLabel(name: string, prefix: boolean): string[] {
  return isDNS1123Label(prefix ? maskTrailingDash(name) : name);
}

/** generic.NameIsDNS1035Label. */
export function nameIsDNS1035Label(name: string, prefix: boolean): string[] {
  return isDNS1035Label(prefix ? maskTrailingDash(name) : name);
}

/** generic.ValidateNamespaceName (= NameIsDNSLabel). */
export const validateNamespaceName: ValidateNameFunc = nameIsDNSLabel;
