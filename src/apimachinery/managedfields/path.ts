/**
 * Path elements as structured-merge-diff's fieldpath has them: a field name, the key of an associative-list
 * item, the value of a set item, or the index of an atomic-list item. Their order, their FieldsV1 spelling
 * (`f:`, `k:`, `v:`, `i:`) and their printed form in conflict messages follow fieldpath/element.go,
 * serialize-pe.go and value/fields.go.
 */
import { isPlainObject } from '../types.js';
import { goValue } from '../golang/fmt.js';
import { goJSON, goJSONString } from '../golang/json.js';
import { compareStrings } from '../golang/strings.js';
import { goQuote } from '../golang/strconv.js';

/** One field of a list-item key; a key's fields are sorted by name. */
export type KeyField = readonly [name: string, value: unknown];

export type PathElement =
  | { readonly field: string }
  | { readonly key: readonly KeyField[] }
  | { readonly value: unknown }
  | { readonly index: number };

export type Path = readonly PathElement[];

export const fieldPE = (name: string): PathElement => ({ field: name });

/** A key from name/value pairs, sorted by name. */
export function keyPE(fields: readonly KeyField[]): PathElement {
  return { key: [...fields].sort((a, b) => compareStrings(a[0], b[0])) };
}

function kindRank(v: unknown): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (isPlainObject(v)) return 4;
  return 5; // null
}

/** value.Compare: numbers, then strings, booleans, lists, maps, null. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = kindRank(a);
  const rb = kindRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return (a as number) === (b as number) ? 0 : (a as number) < (b as number) ? -1 : 1;
    case 1:
      return compareStrings(a as string, b as string);
    case 2:
      return a === b ? 0 : a === false ? -1 : 1;
    case 3: {
      const la = a as unknown[];
      const lb = b as unknown[];
      for (let i = 0; i < Math.min(la.length, lb.length); i++) {
        const c = compareValues(la[i], lb[i]);
        if (c !== 0) return c;
      }
      return la.length === lb.length ? 0 : la.length < lb.length ? -1 : 1;
    }
    case 4: {
      const ma = a as Record<string, unknown>;
      const mb = b as Record<string, unknown>;
      const ka = Object.keys(ma).sort(compareStrings);
      const kb = Object.keys(mb).sort(compareStrings);
      for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
        const c = compareStrings(ka[i], kb[i]) || compareValues(ma[ka[i]], mb[kb[i]]);
        if (c !== 0) return c;
      }
      return ka.length === kb.length ? 0 : ka.length < kb.length ? -1 : 1;
    }
    default:
      return 0;
  }
}

function compareKeys(a: readonly KeyField[], b: readonly KeyField[]): number {
  for (let i = 0; ; i++) {
    if (i >= a.length && i >= b.length) return 0;
    if (i >= a.length) return -1;
    if (i >= b.length) return 1;
    const c = compareStrings(a[i][0], b[i][0]) || compareValues(a[i][1], b[i][1]);
    if (c !== 0) return c;
  }
}

/** PathElement.Compare: field names first, then keys, values, indexes. */
export function comparePE(a: PathElement, b: PathElement): number {
  if ('field' in a) return 'field' in b ? compareStrings(a.field, b.field) : -1;
  if ('field' in b) return 1;
  if ('key' in a) return 'key' in b ? compareKeys(a.key, b.key) : -1;
  if ('key' in b) return 1;
  if ('value' in a) return 'value' in b ? compareValues(a.value, b.value) : -1;
  if ('value' in b) return 1;
  const ia = (a as { index: number }).index;
  const ib = (b as { index: number }).index;
  return ia === ib ? 0 : ia < ib ? -1 : 1;
}

/** The FieldsV1 spelling of an element, also used as its identity: `f:name`, `k:{"uid":"x"}`, `v:"a"`, `i:0`. */
export function serializePE(pe: PathElement): string {
  if ('field' in pe) return `f:${pe.field}`;
  // structured-merge-diff writes these with json-iterator.
  if ('key' in pe)
    return `k:{${pe.key.map(([n, v]) => `${goJSONString(n, 'json-iterator')}:${goJSON(v, 'json-iterator')}`).join(',')}}`;
  if ('value' in pe) return `v:${goJSON(pe.value, 'json-iterator')}`;
  return `i:${pe.index}`;
}

export class UnknownPathElementError extends Error {}

/** DeserializePathElement; an unknown prefix throws UnknownPathElementError (callers skip those). */
export function deserializePE(s: string): PathElement {
  if (s.length < 2) throw new Error(`key must be 2 characters long: ${s}`);
  if (s[1] !== ':') throw new Error(`missing colon: ${s}`);
  const rest = s.slice(2);
  switch (s[0]) {
    case 'f':
      return { field: rest };
    case 'v':
      return { value: JSON.parse(rest) };
    case 'k': {
      const obj = JSON.parse(rest);
      if (!isPlainObject(obj)) throw new Error(`invalid key: ${s}`);
      return keyPE(Object.entries(obj));
    }
    case 'i': {
      if (!/^[-+]?\d+$/.test(rest)) throw new Error(`strconv.Atoi: parsing ${goQuote(rest)}: invalid syntax`);
      return { index: Number(rest) };
    }
    default:
      throw new UnknownPathElementError('unknown path element type');
  }
}

/** value.ToString: strings quoted, numbers and booleans as Go prints them. */
function valueString(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (Array.isArray(v)) return `[${v.map(valueString).join(',')}]`;
  if (isPlainObject(v)) {
    return `{${Object.keys(v)
      .sort(compareStrings)
      .map((k) => `${k}=${valueString(v[k])}`)
      .join(',')}}`;
  }
  return goValue(v);
}

/** PathElement.String: `.name`, `[uid="x"]`, `[="a"]`, `[0]`. */
export function peString(pe: PathElement): string {
  if ('field' in pe) return `.${pe.field}`;
  if ('key' in pe) return `[${pe.key.map(([n, v]) => `${n}=${valueString(v)}`).join(',')}]`;
  if ('value' in pe) return `[=${valueString(pe.value)}]`;
  return `[${pe.index}]`;
}

/** Path.String: the elements' strings run together (`.spec.access`, `.metadata.finalizers[="a"]`). */
export function pathString(path: Path): string {
  return path.map(peString).join('');
}
