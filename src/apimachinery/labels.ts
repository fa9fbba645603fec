/**
 * Label selectors as apimachinery v0.33 pkg/labels/selector.go parses and matches them (the `labelSelector`
 * list/watch parameter). The lexer and the recursive-descent parser follow Go's token for token, so the
 * same inputs are accepted and the same error texts come out; a parse error is a 400 BadRequest whose
 * message is Go's error text (the apiserver wraps the conversion error with errors.NewBadRequest).
 *
 * Grammar (selector.go Parse):
 *   <selector-syntax>         ::= <requirement> | <requirement> "," <selector-syntax>
 *   <requirement>             ::= [!] KEY [ <set-based-restriction> | <exact-match-restriction> ]
 *   <set-based-restriction>   ::= "" | <inclusion-exclusion> <value-set>
 *   <inclusion-exclusion>     ::= "in" | "notin"
 *   <value-set>               ::= "(" <values> ")"
 *   <values>                  ::= VALUE | VALUE "," <values>
 *   <exact-match-restriction> ::= ["=" | "==" | "!=" | ">" | "<"] VALUE
 */
import { fieldError, aggregateMessage, type FieldError } from './field.js';
import { compareStrings } from './golang/strings.js';
import { badRequest } from './status.js';
import { isQualifiedName, isValidLabelValue } from './validation.js';

/** selection.Operator values as Go spells them. */
export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'gt' | 'lt' | 'exists' | '!';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Sorted and de-duplicated (Go keeps them in a sets.String and lists them sorted). */
  readonly values: readonly string[];
}

export interface LabelSelector {
  /** True when every requirement holds for these labels (an empty selector matches everything). */
  matches(labels?: Readonly<Record<string, string>> | null): boolean;
  /** True when the selector does not restrict anything. */
  empty(): boolean;
  /** Go's String(): requirements sorted by key, joined with ','. */
  toString(): string;
  /** The parsed requirements, sorted by key. */
  readonly requirements: readonly LabelRequirement[];
  /**
   * Go's RequiresExactMatch: the value the first requirement on `label` pins (`=`, `==`, or `in` with one
   * value), else undefined.
   */
  requiresExactMatch(label: string): string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

enum Tok {
  Error,
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
}

const string2token: ReadonlyMap<string, Tok> = new Map([
  [')', Tok.ClosedPar],
  [',', Tok.Comma],
  ['!', Tok.DoesNotExist],
  ['==', Tok.DoubleEquals],
  ['=', Tok.Equals],
  ['>', Tok.GreaterThan],
  ['in', Tok.In],
  ['<', Tok.LessThan],
  ['!=', Tok.NotEquals],
  ['notin', Tok.NotIn],
  ['(', Tok.OpenPar],
]);

interface ScannedItem {
  tok: Tok;
  literal: string;
}

/** Go reads bytes and treats 0 as "no more input"; a NUL in the input therefore also ends a token. */
const NUL = '\0';

function isWhitespace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}

function isSpecialSymbol(ch: string): boolean {
  switch (ch) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
      return true;
  }
  return false;
}

class Lexer {
  private pos = 0;

  constructor(private readonly s: string) {}

  private read(): string {
    if (this.pos < this.s.length) return this.s[this.pos++];
    return NUL;
  }

  private unread(): void {
    this.pos--;
  }

  private scanIDOrKeyword(): ScannedItem {
    let buffer = '';
    for (;;) {
      const ch = this.read();
      if (ch === NUL) break;
      if (isSpecialSymbol(ch) || isWhitespace(ch)) {
        this.unread();
        break;
      }
      buffer += ch;
    }
    const tok = string2token.get(buffer);
    if (tok !== undefined) return { tok, literal: buffer };
    return { tok: Tok.Identifier, literal: buffer };
  }

  private scanSpecialSymbol(): ScannedItem {
    let last: ScannedItem | undefined;
    let buffer = '';
    for (;;) {
      const ch = this.read();
      if (ch === NUL) break;
      if (isSpecialSymbol(ch)) {
        buffer += ch;
        const tok = string2token.get(buffer);
        if (tok !== undefined) {
          last = { tok, literal: buffer };
        } else if (last) {
          this.unread();
          break;
        }
      } else {
        this.unread();
        break;
      }
    }
    if (!last) return { tok: Tok.Error, literal: `error expected: keyword found '${buffer}'` };
    return last;
  }

  lex(): ScannedItem {
    let ch = this.read();
    while (isWhitespace(ch)) ch = this.read();
    if (ch === NUL) return { tok: Tok.EndOfString, literal: '' };
    this.unread();
    return isSpecialSymbol(ch) ? this.scanSpecialSymbol() : this.scanIDOrKeyword();
  }
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

enum Context {
  KeyAndOperator,
  Values,
}

/** binaryOperators joined as Go prints them in "expected: ..." */
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

class ParseError extends Error {}

/** strconv.ParseInt(s, 10, 64). */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  if (n > 9223372036854775807n || n < -9223372036854775808n) return undefined;
  return n;
}

