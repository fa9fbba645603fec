/**
 * The errors structured-merge-diff reports when it types an applied config (typed/validate.go): fields not
 * declared in the schema, values of the wrong shape, bad or duplicate associative-list items.
 */
import { isPlainObject } from '../types.js';
import { goValue, isInt64 } from '../golang/fmt.js';
import { fieldPE, pathString, peString, serializePE, type PathElement } from './path.js';
import { atomFor, fieldType, listItemPE, type TypeNode } from './typeinfo.js';

export interface ValidationError {
  path: string;
  message: string;
}

/** ValidationErrors.Error(). */
export function validationErrorsString(errs: readonly ValidationError[]): string {
  const one = (e: ValidationError) => `${e.path}: ${e.message}`;
  if (errs.length === 1) return one(errs[0]);
  return ['errors:', ...errs.map((e) => `  ${one(e)}`)].join('\n');
}

function goType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return isInt64(v) ? 'int64' : 'float64';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** The errors structured-merge-diff reports when it types the object (unknown fields, wrong shapes, bad list items). */
export function validate(t: TypeNode, value: unknown): ValidationError[] {
  const errs: ValidationError[] = [];
  check(t, value, [], errs);
  return errs;
}

function check(t: TypeNode, v: unknown, path: PathElement[], errs: ValidationError[]): void {
  const at = pathString(path);
  const a = atomFor(t, v);
  if (v === null) return;
  if (a.kind === 'scalar') {
    const ok =
      a.scalar === 'untyped'
        ? !isPlainObject(v) && !Array.isArray(v)
        : a.scalar === 'string'
          ? typeof v === 'string'
          : a.scalar === 'numeric'
            ? typeof v === 'number'
            : typeof v === 'boolean';
    if (ok) return;
    const message =
      a.scalar === 'numeric'
        ? `expected numeric (int or float), got ${goType(v)}`
        : a.scalar === 'untyped'
          ? `expected scalar, got &{${goValue(v)}}`
          : `expected ${a.scalar}, got &{${goValue(v)}}`;
    errs.push({ path: at, message });
    return;
  }
  if (a.kind === 'list') {
    if (!Array.isArray(v)) {
      errs.push({ path: at, message: `expected list, got &{${goValue(v)}}` });
      return;
    }
    const seen = new Set<string>();
    for (let i = 0; i < v.length; i++) {
      let pe: PathElement;
      try {
        pe = listItemPE(a, i, v[i]);
      } catch (err) {
        errs.push({ path: at, message: `element ${i}: ${(err as Error).message}` });
        return;
      }
      if (!a.atomic) {
        const id = serializePE(pe);
        if (seen.has(id)) errs.push({ path: at, message: `duplicate entries for key ${peString(pe)}` });
        seen.add(id);
      }
      check(a.item, v[i], [...path, pe], errs);
    }
    return;
  }
  if (!isPlainObject(v)) {
    errs.push({ path: at, message: `expected map, got &{${goValue(v)}}` });
    return;
  }
  for (const k of Object.keys(v)) {
    if (v[k] === undefined) continue;
    const ft = fieldType(a, k);
    if (!ft) {
      // Go stops at the first undeclared field of a map.
      errs.push({ path: `${at}.${k}`, message: 'field not declared in schema' });
      return;
    }
    check(ft, v[k], [...path, fieldPE(k)], errs);
  }
}
