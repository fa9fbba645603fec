/**
 * structured-merge-diff's merging walker (typed/merge.go, typed/compare.go): walks the live object and the
 * other value together by type. merge() lays an applied config over the live object (atomic nodes replaced
 * whole, associative lists merged by key); compare() lists the fields a write added, modified or removed.
 * Inputs are never modified; outputs share unchanged subtrees with them.
 */
import { jsonEqual } from '../equality.js';
import { fieldPE, serializePE, type Path, type PathElement } from './path.js';
import { FieldSet } from './set.js';
import {
  atomFor,
  DEDUCED,
  fieldType,
  listItemPE,
  type Atom,
  type ListType,
  type MapType,
  type TypeNode,
} from './typeinfo.js';
import { asList, asMap, get, put } from './values.js';

interface Rules {
  /** Called on leaves (scalars, atomic nodes, empty maps and lists); returns the node's output. */
  leaf(path: Path, lhs: unknown, rhs: unknown): unknown;
  /** Called after a non-leaf node was walked. */
  post?(path: Path, lhs: unknown, rhs: unknown): void;
}

/** Walks lhs and rhs together (undefined = absent); returns the merged output (undefined = none). */
function walk(t: TypeNode, lhs: unknown, rhs: unknown, path: Path, rules: Rules): unknown {
  const aL = atomFor(t, lhs);
  const aR = atomFor(t, rhs);
  const state = { inLeaf: false };
  let out: unknown;
  if (rhs === undefined) {
    out = handle(aL, lhs, rhs, path, rules, state);
  } else if (lhs === undefined || aL === aR) {
    out = handle(aR, lhs, rhs, path, rules, state);
  } else {
    handle(aL, lhs, rhs, path, rules, { inLeaf: false });
    out = handle(aR, lhs, rhs, path, rules, state);
  }
  if (!state.inLeaf && rules.post) rules.post(path, lhs, rhs);
  return out;
}

function handle(a: Atom, lhs: unknown, rhs: unknown, path: Path, rules: Rules, state: { inLeaf: boolean }): unknown {
  const leaf = () => {
    state.inLeaf = true;
    return rules.leaf(path, lhs, rhs);
  };
  if (a.kind === 'scalar') return leaf();
  if (a.kind === 'list') {
    const l = asList(lhs);
    const r = asList(rhs);
    if (a.atomic || ((!l || l.length === 0) && (!r || r.length === 0))) return leaf();
    return walkList(a, l, r, path, rules);
  }
  const l = asMap(lhs);
  const r = asMap(rhs);
  const lEmpty = !l || Object.keys(l).length === 0;
  const rEmpty = !r || Object.keys(r).length === 0;
  if (a.atomic || (lEmpty && rEmpty)) return leaf();
  return walkMap(a, l, r, path, rules);
}

interface IndexedList {
  order: PathElement[];
  items: Map<string, unknown>;
}

function indexList(t: ListType, list: unknown[] | undefined): IndexedList {
  const order: PathElement[] = [];
  const items = new Map<string, unknown>();
  (list ?? []).forEach((item, i) => {
    let pe: PathElement;
    try {
      pe = listItemPE(t, i, item);
    } catch {
      return;
    }
    const id = serializePE(pe);
    if (items.has(id)) return;
    items.set(id, item);
    order.push(pe);
  });
  return { order, items };
}

/** Associative list items: LHS-only items keep their place, shared and RHS items follow the RHS order. */
function walkList(
  t: ListType,
  lhs: unknown[] | undefined,
  rhs: unknown[] | undefined,
  path: Path,
  rules: Rules,
): unknown {
  const L = indexList(t, lhs);
  const R = indexList(t, rhs);
  const out: unknown[] = [];
  const shared = R.order.filter((pe) => L.items.has(serializePE(pe)));
  let next = shared.shift();
  const item = (pe: PathElement, l: unknown, r: unknown) => {
    const o = walk(t.item, l, r, [...path, pe], rules);
    if (o !== undefined) out.push(o);
  };
  let li = 0;
  let ri = 0;
  while (li < L.order.length || ri < R.order.length) {
    if (li < L.order.length && ri < R.order.length) {
      const lid = serializePE(L.order[li]);
      if (lid === serializePE(R.order[ri])) {
        item(L.order[li], L.items.get(lid), R.items.get(lid));
        li++;
        ri++;
        next = shared.shift();
        continue;
      }
      if (R.items.has(lid) && next !== undefined && serializePE(next) !== lid) {
        li++;
        continue;
      }
    }
    if (li < L.order.length) {
      const lid = serializePE(L.order[li]);
      if (!R.items.has(lid)) {
        item(L.order[li], L.items.get(lid), undefined);
        li++;
        continue;
      }
    }
    if (ri < R.order.length) {
      const pe = R.order[ri];
      const rid = serializePE(pe);
      item(pe, L.items.get(rid), R.items.get(rid));
      ri++;
      if (next !== undefined && serializePE(next) === rid) next = shared.shift();
    }
  }
  return out.length > 0 ? out : undefined;
}

function walkMap(
  t: MapType,
  lhs: Record<string, unknown> | undefined,
  rhs: Record<string, unknown> | undefined,
  path: Path,
  rules: Rules,
): unknown {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(lhs ?? {}).filter((k) => lhs![k] !== undefined);
  for (const k of Object.keys(rhs ?? {})) if (rhs![k] !== undefined && get(lhs, k) === undefined) keys.push(k);
  for (const k of keys) {
    const o = walk(fieldType(t, k) ?? DEDUCED, get(lhs, k), get(rhs, k), [...path, fieldPE(k)], rules);
    if (o !== undefined) put(out, k, o);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** TypedValue.Merge: rhs (the config) over lhs (the live object); atomic nodes are replaced whole. */
export function merge(t: TypeNode, lhs: unknown, rhs: unknown): unknown {
  return walk(t, lhs, rhs, [], { leaf: (_p, l, r) => (r !== undefined ? r : l) });
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/** TypedValue.Compare: leaves that appear, change or go away, and granular nodes that appear or go away. */
export function compare(t: TypeNode, lhs: unknown, rhs: unknown): Comparison {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  walk(t, lhs, rhs, [], {
    leaf(path, l, r) {
      if (l === undefined) c.added.insert(path);
      else if (r === undefined) c.removed.insert(path);
      else if (!jsonEqual(l, r)) c.modified.insert(path);
      return undefined;
    },
    post(path, l, r) {
      if (l === undefined) c.added.insert(path);
      else if (r === undefined) c.removed.insert(path);
    },
  });
  return c;
}

/** Comparison.ExcludeFields. */
export function excludeFields(c: Comparison, ignored: FieldSet | undefined): Comparison {
  if (!ignored || ignored.empty()) return c;
  return {
    added: c.added.recursiveDifference(ignored),
    modified: c.modified.recursiveDifference(ignored),
    removed: c.removed.recursiveDifference(ignored),
  };
}