/** validateLabelKey with a nil path: the field prints as "<nil>". */
function keyError(key: string, at: string): FieldError | undefined {
  const errs = isQualifiedName(key);
  return errs.length ? fieldError.invalid(at, key, errs.join('; ')) : undefined;
}

/** labels.NewRequirement with a nil path (so fields print as "key", "values[0]", "values[0][k]"). */
function newRequirement(key: string, operator: LabelOperator, values: string[]): LabelRequirement {
  const errs: FieldError[] = [];
  const keyErr = keyError(key, 'key');
  if (keyErr) errs.push(keyErr);
  switch (operator) {
    case 'in':
    case 'notin':
      if (values.length === 0)
        errs.push(fieldError.invalid('values', values, "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case '=':
    case '==':
    case '!=':
      if (values.length !== 1)
        errs.push(fieldError.invalid('values', values, 'exact-match compatibility requires one single value'));
      break;
    case 'exists':
    case '!':
      if (values.length !== 0)
        errs.push(fieldError.invalid('values', values, 'values set must be empty for exists and does not exist'));
      break;
    case 'gt':
    case 'lt':
      if (values.length !== 1)
        errs.push(fieldError.invalid('values', values, "for 'Gt', 'Lt' operators, exactly one value is required"));
      values.forEach((v, i) => {
        if (parseInt64(v) === undefined) {
          errs.push(fieldError.invalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      });
      break;
  }
  values.forEach((v, i) => {
    const msgs = isValidLabelValue(v);
    if (msgs.length) errs.push(fieldError.invalid(`values[${i}][${key}]`, v, msgs.join('; ')));
  });
  if (errs.length) throw new ParseError(aggregateMessage(errs));
  return { key, operator, values };
}

class Parser {
  private items: ScannedItem[] = [];
  private position = 0;

  constructor(private readonly lexer: Lexer) {}

  private lookahead(context: Context): ScannedItem {
    return this.adjust(this.items[this.position], context);
  }

  private consume(context: Context): ScannedItem {
    this.position++;
    return this.adjust(this.items[this.position - 1], context);
  }

  /** In a values context the keywords "in" and "notin" are plain identifiers. */
  private adjust(item: ScannedItem, context: Context): ScannedItem {
    if (context === Context.Values && (item.tok === Tok.In || item.tok === Tok.NotIn)) {
      return { tok: Tok.Identifier, literal: item.literal };
    }
    return item;
  }

  private scan(): void {
    for (;;) {
      const item = this.lexer.lex();
      this.items.push(item);
      if (item.tok === Tok.EndOfString) break;
    }
  }

  parse(): LabelRequirement[] {
    this.scan();
    const requirements: LabelRequirement[] = [];
    for (;;) {
      const { tok, literal } = this.lookahead(Context.Values);
      switch (tok) {
        case Tok.Identifier:
        case Tok.DoesNotExist: {
          let r: LabelRequirement;
          try {
            r = this.parseRequirement();
          } catch (err) {
            if (err instanceof ParseError) throw new ParseError(`unable to parse requirement: ${err.message}`);
            throw err;
          }
          requirements.push(r);
          const t = this.consume(Context.Values);
          switch (t.tok) {
            case Tok.EndOfString:
              return requirements;
            case Tok.Comma: {
              const t2 = this.lookahead(Context.Values);
              if (t2.tok !== Tok.Identifier && t2.tok !== Tok.DoesNotExist) {
                throw new ParseError(`found '${t2.literal}', expected: identifier after ','`);
              }
              break;
            }
            default:
              throw new ParseError(`found '${t.literal}', expected: ',' or 'end of string'`);
          }
          break;
        }
        case Tok.EndOfString:
          return requirements;
        default:
          throw new ParseError(`found '${literal}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  private parseRequirement(): LabelRequirement {
    const { key, operator: inferred } = this.parseKeyAndInferOperator();
    if (inferred === 'exists' || inferred === '!') return newRequirement(key, inferred, []);
    const operator = this.parseOperator();
    let values: string[];
    switch (operator) {
      case 'in':
      case 'notin':
        values = this.parseValues();
        break;
      default:
        values = this.parseExactValue();
    }
    return newRequirement(key, operator, values);
  }

  private parseKeyAndInferOperator(): { key: string; operator: LabelOperator | undefined } {
    let operator: LabelOperator | undefined;
    let item = this.consume(Context.Values);
    if (item.tok === Tok.DoesNotExist) {
      operator = '!';
      item = this.consume(Context.Values);
    }
    if (item.tok !== Tok.Identifier) throw new ParseError(`found '${item.literal}', expected: identifier`);
    const keyErr = keyError(item.literal, '<nil>');
    if (keyErr) throw new ParseError(aggregateMessage([keyErr]));
    const next = this.lookahead(Context.Values).tok;
    if ((next === Tok.EndOfString || next === Tok.Comma) && operator !== '!') operator = 'exists';
    return { key: item.literal, operator };
  }

  private parseOperator(): LabelOperator {
    const { tok, literal } = this.consume(Context.KeyAndOperator);
    switch (tok) {
      case Tok.In:
        return 'in';
      case Tok.Equals:
        return '=';
      case Tok.DoubleEquals:
        return '==';
      case Tok.GreaterThan:
        return 'gt';
      case Tok.LessThan:
        return 'lt';
      case Tok.NotIn:
        return 'notin';
      case Tok.NotEquals:
        return '!=';
      default:
        throw new ParseError(`found '${literal}', expected: ${BINARY_OPERATORS}`);
    }
  }

  private parseValues(): string[] {
    let item = this.consume(Context.Values);
    if (item.tok !== Tok.OpenPar) throw new ParseError(`found '${item.literal}' expected: '('`);
    item = this.lookahead(Context.Values);
    switch (item.tok) {
      case Tok.Identifier:
      case Tok.Comma: {
        const s = this.parseIdentifiersList();
        if (this.consume(Context.Values).tok !== Tok.ClosedPar)
          throw new ParseError(`found '${item.literal}', expected: ')'`);
        return sortedSet(s);
      }
      case Tok.ClosedPar:
        this.consume(Context.Values);
        return [''];
      default:
        throw new ParseError(`found '${item.literal}', expected: ',', ')' or identifier`);
    }
  }

  private parseIdentifiersList(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const item = this.consume(Context.Values);
      switch (item.tok) {
        case Tok.Identifier: {
          s.add(item.literal);
          const next = this.lookahead(Context.Values);
          switch (next.tok) {
            case Tok.Comma:
              continue;
            case Tok.ClosedPar:
              return s;
            default:
              throw new ParseError(`found '${next.literal}', expected: ',' or ')'`);
          }
        }
        case Tok.Comma: {
          if (s.size === 0) s.add(''); // "(,"
          const next = this.lookahead(Context.Values).tok;
          if (next === Tok.ClosedPar) {
            s.add(''); // ",)"
            return s;
          }
          if (next === Tok.Comma) {
            this.consume(Context.Values);
            s.add(''); // ",,"
          }
          break;
        }
        default:
          throw new ParseError(`found '${item.literal}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): string[] {
    const next = this.lookahead(Context.Values).tok;
    if (next === Tok.EndOfString || next === Tok.Comma) return [''];
    const item = this.consume(Context.Values);
    if (item.tok === Tok.Identifier) return [item.literal];
    throw new ParseError(`found '${item.literal}', expected: identifier`);
  }
}

function sortedSet(values: Iterable<string>): string[] {
  return [...new Set(values)].sort(compareStrings);
}

// ---------------------------------------------------------------------------------------------
// Matching and printing
// ---------------------------------------------------------------------------------------------

function has(labels: Readonly<Record<string, string>>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(labels, key);
}

function requirementMatches(r: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return has(labels, r.key) && r.values.includes(labels[r.key]);
    case 'notin':
    case '!=':
      return !has(labels, r.key) || !r.values.includes(labels[r.key]);
    case 'exists':
      return has(labels, r.key);
    case '!':
      return !has(labels, r.key);
    case 'gt':
    case 'lt': {
      if (!has(labels, r.key) || r.values.length !== 1) return false;
      const actual = parseInt64(labels[r.key]);
      const wanted = parseInt64(r.values[0]);
      if (actual === undefined || wanted === undefined) return false;
      return r.operator === 'gt' ? actual > wanted : actual < wanted;
    }
  }
}

function requirementString(r: LabelRequirement): string {
  switch (r.operator) {
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
    case 'in':
      return `${r.key} in (${r.values.join(',')})`;
    case 'notin':
      return `${r.key} notin (${r.values.join(',')})`;
    case 'gt':
      return `${r.key}>${r.values.join(',')}`;
    case 'lt':
      return `${r.key}<${r.values.join(',')}`;
    default:
      return `${r.key}${r.operator}${r.values.join(',')}`;
  }
}

class InternalSelector implements LabelSelector {
  constructor(readonly requirements: readonly LabelRequirement[]) {}

  matches(labels?: Readonly<Record<string, string>> | null): boolean {
    const ls = labels ?? {};
    return this.requirements.every((r) => requirementMatches(r, ls));
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }

  requiresExactMatch(label: string): string | undefined {
    const r = this.requirements.find((req) => req.key === label);
    if (!r) return undefined;
    if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1) return r.values[0];
    return undefined;
  }
}

/** A selector that matches everything (labels.Everything()). */
export const everythingLabels: LabelSelector = new InternalSelector([]);

/**
 * labels.Parse. Throws a 400 BadRequest StatusError carrying Go's error text, e.g.
 * `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt`.
 */
export function parseLabelSelector(text: string | null | undefined): LabelSelector {
  if (!text) return everythingLabels;
  let requirements: LabelRequirement[];
  try {
    requirements = new Parser(new Lexer(text)).parse();
  } catch (err) {
    if (err instanceof ParseError) throw badRequest(err.message);
    throw err;
  }
  // sort.Sort(ByKey): Go's sort is stable for the short lists selectors have; a stable sort keeps ties in order.
  requirements.sort((a, b) => compareStrings(a.key, b.key));
  return new InternalSelector(requirements);
}
