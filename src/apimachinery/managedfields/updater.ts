/**
 * structured-merge-diff's merge.Updater for one API version: how a write changes every manager's field set,
 * and how an apply merges a config into the object, prunes what its manager stopped applying, and finds
 * conflicts (merge/update.go, merge/conflict.go, typed/reconcile_schema.go).
 */
import { jsonEqual } from '../equality.js';
import type { Path, PathElement } from './path.js';
import { FieldSet } from './set.js';
import { compare, excludeFields, merge, type Comparison } from './merge.js';
import { removeItems } from './remove.js';
import { ensureNamedFieldsAreMembers, toFieldSet } from './tofieldset.js';
import { fieldType, type TypeNode } from './typeinfo.js';

export interface VersionedSet {
  set: FieldSet;
  apiVersion: string;
  applied: boolean;
}

/** Field sets by manager identifier. */
export type ManagedFields = Map<string, VersionedSet>;

export interface Conflict {
  manager: string;
  path: Path;
}

/** merge.Conflicts: what an apply without force would take from other managers. */
export class ConflictsError extends Error {
  constructor(readonly conflicts: readonly Conflict[]) {
    super('conflicts');
    this.name = 'ConflictsError';
  }
}

export interface UpdaterOptions {
  type: TypeNode;
  apiVersion: string;
  /** Fields this endpoint never tracks (the strategy resets them): a recursive exclusion. */
  ignored?: FieldSet;
}

function ignoredSet(o: UpdaterOptions): FieldSet {
  return o.ignored ?? new FieldSet();
}

/** Updater.update: takes changed fields from other managers (or reports them as conflicts) and drops removed ones. */
function updateManagers(
  o: UpdaterOptions,
  oldObj: unknown,
  newObj: unknown,
  managers: ManagedFields,
  workflow: string,
  force: boolean,
): { managers: ManagedFields; comparison: Comparison } {
  const c = excludeFields(compare(o.type, oldObj, newObj), o.ignored);
  const changed = c.modified.union(c.added);
  const conflicts = new Map<string, FieldSet>();
  for (const [manager, vs] of managers) {
    if (manager === workflow) continue;
    const conflict = vs.set.intersection(changed);
    if (!conflict.empty()) conflicts.set(manager, conflict);
  }
  if (!force && conflicts.size > 0) {
    const list: Conflict[] = [];
    for (const [manager, set] of conflicts) for (const path of set.paths()) list.push({ manager, path });
    throw new ConflictsError(list);
  }
  const out: ManagedFields = new Map();
  for (const [manager, vs] of managers) {
    let set = vs.set;
    if (manager !== workflow) {
      const conflict = conflicts.get(manager);
      if (conflict) set = set.difference(conflict);
      if (!c.removed.empty()) set = set.difference(c.removed);
    }
    if (!set.empty()) out.set(manager, { ...vs, set });
  }
  return { managers: out, comparison: c };
}

/**
 * Updater.Update: after a non-apply write, `manager` owns what it added or changed and nothing it removed;
 * other managers lose what was changed or removed. Never conflicts.
 */
export function update(
  o: UpdaterOptions,
  live: unknown,
  updated: unknown,
  managersIn: ManagedFields,
  manager: string,
): ManagedFields {
  const reconciled = reconcileManagers(o, managersIn);
  const { managers, comparison: c } = updateManagers(o, live, updated, reconciled, manager, true);
  const previous = managers.get(manager)?.set ?? new FieldSet();
  const set = previous.union(c.modified).union(c.added).difference(c.removed).recursiveDifference(ignoredSet(o));
  if (set.empty()) managers.delete(manager);
  else managers.set(manager, { set, apiVersion: o.apiVersion, applied: false });
  return managers;
}

export interface ApplyResult {
  /** The merged object; undefined when the apply changes nothing. */
  object: unknown;
  managers: ManagedFields;
}

