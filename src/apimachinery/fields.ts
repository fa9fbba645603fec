/**
 * Field selectors as apimachinery v0.33 pkg/fields/selector.go parses and matches them (the `fieldSelector`
 * list/watch parameter): comma-separated `field=value`, `field==value` or `field!=value` terms, ANDed; in a
 * value, `\,` `\=` and `\\` stand for the literal characters. Parse errors are 400 BadRequest with Go's text.
 *
 * Like the apiserver (get.go/watch.go run the parsed selector through the kind's field label conversion,
 * runtime.DefaultMetaV1FieldSelectorConversion for servers like ours), only metadata.name and
 * metadata.namespace are known fields: see `checkFieldSelector` / `parseSupportedFieldSelector`.
 */
import { badRequest } from './status.js';
import type { KubeObject } from './types.js';
import { compareStrings } from './golang/strings.js';
import { goQuote } from './golang/strconv.js';

export type FieldOperator = '=' | '!=';

export interface FieldRequirement {
  readonly field: string;
  /** selection.Equals ("=", for both `=` and `==`) or selection.NotEquals ("!="). */
  readonly operator: FieldOperator;
  readonly value: string;
}

export interface FieldSelector {
  /** Every term holds; a field the object does not have reads as "". */
  matches(fields: Readonly<Record<string, string>>): boolean;
  /** True when the selector does not restrict anything. */
  empty(): boolean;
  /** Terms in Go's order (the terms sorted as text before parsing). */
  readonly requirements: readonly FieldRequirement[];
  /**
   * Go's RequiresExactMatch: the value of the first `field=value` / `field==value` term on `field`, else
   * undefined. Use it to narrow a list to one object; still apply `matches` afterwards.
   */
  exactMatch(field: string): string | undefined;
  /** Go's String(): terms joined with ',', values escaped. */
  toString(): string;
}

/** The fields our kinds can be selected by. */
export const SUPPORTED_FIELDS: readonly string[] = ['metadata.name', 'metadata.namespace'];

class ParseError extends Error {}

/** fields.EscapeValue. */
export function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (ch) => `\\${ch}`);
}

/** fields.UnescapeValue. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') {
        out += c;
      } else {
        throw new ParseError(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      inSlash = false;
      continue;
    }
    if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Go prints the rune with %v, i.e. as its number ("61" for '=').
      throw new ParseError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else {
      out += c;
    }
  }
  if (inSlash) throw new ParseError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** splitTerms: split on commas not escaped by a backslash; the backslashes stay in the terms. */
function splitTerms(selector: string): string[] {
  if (selector.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (inSlash) {
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',') {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms;
}

const TERM_OPERATORS = ['!=', '==', '='] as const;

/** splitTerm: the first operator occurrence splits the term (no escaping on the left-hand side). */
function splitTerm(term: string): { lhs: string; op: (typeof TERM_OPERATORS)[number]; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

class AndSelector implements FieldSelector {
  constructor(readonly requirements: readonly FieldRequirement[]) {}

  matches(fields: Readonly<Record<string, string>>): boolean {
    return this.requirements.every((r) => {
      const actual = Object.prototype.hasOwnProperty.call(fields, r.field) ? fields[r.field] : '';
      return r.operator === '=' ? actual === r.value : actual !== r.value;
    });
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  exactMatch(field: string): string | undefined {
    return this.requirements.find((r) => r.operator === '=' && r.field === field)?.value;
  }

  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${escapeFieldValue(r.value)}`).join(',');
  }
}

/** A selector that matches everything (fields.Everything()). */
export const everythingFields: FieldSelector = new AndSelector([]);

/**
 * fields.ParseSelector. Throws a 400 BadRequest with Go's text: `invalid selector: 'x'; can't understand 'x'`,
 * `invalid field selector: invalid escape sequence: \x`, `invalid field selector: unescaped character in
 * value: 61`. Any field name is accepted here; `checkFieldSelector` limits them.
 */
export function parseFieldSelector(text: string | null | undefined): FieldSelector {
  if (!text) return everythingFields;
  const parts = splitTerms(text).sort(compareStrings);
  const requirements: FieldRequirement[] = [];
  try {
    for (const part of parts) {
      if (part === '') continue;
      const split = splitTerm(part);
      if (!split) throw new ParseError(`invalid selector: '${text}'; can't understand '${part}'`);
      const value = unescapeValue(split.rhs);
      // Transform with the identity function drops a term whose field and value are both empty ("=").
      if (split.lhs === '' && value === '') continue;
      requirements.push({ field: split.lhs, operator: split.op === '!=' ? '!=' : '=', value });
    }
  } catch (err) {
    if (err instanceof ParseError) throw badRequest(err.message);
    throw err;
  }
  return new AndSelector(requirements);
}

/**
 * The field label conversion (runtime.DefaultMetaV1FieldSelectorConversion): every term must be on
 * metadata.name or metadata.namespace, else 400 `"spec.x" is not a known field selector: only
 * "metadata.name", "metadata.namespace"` for the first offending term. metadata.namespace is accepted for
 * cluster-scoped kinds too (it then matches only ""). Returns the selector for chaining.
 */
export function checkFieldSelector(selector: FieldSelector): FieldSelector {
  for (const r of selector.requirements) {
    if (!SUPPORTED_FIELDS.includes(r.field)) {
      throw badRequest(
        `${goQuote(r.field)} is not a known field selector: only ${SUPPORTED_FIELDS.map(goQuote).join(', ')}`,
      );
    }
  }
  return selector;
}

/** parseFieldSelector then checkFieldSelector: what a list or watch of our kinds accepts. */
export function parseSupportedFieldSelector(text: string | null | undefined): FieldSelector {
  return checkFieldSelector(parseFieldSelector(text));
}

/**
 * The selectable fields of an object (generic.ObjectMetaFieldsSet): metadata.name and metadata.namespace
 * ("" for cluster-scoped objects, which is what Go's Fields.Get returns for a missing field anyway).
 */
export function objectFields(obj: Pick<KubeObject, 'metadata'>): Record<string, string> {
  return {
    'metadata.name': obj.metadata?.name ?? '',
    'metadata.namespace': obj.metadata?.namespace ?? '',
  };
}
