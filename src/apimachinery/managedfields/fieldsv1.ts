/**
 * The FieldsV1 encoding of a field set (fieldpath/serialize.go): one JSON object per node, keyed by the
 * serialized path elements of its members and children in element order; a member without children is `{}`,
 * a member that also has children carries a `"."` key last.
 */
import { isPlainObject } from '../types.js';
import { comparePE, deserializePE, serializePE, UnknownPathElementError, type PathElement } from './path.js';
import { FieldSet } from './set.js';

export type FieldsV1 = { [key: string]: FieldsV1 };

/** Set.ToJSON, as a JSON value whose key order is the serialized order. */
export function setToFieldsV1(set: FieldSet): FieldsV1 {
  return emit(set, false);
}

function emit(set: FieldSet, includeSelf: boolean): FieldsV1 {
  const out: FieldsV1 = {};
  const members = set.sortedMembers();
  const children = set.sortedChildren();
  let mi = 0;
  let ci = 0;
  while (mi < members.length || ci < children.length) {
    const m = members[mi];
    const c = children[ci];
    const order = m && c ? comparePE(m, c.pe) : m ? -1 : 1;
    if (order < 0) {
      out[serializePE(m)] = {};
      mi++;
    } else if (order > 0) {
      out[serializePE(c.pe)] = emit(c.set, false);
      ci++;
    } else {
      out[serializePE(c.pe)] = emit(c.set, true);
      mi++;
      ci++;
    }
  }
  if (includeSelf && Object.keys(out).length > 0) out['.'] = {};
  return out;
}

/** Set.FromJSON; elements of unknown kinds are dropped, malformed ones throw. */
export function fieldsV1ToSet(fields: unknown): FieldSet {
  if (fields === undefined || fields === null) return new FieldSet();
  if (!isPlainObject(fields)) throw new Error('FieldsV1 must be a JSON object');
  return read(fields).children ?? new FieldSet();
}

function read(obj: Record<string, unknown>): { children?: FieldSet; isMember: boolean } {
  let children: FieldSet | undefined;
  let isMember = false;
  for (const [key, val] of Object.entries(obj)) {
    if (key === '.') {
      isMember = true;
      continue;
    }
    let pe: PathElement;
    try {
      pe = deserializePE(key);
    } catch (err) {
      if (err instanceof UnknownPathElementError) continue;
      throw new Error(`parsing key as path element: ${(err as Error).message}`, { cause: err });
    }
    const sub = isPlainObject(val) ? read(val) : { isMember: true };
    if (sub.isMember) (children ??= new FieldSet()).insertMember(pe);
    if (sub.children) {
      (children ??= new FieldSet()).descend(pe).absorb(sub.children);
    }
  }
  if (!children) isMember = true;
  return { children, isMember };
}
