/**
 * kube's FieldManager for one kind at one API version: what a write records in metadata.managedFields, and
 * server-side apply. The chain is kube's (internal/fieldmanager.go NewDefaultFieldManager): last-applied
 * updater, last-applied manager, skip-non-applied (before-first-apply), cap of 10 Update managers, manager
 * identifiers, timestamps (managedfieldsupdater.go), strip of system metadata, structured merge.
 */
import type { StructuralSchema } from '../schema.js';
import { badRequest, StatusError } from '../status.js';
import type { KubeObject, ManagedFieldsEntry } from '../types.js';
import { newConflictError } from './conflict.js';
import {
  allowedConflictsFromLastApplied,
  buildLastApplied,
  hasLastApplied,
  KUBECTL,
  setLastApplied,
} from './lastapplied.js';
import {
  APPLY,
  capUpdateManagers,
  decodeManagedFields,
  DecodeError,
  decodeOrEmpty,
  emptyManaged,
  encodeManagedFields,
  managerIdentifier,
  stripManager,
  UPDATE,
  type Managed,
} from './managers.js';
import { fieldPE } from './path.js';
import { FieldSet } from './set.js';
import { validate, validationErrorsString } from './validate.js';
import { objectType } from './typeinfo.js';
import { apply, ConflictsError, update, type Conflict, type UpdaterOptions } from './updater.js';

export interface FieldManagerContext {
  /** "management.platform.sh/v1": recorded in entries and printed in conflict messages. */
  apiVersion: string;
  /** RFC 3339 with second precision: the time written into entries this write changes. */
  now: string;
  /** The kind's structural schema (list and map semantics come from its x-kubernetes-* extensions). */
  schema: StructuralSchema;
  /**
   * The kind has a status subresource. Then writes to the main resource neither own nor conflict on `status`
   * (the strategy resets it), as writes to /status never do on `spec` (kube's GetResetFields).
   */
  hasStatusSubresource?: boolean;
}

/** The manager kube records for fields that existed before managed fields were tracked. */
export const BEFORE_FIRST_APPLY = 'before-first-apply';
const CURRENT_OPERATION = 'current-operation';

function options(subresource: string, ctx: FieldManagerContext): UpdaterOptions {
  let ignored: FieldSet | undefined;
  if (subresource === 'status') ignored = FieldSet.of([fieldPE('spec')]);
  else if (!subresource && ctx.hasStatusSubresource) ignored = FieldSet.of([fieldPE('status')]);
  return { type: objectType(ctx.schema), apiVersion: ctx.apiVersion, ignored };
}

/** What the kind's ObjectCreater.New gives for unstructured objects: type meta only. */
function emptyObject(kind: string | undefined, ctx: FieldManagerContext): KubeObject {
  const obj: Record<string, unknown> = { apiVersion: ctx.apiVersion };
  if (kind) obj.kind = kind;
  return obj as unknown as KubeObject;
}

function withoutManagedFields(obj: KubeObject): KubeObject {
  if (!obj.metadata || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _drop, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** isResetManagedFields: `[]` or `[{}]` asks to clear managed fields. */
function isReset(entries: unknown): boolean {
  if (!Array.isArray(entries)) return false;
  if (entries.length === 0) return true;
  return (
    entries.length === 1 &&
    entries[0] !== null &&
    typeof entries[0] === 'object' &&
    Object.keys(entries[0]).length === 0
  );
}

/** An error kube returns without a Status of its own: 500 with the error text and no reason. */
function serverError(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 });
}

/**
 * The Update path below the skip-non-applied manager: records the write as `manager`'s (operation Update),
 * with the time of now when it changed any field the manager tracks, then caps the Update entries.
 */
function recordUpdate(
  o: UpdaterOptions,
  live: unknown,
  updated: unknown,
  managed: Managed,
  manager: string,
  subresource: string,
  ctx: FieldManagerContext,
): Managed {
  const id = managerIdentifier({
    manager: manager || 'unknown',
    operation: UPDATE,
    apiVersion: ctx.apiVersion,
    subresource,
  });
  const fields = update(o, live, updated, managed.fields, CURRENT_OPERATION);
  stripManager(fields, CURRENT_OPERATION);
  const times = new Map(managed.times);
  const current = fields.get(CURRENT_OPERATION);
  if (current) {
    fields.delete(CURRENT_OPERATION);
    const previous = fields.get(id);
    fields.set(id, previous ? { ...current, set: current.set.union(previous.set) } : current);
    times.set(id, ctx.now);
  }
  const out = { fields, times };
  capUpdateManagers(out);
  return out;
}

/**
 * Records a non-apply write (create, update or patch) by `manager` (operation Update) and returns the new
 * managedFields. `live` is the stored object (undefined for a create); `updated` the object about to be stored,
 * with the managedFields the request carried (a client may set them; `[]` clears them). An object stored
 * without managedFields stays untracked until its first apply, as in kube.
 */
export function updateManagedFields(
  live: KubeObject | undefined,
  updated: KubeObject,
  manager: string,
  subresource: string,
  ctx: FieldManagerContext,
): ManagedFieldsEntry[] {
  const o = options(subresource, ctx);
  let managed: Managed;
  if (subresource) {
    managed = decodeOrEmpty(live?.metadata?.managedFields);
  } else if (isReset(updated.metadata?.managedFields)) {
    managed = emptyManaged();
  } else {
    let fromRequest: Managed | undefined;
    try {
      fromRequest = decodeManagedFields(updated.metadata?.managedFields);
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
    }
    managed = fromRequest && fromRequest.fields.size > 0 ? fromRequest : decodeOrEmpty(live?.metadata?.managedFields);
  }
  if (managed.fields.size === 0 && live !== undefined) return [];
  const liveObj = withoutManagedFields(live ?? emptyObject(updated.kind, ctx));
  return encodeManagedFields(
    recordUpdate(o, liveObj, withoutManagedFields(updated), managed, manager, subresource, ctx),
  );
}