/** Updater.Apply: merge config into live, record config's fields as manager's, prune, then find conflicts. */
export function apply(
  o: UpdaterOptions,
  live: unknown,
  config: unknown,
  managersIn: ManagedFields,
  manager: string,
  force: boolean,
): ApplyResult {
  const managers = reconcileManagers(o, managersIn);
  let merged = merge(o.type, live, config);
  const lastSet = managers.get(manager);
  let set = toFieldSet(o.type, config);
  if (o.ignored) set = set.recursiveDifference(o.ignored);
  managers.set(manager, { set, apiVersion: o.apiVersion, applied: true });
  merged = prune(o, merged, managers, lastSet);
  const result = updateManagers(o, live, merged, managers, manager, force);
  return { object: jsonEqual(live, merged) ? undefined : merged, managers: result.managers };
}

/**
 * Removes what the manager applied last time and not this time, unless another manager (or this config)
 * still owns it; fields the manager never applied are left alone.
 */
function prune(
  o: UpdaterOptions,
  merged: unknown,
  managers: ManagedFields,
  lastSet: VersionedSet | undefined,
): unknown {
  if (!lastSet || lastSet.set.empty() || lastSet.apiVersion !== o.apiVersion) return merged;
  const ensure = (s: FieldSet) => ensureNamedFieldsAreMembers(s, o.type);
  const fields = (v: unknown) => ensure(toFieldSet(o.type, v));
  const last = ensure(lastSet.set);
  let pruned = removeItems(o.type, merged, last);
  // addBackOwnedItems
  let owned = new FieldSet();
  for (const vs of managers.values()) if (vs.apiVersion === o.apiVersion) owned = owned.union(vs.set);
  const mergedSet = fields(merged);
  pruned = removeItems(o.type, merged, mergedSet.difference(fields(pruned).union(ensure(owned))));
  // addBackDanglingItems
  return removeItems(o.type, merged, mergedSet.difference(fields(pruned)).intersection(last));
}

// ---------------------------------------------------------------------------------------------
// reconcileManagedFieldsWithSchemaChanges
// ---------------------------------------------------------------------------------------------

/** Drops managers of other API versions (this server serves one) and fits the others' sets to the schema. */
function reconcileManagers(o: UpdaterOptions, managers: ManagedFields): ManagedFields {
  const out: ManagedFields = new Map();
  for (const [manager, vs] of managers) {
    if (vs.apiVersion !== o.apiVersion) continue;
    const reconciled = reconcileFieldSet(o.type, vs.set);
    out.set(manager, reconciled ? { ...vs, set: reconciled } : vs);
  }
  return out;
}

/**
 * ReconcileFieldSetWithSchema: a node tracked granularly that the schema now calls atomic becomes a single
 * member. (Atomic to granular is treated as if it had always been granular.) Null if nothing changed.
 */
export function reconcileFieldSet(type: TypeNode, set: FieldSet): FieldSet | null {
  const collapse = new FieldSet();
  const visit = (t: TypeNode, node: FieldSet | undefined, path: PathElement[], isAtomic: boolean): void => {
    if (t.kind === 'deduced' || t.kind === 'scalar') return;
    // Maps with only deduced (preserve-unknown-fields) content are not reconciled.
    if (t.kind === 'map' && t.fields.size === 0 && t.element?.kind === 'deduced') return;
    if (t.atomic && !isAtomic) {
      if (t.kind === 'list' || (node && !node.empty())) collapse.insert(path);
      return;
    }
    if (!node) return;
    const handle = (pe: PathElement, isMember: boolean) => {
      let ct: TypeNode | undefined;
      if (t.kind === 'map') ct = 'field' in pe ? fieldType(t, pe.field) : undefined;
      else ct = t.item;
      if (!ct) return; // fields not in the schema are left alone
      const child = node.child(pe);
      visit(ct, child, [...path, pe], isMember && (child === undefined || child.empty()));
    };
    for (const { pe } of node.childList()) if (!node.hasMember(pe)) handle(pe, false);
    for (const pe of node.memberList()) handle(pe, true);
  };
  visit(type, set, [], false);
  if (collapse.empty()) return null;
  return set.recursiveDifference(collapse).union(collapse);
}
