/**
 * Field sets of values (typed/tofieldset.go) and Set.EnsureNamedFieldsAreMembers: a value's leaves, atomic
 * nodes, associative-list items and non-struct map entries are members; struct fields are not, unless made so.
 */
import { fieldPE, type Path, type PathElement } from './path.js';
import { FieldSet } from './set.js';
import { atomFor, DEDUCED, fieldType, isNamedField, listItemPE, type TypeNode } from './typeinfo.js';
import { asList, asMap } from './values.js';

/** TypedValue.ToFieldSet: leaves, atomic nodes, associative-list items and non-struct map entries. */
export function toFieldSet(t: TypeNode, value: unknown): FieldSet {
  const set = new FieldSet();
  collect(t, value, [], set);
  return set;
}

function collect(t: TypeNode, v: unknown, path: Path, set: FieldSet): void {
  const a = atomFor(t, v);
  if (a.kind === 'scalar') {
    set.insert(path);
  } else if (a.kind === 'list') {
    if (a.atomic) return set.insert(path);
    asList(v)?.forEach((item, i) => {
      let pe: PathElement;
      try {
        pe = listItemPE(a, i, item);
      } catch {
        return;
      }
      const p = [...path, pe];
      collect(a.item, item, p, set);
      set.insert(p);
    });
  } else {
    if (a.atomic) return set.insert(path);
    const m = asMap(v);
    if (!m) return;
    for (const [k, val] of Object.entries(m)) {
      if (val === undefined) continue;
      const p = [...path, fieldPE(k)];
      collect(fieldType(a, k) ?? DEDUCED, val, p, set);
      if (!isNamedField(a, k)) set.insert(p);
    }
  }
}

/** Set.EnsureNamedFieldsAreMembers: struct fields that have children in the set become members too. */
export function ensureNamedFieldsAreMembers(set: FieldSet, t: TypeNode | undefined): FieldSet {
  const out = new FieldSet();
  const a = t ? atomFor(t, undefined) : undefined;
  for (const pe of set.memberList()) out.insertMember(pe);
  for (const { pe, set: child } of set.childList()) {
    let ct: TypeNode | undefined;
    if ('field' in pe && a?.kind === 'map') {
      if (isNamedField(a, pe.field)) out.insertMember(pe);
      ct = fieldType(a, pe.field);
    } else if ('key' in pe && a?.kind === 'list') {
      ct = a.item;
    }
    out.descend(pe).absorb(ensureNamedFieldsAreMembers(child, ct));
  }
  return out;
}
