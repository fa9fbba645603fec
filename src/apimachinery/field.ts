/**
 * Field errors as apimachinery's pkg/util/validation/field has them: a path, a type, the bad value and a detail.
 * They become the causes of a 422 Invalid Status.
 */
import { goQuote, goStringSlice } from './golang/strconv.js';

export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueDuplicate'
  | 'FieldValueNotFound'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueTypeInvalid'
  | 'InternalError';

const typeText: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueNotFound: 'Not found',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueTypeInvalid: 'Invalid value',
  InternalError: 'Internal error',
};

/** A value printed as-is, for the few places where Go prints something a JSON value cannot say (e.g. `0x0`). */
export class GoLiteral {
  constructor(readonly text: string) {}
}

const omit = Symbol('omit');

export interface FieldError {
  type: FieldErrorType;
  field: string;
  value: unknown;
  detail: string;
}

/** A field path: `metadata.labels`, `spec.access[0].verbs`, `spec.data[key]`. */
export class Path {
  private constructor(private readonly text: string) {}

  static root(name: string): Path {
    return new Path(name);
  }

  child(name: string): Path {
    return new Path(this.text ? `${this.text}.${name}` : name);
  }

  index(i: number): Path {
    return new Path(`${this.text}[${i}]`);
  }

  key(k: string): Path {
    return new Path(`${this.text}[${k}]`);
  }

  toString(): string {
    return this.text;
  }
}

type At = Path | string;

function make(type: FieldErrorType, at: At, value: unknown, detail = ''): FieldError {
  return { type, field: String(at), value, detail };
}

export const fieldError = {
  required: (at: At, detail = '') => make('FieldValueRequired', at, omit, detail),
  invalid: (at: At, value: unknown, detail: string) => make('FieldValueInvalid', at, value, detail),
  typeInvalid: (at: At, value: unknown, detail: string) => make('FieldValueTypeInvalid', at, value, detail),
  notSupported: (at: At, value: unknown, supported: readonly string[]) =>
    make(
      'FieldValueNotSupported',
      at,
      value,
      supported.length ? `supported values: ${supported.map(goQuote).join(', ')}` : '',
    ),
  forbidden: (at: At, detail: string) => make('FieldValueForbidden', at, omit, detail),
  duplicate: (at: At, value: unknown) => make('FieldValueDuplicate', at, value),
  notFound: (at: At, value: unknown) => make('FieldValueNotFound', at, value),
  tooLong: (at: At, maxBytes: number) => make('FieldValueTooLong', at, omit, `may not be more than ${maxBytes} bytes`),
  tooMany: (at: At, actual: number, max: number) =>
    make('FieldValueTooMany', at, actual, `must have at most ${max} items`),
};

/**
 * Go's `%q`/`%v`/`%#v` choice in field.Error.ErrorBody, for the values a JSON document can hold. Objects print
 * as JSON (1.33 prints Go syntax there; JSON reads better and is what 1.34 prints).
 */
export function formatValue(value: unknown): string {
  if (value instanceof GoLiteral) return value.text;
  if (typeof value === 'string') return goQuote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return '"null"';
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return goStringSlice(value);
  return JSON.stringify(value);
}

/** The text after the field path: "Invalid value: \"x\": must be ...". */
export function errorBody(e: FieldError): string {
  const head = typeText[e.type];
  const bare =
    e.value === omit ||
    ['FieldValueRequired', 'FieldValueForbidden', 'FieldValueTooLong', 'InternalError'].includes(e.type);
  const body = bare ? head : `${head}: ${formatValue(e.value)}`;
  return e.detail ? `${body}: ${e.detail}` : body;
}

export function errorString(e: FieldError): string {
  return `${e.field}: ${errorBody(e)}`;
}

/** errs.ToAggregate().Error(): one error as is, several in brackets, duplicates once. */
export function aggregateMessage(errs: readonly FieldError[]): string {
  const texts = [...new Set(errs.map(errorString))];
  return texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
}
