/**
 * The 409 an apply gets when it would change fields other managers own (internal/conflict.go):
 * `Apply failed with 1 conflict: conflict with "mgr" using g/v: .spec.x`, or for several, grouped by manager
 * in identifier order, `Apply failed with N conflicts: conflicts with "a":\n- .spec.x\n...`. Each conflict is
 * also a FieldManagerConflict cause.
 */
import { StatusError, type StatusCause } from '../status.js';
import { goQuote } from '../golang/strconv.js';
import { compareStrings } from '../golang/strings.js';
import { parseManagerIdentifier, UPDATE } from './managers.js';
import { isPlainObject } from '../types.js';
import { pathString } from './path.js';
import type { Conflict } from './updater.js';

/** printManager: `"mgr"` for appliers, `"mgr" using g/v` for updaters, with ` with subresource "s"` after the name. */
export function printManager(id: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(id);
  } catch {
    return goQuote(id);
  }
  if (!isPlainObject(parsed)) return goQuote(id);
  const info = parseManagerIdentifier(id);
  let out = goQuote(info.manager);
  if (info.subresource) out = `${out} with subresource ${goQuote(info.subresource)}`;
  if (info.operation === UPDATE) out = `${out} using ${info.apiVersion ?? ''}`;
  return out;
}

/** Conflicts in a stable order: by manager identifier, then path order within each manager's set. */
export function sortConflicts(conflicts: readonly Conflict[]): Conflict[] {
  const byManager = new Map<string, Conflict[]>();
  for (const c of conflicts) {
    const list = byManager.get(c.manager) ?? [];
    list.push(c);
    byManager.set(c.manager, list);
  }
  return [...byManager.keys()].sort(compareStrings).flatMap((m) => byManager.get(m)!);
}

export function conflictMessage(conflicts: readonly Conflict[]): string {
  if (conflicts.length === 1) {
    return `Apply failed with 1 conflict: conflict with ${printManager(conflicts[0].manager)}: ${pathString(conflicts[0].path)}`;
  }
  const lines: string[] = [];
  let current: string | undefined;
  for (const c of sortConflicts(conflicts)) {
    if (c.manager !== current) {
      current = c.manager;
      lines.push(`conflicts with ${printManager(c.manager)}:`);
    }
    lines.push(`- ${pathString(c.path)}`);
  }
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
}

/** errors.NewApplyConflict: 409 Conflict with one FieldManagerConflict cause per field and no name or kind. */
export function newConflictError(conflicts: readonly Conflict[]): StatusError {
  const causes: StatusCause[] = sortConflicts(conflicts).map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.manager)}`,
    field: pathString(c.path),
  }));
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: conflictMessage(conflicts),
    reason: 'Conflict',
    details: { causes },
    code: 409,
  });
}
