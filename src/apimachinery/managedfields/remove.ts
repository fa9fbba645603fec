/**
 * TypedValue.RemoveItems (typed/remove.go): a copy of a value without the map entries and list items a set
 * names. As in Go, a map or list left empty by removing inside it becomes null.
 */
import { fieldPE, type PathElement } from './path.js';
import type { FieldSet } from './set.js';
import { atomFor, DEDUCED, fieldType, listItemPE, type TypeNode } from './typeinfo.js';
import { asList, asMap, put } from './values.js';

/** TypedValue.RemoveItems: drops the map entries and list items the set names (members), recursing into children. */
export function removeItems(t: TypeNode, value: unknown, toRemove: FieldSet): unknown {
  const out = removeNode(t, value, toRemove);
  return out === undefined ? null : out;
}

function removeNode(t: TypeNode, v: unknown, toRemove: FieldSet): unknown {
  const a = atomFor(t, v);
  if (a.kind === 'scalar') return v;
  if (a.kind === 'list') {
    const l = asList(v);
    if (!l || l.length === 0 || a.atomic) return undefined;
    const items: unknown[] = [];
    l.forEach((item, i) => {
      let pe: PathElement | undefined;
      try {
        pe = listItemPE(a, i, item);
      } catch {
        pe = undefined;
      }
      if (pe) {
        if (toRemove.hasMember(pe)) return;
        const sub = toRemove.withPrefix(pe);
        if (!sub.empty()) item = removeNode(a.item, item, sub) ?? null;
      }
      items.push(item);
    });
    return items.length > 0 ? items : undefined;
  }
  const m = asMap(v);
  if (!m || Object.keys(m).length === 0 || a.atomic) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(m)) {
    if (val === undefined) continue;
    const pe = fieldPE(k);
    if (toRemove.hasMember(pe)) continue;
    const sub = toRemove.withPrefix(pe);
    put(out, k, sub.empty() ? val : (removeNode(fieldType(a, k) ?? DEDUCED, val, sub) ?? null));
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