function groupVersionString(apiVersion: string): { group: string; version: string } | undefined {
  const parts = apiVersion.split('/');
  if (parts.length === 1) return { group: '', version: parts[0] };
  if (parts.length === 2) return { group: parts[0], version: parts[1] };
  return undefined;
}

/** The checks of structuredMergeManager.Apply on the patch object. */
function checkAppliedConfig(o: UpdaterOptions, applied: KubeObject, ctx: FieldManagerContext): void {
  const gv = groupVersionString(typeof applied.apiVersion === 'string' ? applied.apiVersion : '') ?? {
    group: '',
    version: '',
  };
  const patchVersion = gv.group ? `${gv.group}/${gv.version}` : gv.version;
  if (patchVersion !== ctx.apiVersion) {
    throw badRequest(
      `Incorrect version specified in apply patch. Specified patch version: ${patchVersion}, expected: ${ctx.apiVersion}`,
    );
  }
  if (Array.isArray(applied.metadata?.managedFields)) throw badRequest('metadata.managedFields must be nil');
  const errs = validate(o.type, applied);
  if (errs.length > 0) {
    const meta = applied.metadata ?? {};
    const gvk = `${gv.group}/${gv.version}, Kind=${applied.kind ?? ''}`;
    // kube answers this with a 500 (kubernetes/kubernetes#139253); it is the client's configuration that is wrong,
    // so it is a 400, as the fix proposed there (#139255) makes it.
    throw badRequest(
      `failed to create typed patch object (${meta.namespace ?? ''}/${meta.name ?? ''}; ${gvk}): ${validationErrorsString(errs)}`,
    );
  }
}

interface Applied {
  object: KubeObject;
  managed: Managed;
}

/** Skip-non-applied, then the Apply path: identifier, structured merge, strip, timestamp. */
function applyOnce(
  o: UpdaterOptions,
  live: KubeObject,
  applied: KubeObject,
  managedIn: Managed,
  manager: string,
  force: boolean,
  subresource: string,
  ctx: FieldManagerContext,
): Applied {
  let managed = managedIn;
  if (managed.fields.size === 0) {
    // Fields set before anyone applied are owned by "before-first-apply" (an Update manager).
    managed = recordUpdate(
      o,
      emptyObject(live.kind ?? applied.kind, ctx),
      live,
      managed,
      BEFORE_FIRST_APPLY,
      subresource,
      ctx,
    );
  }
  checkAppliedConfig(o, applied, ctx);
  const id = managerIdentifier({ manager: manager || 'unknown', operation: APPLY, subresource });
  const result = apply(o, live, applied, managed.fields, id, force);
  stripManager(result.managers, id);
  const times = new Map(managed.times);
  let object: KubeObject;
  if (result.object !== undefined) {
    object = result.object as KubeObject;
    times.set(id, ctx.now);
  } else {
    object = live;
    // kube leaves a new applier that changed nothing without a time (kubernetes#127938); give it one.
    if (result.managers.has(id) && !times.get(id)) times.set(id, ctx.now);
  }
  return { object, managed: { fields: result.managers, times } };
}

/**
 * Server-side apply of `applied` (the full intent, as decoded from the request) onto `live` (undefined for a
 * create) by `manager`. Returns a new object: the merge with its managedFields. When it changes nothing it
 * equals `live`, so the caller can skip the write. Throws StatusErrors: 409 Conflict with FieldManagerConflict
 * causes (unless force), 400 for an apply patch of another version or one that sets managedFields, 500 (as
 * kube) for a config that does not fit the schema.
 */
export function applyObject(
  live: KubeObject | undefined,
  applied: KubeObject,
  manager: string,
  force: boolean,
  subresource: string,
  ctx: FieldManagerContext,
): KubeObject {
  const o = options(subresource, ctx);
  const liveObj = live ?? emptyObject(applied.kind, ctx);
  let managed: Managed;
  try {
    managed = decodeManagedFields(liveObj.metadata?.managedFields);
  } catch (err) {
    if (err instanceof DecodeError) throw serverError(`failed to decode managed fields: ${err.message}`);
    throw err;
  }
  const liveClean = withoutManagedFields(liveObj);
  const run = (f: boolean) => applyOnce(o, liveClean, applied, managed, manager, f, subresource, ctx);

  let result: Applied | undefined;
  try {
    result = run(force);
  } catch (err) {
    if (!(err instanceof ConflictsError)) throw err;
    let conflicts: readonly Conflict[] = err.conflicts;
    if (manager === KUBECTL) {
      // Conflicts on fields the client-side apply annotation still describes do not count for kubectl.
      const allowed = allowedConflictsFromLastApplied(o.type, ctx.apiVersion, liveObj);
      if (allowed) {
        const remaining = conflicts.filter((c) => !allowed.has(c.path));
        if (remaining.length === 0) result = run(true);
        else conflicts = remaining;
      }
    }
    if (!result) throw newConflictError(conflicts);
  }

  const object = structuredClone(result.object);
  if (manager === KUBECTL && hasLastApplied(object)) setLastApplied(object, buildLastApplied(applied));
  const entries = encodeManagedFields(result.managed);
  object.metadata ??= {};
  if (entries.length > 0) object.metadata.managedFields = entries;
  else delete object.metadata.managedFields;
  return object;
}
