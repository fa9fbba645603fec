/**
 * The CEL functions admission expressions have beyond CEL's standard ones: @bufbuild/cel's strings extension
 * (cel-go's ext.Strings, which kube's base environment includes), and those of kube's own libraries
 * (k8s.io/apiserver/pkg/cel/library) and cel-go extensions that are cheap to give exactly: lists (isSorted, sum,
 * min, max, indexOf, lastIndexOf) and sets (sets.contains, sets.equivalent, sets.intersects).
 * Kube's other libraries are named in UNSUPPORTED_FUNCTIONS, so that an expression using one is refused with a
 * message saying so rather than a bare "undeclared reference".
 */
import {
  CelScalar,
  celFunc,
  celList,
  celMethod,
  listType,
  type CelFunc,
  type CelList,
  type CelValue,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

const { BOOL, DYN, INT, STRING } = CelScalar;
const LIST = listType(DYN);

/** How the library compares values: CEL's own `==` and `<`, found in the environment at first use. */
export interface CelOperators {
  equals(a: CelValue, b: CelValue): boolean;
  less(a: CelValue, b: CelValue): boolean;
  /** `a + b`; throws CEL's error (overflow, no such overload). */
  add(a: CelValue, b: CelValue): CelValue;
  /** The string method matches(), RE2 as @bufbuild/cel has it. */
  matches(text: string, pattern: string): boolean;
}

/** The functions of kube's CEL environment that this server does not have, and what each belongs to. */
export const UNSUPPORTED_FUNCTIONS: ReadonlyMap<string, string> = new Map([
  ...['url', 'isURL', 'getScheme', 'getHost', 'getHostname', 'getPort', 'getEscapedPath', 'getQuery'].map(
    (name) => [name, 'URL library'] as const,
  ),
  ...[
    'quantity',
    'isQuantity',
    'sign',
    'isGreaterThan',
    'isLessThan',
    'compareTo',
    'asInteger',
    'asApproximateFloat',
  ].map((name) => [name, 'quantity library'] as const),
  ...['isInteger', 'add', 'sub'].map((name) => [name, 'quantity library'] as const),
  ...['ip', 'isIP', 'ip.isCanonical', 'family', 'isUnspecified', 'isLoopback', 'isLinkLocalMulticast'].map(
    (name) => [name, 'IP library'] as const,
  ),
  ...[
    'isLinkLocalUnicast',
    'isGlobalUnicast',
    'cidr',
    'isCIDR',
    'containsIP',
    'containsCIDR',
    'masked',
    'prefixLength',
  ].map((name) => [name, 'IP and CIDR libraries'] as const),
  ...[
    'format.named',
    'format.dns1123Label',
    'format.dns1123Subdomain',
    'format.dns1035Label',
    'format.qualifiedName',
    'format.dns1123LabelPrefix',
    'format.dns1123SubdomainPrefix',
    'format.dns1035LabelPrefix',
    'format.labelValue',
    'format.uri',
    'format.uuid',
    'format.byte',
    'format.date',
    'format.datetime',
    'validate',
  ].map((name) => [name, 'format library'] as const),
  ...['image', 'isImage', 'containsDigest', 'registry', 'repository', 'identifier', 'tag', 'digest'].map(
    (name) => [name, 'image library'] as const,
  ),
  ...['semver', 'isSemver', 'major', 'minor', 'patch'].map((name) => [name, 'semver library'] as const),
  ...['optional.of', 'optional.none', 'optional.ofNonZeroValue', 'orValue', 'hasValue', 'value', 'or'].map(
    (name) => [name, 'optional types'] as const,
  ),
  ...['all', 'exists', 'existsOne', 'exists_one', 'transformList', 'transformMap', 'transformMapEntry'].map(
    (name) => [name, 'two-variable comprehensions'] as const,
  ),
  ...['find', 'findAll'].map((name) => [name, 'regex library'] as const),
  ...['jsonpatch.escapeKey'].map((name) => [name, 'JSON patch library'] as const),
]);

/** Every function admission expressions may call, besides CEL's standard ones. */
export function admissionFunctions(ops: () => CelOperators): CelFunc[] {
  return [
    ...strings.filter((f) => f.name !== 'split' && f.name !== 'replace'),
    ...splitFuncs,
    ...replaceFuncs,
    concatLists,
    // CEL's global form of matches(), which @bufbuild/cel has only as a method.
    celFunc('matches', [STRING, STRING], BOOL, (text, pattern) => ops().matches(text, pattern)),
    ...listFuncs(ops),
    ...setFuncs(ops),
  ];
}

// cel-go's replace (Go's strings.Replace) in one pass: @bufbuild/cel's rebuilds the string at each occurrence, and
// replaces an empty string only as often as the string is long.
const replaceFuncs = [
  celMethod('replace', STRING, [STRING, STRING], STRING, function (old, replacement) {
    return replace(this, old, replacement, -1);
  }),
  celMethod('replace', STRING, [STRING, STRING, INT], STRING, function (old, replacement, n) {
    return replace(this, old, replacement, Number(n));
  }),
];

function replace(text: string, old: string, replacement: string, n: number): string {
  // An empty string is found before each character and at the end.
  const parts = old === '' ? ['', ...text, ''] : text.split(old);
  if (n < 0 || n >= parts.length - 1) return parts.join(replacement);
  return parts.slice(0, n + 1).join(replacement) + old + parts.slice(n + 1).join(old);
}

// A flat copy, where @bufbuild/cel chains the two lists: map() and filter() would make chains as long as the list,
// which take as many steps to index and overflow the stack to iterate.
const concatLists = celFunc('_+_', [LIST, LIST], LIST, (a, b) => celList([...a, ...b]));

// cel-go's split(sep, n) keeps the rest of the string in the last part; JavaScript's limit drops it.
const splitFuncs = [
  celMethod('split', STRING, [STRING], LIST, function (sep) {
    return celList(this.split(sep));
  }),
  celMethod('split', STRING, [STRING, INT], LIST, function (sep, n) {
    if (n === 0n) return celList([]);
    const parts = this.split(sep);
    if (n < 0n || parts.length <= n) return celList(parts);
    const kept = parts.slice(0, Number(n) - 1);
    return celList([...kept, parts.slice(kept.length).join(sep)]);
  }),
];

function listFuncs(ops: () => CelOperators): CelFunc[] {
  const indexOf = (list: CelList, value: CelValue, last: boolean): bigint => {
    const { equals } = ops();
    for (let i = 0; i < list.size; i++) {
      const at = last ? list.size - 1 - i : i;
      if (equals(list.get(at)!, value)) return BigInt(at);
    }
    return -1n;
  };
  const extreme = (name: string, list: CelList, wanted: (a: CelValue, b: CelValue) => boolean) => {
    if (list.size === 0) throw new Error(`${name} called on empty list`);
    let best: CelValue = list.get(0)!;
    for (const value of list) if (wanted(value, best)) best = value;
    // Never null: null has no order, and wanted() refuses it.
    return best as Exclude<CelValue, null>;
  };
  return [
    celMethod('isSorted', LIST, [], BOOL, function () {
      const { less } = ops();
      for (let i = 1; i < this.size; i++) if (less(this.get(i)!, this.get(i - 1)!)) return false;
      return true;
    }),
    // int, uint, double or duration, as CEL's + adds them (with its overflow errors); 0 for an empty list.
    celMethod('sum', LIST, [], DYN, function () {
      const { add } = ops();
      let sum: CelValue | undefined;
      for (const value of this) sum = sum === undefined ? value : add(sum, value);
      return (sum ?? 0n) as Exclude<CelValue, null>;
    }),
    celMethod('min', LIST, [], DYN, function () {
      const { less } = ops();
      return extreme('min', this, (a, b) => less(a, b));
    }),
    celMethod('max', LIST, [], DYN, function () {
      const { less } = ops();
      return extreme('max', this, (a, b) => less(b, a));
    }),
    celMethod('indexOf', LIST, [DYN], INT, function (value) {
      return indexOf(this, value, false);
    }),
    celMethod('lastIndexOf', LIST, [DYN], INT, function (value) {
      return indexOf(this, value, true);
    }),
  ];
}

function setFuncs(ops: () => CelOperators): CelFunc[] {
  const has = (list: CelList, value: CelValue) => {
    const { equals } = ops();
    for (const item of list) if (equals(item, value)) return true;
    return false;
  };
  const containsAll = (list: CelList, sub: CelList) => {
    for (const value of sub) if (!has(list, value)) return false;
    return true;
  };
  return [
    celFunc('sets.contains', [LIST, LIST], BOOL, (list, sub) => containsAll(list, sub)),
    celFunc('sets.equivalent', [LIST, LIST], BOOL, (a, b) => containsAll(a, b) && containsAll(b, a)),
    celFunc('sets.intersects', [LIST, LIST], BOOL, (a, b) => {
      for (const value of b) if (has(a, value)) return true;
      return false;
    }),
  ];
}
